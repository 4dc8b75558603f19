package hashedwheel_test

import (
	"context"
	"errors"
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

// These tests reproduce what an adversarial soak of the timer found: misuse
// that must fail loudly and corner cases of the guarantees.

func TestGuarantee5PendingLimitNeverCountsRejectedCalls(t *testing.T) {
	// With a limit of 1, goroutines whose calls are rejected must never be
	// counted, even for a moment: PendingTimeouts never reads above the
	// limit, and they never take the slot that a Cancel frees.
	tm := newTimer(t, hashedwheel.WithMaxPendingTimeouts(1))
	var stop atomic.Bool
	var wg sync.WaitGroup
	var above atomic.Int64
	for range 2 {
		wg.Go(func() {
			for !stop.Load() {
				if to, err := tm.AfterFunc(time.Hour, func() {}); err == nil {
					to.Cancel() // accepted in a window the main loop left
				}
				if tm.PendingTimeouts() > 1 {
					above.Add(1)
				}
			}
		})
	}
	for range 20_000 {
		if to, err := tm.AfterFunc(time.Hour, func() {}); err == nil {
			require.True(t, to.Cancel())
		}
		if tm.PendingTimeouts() > 1 {
			above.Add(1)
		}
	}
	stop.Store(true)
	wg.Wait()
	assert.Zero(t, above.Load(), "PendingTimeouts read above the limit")
	assert.Zero(t, tm.PendingTimeouts())
}

func TestGuarantee8GoexitInATaskKeepsTheTransferCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t, hashedwheel.WithTickDuration(100*time.Millisecond),
			hashedwheel.WithLogger(slog.New(slog.DiscardHandler)))
		record, ranPerTick := countRunsPerTick(100 * time.Millisecond)
		var exited atomic.Bool
		for range 200_000 {
			mustSchedule(t, tm, 0, func() {
				record()
				if exited.CompareAndSwap(false, true) {
					runtime.Goexit()
				}
			})
		}
		time.Sleep(250 * time.Millisecond)
		assert.Equal(t, int64(100_000), ranPerTick[1].Load(), "ran at the end of tick 0")
		assert.Equal(t, int64(100_000), ranPerTick[2].Load(), "ran at the end of tick 1")
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

func TestZeroTimerFailsWithAClearError(t *testing.T) {
	var tm hashedwheel.Timer
	_, err := tm.AfterFunc(time.Second, func() {})
	require.ErrorIs(t, err, hashedwheel.ErrNotCreated)
	assert.Contains(t, err.Error(), "NewTimer")
	_, err = tm.NewTimeout(hashedwheel.TimerFunc(func(*hashedwheel.Timeout) {}), time.Second)
	assert.ErrorIs(t, err, hashedwheel.ErrNotCreated)
	_, err = tm.Every(time.Second, func() {})
	assert.ErrorIs(t, err, hashedwheel.ErrNotCreated)
	assert.ErrorIs(t, tm.Start(), hashedwheel.ErrNotCreated)
	assert.Nil(t, tm.Stop())
	assert.Zero(t, tm.PendingTimeouts())
	assert.Zero(t, tm.Stats())
	ctx, cancel := tm.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	deadline, ok := ctx.Deadline()
	assert.True(t, ok, "a context from a zero Timer still keeps its deadline")
	assert.WithinDuration(t, time.Now().Add(time.Hour), deadline, time.Minute)
	assert.NoError(t, ctx.Err())

	var to hashedwheel.Timeout
	assert.False(t, to.Cancel())
	assert.False(t, to.Reset(time.Second))
	assert.False(t, to.IsExpired())
	assert.False(t, to.IsCancelled())
	assert.Nil(t, to.Timer())
	assert.NotPanics(t, func() { _ = to.String() })
	assert.NotPanics(t, func() { _ = to.Deadline() })
}

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
