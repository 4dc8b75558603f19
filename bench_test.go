package hashedwheel_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
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
// ScheduleCancel and ScheduleCancelParallel also run both sides with
// GOMAXPROCS=1 (the GOMAXPROCS=1 sub-benchmarks), in the same run.
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

// nop, and nopTask (in helpers_test.go), are the tasks of timeouts that
// should never run. They are shared, so the benchmarks allocate no closure
// per operation.
func nop() {}

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
	// On one CPU the worker shares it with the goroutine that schedules:
	// since Go 1.25 GOMAXPROCS follows a container's CPU limit, so every
	// service in a one-CPU pod runs like this.
	b.Run("GOMAXPROCS=1", func(b *testing.B) {
		b.Run("hashedwheel", func(b *testing.B) {
			defer withProcs(1)()
			tm := newBenchTimer(b, benchTick)
			defer tm.Stop()
			benchOps(b, tm, 1, newTimeoutCancel(tm))
		})
		b.Run("time.AfterFunc", func(b *testing.B) {
			defer withProcs(1)()
			benchOps(b, nil, 1, timeAfterFuncStop)
		})
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
// goroutines (b.RunParallel) and from 8; and both again with GOMAXPROCS=1.
func BenchmarkScheduleCancelParallel(b *testing.B) {
	for _, g := range []struct {
		name       string
		procs      int // GOMAXPROCS for the run; 0: as the process has it
		goroutines int
	}{
		{"goroutines=GOMAXPROCS", 0, 0},
		{"goroutines=8", 0, 8},
		{"GOMAXPROCS=1/goroutines=GOMAXPROCS", 1, 0},
		{"GOMAXPROCS=1/goroutines=8", 1, 8},
	} {
		b.Run(g.name, func(b *testing.B) {
			b.Run("hashedwheel", func(b *testing.B) {
				defer withProcs(g.procs)()
				tm := newBenchTimer(b, benchTick)
				defer tm.Stop()
				benchOps(b, tm, g.goroutines, newTimeoutCancel(tm))
			})
			b.Run("time.AfterFunc", func(b *testing.B) {
				defer withProcs(g.procs)()
				benchOps(b, nil, g.goroutines, timeAfterFuncStop)
			})
		})
	}
}

// withProcs sets GOMAXPROCS to procs, if it is not 0, and returns a function
// that restores it. Each side of a comparison sets it for itself, so that
// both run alike in one go test run.
func withProcs(procs int) (restore func()) {
	if procs == 0 {
		return func() {}
	}
	prev := runtime.GOMAXPROCS(procs)
	return func() { runtime.GOMAXPROCS(prev) }
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

// BenchmarkReset moves the deadline of one of n live timeouts per call, the
// next one each time (round-robin), as a server re-arms the idle deadline of
// the connection that just received a message; time.Timer.Reset on n live
// time.AfterFunc timers does the same. The wheel's timed region ends once its
// worker has processed every reset (the changes queue, which takes a reset
// to a deadline before the timeout's check tick); moving a deadline later,
// or earlier by less than an eighth of the time left on a timeout due more
// than a turn ahead (all of them here), leaves the worker nothing to do
// until the timeout's check tick comes round, weeks away here, as the
// runtime leaves a modified time.Timer in its heap until then.
//
//   - later: every call moves a deadline later: Reset(resetLater), a constant,
//     moves it by the time since that timeout's last reset.
//   - earlier: every call moves a deadline earlier: the delays decrease by
//     resetEarlierStep a call, n*resetEarlierStep per round of the n
//     timeouts, far more than a round of resets takes, so each deadline is
//     earlier than the one the same timeout got a round before.
//   - mixed: the delays are drawn at random from [resetEarlierFrom,
//     resetLater), so that about half the calls move a deadline earlier and
//     half later, in no order, as idle limits that vary from message to
//     message do; each by less than an eighth of the time left.
//   - near: as mixed, with delays drawn from [resetNearFrom, resetNearTo),
//     within a turn of the wheel (5.12s at benchTick and
//     benchTicksPerWheel), where each timeout is placed at its deadline's
//     tick: a reset to an earlier tick goes through the changes queue, about
//     half of them. A round of resets takes milliseconds, so none is due.
//
// Both start from timeouts due resetInitial from now (spread over a turn of
// the wheel), later than any earlier reset and earlier than any later one.
func BenchmarkReset(b *testing.B) {
	for _, dir := range []struct {
		name  string
		delay func(b *testing.B, call int) time.Duration
	}{
		{"later", func(*testing.B, int) time.Duration { return resetLater }},
		{"earlier", resetEarlierDelay},
		{"mixed", resetMixedDelay},
		{"near", resetNearDelay},
	} {
		for _, p := range []struct {
			name string
			n    int
		}{
			{"live=1e3", 1e3},
			{"live=1e5", 1e5},
		} {
			b.Run(dir.name+"/"+p.name, func(b *testing.B) {
				// The live timeouts are made once here, not in every round
				// in which the testing package sizes b.N; each side's are
				// gone before the other side runs. next and calls carry the
				// round-robin and the decreasing delays from round to round.
				tm := newBenchTimer(b, benchTick)
				defer tm.Stop()
				handles := make([]*hashedwheel.Timeout, p.n)
				for i := range handles {
					to, err := tm.NewTimeout(nopTask, resetInitial+farDelay(i, p.n)-time.Hour)
					require.NoError(b, err)
					handles[i] = to
				}
				drain(b, tm, p.n, time.Second)
				var next, calls int
				b.Run("hashedwheel", func(b *testing.B) {
					benchResets(b, tm, func(n int) {
						for range n {
							if !handles[next].Reset(dir.delay(b, calls)) {
								b.Fatalf("Reset of live timeout %d returned false", next)
							}
							if next++; next == len(handles) {
								next = 0
							}
							calls++
						}
					})
				})
				tm.Stop()
				clear(handles)

				timers := make([]*time.Timer, p.n)
				defer stopAll(timers)
				for i := range timers {
					timers[i] = time.AfterFunc(resetInitial+farDelay(i, p.n)-time.Hour, nop)
				}
				next, calls = 0, 0
				b.Run("time.Timer", func(b *testing.B) {
					benchResets(b, nil, func(n int) {
						for range n {
							if !timers[next].Reset(dir.delay(b, calls)) {
								b.Fatalf("Reset of live timer %d returned false", next)
							}
							if next++; next == len(timers) {
								next = 0
							}
							calls++
						}
					})
				})
			})
		}
	}
}

const (
	// resetInitial is the delay of the live timeouts BenchmarkReset starts
	// from, and resetLater the delay of its later resets.
	resetInitial = 1001 * time.Hour
	resetLater   = 1002 * time.Hour

	// The earlier resets' delays go down from resetEarlierFrom by
	// resetEarlierStep a call. With 1e3 timeouts a round of resets moves
	// each deadline 100ms earlier less the round's duration (about 0.1ms,
	// plus the pause between the testing package's rounds, tens of ms), and
	// the delays last 36 billion calls, far more than any -benchtime makes.
	resetEarlierFrom = 1000 * time.Hour
	resetEarlierStep = 100 * time.Microsecond

	// The near resets' delays.
	resetNearFrom = 1 * time.Second
	resetNearTo   = 3 * time.Second
)

// resetEarlierDelay returns the delay of the earlier reset number call.
func resetEarlierDelay(b *testing.B, call int) time.Duration {
	d := resetEarlierFrom - time.Duration(call)*resetEarlierStep
	if d < time.Minute {
		b.Fatalf("reset %d: the decreasing delays are used up", call)
	}
	return d
}

// randomDelays returns 2^16 delays drawn at random from [from, to) with the
// given seed.
func randomDelays(seed uint64, from, to time.Duration) []time.Duration {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	d := make([]time.Duration, 1<<16)
	for i := range d {
		d[i] = from + time.Duration(rng.Int64N(int64(to-from)))
	}
	return d
}

// The delays of the mixed and the near resets, drawn once.
var (
	resetMixedDelays = randomDelays(1, resetEarlierFrom, resetLater)
	resetNearDelays  = randomDelays(3, resetNearFrom, resetNearTo)
)

// resetMixedDelay returns the delay of the mixed reset number call.
func resetMixedDelay(_ *testing.B, call int) time.Duration {
	return resetMixedDelays[call&(len(resetMixedDelays)-1)]
}

// resetNearDelay returns the delay of the near reset number call.
func resetNearDelay(_ *testing.B, call int) time.Duration {
	return resetNearDelays[call&(len(resetNearDelays)-1)]
}

// benchResets times loop(b.N) and reports the process CPU per call; with a
// wheel, tm, the timed region ends only once its worker has processed the
// changes the calls queued.
func benchResets(b *testing.B, tm *hashedwheel.Timer, loop func(n int)) {
	b.ReportAllocs()
	var cpu cpuMeter
	b.ResetTimer()
	cpu.start()
	loop(b.N)
	if tm != nil {
		drain(b, tm, 0, 0)
	}
	b.StopTimer()
	cpu.stop()
	cpu.report(b, "cpu-ns/op", time.Nanosecond, float64(b.N))
}

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

// BenchmarkNewTimerStop makes a Timer, starts its worker and stops it: the
// cost NewTimer's doc warns of, for a program that would make a Timer per
// request instead of sharing one.
func BenchmarkNewTimerStop(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		tm, err := hashedwheel.NewTimer()
		if err != nil {
			b.Fatal(err)
		}
		if err := tm.Start(); err != nil {
			b.Fatal(err)
		}
		tm.Stop()
	}
}
