package hashedwheel_test

import (
	"math"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hashedwheel/hashedwheel"
)

// BenchmarkHeartbeat runs heartbeatCount heartbeats, each every
// heartbeatPeriod, for heartbeatWindow per iteration: on the wheel with
// Every, and with time.AfterFunc timers whose function re-arms its timer with
// Reset for the next due time, start + k*period, so neither drifts.
//
//   - spread: the heartbeats start evenly over one period, as connections
//     opened over time would; aligned: all at once.
//
// It reports, over the window (which opens once every heartbeat has run once,
// so that their setup is not counted), the process CPU per run (cpu-ns/run),
// the heap allocations per run (allocs/run, B/run: the runtime's counts,
// which include whatever else the process allocates meanwhile), and the mean
// period (period-ms, averaged over the heartbeats, each measured from its
// first run in the window to its last; period-err-ppm is its relative error,
// signed, in parts per million), the largest deviation of one heartbeat's
// mean from the period (max-period-dev-ppm), runs skipped (skipped: one is
// missing from a gap of two periods or more; negative when a late run is
// followed by one less than a period later), and the drift (drift-ppm: the
// span from the first run in the window to the last against the periods it
// holds, which skipped runs do not change, averaged over the heartbeats,
// signed, in parts per million), all over the heartbeats that ran at least
// twice in the window (starved counts the others); and over the heartbeats'
// whole life, runs that started while the previous run of the same heartbeat
// was still running (overlaps). Also over the window, the runs that started more
// than two ticks (20ms) after they were due (late-runs) and the largest
// lateness (max-late-ms, taken modulo the period), against start + k*period,
// where start is taken just before the heartbeat is started. Each run reads
// the clock and updates its heartbeat's record, on both sides alike. The
// wheel's side also reports its worker's wake-ups per second, from Stats
// (wakeups/s).
func BenchmarkHeartbeat(b *testing.B) {
	for _, ph := range []struct {
		name   string
		spread bool
	}{
		{"spread", true},
		{"aligned", false},
	} {
		b.Run(ph.name, func(b *testing.B) {
			b.Run("hashedwheel", func(b *testing.B) {
				tm := newBenchTimer(b, benchTick)
				defer tm.Stop()
				heartbeats(b, ph.spread, tm.Stats, func(hb *heartbeatRecord) (stop func()) {
					hb.start = time.Now()
					to, err := tm.Every(heartbeatPeriod, hb.wheelRun)
					require.NoError(b, err)
					return func() { to.Cancel() }
				})
			})
			b.Run("time.AfterFunc", func(b *testing.B) {
				heartbeats(b, ph.spread, nil, func(hb *heartbeatRecord) (stop func()) {
					hb.timer = time.AfterFunc(time.Hour, hb.afterFuncRun)
					hb.start, hb.k = time.Now(), 1
					// Reset orders the writes above before the runs.
					hb.timer.Reset(time.Until(hb.start.Add(heartbeatPeriod)))
					return func() {
						hb.stopping.Store(true)
						hb.timer.Stop()
					}
				})
			})
		})
	}
}

const (
	heartbeatCount  = 10_000
	heartbeatPeriod = 100 * time.Millisecond
	heartbeatWindow = 3 * time.Second
)

// heartbeatRecord is one heartbeat's record of its runs, and the state of
// its time.AfterFunc timer.
type heartbeatRecord struct {
	base      time.Time    // common zero of first and last
	measuring *atomic.Bool // set while the window is open
	overlaps  *atomic.Int64

	inflight atomic.Bool  // a run is in progress
	runs     atomic.Int64 // runs started

	// The runs started in the window, and the start of the first and the
	// last of them, since base; the runs that started more than two ticks
	// after they were due, and the largest lateness.
	windowRuns  int64
	first, last int64
	lateRuns    int64
	maxLate     time.Duration

	// start is when the heartbeat was started: run k is due at start +
	// k*period.
	start time.Time

	// For time.AfterFunc: the timer, and the number of the run it is armed
	// for; stopping, once set, keeps runs from re-arming.
	timer    *time.Timer
	k        int64
	stopping *atomic.Bool
}

// enter records the start of a run and returns the time.
func (hb *heartbeatRecord) enter() time.Time {
	if hb.inflight.Swap(true) {
		hb.overlaps.Add(1)
	}
	now := time.Now()
	hb.runs.Add(1)
	if hb.measuring.Load() {
		since := int64(now.Sub(hb.base))
		if hb.windowRuns == 0 {
			hb.first = since
		}
		hb.last = since
		hb.windowRuns++
		// Runs are never early, so the last due time is that of this run.
		late := now.Sub(hb.start) % heartbeatPeriod
		if late > 2*benchTick {
			hb.lateRuns++
		}
		hb.maxLate = max(hb.maxLate, late)
	}
	return now
}

func (hb *heartbeatRecord) exit() { hb.inflight.Store(false) }

// wheelRun is the function of a heartbeat on the wheel.
func (hb *heartbeatRecord) wheelRun() {
	hb.enter()
	hb.exit()
}

// afterFuncRun is the function of a heartbeat on time.AfterFunc: it re-arms
// the timer for the next run, k+1.
func (hb *heartbeatRecord) afterFuncRun() {
	now := hb.enter()
	if !hb.stopping.Load() {
		hb.k++
		hb.timer.Reset(hb.start.Add(time.Duration(hb.k) * heartbeatPeriod).Sub(now))
	}
	hb.exit()
}

// heartbeats runs b.N measurements of heartbeatCount heartbeats that start
// starts, and reports what BenchmarkHeartbeat describes. start starts
// heartbeat hb and returns a function that stops it; once every heartbeat is
// stopped, no run may start or be in progress a moment later. stats, if not
// nil, returns the statistics of the wheel that runs them.
func heartbeats(b *testing.B, spread bool, stats func() hashedwheel.Stats,
	start func(hb *heartbeatRecord) (stop func()),
) {
	var (
		cpu                        cpuMeter
		runs, allocs, bytes        uint64
		wakeups, lateRuns          uint64
		maxLate                    time.Duration
		periodSum, maxDev, drift   float64
		measured, skipped, overlap int64
		starved                    int64
		window                     time.Duration
	)
	b.StopTimer()
	b.ResetTimer()
	for range b.N {
		var (
			overlaps            atomic.Int64
			measuring, stopping atomic.Bool
		)
		records := make([]heartbeatRecord, heartbeatCount)
		stops := make([]func(), heartbeatCount)
		base := time.Now()
		for i := range records {
			if spread {
				if d := time.Until(base.Add(time.Duration(i) * heartbeatPeriod / heartbeatCount)); d > time.Millisecond {
					time.Sleep(d)
				}
			}
			hb := &records[i]
			hb.base, hb.measuring, hb.overlaps, hb.stopping = base, &measuring, &overlaps, &stopping
			stops[i] = start(&records[i])
		}
		// Open the window once every heartbeat has run.
		for i := range records {
			for records[i].runs.Load() == 0 {
				time.Sleep(benchTick)
			}
		}
		runs0 := heartbeatRuns(records)
		var (
			before, after runtime.MemStats
			stats0        hashedwheel.Stats
		)
		if stats != nil {
			stats0 = stats()
		}
		runtime.ReadMemStats(&before)
		b.StartTimer()
		cpu.start()
		opened := time.Now()
		measuring.Store(true)
		time.Sleep(heartbeatWindow)
		measuring.Store(false)
		window += time.Since(opened)
		cpu.stop()
		b.StopTimer()
		runtime.ReadMemStats(&after)
		if stats != nil {
			stats1 := stats()
			wakeups += stats1.Wakeups - stats0.Wakeups
		}
		runs += uint64(heartbeatRuns(records) - runs0)
		allocs += after.Mallocs - before.Mallocs
		bytes += after.TotalAlloc - before.TotalAlloc

		for _, stop := range stops {
			stop()
		}
		// Let runs in progress finish, and stop again the timers they
		// re-armed before they saw the stop.
		for i := range records {
			for records[i].inflight.Load() {
				time.Sleep(time.Millisecond)
			}
		}
		for _, stop := range stops {
			stop()
		}

		for i := range records {
			hb := &records[i]
			n := hb.windowRuns
			if n < 2 {
				// Left behind for the whole window: seen on an
				// overloaded machine, where time.AfterFunc's goroutines
				// queue up faster than they run.
				starved++
				continue
			}
			span := float64(hb.last - hb.first)
			period := span / float64(n-1)
			periodSum += period
			maxDev = max(maxDev, math.Abs(period/float64(heartbeatPeriod)-1))
			periods := math.Round(span / float64(heartbeatPeriod))
			skipped += int64(periods) - (n - 1)
			if periods > 0 {
				drift += span/(periods*float64(heartbeatPeriod)) - 1
			}
			lateRuns += uint64(hb.lateRuns)
			maxLate = max(maxLate, hb.maxLate)
			measured++
		}
		overlap += overlaps.Load()
	}
	cpu.report(b, "cpu-ns/run", time.Nanosecond, float64(runs))
	b.ReportMetric(float64(allocs)/float64(runs), "allocs/run")
	b.ReportMetric(float64(bytes)/float64(runs), "B/run")
	b.ReportMetric(float64(starved), "starved")
	if measured == 0 {
		b.Fatal("no heartbeat ran twice in the window")
	}
	mean := periodSum / float64(measured)
	b.ReportMetric(mean/float64(time.Millisecond), "period-ms")
	b.ReportMetric((mean/float64(heartbeatPeriod)-1)*1e6, "period-err-ppm")
	b.ReportMetric(maxDev*1e6, "max-period-dev-ppm")
	b.ReportMetric(drift/float64(measured)*1e6, "drift-ppm")
	b.ReportMetric(float64(skipped), "skipped")
	b.ReportMetric(float64(overlap), "overlaps")
	b.ReportMetric(float64(lateRuns), "late-runs")
	b.ReportMetric(ms(maxLate), "max-late-ms")
	if stats != nil {
		b.ReportMetric(float64(wakeups)/window.Seconds(), "wakeups/s")
	}
}

// heartbeatRuns returns the runs the heartbeats have started so far.
func heartbeatRuns(records []heartbeatRecord) int64 {
	var n int64
	for i := range records {
		n += records[i].runs.Load()
	}
	return n
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
