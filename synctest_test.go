package hashedwheel_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hashedwheel/hashedwheel"
)

// These tests check a Timer and testing/synctest bubbles (guarantee 10): a
// Timer made in a bubble runs on its fake clock, and one used across a
// bubble's border fails with ErrClockMismatch rather than keep deadlines
// decades off.

func TestTimerStartedOutsideABubbleFailsInside(t *testing.T) {
	tm := newTimer(t)
	require.NoError(t, tm.Start())
	synctest.Test(t, func(t *testing.T) {
		_, err := tm.AfterFunc(time.Hour, func() {})
		require.ErrorIs(t, err, hashedwheel.ErrClockMismatch)
		assert.Contains(t, err.Error(), "synctest")
	})
}

func TestTimerStartedInABubbleFailsOutside(t *testing.T) {
	// A goroutine outside the bubble uses a Timer and a Timeout of the
	// bubble: its deadlines would be decades off.
	outside := make(chan *hashedwheel.Timeout)
	results := make(chan error)
	go func() {
		to := <-outside
		_, err := to.Timer().AfterFunc(time.Hour, func() {})
		if to.Reset(time.Second) {
			err = errors.New("Reset from outside the bubble returned true")
		}
		results <- err
	}()
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t)
		outside <- mustSchedule(t, tm, time.Hour, func() {})
		assert.ErrorIs(t, <-results, hashedwheel.ErrClockMismatch, "a Timer of a bubble used outside it")
		assert.Equal(t, int64(1), tm.PendingTimeouts())
	})
}

func TestTimerCreatedOutsideABubbleFailsToStartInside(t *testing.T) {
	tm := newTimer(t)
	synctest.Test(t, func(t *testing.T) {
		_, err := tm.AfterFunc(time.Hour, func() {})
		require.ErrorIs(t, err, hashedwheel.ErrClockMismatch)
		assert.Contains(t, err.Error(), "synctest")
		assert.ErrorIs(t, tm.Start(), hashedwheel.ErrClockMismatch)
	})
}

// TestGuarantee17TimerFromOutsideTheBubbleKeepsAContextsDeadline: a shared
// timer made outside a bubble cannot keep a deadline inside it, so a context
// made there falls back to the runtime's timer: done at its deadline, never
// before, and done when its parent is cancelled.
func TestGuarantee17TimerFromOutsideTheBubbleKeepsAContextsDeadline(t *testing.T) {
	tm := newTimer(t, hashedwheel.WithTickDuration(ctxTick))
	_ = tm.Start()
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		ctx, cancel := tm.WithTimeout(context.Background(), 25*time.Millisecond)
		defer cancel()
		<-ctx.Done()
		if d := time.Since(start); d < 25*time.Millisecond {
			t.Fatalf("done after %v", d)
		}
		if ctx.Err() != context.DeadlineExceeded {
			t.Fatal(ctx.Err())
		}
		p, cp := context.WithCancel(context.Background())
		ctx2, cancel2 := tm.WithDeadline(p, time.Now().Add(time.Hour))
		defer cancel2()
		d2 := ctx2.Done()
		cp()
		<-d2
	})
}

// TestGuarantee10ATimerInABubbleRunsOnItsFakeClock: a Timer made in a
// bubble, whether tasks run on its worker, its pool or an executor, keeps
// the bubble's time. Its worker parks durably between ticks, so
// synctest.Wait returns and the clock moves on: a context and a timeout half
// an hour apart are done at their ticks' ends on the fake clock, and the
// fake hour takes no real one.
func TestGuarantee10ATimerInABubbleRunsOnItsFakeClock(t *testing.T) {
	realStart := time.Now()
	for name, opts := range runModes {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tm := newTimer(t, append([]hashedwheel.Option{hashedwheel.WithTickDuration(time.Second)}, opts...)...)
				start := time.Now()
				ranAt := make(chan time.Duration, 1)
				mustSchedule(t, tm, time.Hour, func() { ranAt <- time.Since(start) })
				ctx, cancel := tm.WithTimeout(context.Background(), 30*time.Minute)
				defer cancel()
				synctest.Wait() // returns only once the worker is durably blocked

				<-ctx.Done()
				assert.Equal(t, 30*time.Minute+time.Second, time.Since(start), "when the context was done")
				assert.Equal(t, time.Hour+time.Second, <-ranAt, "when the task ran")
			})
		})
	}
	assert.Less(t, time.Since(realStart), time.Minute, "three fake hours on the real clock")
}

// TestGuarantee10ATimerOfTheRealClockKeepsFailingInABubblePastItsStart: a
// Timer made and started on the real clock reads a bubble's clock, which
// starts in 2000, as long before its start; once the bubble's clock has
// passed the real date, as after it. It is another clock all the same: every
// call that schedules keeps returning ErrClockMismatch, and Reset false,
// whatever the bubble's date.
func TestGuarantee10ATimerOfTheRealClockKeepsFailingInABubblePastItsStart(t *testing.T) {
	for name, opts := range map[string][]hashedwheel.Option{
		"worker": nil,
		"owned":  {hashedwheel.WithoutWorker()},
	} {
		t.Run(name, func(t *testing.T) {
			tm := newTimer(t, opts...)
			require.NoError(t, tm.Start())
			pending := mustSchedule(t, tm, time.Hour, func() {})
			realNow := time.Now()
			synctest.Test(t, func(t *testing.T) {
				check := func(when string) {
					t.Helper()
					_, err := tm.NewTimeout(nopTask, time.Second)
					assert.ErrorIs(t, err, hashedwheel.ErrClockMismatch, "NewTimeout, %s", when)
					_, err = tm.AfterFunc(time.Second, func() {})
					assert.ErrorIs(t, err, hashedwheel.ErrClockMismatch, "AfterFunc, %s", when)
					var s session
					assert.ErrorIs(t, tm.Schedule(&s.timeout, nopTask, time.Second), hashedwheel.ErrClockMismatch, "Schedule, %s", when)
					assert.False(t, pending.Reset(time.Second), "Reset, %s", when)
				}
				check("with the bubble's clock before the Timer's start")
				time.Sleep(time.Until(realNow) + 24*time.Hour)
				require.True(t, time.Now().After(realNow), "the bubble's clock is at %v", time.Now())
				check("with the bubble's clock a day after the Timer's start")
				assert.Equal(t, int64(1), tm.PendingTimeouts(), "the failed calls scheduled nothing")
			})
			assert.Equal(t, []*hashedwheel.Timeout{pending}, tm.Stop())
		})
	}
}
