package hashedwheel_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/hashedwheel/hashedwheel"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newTimer returns a timer with opts that is stopped when the test ends.
func newTimer(t *testing.T, opts ...hashedwheel.Option) *hashedwheel.Timer {
	t.Helper()
	tm, err := hashedwheel.NewTimer(opts...)
	require.NoError(t, err)
	t.Cleanup(func() { tm.Stop() })
	return tm
}

// mustSchedule schedules f after delay and fails the test on error.
func mustSchedule(t *testing.T, tm *hashedwheel.Timer, delay time.Duration, f func()) *hashedwheel.Timeout {
	t.Helper()
	to, err := tm.AfterFunc(delay, f)
	require.NoError(t, err)
	return to
}

// logBuffer is an io.Writer for a test logger that goroutines may share.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func newLogger() (*slog.Logger, *logBuffer) {
	var lb logBuffer
	return slog.New(slog.NewTextHandler(&lb, nil)), &lb
}

// The tests below port Netty's HashedWheelTimerTest. Most run on the fake
// clock of a synctest bubble, where they are exact and take no real time; the
// real-clock ones are in realtime_test.go.

func TestGuarantee1NewTimeoutDoesNotRunBeforeDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t)
		start := time.Now()
		var ranAt atomic.Int64
		to := mustSchedule(t, tm, 10*time.Second, func() { ranAt.Store(int64(time.Since(start))) })

		time.Sleep(10*time.Second - time.Nanosecond)
		assert.False(t, to.IsExpired(), "expired before its deadline")
		assert.Zero(t, ranAt.Load(), "task ran before its deadline")

		time.Sleep(time.Second)
		assert.True(t, to.IsExpired(), "not expired a tick after its deadline")
		assert.GreaterOrEqual(t, time.Duration(ranAt.Load()), 10*time.Second, "task ran early")
	})
}

func TestGuarantee1NewTimeoutRunsAfterDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t)
		start := time.Now()
		fired := make(chan time.Duration, 1)
		to := mustSchedule(t, tm, 2*time.Second, func() { fired <- time.Since(start) })

		select {
		case d := <-fired:
			// 2s is the first instant of tick 20, which is processed when it
			// ends, at 2.1s.
			assert.Equal(t, 2100*time.Millisecond, d)
		case <-time.After(3 * time.Second):
			t.Fatal("a 2s timeout did not run within 3s")
		}
		assert.True(t, to.IsExpired())
		assert.False(t, to.IsCancelled())
	})
}

// timerWithThreeExpired returns a timer whose three 1ms timeouts have run,
// as Netty's shutdown tests start.
func timerWithThreeExpired(t *testing.T) *hashedwheel.Timer {
	t.Helper()
	tm, err := hashedwheel.NewTimer()
	require.NoError(t, err)
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		mustSchedule(t, tm, time.Millisecond, wg.Done)
	}
	wg.Wait()
	return tm
}

func TestGuarantee7StopReturnsNothingWhenAllExpired(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := timerWithThreeExpired(t)
		assert.Empty(t, tm.Stop(), "Stop returned timeouts although all had expired")
	})
}

func TestGuarantee7StopCancelsAndReturnsPendingTimeouts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, err := hashedwheel.NewTimer()
		require.NoError(t, err)
		var ran atomic.Int32
		var scheduled []*hashedwheel.Timeout
		for range 5 {
			scheduled = append(scheduled, mustSchedule(t, tm, 5*time.Second, func() { ran.Add(1) }))
		}
		cancelledEarly := scheduled[0]
		require.True(t, cancelledEarly.Cancel())
		time.Sleep(time.Second)

		stopped := tm.Stop()
		assert.ElementsMatch(t, scheduled[1:], stopped,
			"Stop must return exactly the timeouts still pending, not the one cancelled before")
		for _, to := range stopped {
			assert.True(t, to.IsCancelled(), "a timeout returned by Stop is not cancelled")
			assert.False(t, to.Cancel(), "Cancel succeeded on a timeout Stop cancelled")
		}
		assert.Zero(t, tm.PendingTimeouts())
		assert.Nil(t, tm.Stop(), "a second Stop returned timeouts")

		time.Sleep(10 * time.Second)
		assert.Zero(t, ran.Load(), "a task ran after Stop")
	})
}

func TestGuarantee7CallsAfterStopReturnErrTimerStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := timerWithThreeExpired(t)
		tm.Stop()

		to, err := tm.AfterFunc(time.Millisecond, func() { t.Error("task ran on a stopped timer") })
		assert.ErrorIs(t, err, hashedwheel.ErrTimerStopped)
		assert.Nil(t, to)
		to, err = tm.NewTimeout(hashedwheel.TimerFunc(func(*hashedwheel.Timeout) {}), time.Millisecond)
		assert.ErrorIs(t, err, hashedwheel.ErrTimerStopped)
		assert.Nil(t, to)
		assert.ErrorIs(t, tm.Start(), hashedwheel.ErrTimerStopped)
		assert.Zero(t, tm.PendingTimeouts(), "a rejected timeout was counted as pending")
	})
}

func TestGuarantee7StopBeforeStartMakesTimerUnusable(t *testing.T) {
	tm, err := hashedwheel.NewTimer()
	require.NoError(t, err)
	assert.Nil(t, tm.Stop())
	assert.Nil(t, tm.Stop())
	assert.ErrorIs(t, tm.Start(), hashedwheel.ErrTimerStopped)
	_, err = tm.AfterFunc(time.Millisecond, func() {})
	assert.ErrorIs(t, err, hashedwheel.ErrTimerStopped)
}

func TestStartIsIdempotent(t *testing.T) {
	tm := newTimer(t)
	require.NoError(t, tm.Start())
	require.NoError(t, tm.Start())
	done := make(chan struct{})
	mustSchedule(t, tm, 0, func() { close(done) })
	<-done
}

func TestTimerOverflowWheelLength(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A wheel of 32 ticks of 100ms turns every 3.2s; a task that
		// reschedules itself every 100ms goes round it.
		tm := newTimer(t, hashedwheel.WithTickDuration(100*time.Millisecond), hashedwheel.WithTicksPerWheel(32))
		start := time.Now()
		var runs []time.Duration
		var task hashedwheel.TimerFunc
		task = func(to *hashedwheel.Timeout) {
			runs = append(runs, time.Since(start))
			_, err := to.Timer().NewTimeout(task, 100*time.Millisecond)
			assert.NoError(t, err)
		}
		_, err := tm.NewTimeout(task, 100*time.Millisecond)
		require.NoError(t, err)

		time.Sleep(7*time.Second - time.Millisecond)
		// Stop waits for the worker, so runs can be read after it.
		assert.Len(t, tm.Stop(), 1, "the rescheduled timeout must be pending at Stop")
		// Each run is at the end of a tick, k*100ms; 100ms later is the
		// first instant of tick k+1, which is processed when it ends. So the
		// task runs every 200ms, from 0.2s, over two turns of the wheel.
		require.Len(t, runs, 34)
		for i, at := range runs {
			assert.Equal(t, time.Duration(i+1)*200*time.Millisecond, at, "run %d", i)
		}
	})
}

func TestTasksRunOnTaskExecutor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var executed atomic.Int32
		exec := func(task func()) {
			task()
			executed.Add(1)
		}
		tm := newTimer(t,
			hashedwheel.WithTickDuration(100*time.Millisecond),
			hashedwheel.WithTicksPerWheel(32),
			hashedwheel.WithMaxPendingTimeouts(2),
			hashedwheel.WithTaskExecutor(exec))
		ran := make(chan bool, 1)
		to, err := tm.NewTimeout(hashedwheel.TimerFunc(func(to *hashedwheel.Timeout) {
			ran <- to.IsExpired()
		}), 10*time.Millisecond)
		require.NoError(t, err)
		assert.True(t, <-ran, "IsExpired must be true when the task runs")
		synctest.Wait()
		assert.Equal(t, int32(1), executed.Load(), "the task was not run through the executor")
		assert.True(t, to.IsExpired())
	})
}

func TestTaskExecutorRunsTasksOffTheWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var wg sync.WaitGroup
		tm := newTimer(t, hashedwheel.WithTickDuration(10*time.Millisecond),
			hashedwheel.WithTaskExecutor(func(task func()) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					task()
				}()
			}))
		start := time.Now()
		// The first task blocks for a second. On the worker it would delay
		// the second; through this executor it must not.
		release := make(chan struct{})
		mustSchedule(t, tm, 0, func() { <-release })
		secondAt := make(chan time.Duration, 1)
		mustSchedule(t, tm, 20*time.Millisecond, func() { secondAt <- time.Since(start) })
		assert.Equal(t, 30*time.Millisecond, <-secondAt)
		close(release)
		wg.Wait()
	})
}

func TestGuarantee5TooManyPendingTimeoutsIsReturnedAtTheLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t, hashedwheel.WithTicksPerWheel(32), hashedwheel.WithMaxPendingTimeouts(2))
		mustSchedule(t, tm, 5*time.Second, func() {})
		mustSchedule(t, tm, 5*time.Second, func() {})
		to, err := tm.AfterFunc(time.Millisecond, func() { t.Error("a rejected task ran") })
		require.ErrorIs(t, err, hashedwheel.ErrTooManyPendingTimeouts)
		assert.Nil(t, to)
		assert.Contains(t, err.Error(), "2 pending, limit 2")
		assert.Equal(t, int64(2), tm.PendingTimeouts(), "a rejected timeout was counted")
	})
}

func TestGuarantee5PendingLimitFreedByCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t, hashedwheel.WithTicksPerWheel(32), hashedwheel.WithMaxPendingTimeouts(2))
		mustSchedule(t, tm, 5*time.Second, func() {})
		second := mustSchedule(t, tm, 5*time.Second, func() {})
		require.True(t, second.Cancel())

		// Netty frees the slot one tick later; here Cancel frees it at once.
		ran := make(chan struct{})
		mustSchedule(t, tm, 90*time.Millisecond, func() { close(ran) })
		<-ran
	})
}

func TestGuarantee5PendingLimitFreedByExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t, hashedwheel.WithTickDuration(25*time.Millisecond),
			hashedwheel.WithTicksPerWheel(4), hashedwheel.WithMaxPendingTimeouts(2))
		mustSchedule(t, tm, 5*time.Second, func() {})
		first := make(chan struct{})
		mustSchedule(t, tm, 90*time.Millisecond, func() { close(first) })
		<-first
		second := make(chan struct{})
		mustSchedule(t, tm, 90*time.Millisecond, func() { close(second) })
		<-second
	})
}

func TestGuarantee3PendingTimeoutsCountsScheduledUntilExpiredOrCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t)
		a := mustSchedule(t, tm, 100*time.Minute, func() {})
		b := mustSchedule(t, tm, 100*time.Minute, func() {})
		ran := make(chan struct{})
		mustSchedule(t, tm, 90*time.Millisecond, func() { close(ran) })
		assert.Equal(t, int64(3), tm.PendingTimeouts())

		assert.True(t, a.Cancel())
		assert.True(t, b.Cancel())
		assert.False(t, b.Cancel(), "a second Cancel succeeded")
		<-ran
		synctest.Wait()
		assert.Zero(t, tm.PendingTimeouts())
	})
}

func TestGuarantee4MaxDelayDoesNotOverflow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t)
		start := time.Now()
		to := mustSchedule(t, tm, math.MaxInt64, func() { t.Error("a timeout of math.MaxInt64 ran") })
		assert.True(t, to.Deadline().After(start.Add(290*365*24*time.Hour)),
			"deadline %v did not saturate far in the future", to.Deadline())
		assert.Contains(t, to.String(), "later")

		time.Sleep(time.Hour)
		assert.False(t, to.IsExpired())
		assert.True(t, to.Cancel())
		assert.Zero(t, tm.PendingTimeouts())
	})
}

func TestGuarantee3PendingCountedOnceWhenCancelledInGoalTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t)
		// Whichever task runs first blocks the worker while the others, due
		// in the same bucket, wait behind it; they are cancelled meanwhile.
		// Which one runs first is not promised: the queues of new timeouts
		// are FIFO only per shard.
		started := make(chan struct{})
		var ran atomic.Int32
		task := func() {
			if ran.Add(1) == 1 {
				close(started)
				time.Sleep(time.Second)
				return
			}
			t.Error("a timeout cancelled in its goal tick ran")
		}
		var all []*hashedwheel.Timeout
		for range 11 {
			all = append(all, mustSchedule(t, tm, 200*time.Millisecond, task))
		}
		<-started
		cancelled := 0
		for _, to := range all {
			if to.Cancel() {
				cancelled++
			}
		}
		assert.Equal(t, 10, cancelled)
		time.Sleep(2 * time.Second)
		assert.Equal(t, int32(1), ran.Load())
		assert.Zero(t, tm.PendingTimeouts())
	})
}

func TestGuarantee3CancelReturnsTrueOnlyOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t)
		to := mustSchedule(t, tm, time.Second, func() { t.Error("a cancelled timeout ran") })
		var wins atomic.Int32
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				if to.Cancel() {
					wins.Add(1)
				}
			})
		}
		wg.Wait()
		assert.Equal(t, int32(1), wins.Load())
		assert.True(t, to.IsCancelled())
		assert.False(t, to.IsExpired())
		time.Sleep(2 * time.Second)
	})
}

func TestGuarantee3CancelAfterExpiryReturnsFalse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t)
		to := mustSchedule(t, tm, 0, func() {})
		time.Sleep(200 * time.Millisecond)
		require.True(t, to.IsExpired())
		assert.False(t, to.Cancel())
		assert.False(t, to.IsCancelled())
	})
}

func TestNilTaskIsRejected(t *testing.T) {
	tm := newTimer(t)
	_, err := tm.NewTimeout(nil, time.Second)
	assert.ErrorIs(t, err, hashedwheel.ErrNilTask)
	_, err = tm.NewTimeout(hashedwheel.TimerFunc(nil), time.Second)
	assert.ErrorIs(t, err, hashedwheel.ErrNilTask)
	_, err = tm.AfterFunc(time.Second, nil)
	assert.ErrorIs(t, err, hashedwheel.ErrNilTask)
	assert.Zero(t, tm.PendingTimeouts())
}

func TestGuarantee6PanickingTaskIsLoggedAndWorkerGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logger, logs := newLogger()
		tm := newTimer(t, hashedwheel.WithLogger(logger))
		bad := mustSchedule(t, tm, 0, func() { panic("boom") })
		ran := make(chan struct{})
		mustSchedule(t, tm, 0, func() { close(ran) })
		<-ran
		assert.True(t, bad.IsExpired())
		out := logs.String()
		assert.Contains(t, out, "panicked")
		assert.Contains(t, out, "boom")
		assert.Contains(t, out, "hashedwheel.Timeout(")

		later := make(chan struct{})
		mustSchedule(t, tm, time.Second, func() { close(later) })
		<-later
	})
}

func TestGuarantee6PanickingExecutorIsLoggedAndWorkerGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logger, logs := newLogger()
		var calls atomic.Int32
		tm := newTimer(t, hashedwheel.WithLogger(logger), hashedwheel.WithTaskExecutor(func(task func()) {
			if calls.Add(1) == 1 {
				panic("executor full")
			}
			task()
		}))
		dropped := mustSchedule(t, tm, 0, func() { t.Error("the task whose executor panicked ran") })
		time.Sleep(200 * time.Millisecond)
		ran := make(chan struct{})
		mustSchedule(t, tm, 0, func() { close(ran) })
		<-ran
		assert.True(t, dropped.IsExpired())
		assert.Contains(t, logs.String(), "executor full")
	})
}

func TestGuarantee7StopFromTaskDoesNotDeadlock(t *testing.T) {
	for name, exec := range map[string]func(func()){
		"worker":          nil,
		"inline executor": func(task func()) { task() },
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var opts []hashedwheel.Option
				if exec != nil {
					opts = append(opts, hashedwheel.WithTaskExecutor(exec))
				}
				tm, err := hashedwheel.NewTimer(opts...)
				require.NoError(t, err)
				stopReturned := make(chan []*hashedwheel.Timeout, 1)
				// Two timeouts due in the same tick: whichever runs first
				// stops the timer, and the other, behind it, is cancelled.
				// Which one runs first is not promised.
				var ran atomic.Int32
				stopOrFail := func() {
					if ran.Add(1) == 1 {
						stopReturned <- tm.Stop()
						return
					}
					t.Error("a task ran after Stop")
				}
				first := mustSchedule(t, tm, 0, stopOrFail)
				second := mustSchedule(t, tm, 0, stopOrFail)
				later := mustSchedule(t, tm, time.Second, func() { t.Error("a task ran after Stop") })

				assert.Nil(t, <-stopReturned, "Stop from a task must return nil")
				assert.Nil(t, tm.Stop(), "Stop after Stop must return nil")
				// The second Stop waited for the worker, which cancelled the rest.
				assert.NotEqual(t, first.IsCancelled(), second.IsCancelled(), "not exactly one of the same tick's timeouts cancelled")
				assert.True(t, later.IsCancelled())
				assert.Zero(t, tm.PendingTimeouts())
				_, err = tm.AfterFunc(0, func() {})
				assert.ErrorIs(t, err, hashedwheel.ErrTimerStopped)
			})
		})
	}
}

func TestGuarantee7StopWaitsForRunningTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, err := hashedwheel.NewTimer()
		require.NoError(t, err)
		started := make(chan struct{})
		var finished atomic.Bool
		mustSchedule(t, tm, 0, func() {
			close(started)
			time.Sleep(time.Second)
			finished.Store(true)
		})
		<-started
		tm.Stop()
		assert.True(t, finished.Load(), "Stop returned while a task was still running")
	})
}

func TestTimeoutAccessorsAndString(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t)
		task := hashedwheel.TimerFunc(func(*hashedwheel.Timeout) {})
		start := time.Now()
		to, err := tm.NewTimeout(task, 3*time.Second)
		require.NoError(t, err)
		assert.Same(t, tm, to.Timer())
		assert.NotNil(t, to.Task())
		assert.Equal(t, start.Add(3*time.Second), to.Deadline())
		assert.Equal(t, "hashedwheel.Timeout(deadline: 3s later, task: "+fmt.Sprint(task)+")", to.String())

		to.Cancel()
		assert.Contains(t, to.String(), "3s later, cancelled")

		past := mustSchedule(t, tm, -time.Second, func() {})
		assert.Equal(t, start, past.Deadline(), "a negative delay is due now")
		time.Sleep(time.Second)
		assert.True(t, strings.HasPrefix(past.String(), "hashedwheel.Timeout(deadline: 1s ago"), past.String())
	})
}

func TestAfterFuncTaskCallsTheFunction(t *testing.T) {
	tm := newTimer(t)
	var called atomic.Bool
	to := mustSchedule(t, tm, time.Hour, func() { called.Store(true) })
	to.Task().Run(to)
	assert.True(t, called.Load())
	to.Cancel()
}

func TestErrorsAreDistinct(t *testing.T) {
	errs := []error{hashedwheel.ErrTimerStopped, hashedwheel.ErrTooManyPendingTimeouts, hashedwheel.ErrNilTask}
	for i, a := range errs {
		for j, b := range errs {
			assert.Equal(t, i == j, errors.Is(a, b), "%v vs %v", a, b)
		}
		assert.True(t, strings.HasPrefix(a.Error(), "hashedwheel: "), a.Error())
	}
}
