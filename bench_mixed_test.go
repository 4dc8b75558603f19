package hashedwheel_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hashedwheel/hashedwheel"
)

// Mixed horizons: near timeouts that keep something due at every tick,
// beside far ones that wait. The far timeouts should cost the ticks nothing:
// a far one is looked at once per level it starts above the wheel, not once
// per turn of the wheel. The benchmarks module measures the same workload on
// whole processes, against the other wheels (benchmarks/, workload mixed).

// mixedFarCounts are the far timeouts pending beside the heartbeats.
var mixedFarCounts = []int{0, 100_000, 1_000_000}

// mixedFarDelay is the delay of the i-th of n far timeouts: spread evenly
// from one hour to two, as the deadlines of sessions opened over an hour
// would be. The benchmarks module has the same function, in
// benchmarks/workloads.go.
func mixedFarDelay(i, n int) time.Duration {
	return time.Hour + time.Duration(i)*time.Hour/time.Duration(n)
}

// mixedName names a far count as the sub-benchmarks do: 0, 1e5, 1e6.
func mixedName(far int) string {
	if far == 0 {
		return "far=0"
	}
	e := 0
	for n := far; n >= 10; n /= 10 {
		e++
	}
	return fmt.Sprintf("far=1e%d", e)
}

// BenchmarkMixedHorizons measures what the owner of a Timer made
// WithoutWorker spends per tick, on its own goroutine, with heartbeatCount
// heartbeats every heartbeatPeriod (Every; heartbeat i's first run moved to
// (i+1)/heartbeatCount of a period with Reset, so that something is due at
// every tick of 1ms and more) beside far timeouts pending 1h..2h away (0, 1e5,
// 1e6), at a tick of 1ms and of 10ms and 512 ticks per wheel. Each iteration
// is one tick: Advance to the end of the next tick (Advance takes in the
// heartbeats' re-arms of the tick before, runs those due, and hands each back
// for its next run), after a warm-up of two periods. It reports ns/tick (the
// wall time of the Advance calls, the same as ns/op), cpu-ns/tick (the
// process's CPU, the garbage collector's included), runs/tick (heartbeat
// runs), allocs/op and B/op.
//
// The ticks are those of a clock of the benchmark's own, which starts a
// minute ahead of the real one and moves a tick per iteration, so that a
// slow tick (a loaded machine, or a wheel that walks the far timeouts) costs
// what it costs without the real clock overtaking it: a periodic timeout
// that falls a period behind the real clock skips runs. The far timeouts and
// the heartbeats' first runs are placed from it. It must not reach the far
// timeouts either: at most half an hour of it runs (1.8e6 ticks of 1ms,
// 1.8e5 of 10ms); a -benchtime that asks for more fails. The default second
// is at most some 1e5 ticks.
func BenchmarkMixedHorizons(b *testing.B) {
	for _, tick := range []time.Duration{time.Millisecond, 10 * time.Millisecond} {
		for _, far := range mixedFarCounts {
			b.Run(fmt.Sprintf("tick=%v/%s/hashedwheel.WithoutWorker", tick, mixedName(far)), func(b *testing.B) {
				benchMixedOwned(b, tick, far)
			})
		}
	}
}

func benchMixedOwned(b *testing.B, tick time.Duration, far int) {
	tm, err := hashedwheel.NewTimer(hashedwheel.WithoutWorker(), hashedwheel.WithTickDuration(tick),
		hashedwheel.WithTicksPerWheel(benchTicksPerWheel))
	require.NoError(b, err)
	defer tm.Stop()
	now := time.Now().Add(time.Minute) // the benchmark's clock
	start := now
	for i := range far {
		_, err := tm.NewTimeout(nopTask, time.Until(now)+mixedFarDelay(i, far))
		require.NoError(b, err)
	}
	runs := 0
	f := func() { runs++ } // on the goroutine that calls Advance
	for i := range heartbeatCount {
		to, err := tm.Every(heartbeatPeriod, f)
		require.NoError(b, err)
		require.True(b, to.Reset(time.Until(now)+time.Duration(i+1)*heartbeatPeriod/heartbeatCount))
	}
	if _, err := tm.Advance(now); err != nil {
		b.Fatal(err)
	}
	advance := func() {
		now = now.Add(tick)
		if _, err := tm.Advance(now); err != nil {
			b.Fatal(err)
		}
	}
	for range 2 * heartbeatPeriod / tick {
		advance()
	}
	settle()
	runs0 := runs
	var cpu cpuMeter
	b.ReportAllocs()
	cpu.start()
	ticks := 0
	for b.Loop() {
		advance()
		ticks++
	}
	cpu.stop()
	if ran := now.Sub(start); ran > 30*time.Minute {
		b.Fatalf("the benchmark's clock ran %v: ask for fewer ticks (-benchtime), or the far timeouts start to move", ran)
	}
	if runs == runs0 {
		b.Fatal("no heartbeat ran")
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(ticks), "ns/tick")
	cpu.report(b, "cpu-ns/tick", time.Nanosecond, float64(ticks))
	b.ReportMetric(float64(runs-runs0)/float64(ticks), "runs/tick")
	if want := float64(heartbeatCount) * float64(tick) / float64(heartbeatPeriod); float64(runs-runs0) < 0.9*want*float64(ticks) {
		b.Fatalf("%d heartbeat runs in %d ticks, want about %.0f a tick", runs-runs0, ticks, want)
	}
}

// BenchmarkMixedHorizonsRealClock is BenchmarkMixedHorizons on the real clock,
// against time.AfterFunc: the same heartbeats, started evenly over one
// period, beside the same far timeouts, on a Timer with a worker at a 1ms tick
// (Every) and on time.AfterFunc (each heartbeat's function re-arms its timer
// with Reset, as BenchmarkHeartbeat's do). Each iteration sleeps a
// millisecond; it reports the process's CPU per second of wall time over the
// iterations (cpu-ms/s, the benchmarks module's figure) and the heartbeat runs
// per second (runs/s, heartbeatCount*10 when none is missed). ns/op is the
// sleep's and means nothing.
func BenchmarkMixedHorizonsRealClock(b *testing.B) {
	const tick = time.Millisecond
	for _, far := range mixedFarCounts {
		b.Run(mixedName(far)+"/hashedwheel", func(b *testing.B) {
			tm := newBenchTimer(b, tick)
			defer tm.Stop()
			handles := make([]*hashedwheel.Timeout, far)
			start := time.Now()
			for i := range handles {
				var err error
				if handles[i], err = tm.NewTimeout(nopTask, mixedFarDelay(i, far)); err != nil {
					b.Fatal(err)
				}
			}
			drain(b, tm, far, time.Since(start))
			mixedRealClock(b, func(f func()) func() {
				to, err := tm.Every(heartbeatPeriod, f)
				require.NoError(b, err)
				return func() { to.Cancel() }
			})
		})
		b.Run(mixedName(far)+"/time.AfterFunc", func(b *testing.B) {
			timers := make([]*time.Timer, far)
			for i := range timers {
				timers[i] = time.AfterFunc(mixedFarDelay(i, far), nop)
			}
			defer stopAll(timers)
			mixedRealClock(b, func(f func()) func() {
				var stopping atomic.Bool
				var t *time.Timer
				next := time.Now()
				t = time.AfterFunc(time.Hour, func() {
					f()
					if !stopping.Load() {
						next = next.Add(heartbeatPeriod)
						t.Reset(time.Until(next))
					}
				})
				next = next.Add(heartbeatPeriod)
				// Reset orders the writes above before the runs.
				t.Reset(time.Until(next))
				return func() {
					stopping.Store(true)
					t.Stop()
				}
			})
		})
	}
}

// mixedRealClock starts heartbeatCount heartbeats with start, evenly over one
// period, lets them run for two periods, settles, and reports what
// BenchmarkMixedHorizonsRealClock says over b.Loop's iterations. start starts
// a heartbeat that runs f, and returns a function that stops it.
func mixedRealClock(b *testing.B, start func(f func()) (stop func())) {
	var runs atomic.Int64
	f := func() { runs.Add(1) }
	stops := make([]func(), heartbeatCount)
	base := time.Now()
	for i := range stops {
		if d := time.Until(base.Add(time.Duration(i) * heartbeatPeriod / heartbeatCount)); d >= time.Millisecond {
			time.Sleep(d)
		}
		stops[i] = start(f)
	}
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()
	time.Sleep(2 * heartbeatPeriod)
	settle()
	var cpu cpuMeter
	runs0 := runs.Load()
	cpu.start()
	opened := time.Now()
	for b.Loop() {
		time.Sleep(time.Millisecond)
	}
	wall := time.Since(opened)
	cpu.stop()
	got := runs.Load() - runs0
	cpu.report(b, "cpu-ms/s", time.Millisecond, wall.Seconds())
	b.ReportMetric(float64(got)/wall.Seconds(), "runs/s")
}
