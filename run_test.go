package hashedwheel_test

import (
	"context"
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

// These tests check how tasks are run: through a WithTaskExecutor, and what
// happens when a task, an executor or the logger panics (guarantee 6).

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

// TestTaskExecutorThatDropsARun holds what WithTaskExecutor's godoc says of
// a run its executor never calls: a one-shot task never runs and its
// timeout is expired; a periodic timeout stays pending on that run, with no
// later run and Reset false, until Cancel or Stop. Stop then ends the runs
// that never started, as they never will: it counts their cancels, makes
// the Cancelled call owed, and the Timeout may be armed again.
func TestTaskExecutorThatDropsARun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var handed atomic.Int32
		tm, _ := startedTimer(t, hashedwheel.WithTaskExecutor(func(func()) { handed.Add(1) }))
		var ran atomic.Int32
		oneShot := mustSchedule(t, tm, 5*time.Millisecond, func() { ran.Add(1) })
		cancelled, err := tm.Every(20*time.Millisecond, func() { ran.Add(1) })
		require.NoError(t, err)
		task := &cancelRecorder{cancelled: make(chan *hashedwheel.Timeout, 1)}
		kept, err := tm.NewPeriodicTimeout(task, 20*time.Millisecond)
		require.NoError(t, err)
		time.Sleep(time.Second)
		synctest.Wait()

		assert.Equal(t, int32(3), handed.Load(), "each timeout handed out once, then no more")
		assert.Zero(t, ran.Load()+task.ran.Load(), "a dropped task ran")
		assert.True(t, oneShot.IsExpired())
		assert.Equal(t, uint64(3), tm.Stats().Expired)
		assert.Equal(t, int64(2), tm.PendingTimeouts(), "the periodic timeouts are pending on their runs")
		assert.False(t, kept.IsExpired())
		assert.False(t, kept.Reset(time.Millisecond), "Reset of a periodic timeout out on a run")

		require.True(t, cancelled.Cancel())
		assert.Equal(t, int64(1), tm.PendingTimeouts())
		require.True(t, kept.Cancel())
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Empty(t, task.cancelled, "Cancelled called while the run is out")
		assert.Zero(t, tm.Stats().Cancelled, "counted as cancelled before Stop")
		assert.Empty(t, tm.Stop(), "Stop returned a timeout Cancel cancelled")
		assert.Equal(t, uint64(2), tm.Stats().Cancelled, "Stop counts the cancels of the runs out")
		require.Len(t, task.cancelled, 1, "Stop made the Cancelled call of the run that never started")
		assert.Same(t, kept, <-task.cancelled)
		tm2, _ := startedTimer(t)
		assert.NoError(t, tm2.Schedule(kept, task, 0), "a Timeout whose run never started, after Stop")
	})
}

// TestTaskExecutorThatDropsAPeriodicRunLeavesItToStop: Stop returns a
// periodic timeout whose run the executor dropped, cancelled.
func TestTaskExecutorThatDropsAPeriodicRunLeavesItToStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, _ := startedTimer(t, hashedwheel.WithTaskExecutor(func(func()) {}))
		to, err := tm.Every(20*time.Millisecond, func() {})
		require.NoError(t, err)
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, []*hashedwheel.Timeout{to}, tm.Stop())
		assert.True(t, to.IsCancelled())
	})
}

func TestGuarantee6PanickingTaskIsLoggedAndWorkerGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logger, logs := newLogger()
		tm := newTimer(t, hashedwheel.WithLogger(logger))
		bad := mustSchedule(t, tm, 0, func() { panic("boom") })
		ran := make(chan struct{})
		// A tick later: within a tick the order is not promised.
		mustSchedule(t, tm, tm.TickDuration(), func() { close(ran) })
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

// panickingHandler is a slog.Handler whose Handle panics.
type panickingHandler struct{ slog.Handler }

func (panickingHandler) Enabled(context.Context, slog.Level) bool  { return true }
func (panickingHandler) Handle(context.Context, slog.Record) error { panic("handler broke") }

func TestGuarantee6PanickingLoggerDoesNotKillTheWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t, hashedwheel.WithLogger(slog.New(panickingHandler{})))
		mustSchedule(t, tm, 0, func() { panic("task broke") })
		var ran atomic.Bool
		mustSchedule(t, tm, time.Second, func() { ran.Store(true) })
		time.Sleep(2 * time.Second)
		assert.True(t, ran.Load(), "the worker stopped after a logger panicked")
	})
}

// TestGuarantee2ExecutorThatPanicsOrExitsDoesNotStrandTheTimeout: an
// executor that panics, or ends its goroutine by runtime.Goexit, before it
// calls the task has dropped the run. The Timeout ends as if its run had
// returned: a one-shot one may be scheduled again at once, and runs; armed
// again, Stop cancels and returns it like any pending Timeout.
func TestGuarantee2ExecutorThatPanicsOrExitsDoesNotStrandTheTimeout(t *testing.T) {
	for name, drop := range map[string]func(){
		"panic":  func() { panic("executor full") },
		"Goexit": runtime.Goexit,
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				logger, logs := newLogger()
				var calls atomic.Int32
				tm, _ := startedTimer(t, hashedwheel.WithLogger(logger), hashedwheel.WithTaskExecutor(func(task func()) {
					if calls.Add(1) == 1 {
						drop()
					}
					task()
				}))
				var s session
				var ran atomic.Int32
				task := hashedwheel.TimerFunc(func(*hashedwheel.Timeout) { ran.Add(1) })
				require.NoError(t, tm.Schedule(&s.timeout, task, 0))
				time.Sleep(50 * time.Millisecond)
				synctest.Wait()
				require.Contains(t, logs.String(), map[string]string{"panic": "executor full", "Goexit": "Goexit"}[name])
				assert.True(t, s.timeout.IsExpired(), "a run handed out is expired, dropped or not")
				assert.Zero(t, ran.Load(), "the task whose executor dropped it ran")

				require.NoError(t, tm.Schedule(&s.timeout, task, 0), "Schedule after the executor dropped the run")
				time.Sleep(50 * time.Millisecond)
				synctest.Wait()
				assert.Equal(t, int32(1), ran.Load(), "the Timeout scheduled again after its executor dropped the run did not run")

				require.NoError(t, tm.Schedule(&s.timeout, task, time.Hour))
				assert.Equal(t, []*hashedwheel.Timeout{&s.timeout}, tm.Stop(), "Stop returns the Timeout armed again")
				assert.False(t, s.timeout.IsPending(), "pending after Stop")
			})
		})
	}
}

// TestGuarantee2PanickingExecutorDoesNotStrandAnArmMadeWhileTheRunWasOut:
// a Timeout armed again (by another goroutine) after its run was handed to
// an executor that then panics: the new arm is not held by the dropped run;
// it runs at its deadline.
func TestGuarantee2PanickingExecutorDoesNotStrandAnArmMadeWhileTheRunWasOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logger, _ := newLogger()
		var s session
		var ran atomic.Int32
		task := hashedwheel.TimerFunc(func(*hashedwheel.Timeout) { ran.Add(1) })
		var tm *hashedwheel.Timer
		var calls atomic.Int32
		tm, _ = startedTimer(t, hashedwheel.WithLogger(logger), hashedwheel.WithTaskExecutor(func(f func()) {
			if calls.Add(1) == 1 {
				// The run is out: arm the Timeout again, then drop the run.
				if err := tm.Schedule(&s.timeout, task, 30*time.Millisecond); err != nil {
					t.Errorf("Schedule while the run is out: %v", err)
				}
				panic("executor full")
			}
			f()
		}))
		require.NoError(t, tm.Schedule(&s.timeout, task, 0))
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		assert.Equal(t, int32(1), ran.Load(), "the arm made while the dropped run was out did not run")
		assert.False(t, s.timeout.IsPending())
		assert.Empty(t, tm.Stop())
	})
}

// TestTaskExecutorThatCallsATaskTwiceRunsItOnce: an executor that calls
// each func it is given twice, the second time as it is given the next one:
// every task runs once, and no call runs another Timeout's task.
func TestTaskExecutorThatCallsATaskTwiceRunsItOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logger, logs := newLogger()
		var prev func()
		tm, _ := startedTimer(t, hashedwheel.WithLogger(logger), hashedwheel.WithTaskExecutor(func(f func()) {
			if prev != nil {
				prev() // its run has returned: this call must do nothing
			}
			f()
			f()
			prev = f
		}))
		const n = 5
		var runs [n]atomic.Int32
		for i := range n {
			mustSchedule(t, tm, time.Duration(i)*20*time.Millisecond, func() { runs[i].Add(1) })
		}
		time.Sleep(200 * time.Millisecond)
		synctest.Wait()
		for i := range n {
			assert.Equal(t, int32(1), runs[i].Load(), "runs of task %d", i)
		}
		assert.NotContains(t, logs.String(), "panicked")
	})
}
