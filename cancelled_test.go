package hashedwheel_test

import (
	"log/slog"
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

// These tests hold guarantee 13: the Cancelled callback of a CancelledTask.

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

// cancelClock is a CancelledTask that records when it ran and when it was
// told, since start.
type cancelClock struct {
	start         time.Time
	mu            sync.Mutex
	ran, cancelAt []time.Duration
}

func (c *cancelClock) Run(*hashedwheel.Timeout) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ran = append(c.ran, time.Since(c.start))
}

func (c *cancelClock) Cancelled(*hashedwheel.Timeout) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cancelAt = append(c.cancelAt, time.Since(c.start))
}

// TestGuarantee13CancelledTaskIsToldOnceWhenCancelledAsItMovesDown: a
// timeout due 40.955s ahead on the 8-bucket wheel of 10ms ticks (tick 4095)
// waits in level 2, whose slots are 512 ticks wide, in the slot that starts
// at tick 3584 (35.84s); the worker moves it down into level 1 (slots of 8
// ticks) as it processes that tick, at 35.85s, then into the wheel as it
// processes tick 4088 (40.88s), at 40.89s. Cancelled a nanosecond before the
// tick of either move, in it (before the worker processes it), just after
// it, or from a task that runs in that tick, after the move: Cancel returns
// true, the task never runs, its Cancelled call comes once, at the end of
// the tick of the Cancel, and nothing else moves: a timeout due a tick
// earlier in the same slots runs at its tick.
func TestGuarantee13CancelledTaskIsToldOnceWhenCancelledAsItMovesDown(t *testing.T) {
	const ms = time.Millisecond
	for _, tt := range []struct {
		name     string
		at       time.Duration // when Cancel is called
		fromTask bool          // from a task due at `at`, which runs at the end of its tick
	}{
		{"a nanosecond before the tick it leaves level 2", 35840*ms - 1, false},
		{"in the tick it leaves level 2", 35845 * ms, false},
		{"just after it left level 2", 35850 * ms, false},
		{"from a task in the tick it leaves level 2", 35845 * ms, true},
		{"a nanosecond before the tick it leaves level 1", 40880*ms - 1, false},
		{"in the tick it leaves level 1", 40880 * ms, false},
		{"just after it left level 1", 40890 * ms, false},
		{"from a task in the tick it leaves level 1", 40889 * ms, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tm, start := startedTimer(t)
				task := &cancelClock{start: start}
				victim, err := tm.NewTimeout(task, 40955*ms)
				require.NoError(t, err)
				log := &runLog{start: start}
				mustSchedule(t, tm, 40945*ms, log.record)

				var cancelled atomic.Bool
				var cancelAt time.Duration
				if tt.fromTask {
					mustSchedule(t, tm, tt.at, func() { cancelled.Store(victim.Cancel()) })
					cancelAt = runEnd(tt.at)
				} else {
					time.Sleep(tt.at)
					synctest.Wait() // the worker first, if it wakes at this instant too
					cancelled.Store(victim.Cancel())
					cancelAt = tt.at
				}
				time.Sleep(time.Minute)
				synctest.Wait()
				require.True(t, cancelled.Load(), "Cancel of a pending timeout")
				assert.False(t, victim.Cancel(), "a second Cancel")
				task.mu.Lock()
				defer task.mu.Unlock()
				assert.Empty(t, task.ran, "a cancelled timeout ran")
				assert.Equal(t, []time.Duration{runEnd(cancelAt)}, task.cancelAt,
					"one Cancelled call, at the end of the tick of the Cancel")
				assert.Equal(t, []time.Duration{runEnd(40945 * ms)}, log.runs(), "its neighbour")
				assert.Zero(t, tm.PendingTimeouts())
				assert.Equal(t, uint64(1), tm.Stats().Cancelled)
			})
		})
	}
}

// rearmCancelGoexit is the task of a run on the pool that arms its own
// Timeout again and cancels that arm, so that the arm's Cancelled call is
// owed as the run returns; the call numbered goexitAt calls runtime.Goexit.
type rearmCancelGoexit struct {
	tm       *hashedwheel.Timer
	release  <-chan struct{}
	goexitAt int32
	calls    *atomic.Int32
	armed    *atomic.Int32
}

func (r *rearmCancelGoexit) Run(to *hashedwheel.Timeout) {
	if r.tm.Schedule(to, r, time.Hour) == nil && to.Cancel() {
		r.armed.Add(1)
	}
	<-r.release
}

func (r *rearmCancelGoexit) Cancelled(*hashedwheel.Timeout) {
	if r.calls.Add(1) == r.goexitAt {
		runtime.Goexit()
	}
}

// TestGuarantee13GoexitInCancelledWhileStopTakesWhatRunsHandBack: runs on
// the pool that return while Stop waits for them hand their Timeouts back
// (armed again and cancelled before Stop, their Cancelled calls owed), and the worker
// makes those calls as it takes them, on queues spread over the Timer's
// shards. The last call calls runtime.Goexit: the worker goes on in a new
// goroutine and finishes what Stop began, and no cancel is lost or counted
// twice.
func TestGuarantee13GoexitInCancelledWhileStopTakesWhatRunsHandBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 1000 // 64KB of Timeouts: over every shard
		tm, _ := startedTimer(t, hashedwheel.WithTaskWorkers(n), hashedwheel.WithLogger(slog.New(slog.DiscardHandler)))
		release := make(chan struct{})
		var calls, armed atomic.Int32
		task := &rearmCancelGoexit{tm: tm, release: release, goexitAt: n, calls: &calls, armed: &armed}
		timeouts := make([]hashedwheel.Timeout, n)
		for i := range timeouts {
			require.NoError(t, tm.Schedule(&timeouts[i], task, 0))
		}
		time.Sleep(15 * time.Millisecond) // all handed out to the pool, armed again and cancelled
		synctest.Wait()
		require.Equal(t, int32(n), armed.Load(), "runs that armed and cancelled their Timeout")
		stopped := make(chan []*hashedwheel.Timeout)
		go func() { stopped <- tm.Stop() }()
		synctest.Wait()
		close(release)
		assert.Empty(t, <-stopped, "Stop returned a Timeout that Cancel cancelled")
		assert.Equal(t, int32(n), calls.Load(), "Cancelled calls")
		stats := tm.Stats()
		assert.Equal(t, uint64(n), stats.Expired, "Stats().Expired")
		assert.Equal(t, uint64(n), stats.Cancelled, "Stats().Cancelled")
		for i := range timeouts {
			require.True(t, timeouts[i].IsCancelled(), "Timeout %d", i)
		}
		// Every Timeout is free: another Timer arms it.
		tm2, _ := startedTimer(t)
		for i := range timeouts {
			require.NoError(t, tm2.Schedule(&timeouts[i], nopTask, time.Hour), "Timeout %d", i)
		}
	})
}

// callNotifier is a CancelledTask whose Cancelled call closes called.
type callNotifier struct{ called chan struct{} }

func (*callNotifier) Run(*hashedwheel.Timeout)         {}
func (n *callNotifier) Cancelled(*hashedwheel.Timeout) { close(n.called) }

// TestGuarantee13PooledTaskWaitingForACancelledCallDoesNotHoldUpStop: a
// pooled task waits for the Cancelled call of a Timeout cancelled just
// before Stop. Stop waits for the pool, so the call must come while it
// waits, not after.
func TestGuarantee13PooledTaskWaitingForACancelledCallDoesNotHoldUpStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t, hashedwheel.WithTickDuration(jobTick), hashedwheel.WithTaskWorkers(1))
		n := &callNotifier{called: make(chan struct{})}
		to, err := tm.NewTimeout(n, time.Hour)
		require.NoError(t, err)
		started, gotCall := make(chan struct{}), make(chan bool, 1)
		mustSchedule(t, tm, time.Millisecond, func() {
			close(started)
			select {
			case <-n.called:
				gotCall <- true
			case <-time.After(10 * time.Second):
				gotCall <- false
			}
		})
		<-started
		require.True(t, to.Cancel())
		start := time.Now()
		tm.Stop()
		assert.True(t, <-gotCall, "the pooled task did not get the Cancelled call while Stop waited for it")
		assert.Less(t, time.Since(start), time.Second, "Stop waited for the pooled task's own timeout")
	})
}
