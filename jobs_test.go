package hashedwheel_test

import (
	"log/slog"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hashedwheel/hashedwheel"
)

// These tests check guarantees 11-15 (Reset, periodic timeouts, cancel
// callbacks, the task pool, Stats) on synctest's fake clock, exact to the
// tick. With a 10ms tick, a deadline D (since the timer started) runs at the
// end of its tick: (D/10ms + 1) * 10ms.

const jobTick = 10 * time.Millisecond

// runEnd returns when a timeout with deadline d, since the timer started, runs.
func runEnd(d time.Duration) time.Duration { return (d/jobTick + 1) * jobTick }

// startedTimer returns a started timer with a 10ms tick and a small wheel,
// and the time it started.
func startedTimer(t *testing.T, opts ...hashedwheel.Option) (*hashedwheel.Timer, time.Time) {
	t.Helper()
	opts = append([]hashedwheel.Option{hashedwheel.WithTickDuration(jobTick), hashedwheel.WithTicksPerWheel(8)}, opts...)
	tm := newTimer(t, opts...)
	require.NoError(t, tm.Start())
	return tm, time.Now()
}

// runLog records when a task ran, in time since start.
type runLog struct {
	start time.Time
	mu    sync.Mutex
	at    []time.Duration
}

func (l *runLog) record() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.at = append(l.at, time.Since(l.start))
}

func (l *runLog) runs() []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Duration(nil), l.at...)
}

func TestGuarantee11ResetLaterRunsAtTheNewTickOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, start := startedTimer(t)
		log := &runLog{start: start}
		to := mustSchedule(t, tm, 25*time.Millisecond, log.record)
		time.Sleep(5 * time.Millisecond)
		// 5ms + 300ms: more than a turn of the 8-bucket wheel away.
		require.True(t, to.Reset(300*time.Millisecond))
		assert.Equal(t, start.Add(305*time.Millisecond), to.Deadline())

		time.Sleep(runEnd(305*time.Millisecond) - 5*time.Millisecond - time.Nanosecond)
		assert.Empty(t, log.runs(), "ran before the new deadline's tick")
		time.Sleep(time.Second)
		assert.Equal(t, []time.Duration{runEnd(305 * time.Millisecond)}, log.runs())
		assert.True(t, to.IsExpired())
	})
}

func TestGuarantee11ResetEarlierRunsAtTheNewTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, start := startedTimer(t)
		log := &runLog{start: start}
		// The worker sleeps until an hour's tick: Reset must wake it.
		to := mustSchedule(t, tm, time.Hour, log.record)
		time.Sleep(42 * time.Millisecond)
		require.True(t, to.Reset(30*time.Millisecond))
		time.Sleep(time.Second)
		assert.Equal(t, []time.Duration{runEnd(72 * time.Millisecond)}, log.runs())
	})
}

func TestGuarantee11ResetRepeatedlyRunsOnceAtTheLastDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, start := startedTimer(t)
		log := &runLog{start: start}
		to := mustSchedule(t, tm, 50*time.Millisecond, log.record)
		// An idle deadline re-armed on every message, later and earlier.
		delays := []time.Duration{50, 200, 20, 90, 400, 35}
		for _, d := range delays {
			time.Sleep(7 * time.Millisecond)
			require.True(t, to.Reset(d*time.Millisecond))
		}
		last := 7*time.Duration(len(delays))*time.Millisecond + 35*time.Millisecond
		time.Sleep(time.Second)
		assert.Equal(t, []time.Duration{runEnd(last)}, log.runs())
	})
}

func TestGuarantee11ResetEdgeDelays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, start := startedTimer(t)
		log := &runLog{start: start}
		time.Sleep(13 * time.Millisecond)
		to := mustSchedule(t, tm, time.Hour, log.record)
		require.True(t, to.Reset(-time.Second), "a negative delay means now")
		assert.Equal(t, start.Add(13*time.Millisecond), to.Deadline())
		time.Sleep(100 * time.Millisecond)
		assert.Equal(t, []time.Duration{runEnd(13 * time.Millisecond)}, log.runs())

		huge := mustSchedule(t, tm, time.Millisecond, log.record)
		require.True(t, huge.Reset(math.MaxInt64), "a huge delay saturates")
		time.Sleep(time.Hour)
		assert.False(t, huge.IsExpired())
		assert.Len(t, log.runs(), 1)
	})
}

func TestGuarantee11ResetOnExpiredOrCancelledReturnsFalse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, _ := startedTimer(t)
		expired := mustSchedule(t, tm, 0, func() {})
		time.Sleep(15 * time.Millisecond)
		require.True(t, expired.IsExpired())
		deadline := expired.Deadline()
		assert.False(t, expired.Reset(time.Second))
		assert.Equal(t, deadline, expired.Deadline(), "a failed Reset changed the deadline")

		cancelled := mustSchedule(t, tm, time.Second, func() { t.Error("a cancelled timeout ran") })
		require.True(t, cancelled.Cancel())
		deadline = cancelled.Deadline()
		assert.False(t, cancelled.Reset(time.Millisecond))
		assert.Equal(t, deadline, cancelled.Deadline())
		assert.Zero(t, tm.PendingTimeouts())
		time.Sleep(2 * time.Second)
	})
}

func TestGuarantee11ResetFromItsOwnTaskReturnsFalse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, _ := startedTimer(t)
		got := make(chan bool, 1)
		var to *hashedwheel.Timeout
		var err error
		to, err = tm.NewTimeout(hashedwheel.TimerFunc(func(self *hashedwheel.Timeout) {
			got <- self.Reset(time.Second)
		}), 0)
		require.NoError(t, err)
		assert.False(t, <-got, "Reset of a timeout being run must return false")
		assert.True(t, to.IsExpired())
	})
}

func TestGuarantee12PeriodicRunsAtEveryPeriodWithoutDrift(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, start := startedTimer(t)
		log := &runLog{start: start}
		var self []*hashedwheel.Timeout
		var mu sync.Mutex
		to, err := tm.NewPeriodicTimeout(hashedwheel.TimerFunc(func(to *hashedwheel.Timeout) {
			log.record()
			mu.Lock()
			self = append(self, to)
			mu.Unlock()
		}), 25*time.Millisecond)
		require.NoError(t, err)
		// Run k is due at k*25ms and runs at the end of that deadline's tick.
		const periods = 200
		time.Sleep(periods*25*time.Millisecond + time.Millisecond)
		var want []time.Duration
		for k := 1; k <= periods; k++ {
			if at := runEnd(time.Duration(k) * 25 * time.Millisecond); at <= periods*25*time.Millisecond {
				want = append(want, at)
			}
		}
		assert.Equal(t, want, log.runs())
		assert.False(t, to.IsExpired())
		assert.Equal(t, int64(1), tm.PendingTimeouts())
		// Run 200, due at 5000ms, runs at 5010ms: it is the next one.
		assert.Equal(t, start.Add(200*25*time.Millisecond), to.Deadline(), "Deadline is the next run's")
		for _, s := range self {
			require.Same(t, to, s, "Run got another *Timeout")
		}
	})
}

func TestGuarantee12PeriodicSkipsRunsAfterASlowRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, start := startedTimer(t, hashedwheel.WithTaskWorkers(2))
		log := &runLog{start: start}
		var n atomic.Int32
		_, err := tm.Every(25*time.Millisecond, func() {
			log.record()
			if n.Add(1) == 1 {
				time.Sleep(70 * time.Millisecond) // the first run is slow
			}
		})
		require.NoError(t, err)
		time.Sleep(150 * time.Millisecond)
		// Run 1 starts at 30ms and returns at 100ms. Runs 2 (50ms) and 3
		// (75ms) fell more than a period behind and are skipped; run 4,
		// due at 100ms, runs at once (110ms); run 5 (125ms) at 130ms.
		assert.Equal(t, []time.Duration{30 * time.Millisecond, 110 * time.Millisecond, 130 * time.Millisecond}, log.runs())
	})
}

func TestGuarantee12PeriodicRunsNeverOverlap(t *testing.T) {
	for name, opt := range map[string]hashedwheel.Option{
		"pool":     hashedwheel.WithTaskWorkers(4),
		"executor": hashedwheel.WithTaskExecutor(func(task func()) { go task() }),
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tm, _ := startedTimer(t, opt)
				var inFlight, overlaps, runs atomic.Int32
				_, err := tm.Every(jobTick, func() {
					if inFlight.Add(1) > 1 {
						overlaps.Add(1)
					}
					runs.Add(1)
					time.Sleep(35 * time.Millisecond) // longer than the period
					inFlight.Add(-1)
				})
				require.NoError(t, err)
				time.Sleep(time.Second)
				synctest.Wait()
				assert.Zero(t, overlaps.Load())
				assert.Greater(t, runs.Load(), int32(10))
				tm.Stop()
				// Stop does not wait for a run on an executor's goroutine.
				time.Sleep(time.Second)
			})
		})
	}
}

func TestGuarantee12PeriodicCancelFromItsOwnTaskStopsLaterRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, _ := startedTimer(t)
		var runs atomic.Int32
		cancelled := make(chan bool, 1)
		_, err := tm.NewPeriodicTimeout(hashedwheel.TimerFunc(func(to *hashedwheel.Timeout) {
			if runs.Add(1) == 3 {
				cancelled <- to.Cancel()
			}
		}), 20*time.Millisecond)
		require.NoError(t, err)
		assert.True(t, <-cancelled)
		time.Sleep(time.Second)
		assert.Equal(t, int32(3), runs.Load())
		assert.Zero(t, tm.PendingTimeouts())
	})
}

func TestGuarantee12PeriodicResetMovesTheNextRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, start := startedTimer(t)
		log := &runLog{start: start}
		to, err := tm.Every(100*time.Millisecond, log.record)
		require.NoError(t, err)
		time.Sleep(150 * time.Millisecond) // run 1 at 110ms
		require.True(t, to.Reset(33*time.Millisecond))
		time.Sleep(250 * time.Millisecond)
		// Next due at 183ms, then every 100ms from there: 283ms, 383ms;
		// each runs at the end of its tick.
		assert.Equal(t, []time.Duration{110 * time.Millisecond, 190 * time.Millisecond, 290 * time.Millisecond,
			390 * time.Millisecond}, log.runs())
	})
}

func TestGuarantee12StopReturnsPeriodicTimeouts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, _ := startedTimer(t)
		to, err := tm.Every(20*time.Millisecond, func() {})
		require.NoError(t, err)
		time.Sleep(100 * time.Millisecond)
		assert.Equal(t, []*hashedwheel.Timeout{to}, tm.Stop())
		assert.True(t, to.IsCancelled())
	})
}

func TestInvalidPeriodIsRejected(t *testing.T) {
	tm := newTimer(t)
	for _, p := range []time.Duration{0, -time.Second} {
		_, err := tm.Every(p, func() {})
		assert.ErrorIs(t, err, hashedwheel.ErrInvalidPeriod)
		assert.ErrorContains(t, err, p.String())
		_, err = tm.NewPeriodicTimeout(hashedwheel.TimerFunc(func(*hashedwheel.Timeout) {}), p)
		assert.ErrorIs(t, err, hashedwheel.ErrInvalidPeriod)
	}
	_, err := tm.Every(time.Second, nil)
	assert.ErrorIs(t, err, hashedwheel.ErrNilTask)
	_, err = tm.NewPeriodicTimeout(nil, time.Second)
	assert.ErrorIs(t, err, hashedwheel.ErrNilTask)
	assert.Zero(t, tm.PendingTimeouts())
}

// cancelRecorder is a CancelledTask that records its calls.
type cancelRecorder struct {
	ran       atomic.Int32
	cancelled chan *hashedwheel.Timeout
}

func (c *cancelRecorder) Run(*hashedwheel.Timeout)          { c.ran.Add(1) }
func (c *cancelRecorder) Cancelled(to *hashedwheel.Timeout) { c.cancelled <- to }

func TestGuarantee13CancelledTaskIsToldOnceWithinATick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, start := startedTimer(t)
		task := &cancelRecorder{cancelled: make(chan *hashedwheel.Timeout, 10)}
		// Most likely cancelled still queued; but the worker drains new
		// timeouts early, and may have linked it already, which tells it
		// at the end of the tick, at 10ms.
		queued, err := tm.NewTimeout(task, time.Second)
		require.NoError(t, err)
		require.True(t, queued.Cancel())
		assert.False(t, queued.Cancel())
		assert.Same(t, queued, <-task.cancelled)
		assert.LessOrEqual(t, time.Since(start), jobTick, "told later than the next tick")

		linked, err := tm.NewTimeout(task, time.Second)
		require.NoError(t, err)
		time.Sleep(25 * time.Millisecond) // in its bucket now
		cancelAt := time.Now()
		require.True(t, linked.Cancel())
		assert.Same(t, linked, <-task.cancelled)
		assert.Equal(t, 5*time.Millisecond, time.Since(cancelAt), "told later than the next tick")

		// Told at the end of the tick, at 30ms (or 40ms): runs due 20ms and
		// 40ms later run at the end of their ticks, before the Cancel 55ms
		// later.
		periodic, err := tm.NewPeriodicTimeout(task, 20*time.Millisecond)
		require.NoError(t, err)
		time.Sleep(55 * time.Millisecond)
		require.True(t, periodic.Cancel())
		assert.Same(t, periodic, <-task.cancelled)

		time.Sleep(2 * time.Second)
		synctest.Wait()
		assert.Empty(t, task.cancelled, "Cancelled called more than once")
		assert.Equal(t, int32(2), task.ran.Load(), "the periodic timeout ran twice before its Cancel")
	})
}

func TestGuarantee13CancelledTaskIsToldBeforeStopReturnsAndNotForStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, _ := startedTimer(t)
		task := &cancelRecorder{cancelled: make(chan *hashedwheel.Timeout, 10)}
		var cancelled []*hashedwheel.Timeout
		for range 3 {
			to, err := tm.NewTimeout(task, time.Second)
			require.NoError(t, err)
			cancelled = append(cancelled, to)
		}
		time.Sleep(25 * time.Millisecond)
		kept, err := tm.NewTimeout(task, time.Second)
		require.NoError(t, err)
		for _, to := range cancelled {
			require.True(t, to.Cancel())
		}
		// Stop before the worker got to the cancellations.
		assert.Equal(t, []*hashedwheel.Timeout{kept}, tm.Stop())
		got := map[*hashedwheel.Timeout]bool{}
		for len(task.cancelled) > 0 {
			got[<-task.cancelled] = true
		}
		assert.Len(t, got, 3)
		for _, to := range cancelled {
			assert.True(t, got[to])
		}
	})
}

// panickyCancel panics in Cancelled.
type panickyCancel struct{}

func (panickyCancel) Run(*hashedwheel.Timeout)       {}
func (panickyCancel) Cancelled(*hashedwheel.Timeout) { panic("cancel broke") }

func TestGuarantee13PanicInCancelledIsRecoveredAndLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logger, logs := newLogger()
		tm, _ := startedTimer(t, hashedwheel.WithLogger(logger))
		to, err := tm.NewTimeout(panickyCancel{}, time.Second)
		require.NoError(t, err)
		require.True(t, to.Cancel())
		var ran atomic.Bool
		mustSchedule(t, tm, 50*time.Millisecond, func() { ran.Store(true) })
		time.Sleep(100 * time.Millisecond)
		assert.True(t, ran.Load(), "the worker stopped after Cancelled panicked")
		tm.Stop()
		assert.Contains(t, logs.String(), "cancel broke")
	})
}

func TestGuarantee14SlowPooledTaskDoesNotDelayExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, start := startedTimer(t, hashedwheel.WithTaskWorkers(2))
		log := &runLog{start: start}
		release := make(chan struct{})
		mustSchedule(t, tm, 0, func() { <-release }) // a blocked write
		for i := range 5 {
			mustSchedule(t, tm, time.Duration(i+1)*20*time.Millisecond, log.record)
		}
		time.Sleep(200 * time.Millisecond)
		assert.Equal(t, []time.Duration{30 * time.Millisecond, 50 * time.Millisecond, 70 * time.Millisecond,
			90 * time.Millisecond, 110 * time.Millisecond}, log.runs())
		close(release)
	})
}

func TestGuarantee14StopWaitsForPooledTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, _ := startedTimer(t, hashedwheel.WithTaskWorkers(3))
		var finished atomic.Int32
		var timeouts []*hashedwheel.Timeout
		for range 5 {
			timeouts = append(timeouts, mustSchedule(t, tm, 0, func() {
				time.Sleep(time.Second)
				finished.Add(1)
			}))
		}
		// At the end of the first tick the worker hands all five out: three
		// run, two wait in the pool's queue.
		time.Sleep(15 * time.Millisecond)
		synctest.Wait()
		for _, to := range timeouts {
			require.True(t, to.IsExpired())
		}
		tm.Stop()
		// Handed out before Stop, so expired: they all run, before Stop returns.
		assert.Equal(t, int32(5), finished.Load())
	})
}

func TestGuarantee14StopFromAPooledTaskDoesNotWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, _ := startedTimer(t, hashedwheel.WithTaskWorkers(2))
		stopped := make(chan []*hashedwheel.Timeout, 1)
		mustSchedule(t, tm, 0, func() { stopped <- tm.Stop() })
		later := mustSchedule(t, tm, time.Second, func() { t.Error("ran after Stop") })
		assert.Nil(t, <-stopped)
		assert.Nil(t, tm.Stop())
		assert.True(t, later.IsCancelled())
	})
}

func TestGuarantee14TaskWorkersOptionIsValidated(t *testing.T) {
	for _, n := range []int{0, -1} {
		tm, err := hashedwheel.NewTimer(hashedwheel.WithTaskWorkers(n))
		assert.Nil(t, tm)
		assert.ErrorContains(t, err, "WithTaskWorkers")
	}
	tm, err := hashedwheel.NewTimer(hashedwheel.WithTaskWorkers(2), hashedwheel.WithTaskExecutor(func(f func()) { f() }))
	assert.Nil(t, tm)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "WithTaskWorkers")
	assert.Contains(t, err.Error(), "WithTaskExecutor")
}

func TestGuarantee15StatsCountWhatTheWorkerDid(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, _ := startedTimer(t)
		for range 3 {
			mustSchedule(t, tm, 15*time.Millisecond, func() {}) // run at 20ms
		}
		mustSchedule(t, tm, time.Second, func() {}).Cancel()
		mustSchedule(t, tm, time.Hour, func() {})
		// A task that blocks the worker from 60ms to 110ms, so that the
		// timeout due at 75ms is handed out at 110ms, 35ms late.
		mustSchedule(t, tm, 50*time.Millisecond, func() { time.Sleep(50 * time.Millisecond) })
		mustSchedule(t, tm, 75*time.Millisecond, func() {})
		time.Sleep(200 * time.Millisecond)
		synctest.Wait()
		s := tm.Stats()
		assert.Equal(t, hashedwheel.Stats{
			Pending:     1,
			Expired:     5,
			Cancelled:   1,
			Ticks:       s.Ticks,
			Wakeups:     s.Wakeups,
			Late:        1,
			MaxLateness: 35 * time.Millisecond,
		}, s)
		// Ticks 0 to 18 ended by 190ms; the worker slept through some.
		assert.Positive(t, s.Ticks)
		assert.LessOrEqual(t, s.Ticks, uint64(19))
		assert.Positive(t, s.Wakeups)

		periodic, err := tm.Every(20*time.Millisecond, func() {})
		require.NoError(t, err)
		time.Sleep(100 * time.Millisecond)
		require.True(t, periodic.Cancel())
		tm.Stop()
		after := tm.Stats()
		assert.Zero(t, after.Pending)
		assert.Equal(t, uint64(5+4), after.Expired, "runs at 230, 250, 270 and 290ms")
		assert.Equal(t, uint64(3), after.Cancelled, "two by Cancel and one by Stop")
		assert.GreaterOrEqual(t, after.Ticks, s.Ticks, "counters only grow")
		assert.GreaterOrEqual(t, after.Wakeups, s.Wakeups)
	})
}

func TestGuarantee11ResetCancelExpiryAndStopRaceExactlyOnce(t *testing.T) {
	// Real clock: many goroutines Reset and Cancel timeouts around their
	// deadlines while the worker expires them and, at the end, Stop cancels
	// the rest. Each timeout must end expired (ran once, never before the
	// deadline of the last successful Reset) or cancelled (never ran).
	tm, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(time.Millisecond),
		hashedwheel.WithTicksPerWheel(64))
	require.NoError(t, err)
	const n = 4000
	type entry struct {
		to    *hashedwheel.Timeout
		ran   atomic.Int32
		ranAt atomic.Int64 // nanoseconds since start
	}
	start := time.Now()
	entries := make([]*entry, n)
	for i := range entries {
		e := &entry{}
		entries[i] = e
		to, err := tm.AfterFunc(time.Duration(i%7)*time.Millisecond, func() {
			e.ranAt.Store(int64(time.Since(start)))
			e.ran.Add(1)
		})
		require.NoError(t, err)
		e.to = to
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := g; i < n; i += 4 {
				e := entries[i]
				switch i % 3 {
				case 0:
					e.to.Reset(time.Duration(i%5) * time.Millisecond)
				case 1:
					e.to.Cancel()
				default:
					e.to.Reset(time.Hour) // Stop cancels these
				}
			}
		})
	}
	wg.Wait()
	time.Sleep(20 * time.Millisecond)
	returned := map[*hashedwheel.Timeout]bool{}
	for _, to := range tm.Stop() {
		returned[to] = true
	}
	for i, e := range entries {
		ran := e.ran.Load()
		switch {
		case e.to.IsExpired():
			assert.Equal(t, int32(1), ran, "timeout %d expired but ran %d times", i, ran)
			// A failed Reset changes nothing, so Deadline is that of the
			// last Reset that returned true.
			ranAt := start.Add(time.Duration(e.ranAt.Load()))
			assert.False(t, ranAt.Before(e.to.Deadline()), "timeout %d ran before its deadline", i)
		case e.to.IsCancelled():
			assert.Zero(t, ran, "timeout %d cancelled but ran", i)
		default:
			t.Errorf("timeout %d neither expired nor cancelled after Stop", i)
		}
		if returned[e.to] {
			assert.True(t, e.to.IsCancelled())
		}
	}
	assert.Zero(t, tm.PendingTimeouts())
}

func TestGuarantee11ResetLaterWhileTheWorkerLinksItIsNotLateByATurn(t *testing.T) {
	// Real clock: a goroutine keeps moving a new timeout's deadline later
	// while the worker links it. The bucket's lower bound must come from the
	// deadline that chose the bucket, or the worker sleeps past the visit at
	// which the timeout is due and runs it a wheel turn (here 65s) late.
	if testing.Short() {
		t.Skip("real clock")
	}
	for range 20 {
		tm, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(time.Millisecond),
			hashedwheel.WithTicksPerWheel(1<<16))
		require.NoError(t, err)
		require.NoError(t, tm.Start())
		ran := make(chan struct{})
		var target atomic.Pointer[hashedwheel.Timeout]
		var wg sync.WaitGroup
		wg.Go(func() {
			var to *hashedwheel.Timeout
			for to = target.Load(); to == nil; to = target.Load() {
				runtime.Gosched()
			}
			for k := 1; k <= 100; k++ {
				to.Reset(20*time.Millisecond + time.Duration(k)*time.Millisecond)
			}
		})
		to := mustSchedule(t, tm, 20*time.Millisecond, func() { close(ran) })
		target.Store(to)
		wg.Wait()
		select {
		case <-ran:
		case <-time.After(time.Until(to.Deadline()) + 5*time.Second):
			t.Errorf("not run 5s after its deadline: %v", to)
		}
		tm.Stop()
	}
}

// goexitOnCancel calls runtime.Goexit in its first Cancelled call, as
// t.FailNow in a test's callback does.
type goexitOnCancel struct{ calls atomic.Int32 }

func (g *goexitOnCancel) Run(*hashedwheel.Timeout) {}
func (g *goexitOnCancel) Cancelled(*hashedwheel.Timeout) {
	if g.calls.Add(1) == 1 {
		runtime.Goexit()
	}
}

func TestGuarantee13GoexitInCancelledDuringStopLosesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, _ := startedTimer(t, hashedwheel.WithLogger(slog.New(slog.DiscardHandler)))
		time.Sleep(5 * time.Millisecond)
		b := mustSchedule(t, tm, time.Hour+10*time.Millisecond, func() {}) // bucket 1
		task := &goexitOnCancel{}
		a, err := tm.NewTimeout(task, time.Hour+60*time.Millisecond) // bucket 6
		require.NoError(t, err)
		time.Sleep(10 * time.Millisecond) // both linked by the end of the tick
		synctest.Wait()
		require.True(t, a.Cancel())
		assert.Equal(t, []*hashedwheel.Timeout{b}, tm.Stop())
		assert.Equal(t, int32(1), task.calls.Load(), "Cancelled calls")
	})
}

func TestGuarantee12PanickingExecutorDoesNotStrandAPeriodicTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		tm, _ := startedTimer(t, hashedwheel.WithLogger(slog.New(slog.DiscardHandler)),
			hashedwheel.WithTaskExecutor(func(task func()) {
				if calls.Add(1) == 1 {
					panic("executor queue full")
				}
				task()
			}))
		task := &cancelRecorder{cancelled: make(chan *hashedwheel.Timeout, 1)}
		to, err := tm.NewPeriodicTimeout(task, 50*time.Millisecond)
		require.NoError(t, err)
		time.Sleep(time.Second)
		// The run handed out at 60ms was lost with the panic; the timeout
		// came back for the runs due at 100ms, 150ms, ..., 950ms.
		assert.Equal(t, int32(18), task.ran.Load())
		require.True(t, to.Cancel())
		time.Sleep(20 * time.Millisecond)
		assert.Len(t, task.cancelled, 1, "Cancelled not called within a tick")
	})
}

func TestGuarantee12PooledPeriodicRunCancelledBeforeItStartsDoesNotRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, _ := startedTimer(t, hashedwheel.WithTaskWorkers(1))
		release := make(chan struct{})
		// Holds the pool from 10ms: a tick before the run is handed out,
		// as the order within a tick is not promised.
		mustSchedule(t, tm, 5*time.Millisecond, func() { <-release })
		var runs atomic.Int32
		p, err := tm.Every(15*time.Millisecond, func() { runs.Add(1) })
		require.NoError(t, err)
		time.Sleep(25 * time.Millisecond) // the run, handed out at 20ms, waits
		require.True(t, p.Cancel())
		close(release)
		time.Sleep(100 * time.Millisecond)
		assert.Zero(t, runs.Load(), "a run handed out before Cancel started after it")
	})
}

func TestGuarantee12PeriodicWithThePeriodOfATickRunsEveryTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, start := startedTimer(t)
		log := &runLog{start: start}
		_, err := tm.Every(jobTick, log.record)
		require.NoError(t, err)
		time.Sleep(105 * time.Millisecond)
		// Due at 10ms, 20ms, ...: each at the end of its tick, a tick later.
		assert.Equal(t, []time.Duration{20 * time.Millisecond, 30 * time.Millisecond, 40 * time.Millisecond,
			50 * time.Millisecond, 60 * time.Millisecond, 70 * time.Millisecond, 80 * time.Millisecond,
			90 * time.Millisecond, 100 * time.Millisecond}, log.runs())
	})
}

// countingCancel counts its Cancelled calls.
type countingCancel struct{ calls atomic.Int64 }

func (c *countingCancel) Run(*hashedwheel.Timeout)       {}
func (c *countingCancel) Cancelled(*hashedwheel.Timeout) { c.calls.Add(1) }

func TestGuarantee15StatsCountEachCancelledTimeoutOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Timeouts cancelled while queued (dropped as the worker takes the
		// queue, or kept for their Cancelled call), periodic ones cancelled
		// while queued, ones cancelled in a bucket, and ones Stop cancels:
		// Stats counts each exactly once, and each CancelledTask hears of
		// its cancellation once.
		tm, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(jobTick))
		require.NoError(t, err)
		defer tm.Stop()
		const goroutines, each = 4, 5_000
		var notified countingCancel
		linked := make(chan *hashedwheel.Timeout, goroutines*each)
		var wg sync.WaitGroup
		for range goroutines {
			wg.Go(func() {
				for i := range each {
					switch i % 5 {
					case 0:
						mustSchedule(t, tm, time.Hour, func() {}).Cancel()
					case 1:
						to, err := tm.NewTimeout(&notified, time.Hour)
						require.NoError(t, err)
						to.Cancel()
					case 2:
						to, err := tm.Every(time.Hour, func() {})
						require.NoError(t, err)
						to.Cancel()
					case 3:
						linked <- mustSchedule(t, tm, time.Hour, func() {})
					case 4:
						mustSchedule(t, tm, time.Hour, func() {}) // left to Stop
					}
				}
			})
		}
		wg.Wait()
		time.Sleep(jobTick) // every timeout reaches the wheel or is dropped
		synctest.Wait()
		close(linked)
		for to := range linked {
			require.True(t, to.Cancel())
		}
		time.Sleep(jobTick)
		synctest.Wait()
		const perKind = goroutines * each / 5
		assert.Equal(t, uint64(4*perKind), tm.Stats().Cancelled, "all but those left to Stop")
		assert.Equal(t, int64(perKind), notified.calls.Load())

		assert.Len(t, tm.Stop(), perKind)
		assert.Equal(t, uint64(5*perKind), tm.Stats().Cancelled)
		assert.Equal(t, int64(perKind), notified.calls.Load())
	})
}
