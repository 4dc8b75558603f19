package hashedwheel_test

import (
	"errors"
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

// These tests hold guarantee 7: Stop.

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

func TestGuarantee7ConcurrentStopsAllWaitForTheWorker(t *testing.T) {
	tm, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(time.Millisecond))
	require.NoError(t, err)
	release := make(chan struct{})
	started := make(chan struct{})
	var finished atomic.Bool
	mustSchedule(t, tm, 0, func() {
		close(started)
		<-release
		finished.Store(true)
	})
	for range 10 {
		mustSchedule(t, tm, time.Hour, func() {})
	}
	<-started

	var wg sync.WaitGroup
	var returned atomic.Int64
	for range 4 {
		wg.Go(func() {
			returned.Add(int64(len(tm.Stop())))
			assert.True(t, finished.Load(), "a Stop returned before the worker exited")
		})
	}
	close(release)
	wg.Wait()
	assert.Equal(t, int64(10), returned.Load(), "the pending timeouts must be returned once, by one Stop")
}

// TestGuarantee7NewTimeoutRacingStopLeavesNoTimeoutInLimbo hammers the window
// between NewTimeout's check of the timer's state and its push.
func TestGuarantee7NewTimeoutRacingStopLeavesNoTimeoutInLimbo(t *testing.T) {
	for round := range 20 {
		tm, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(time.Millisecond))
		require.NoError(t, err)
		var wg sync.WaitGroup
		results := make([][]*hashedwheel.Timeout, 4)
		ready := make(chan struct{})
		for g := range results {
			wg.Go(func() {
				<-ready
				for {
					to, err := tm.AfterFunc(time.Duration(g)*time.Millisecond, func() {})
					if errors.Is(err, hashedwheel.ErrTimerStopped) {
						return
					}
					if !assert.NoError(t, err) {
						return
					}
					results[g] = append(results[g], to)
				}
			})
		}
		close(ready)
		time.Sleep(time.Duration(round%5) * time.Millisecond)
		stopped := tm.Stop()
		wg.Wait()

		inStop := make(map[*hashedwheel.Timeout]bool)
		for _, to := range stopped {
			inStop[to] = true
		}
		for _, tos := range results {
			for _, to := range tos {
				if !to.IsExpired() && !to.IsCancelled() {
					t.Fatalf("round %d: timeout left pending after Stop: %v", round, to)
				}
				if to.IsCancelled() {
					assert.True(t, inStop[to], "round %d: a timeout cancelled by Stop was not returned by it", round)
				}
			}
		}
		assert.Zero(t, tm.PendingTimeouts())
	}
}

// TestGuarantee7StopReturnsPromptlyOnTheRealClock: Stop of an idle timer
// wakes its sleeping worker rather than wait for the end of its tick. The
// tick is an hour, so a Stop that waited for it would take an hour: lateBound
// is far below that and far above any scheduling delay of a loaded machine,
// so the check tells the two apart without flaking.
func TestGuarantee7StopReturnsPromptlyOnTheRealClock(t *testing.T) {
	tm, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(time.Hour))
	require.NoError(t, err)
	for range 5 {
		mustSchedule(t, tm, 5*time.Second, func() { t.Error("ran after Stop") })
	}
	// Nothing tells when the worker sleeps: give it the time to, as Stop
	// must return promptly either way.
	time.Sleep(10 * time.Millisecond)
	stopped := make(chan []*hashedwheel.Timeout, 1)
	go func() { stopped <- tm.Stop() }()
	select {
	case got := <-stopped:
		assert.Len(t, got, 5)
	case <-time.After(lateBound):
		t.Fatalf("Stop of an idle timer with a tick of an hour has not returned after %v", lateBound)
	}
}

// TestGuarantee7StopOfAnOwnedTimerReturnsEachTimeoutOnceWhileScheduleRaces:
// two goroutines Schedule one Timeout again and again while Stop cancels it
// (it is pending) and lets go of it. A Schedule that checked the Timer before
// Stop began, and arms the Timeout after Stop cancelled it, arms it again
// before the Timer is closed, and the same Stop cancels that arm. Whatever
// the interleaving, Stop returns the *Timeout once (guarantees 7 and 20).
//
// A stress test on the real clock, bounded in time, with a fresh Timer each
// round. Two things widen the race, which is nanoseconds wide. Before Stop,
// runtime.ReadMemStats stops the world: the goroutines are stopped wherever
// they are, inside Schedule too, and come back a little after Stop, called at
// once, is under way. And a Timeout cancelled before Stop, whose Cancelled
// call Stop makes after it has cancelled the pending Timeouts (guarantee
// 13), holds Stop there until each goroutine has ended the call it was in.
func TestGuarantee7StopOfAnOwnedTimerReturnsEachTimeoutOnceWhileScheduleRaces(t *testing.T) {
	const budget = 300 * time.Millisecond
	n := 0
	for end := time.Now().Add(budget); time.Now().Before(end); n++ {
		tm, err := hashedwheel.NewTimer(hashedwheel.WithoutWorker())
		require.NoError(t, err)
		var calls [2]atomic.Int64
		var exited [2]atomic.Bool
		holder := &cancelProbe{onCancelled: func(*hashedwheel.Timeout) {
			before := [2]int64{calls[0].Load(), calls[1].Load()}
			inCall := func(g int) bool { return calls[g].Load() == before[g] && !exited[g].Load() }
			for limit := time.Now().Add(lateBound); (inCall(0) || inCall(1)) && time.Now().Before(limit); {
				runtime.Gosched()
			}
		}}
		held, err := tm.NewTimeout(holder, time.Hour)
		require.NoError(t, err)
		tm.NextDeadline() // links it
		require.True(t, held.Cancel())

		var to hashedwheel.Timeout
		require.NoError(t, tm.Schedule(&to, nopTask, time.Hour))
		var wg sync.WaitGroup
		for g := range 2 {
			wg.Go(func() {
				defer exited[g].Store(true)
				for {
					err := tm.Schedule(&to, nopTask, time.Hour)
					calls[g].Add(1)
					switch {
					case errors.Is(err, hashedwheel.ErrTimerStopped):
						return
					case err != nil && !errors.Is(err, hashedwheel.ErrTimeoutPending):
						t.Errorf("round %d, goroutine %d: Schedule: %v", n, g, err)
						return
					}
				}
			})
		}
		for calls[0].Load()+calls[1].Load() == 0 {
			// Until one of them is under way, on the other core.
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		stopped := tm.Stop()
		wg.Wait()

		times := 0
		for _, s := range stopped {
			if s == &to {
				times++
			}
		}
		require.Equal(t, 1, times, "round %d: times Stop returned the Timeout it cancelled", n)
		require.True(t, to.IsCancelled(), "round %d", n)
		require.Equal(t, int32(1), holder.cancelled.Load(), "round %d: Cancelled calls", n)
		require.Zero(t, tm.PendingTimeouts(), "round %d", n)
	}
	t.Logf("%d rounds in %v", n, budget)
}
