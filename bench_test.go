package hashedwheel_test

import (
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hashedwheel/hashedwheel"
)

// The benchmarks of this package measure one call at a time, each against
// its standard-library counterpart as a sub-benchmark of the same benchmark:
// schedule and cancel against time.AfterFunc (this file), Reset against
// time.Timer.Reset (bench_reset_test.go), WithTimeout against
// context.WithTimeout (bench_context_test.go), Every against time.AfterFunc
// re-armed by Reset (bench_heartbeat_test.go), and a Timer its owner drives
// against one with a worker (bench_owned_test.go). MixedHorizons measures the
// owner's cost per tick with far timeouts pending beside heartbeats due at
// every tick, against the same without them, and MixedHorizonsRealClock the
// same on the real clock against time.AfterFunc (bench_mixed_test.go).
// Compare the sides with benchstat; .ci/bench runs them all and does:
//
//	go test -run '^$' -bench . -count 6 > bench.txt
//	go run golang.org/x/perf/cmd/benchstat@latest bench.txt
//
// ScheduleCancelReused compares a Timeout the caller owns, scheduled with
// Schedule (or ScheduleAt) and cancelled again and again, with time.AfterFunc
// and Stop and with a reused time.Timer's Reset and Stop; ScheduleFromTask, a
// task that schedules its own Timeout again from its run, with one that makes
// a new Timeout and with time.AfterFunc re-armed by Reset
// (bench_schedule_test.go); OwnedRearm, on a Timer its owner drives, Every
// with a Timeout re-armed from its run by ScheduleAt or Schedule
// (bench_owned_test.go).
//
// ScheduleCancel, ScheduleCancelReused and ScheduleCancelParallel also run
// every side with GOMAXPROCS=1 (the GOMAXPROCS=1 sub-benchmarks), in the
// same run.
//
// Besides ns/op (wall time), each benchmark reports the CPU time of the
// whole process (getrusage, on Unix): the wheel's worker works on a goroutine
// of its own, and time.AfterFunc starts one per fire, so wall time alone
// hides part of the cost.
//
// What a whole process does (the memory 1e6 pending timeouts hold, a burst
// due at once, a started timer with nothing due, how late tasks run) is
// measured by the benchmarks module, in benchmarks/, each workload in a
// fresh process.

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

// BenchmarkScheduleCancelReused schedules a Timeout 30s away with Schedule
// and cancels it, the same Timeout every time, on one goroutine, as a
// connection that owns its timeout does per request; the same with
// ScheduleAt, at a deadline the caller holds (a connection's last read plus
// its limit, say: here one taken before the loop), which costs no clock
// read; against time.AfterFunc and Stop, a new timer each time, and against
// one time.Timer (made by time.AfterFunc) re-armed with Reset and stopped
// with Stop every time. All four again with GOMAXPROCS=1, in the same run.
// cpu-ns/op is the process's CPU, the wheel's worker included.
//
// A Timeout cancelled and scheduled again on the same Timer before the worker
// took the cancel in is re-armed in place, so the worker has nothing to do
// for it until its bucket comes up, as the runtime leaves a stopped
// time.Timer in its heap until its P next looks.
func BenchmarkScheduleCancelReused(b *testing.B) {
	sides := func(b *testing.B, procs int) {
		b.Run("hashedwheel.Schedule", func(b *testing.B) {
			defer withProcs(procs)()
			tm := newBenchTimer(b, benchTick)
			defer tm.Stop()
			benchReusedOps(b, tm, scheduleCancel(tm, new(hashedwheel.Timeout)))
		})
		b.Run("hashedwheel.ScheduleAt", func(b *testing.B) {
			defer withProcs(procs)()
			tm := newBenchTimer(b, benchTick)
			defer tm.Stop()
			benchReusedOps(b, tm, scheduleAtCancel(tm, new(hashedwheel.Timeout), time.Now().Add(cancelDelay)))
		})
		b.Run("time.AfterFunc", func(b *testing.B) {
			defer withProcs(procs)()
			benchOps(b, nil, 1, timeAfterFuncStop)
		})
		b.Run("time.Timer", func(b *testing.B) {
			defer withProcs(procs)()
			t := time.AfterFunc(time.Hour, nop)
			t.Stop()
			benchOps(b, nil, 1, func() error {
				t.Reset(cancelDelay)
				t.Stop()
				return nil
			})
		})
	}
	sides(b, 0)
	b.Run("GOMAXPROCS=1", func(b *testing.B) { sides(b, 1) })
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

// scheduleCancel schedules to on tm and cancels it: the same Timeout every
// call.
func scheduleCancel(tm *hashedwheel.Timer, to *hashedwheel.Timeout) func() error {
	return func() error {
		if err := tm.Schedule(to, nopTask, cancelDelay); err != nil {
			return err
		}
		to.Cancel()
		return nil
	}
}

func scheduleAtCancel(tm *hashedwheel.Timer, to *hashedwheel.Timeout, deadline time.Time) func() error {
	return func() error {
		if err := tm.ScheduleAt(to, nopTask, deadline); err != nil {
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
	timeOps(b, tm, b.N, func() { runOps(b, goroutines, op) })
}

// benchReusedOps is benchOps on one goroutine for calls that schedule and
// cancel one Timeout again and again: at most that one is queued for the
// worker at a time, so the timed region ends once the worker has taken in
// the last cancel, a tick or two after the calls.
func benchReusedOps(b *testing.B, tm *hashedwheel.Timer, op func() error) {
	timeOps(b, tm, 1, func() { runOps(b, 1, op) })
}

// timeOps times loop, which makes b.N calls, and reports the process CPU per
// call. With a wheel, tm, the timed region ends only once its worker has
// processed the queued timeouts the calls left, at most queued, and every
// cancellation.
func timeOps(b *testing.B, tm *hashedwheel.Timer, queued int, loop func()) {
	b.ReportAllocs()
	var cpu cpuMeter
	b.ResetTimer()
	cpu.start()
	start := time.Now()
	loop()
	if tm != nil {
		drain(b, tm, queued, time.Since(start))
	}
	b.StopTimer()
	cpu.stop()
	cpu.report(b, "cpu-ns/op", time.Nanosecond, float64(b.N))
}

// runOps makes b.N calls of op from goroutines goroutines (0:
// b.RunParallel's GOMAXPROCS).
func runOps(b *testing.B, goroutines int, op func() error) {
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
// they were made in, so that no bucket is left empty to sleep through. The
// benchmarks module has the same function, for the same wheel, in
// benchmarks/workloads.go.
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

// settle collects garbage, returns freed memory to the OS, makes every P run
// its scheduler once and waits, for at most half a second, until the process
// uses almost no CPU, so that what the runtime still owes for the time.Timers
// stopped so far is paid before the next measurement rather than in it. The
// benchmarks module's settle, in benchmarks/measure.go, has the same steps
// and limits; keep them alike.
//
// The runtime deletes a stopped timer from its P's timer heap lazily, when
// that P next schedules; an idle P may not for seconds. For 1e6 timers that
// is milliseconds to a fraction of a second of CPU. Goroutines that yield for
// a few milliseconds make every P schedule.
func settle() {
	debug.FreeOSMemory()
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for end := time.Now().Add(10 * time.Millisecond); time.Now().Before(end); {
				runtime.Gosched()
			}
		})
	}
	wg.Wait()
	for range 25 {
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
