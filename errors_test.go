package hashedwheel_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hashedwheel/hashedwheel"
)

func TestErrorsAreDistinct(t *testing.T) {
	errs := []error{
		hashedwheel.ErrTimerStopped, hashedwheel.ErrTooManyPendingTimeouts, hashedwheel.ErrNilTask,
		hashedwheel.ErrInvalidPeriod, hashedwheel.ErrNotCreated, hashedwheel.ErrClockMismatch,
		hashedwheel.ErrHasWorker, hashedwheel.ErrConcurrentAdvance,
		hashedwheel.ErrTimeoutPending, hashedwheel.ErrNilTimeout,
	}
	for i, a := range errs {
		for j, b := range errs {
			assert.Equal(t, i == j, errors.Is(a, b), "%v vs %v", a, b)
		}
		assert.True(t, strings.HasPrefix(a.Error(), "hashedwheel: "), a.Error())
	}
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
