package hashedwheel_test

import (
	"context"
	"errors"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hashedwheel/hashedwheel"
)

// Every benchmark runs the wheel and time.AfterFunc side by side; compare
// them with benchstat:
//
//	go test -run '^$' -bench . -count 6 > bench.txt
//	go run golang.org/x/perf/cmd/benchstat@latest bench.txt
//
// Besides ns/op (wall time), each benchmark reports the CPU time of the
// whole process (getrusage, on Unix): the wheel's worker works on a goroutine
// of its own, and time.AfterFunc starts one per fire, so wall time alone
// hides part of the cost.

const (
	benchTick          = 10 * time.Millisecond
	benchTicksPerWheel = 512

	// cancelDelay is the delay of the timeouts that ScheduleCancel schedules
	// and cancels: far enough that none fires.
	cancelDelay = 30 * time.Second
)

// nop and nopTask are the tasks of timeouts that should never run. They are
// shared, so the benchmarks allocate no closure per operation.
func nop() {}

var nopTask = hashedwheel.TimerFunc(func(*hashedwheel.Timeout) {})

// BenchmarkScheduleCancel schedules a timeout 30s away and cancels it, on one
// goroutine: alone, and with many long timeouts already pending (the cost
// should not depend on how many).
func BenchmarkScheduleCancel(b *testing.B) {
	b.Run("hashedwheel", func(b *testing.B) {
		tm := newBenchTimer(b, benchTick)
		defer tm.Stop()
		benchOps(b, tm, 1, newTimeoutCancel(tm))
	})
	b.Run("hashedwheel.AfterFunc", func(b *testing.B) {
		tm := newBenchTimer(b, benchTick)
		defer tm.Stop()
		benchOps(b, tm, 1, afterFuncCancel(tm))
	})
	b.Run("time.AfterFunc", func(b *testing.B) {
		benchOps(b, nil, 1, timeAfterFuncStop)
	})

	for _, p := range []struct {
		name string
		n    int
	}{
		{"pending=1e3", 1e3},
		{"pending=1e5", 1e5},
		{"pending=1e6", 1e6},
	} {
		// The pending timeouts are made once here, not in every round in
		// which the testing package sizes b.N, and each side's are gone
		// before the other side runs.
		b.Run(p.name, func(b *testing.B) {
			tm := newBenchTimer(b, benchTick)
			defer tm.Stop()
			schedulePending(b, tm, make([]*hashedwheel.Timeout, p.n))
			b.Run("hashedwheel", func(b *testing.B) {
				benchOps(b, tm, 1, newTimeoutCancel(tm))
			})
			tm.Stop()

			timers := make([]*time.Timer, p.n)
			defer stopAll(timers)
			afterFuncPending(timers)
			b.Run("time.AfterFunc", func(b *testing.B) {
				benchOps(b, nil, 1, timeAfterFuncStop)
			})
		})
	}
}

// BenchmarkScheduleCancelParallel is ScheduleCancel from GOMAXPROCS
// goroutines (b.RunParallel) and from 8.
func BenchmarkScheduleCancelParallel(b *testing.B) {
	for _, g := range []struct {
		name       string
		goroutines int
	}{
		{"goroutines=GOMAXPROCS", 0},
		{"goroutines=8", 8},
	} {
		b.Run(g.name, func(b *testing.B) {
			b.Run("hashedwheel", func(b *testing.B) {
				tm := newBenchTimer(b, benchTick)
				defer tm.Stop()
				benchOps(b, tm, g.goroutines, newTimeoutCancel(tm))
			})
			b.Run("time.AfterFunc", func(b *testing.B) {
				benchOps(b, nil, g.goroutines, timeAfterFuncStop)
			})
		})
	}
}

func newTimeoutCancel(tm *hashedwheel.Timer) func() error {
	return func() error {
		to, err := tm.NewTimeout(nopTask, cancelDelay)
		if err != nil {
			return err
		}
		to.Cancel()
		return nil
	}
}

func afterFuncCancel(tm *hashedwheel.Timer) func() error {
	return func() error {
		to, err := tm.AfterFunc(cancelDelay, nop)
		if err != nil {
			return err
		}
		to.Cancel()
		return nil
	}
}

func timeAfterFuncStop() error {
	time.AfterFunc(cancelDelay, nop).Stop()
	return nil
}

// benchOps times b.N calls of op made by goroutines goroutines (0:
// b.RunParallel's GOMAXPROCS) and reports the process CPU per call. With a
// wheel, tm, the timed region ends only once its worker has processed every
// timeout the calls scheduled and cancelled.
func benchOps(b *testing.B, tm *hashedwheel.Timer, goroutines int, op func() error) {
	b.ReportAllocs()
	var cpu cpuMeter
	b.ResetTimer()
	cpu.start()
	start := time.Now()
	switch goroutines {
	case 0:
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := op(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	case 1:
		for range b.N {
			if err := op(); err != nil {
				b.Fatal(err)
			}
		}
	default:
		var wg sync.WaitGroup
		for g := range goroutines {
			n := b.N / goroutines
			if g < b.N%goroutines {
				n++
			}
			wg.Go(func() {
				for range n {
					if err := op(); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	if tm != nil {
		drain(b, tm, b.N, time.Since(start))
	}
	b.StopTimer()
	cpu.stop()
	cpu.report(b, "cpu-ns/op", time.Nanosecond, float64(b.N))
}

// BenchmarkPendingMemory measures the live heap that 1e6 pending timeouts
// hold, per timeout (B/timeout), and how long one forced GC takes with them
// pending (gc-ms, and its CPU, gc-cpu-ms). Each iteration is one full
// measurement; the timed region is making the timeouts and, on the wheel,
// waiting until they are in their buckets.
func BenchmarkPendingMemory(b *testing.B) {
	const n = 1_000_000
	b.Run("hashedwheel", func(b *testing.B) {
		handles := make([]*hashedwheel.Timeout, n)
		pendingMemory(b, n, func() (stop func()) {
			tm := newBenchTimer(b, benchTick)
			schedulePending(b, tm, handles)
			return func() {
				tm.Stop()
				clear(handles)
			}
		})
	})
	b.Run("time.AfterFunc", func(b *testing.B) {
		timers := make([]*time.Timer, n)
		pendingMemory(b, n, func() (stop func()) {
			afterFuncPending(timers)
			return func() { stopAll(timers) }
		})
	})
}

// pendingMemory runs b.N measurements of the n timeouts that pend makes. Each
// side keeps its handles, as a user would, in a slice made before the
// baseline is read, so that only the timer's own memory is counted.
//
// time.AfterFunc's timers also take a 16-byte slot in their P's timer heap,
// a slice the runtime never shrinks: once a process has held 1e6 timers, a
// later measurement finds that capacity already in its baseline and counts
// only the 112-byte timer objects.
func pendingMemory(b *testing.B, n int, pend func() (stop func())) {
	b.ReportAllocs()
	var (
		cpu    cpuMeter
		heap   uint64
		gcWall time.Duration
	)
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		before := liveHeap()
		b.StartTimer()
		stop := pend()
		b.StopTimer()
		heap += liveHeap() - before

		start := time.Now()
		cpu.start()
		runtime.GC()
		cpu.stop()
		gcWall += time.Since(start)
		stop()
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(heap)/float64(b.N*n), "B/timeout")
	b.ReportMetric(ms(gcWall)/float64(b.N), "gc-ms")
	cpu.report(b, "gc-cpu-ms", time.Millisecond, float64(b.N))
}

// liveHeap returns the bytes of heap objects reachable after a full GC.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkBurstExpire schedules 1e6 timeouts due at the same moment and
// reports the time from that deadline to the run of the last task
// (ms-to-last).
func BenchmarkBurstExpire(b *testing.B) {
	b.Run("hashedwheel", func(b *testing.B) {
		tm := newBenchTimer(b, benchTick)
		defer tm.Stop()
		burstExpire(b, func(delay time.Duration, task func()) error {
			_, err := tm.AfterFunc(delay, task)
			return err
		})
	})
	b.Run("time.AfterFunc", func(b *testing.B) {
		burstExpire(b, func(delay time.Duration, task func()) error {
			time.AfterFunc(delay, task)
			return nil
		})
	})
}

func burstExpire(b *testing.B, schedule func(delay time.Duration, task func()) error) {
	const (
		n = 1_000_000
		// lead is the time from the start of scheduling to the common
		// deadline: enough to schedule them all and, on the wheel, to move
		// them into their bucket 100,000 per tick.
		lead = time.Second
	)
	b.ReportAllocs()
	var (
		cpu   cpuMeter
		total time.Duration
	)
	b.ResetTimer()
	cpu.start()
	for range b.N {
		c := newCountdown(n)
		task := c.tick
		deadline := time.Now().Add(lead)
		for range n {
			if err := schedule(time.Until(deadline), task); err != nil {
				b.Fatal(err)
			}
		}
		if late := time.Since(deadline); late > 0 {
			b.Fatalf("scheduling %d timeouts ended %v after their deadline; the burst would be spread", n, late)
		}
		<-c.done
		total += c.last.Sub(deadline)
	}
	b.StopTimer()
	cpu.stop()
	b.ReportMetric(ms(total)/float64(b.N), "ms-to-last")
	cpu.report(b, "cpu-ns/timeout", time.Nanosecond, float64(b.N*n))
}

// countdown counts tasks down and closes done when the last one has run.
type countdown struct {
	left atomic.Int64
	// last is when the last task ran; written before done is closed.
	last time.Time
	done chan struct{}
}

func newCountdown(n int) *countdown {
	c := &countdown{done: make(chan struct{})}
	c.left.Store(int64(n))
	return c
}

func (c *countdown) tick() {
	if c.left.Add(-1) == 0 {
		c.last = time.Now()
		close(c.done)
	}
}

// BenchmarkIdle reports the process CPU per second of wall time (cpu-ms/s) of
// a started timer with nothing pending, and with timeouts pending an hour
// away. time.AfterFunc with nothing pending is a process that does nothing.
//
// With a heartbeat, one more timeout comes due every tick and reschedules
// itself, so the worker visits a bucket every tick and walks all of it, the
// far-away timeouts included: the design's own cost at 1e6 pending.
func BenchmarkIdle(b *testing.B) {
	for _, p := range []struct {
		name      string
		n         int
		heartbeat bool
	}{
		{"pending=0", 0, false},
		{"pending=1e4", 1e4, false},
		{"pending=1e6", 1e6, false},
		{"pending=1e6,heartbeat", 1e6, true},
	} {
		b.Run(p.name, func(b *testing.B) {
			b.Run("hashedwheel", func(b *testing.B) {
				tm := newBenchTimer(b, benchTick)
				defer tm.Stop()
				schedulePending(b, tm, make([]*hashedwheel.Timeout, p.n))
				if p.heartbeat {
					_, err := tm.NewTimeout(heartbeat{tm}, 0)
					require.NoError(b, err)
				}
				idle(b)
			})
			b.Run("time.AfterFunc", func(b *testing.B) {
				timers := make([]*time.Timer, p.n)
				defer stopAll(timers)
				afterFuncPending(timers)
				if p.heartbeat {
					defer startHeartbeat()()
				}
				idle(b)
			})
		})
	}
}

// heartbeat is a task that reschedules itself for the next tick until its
// timer stops. It runs at the end of a tick, so delay 0 is due in the next
// one; a delay of one tick would be due in the tick after.
type heartbeat struct{ tm *hashedwheel.Timer }

func (h heartbeat) Run(*hashedwheel.Timeout) {
	_, _ = h.tm.NewTimeout(h, 0) // fails only once the timer stops
}

// startHeartbeat is heartbeat for time.AfterFunc. It returns a function that
// stops it.
func startHeartbeat() (stop func()) {
	var (
		mu      sync.Mutex // guards t and stopped
		t       *time.Timer
		stopped bool
	)
	mu.Lock()
	defer mu.Unlock()
	t = time.AfterFunc(benchTick, func() {
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			t.Reset(benchTick)
		}
	})
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		t.Stop()
	}
}

// idle sleeps one second per iteration and reports the CPU the process used
// meanwhile, per second.
func idle(b *testing.B) {
	b.ReportAllocs()
	// Collect and return to the OS what earlier benchmarks left, so that
	// neither GC nor the scavenger works during the window.
	debug.FreeOSMemory()
	settle()
	var cpu cpuMeter
	b.ResetTimer()
	start := time.Now()
	cpu.start()
	for range b.N {
		time.Sleep(time.Second)
	}
	cpu.stop()
	b.StopTimer()
	cpu.report(b, "cpu-ms/s", time.Millisecond, time.Since(start).Seconds())
}

// BenchmarkLateness schedules 200,000 timeouts spread evenly over one second
// and reports how late their tasks run: p50, p99 and max, against the time
// each was meant for (time.Now() when scheduled, plus the delay), and the
// count of early ones, which must be 0. time.AfterFunc has no tick; it runs
// under each tick's name so that benchstat lines the two sides up.
func BenchmarkLateness(b *testing.B) {
	for _, tick := range []struct {
		name string
		d    time.Duration
	}{
		{"tick=1ms", time.Millisecond},
		{"tick=10ms", 10 * time.Millisecond},
	} {
		b.Run(tick.name, func(b *testing.B) {
			b.Run("hashedwheel", func(b *testing.B) {
				tm := newBenchTimer(b, tick.d)
				defer tm.Stop()
				lateness(b, func(delay time.Duration, t *lateTask) error {
					_, err := tm.NewTimeout(t, delay)
					return err
				})
			})
			b.Run("time.AfterFunc", func(b *testing.B) {
				lateness(b, func(delay time.Duration, t *lateTask) error {
					time.AfterFunc(delay, t.fire)
					return nil
				})
			})
		})
	}
}

// lateTask records when it ran. It is a hashedwheel.TimerTask, and its fire
// method is a time.AfterFunc function.
type lateTask struct {
	intended time.Time
	ran      time.Time
	// beforeDeadline is set if the task ran before its Timeout's Deadline.
	beforeDeadline bool
	countdown      *countdown
}

func (t *lateTask) Run(to *hashedwheel.Timeout) {
	now := time.Now()
	t.beforeDeadline = now.Before(to.Deadline())
	t.record(now)
}

func (t *lateTask) fire() { t.record(time.Now()) }

func (t *lateTask) record(now time.Time) {
	t.ran = now
	t.countdown.tick()
}

func lateness(b *testing.B, schedule func(delay time.Duration, t *lateTask) error) {
	const (
		n      = 200_000
		spread = time.Second
	)
	b.ReportAllocs()
	tasks := make([]lateTask, n)
	late := make([]time.Duration, 0, n)
	var (
		cpu                   cpuMeter
		early, beforeDeadline int
	)
	b.ResetTimer()
	cpu.start()
	for range b.N {
		c := newCountdown(n)
		for i := range tasks {
			delay := time.Duration(i) * spread / n
			tasks[i] = lateTask{intended: time.Now().Add(delay), countdown: c}
			if err := schedule(delay, &tasks[i]); err != nil {
				b.Fatal(err)
			}
		}
		<-c.done
		for i := range tasks {
			d := tasks[i].ran.Sub(tasks[i].intended)
			if d < 0 {
				early++
			}
			if tasks[i].beforeDeadline {
				beforeDeadline++
			}
			late = append(late, d)
		}
	}
	b.StopTimer()
	cpu.stop()
	if beforeDeadline > 0 {
		b.Errorf("%d tasks ran before their Timeout's Deadline", beforeDeadline)
	}
	slices.Sort(late)
	b.ReportMetric(ms(late[len(late)/2]), "p50-ms")
	b.ReportMetric(ms(late[len(late)*99/100]), "p99-ms")
	b.ReportMetric(ms(late[len(late)-1]), "max-ms")
	b.ReportMetric(float64(early), "early")
	cpu.report(b, "cpu-ns/timeout", time.Nanosecond, float64(b.N*n))
}

// newBenchTimer returns a started timer with the given tick and 512 buckets.
// The caller stops it.
func newBenchTimer(b *testing.B, tick time.Duration) *hashedwheel.Timer {
	b.Helper()
	tm, err := hashedwheel.NewTimer(
		hashedwheel.WithTickDuration(tick),
		hashedwheel.WithTicksPerWheel(benchTicksPerWheel),
	)
	require.NoError(b, err)
	require.NoError(b, tm.Start())
	return tm
}

// farDelay is the delay of the i-th of n timeouts pending far away: an hour,
// plus i/n of one turn of the wheel. They fill every bucket evenly, as
// timeouts made over time would, rather than the few buckets of the moment
// they were made in, so that no bucket is left empty to sleep through.
func farDelay(i, n int) time.Duration {
	const turn = benchTicksPerWheel * benchTick
	return time.Hour + time.Duration(i)*turn/time.Duration(n)
}

// schedulePending fills handles with timeouts far away on tm, and returns once
// the worker has moved them all into buckets.
func schedulePending(b *testing.B, tm *hashedwheel.Timer, handles []*hashedwheel.Timeout) {
	b.Helper()
	start := time.Now()
	for i := range handles {
		to, err := tm.NewTimeout(nopTask, farDelay(i, len(handles)))
		if err != nil {
			b.Fatal(err)
		}
		handles[i] = to
	}
	drain(b, tm, len(handles), time.Since(start))
}

// afterFuncPending fills timers with time.AfterFunc timers far away, the same
// delays as schedulePending's.
func afterFuncPending(timers []*time.Timer) {
	for i := range timers {
		timers[i] = time.AfterFunc(farDelay(i, len(timers)), nop)
	}
}

// stopAll stops the timers afterFuncPending made and drops them.
func stopAll(timers []*time.Timer) {
	for i, t := range timers {
		if t != nil {
			t.Stop()
		}
		timers[i] = nil
	}
	settle()
}

// settle returns once the runtime has deleted the time.Timers stopped so far
// and the process has used almost no CPU for a while.
//
// The runtime deletes a stopped timer from its P's timer heap lazily, when
// that P next schedules; an idle P may not for seconds. For 1e6 timers that
// is milliseconds to a fraction of a second of CPU, which would land in
// whatever is measured next (it showed in Idle). Goroutines that yield for a
// few milliseconds make every P schedule.
func settle() {
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for end := time.Now().Add(10 * time.Millisecond); time.Now().Before(end); {
				runtime.Gosched()
			}
		})
	}
	wg.Wait()
	for range 100 {
		before, ok := processCPU()
		time.Sleep(20 * time.Millisecond)
		after, _ := processCPU()
		if !ok || after-before < time.Millisecond {
			return
		}
	}
}

// drain returns once tm's worker has processed the n timeouts scheduled over
// d just before the call, and every cancellation made before it: new timeouts
// moved into buckets (or dropped, if cancelled while queued), cancelled ones
// unlinked from their buckets.
//
// It needs no access to the worker, only to how it works: each tick it first
// unlinks every cancellation queued so far, then moves new timeouts into
// buckets until its queues are empty or it has moved 100,000 in that tick; a
// worker that falls behind processes the ticks it missed back to back, each
// with that budget. The queues of new timeouts are FIFO only per shard, so a
// timeout scheduled last may come out first; drain counts ticks instead. At
// most backlog timeouts can still be queued: those over the budget of the
// ticks d spanned, plus one tick's arrivals. drain runs a chain of sentinels,
// each scheduled with delay 0 by the task of the one before, so each runs in
// a later tick than the one before, and the last closes done. Once the chain
// has spanned backlog/100,000 ticks after the first sentinel's (and at least
// one, for the cancellations), everything is processed.
func drain(b *testing.B, tm *hashedwheel.Timer, n int, d time.Duration) {
	b.Helper()
	const budget = 100_000 // moved per tick, at most
	tick := tm.TickDuration()
	perTick := int(min(int64(n), int64(n)*int64(tick)/max(int64(d), 1)))
	backlog := min(n, max(0, n-budget*int(d/tick))+perTick)
	left := 1 + max(1, (backlog+budget-1)/budget)

	done := make(chan struct{})
	var sentinel hashedwheel.TimerFunc
	sentinel = func(*hashedwheel.Timeout) {
		if left--; left == 0 {
			close(done)
			return
		}
		if _, err := tm.NewTimeout(sentinel, 0); err != nil {
			b.Error(err) // not Fatal: this runs on the worker
			close(done)
		}
	}
	_, err := tm.NewTimeout(sentinel, 0)
	require.NoError(b, err)
	<-done
}

// processCPU returns the CPU time, user plus system, that all threads of the
// process have used, and false where the platform cannot tell; then the
// benchmarks report no CPU metrics. rusage_test.go sets it on Unix.
var processCPU = func() (time.Duration, bool) { return 0, false }

// cpuMeter adds up the process CPU time of the intervals between its start
// and stop calls: the benchmark's goroutines, the wheel's worker, the
// goroutines time.AfterFunc starts, and the garbage collector.
type cpuMeter struct {
	total, since time.Duration
	failed       bool
}

func (m *cpuMeter) start() {
	var ok bool
	m.since, ok = processCPU()
	m.failed = m.failed || !ok
}

func (m *cpuMeter) stop() {
	now, ok := processCPU()
	m.failed = m.failed || !ok
	m.total += now - m.since
}

// report reports the measured CPU time, in units of unit, divided by per, as
// the metric name; nothing if the platform cannot measure it.
func (m *cpuMeter) report(b *testing.B, name string, unit time.Duration, per float64) {
	if !m.failed {
		b.ReportMetric(float64(m.total)/float64(unit)/per, name)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkWithTimeout makes a context with a deadline 30s away and cancels
// it, on one goroutine: Timer.WithTimeout against context.WithTimeout, with a
// Background parent, with a parent from context.WithCancel, and with Done
// called in between (which makes the Done channel, and links the context to
// a cancellable parent). As in ScheduleCancel, the wheel's timed region ends
// once its worker has processed every timeout.
func BenchmarkWithTimeout(b *testing.B) {
	for _, p := range []struct {
		name      string
		cancelled bool // parent from context.WithCancel, not Background
		done      bool // call Done before cancel
	}{
		{"parent=Background", false, false},
		{"parent=WithCancel", true, false},
		{"parent=Background,Done", false, true},
		{"parent=WithCancel,Done", true, true},
	} {
		b.Run(p.name, func(b *testing.B) {
			parent := context.Background()
			if p.cancelled {
				var cancel context.CancelFunc
				parent, cancel = context.WithCancel(parent)
				defer cancel()
			}
			b.Run("hashedwheel.WithTimeout", func(b *testing.B) {
				tm := newBenchTimer(b, benchTick)
				defer tm.Stop()
				benchOps(b, tm, 1, withTimeoutCancel(tm.WithTimeout, parent, p.done))
			})
			b.Run("context.WithTimeout", func(b *testing.B) {
				benchOps(b, nil, 1, withTimeoutCancel(context.WithTimeout, parent, p.done))
			})
		})
	}
}

func withTimeoutCancel(withTimeout withTimeoutFunc, parent context.Context, done bool) func() error {
	return func() error {
		ctx, cancel := withTimeout(parent, cancelDelay)
		if done {
			select {
			case <-ctx.Done():
				cancel()
				return errors.New("a context 30s away was done at once")
			default:
			}
		}
		cancel()
		return nil
	}
}

// BenchmarkLiveContexts holds 1e5 contexts with a deadline an hour away and
// reports the live heap (B/ctx) and the goroutines (goroutines/ctx) per
// context, with a Background parent and, with Done called, with a parent from
// context.WithCancel. Each iteration is one full measurement, on a timer of
// its own, started, like the slices that hold the contexts and cancel
// functions, before the baseline is read; the timed region is making the
// contexts.
func BenchmarkLiveContexts(b *testing.B) {
	const n = 100_000
	for _, p := range []struct {
		name      string
		cancelled bool
	}{
		{"parent=Background", false},
		{"parent=WithCancel,Done", true},
	} {
		b.Run(p.name, func(b *testing.B) {
			parent := context.Background()
			if p.cancelled {
				var cancel context.CancelFunc
				parent, cancel = context.WithCancel(parent)
				defer cancel()
			}
			ctxs := make([]context.Context, n)
			cancels := make([]context.CancelFunc, n)
			pend := func(withTimeout withTimeoutFunc) {
				for i := range n {
					ctxs[i], cancels[i] = withTimeout(parent, farDelay(i, n))
					if p.cancelled {
						ctxs[i].Done()
					}
				}
			}
			cancelAll := func() {
				for i := range n {
					cancels[i]()
				}
				clear(ctxs)
				clear(cancels)
			}
			b.Run("hashedwheel.WithTimeout", func(b *testing.B) {
				liveContexts(b, n, func() (pendAll, stop func()) {
					tm := newBenchTimer(b, benchTick)
					return func() { pend(tm.WithTimeout) }, func() {
						cancelAll()
						tm.Stop()
					}
				})
			})
			b.Run("context.WithTimeout", func(b *testing.B) {
				liveContexts(b, n, func() (pendAll, stop func()) {
					return func() { pend(context.WithTimeout) }, func() {
						cancelAll()
						settle() // let the runtime delete the stopped timers
					}
				})
			})
		})
	}
}

// liveContexts runs b.N measurements of the n contexts that the pend of each
// newRun makes, as pendingMemory does for timeouts.
func liveContexts(b *testing.B, n int, newRun func() (pend, stop func())) {
	b.ReportAllocs()
	var heap uint64
	var goroutines int
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		pend, stop := newRun()
		before, g := liveHeap(), runtime.NumGoroutine()
		b.StartTimer()
		pend()
		b.StopTimer()
		heap += liveHeap() - before
		goroutines += runtime.NumGoroutine() - g
		stop()
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(heap)/float64(b.N*n), "B/ctx")
	b.ReportMetric(float64(goroutines)/float64(b.N*n), "goroutines/ctx")
}
