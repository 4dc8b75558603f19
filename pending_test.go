package hashedwheel_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hashedwheel/hashedwheel"
)

// These tests check PendingTimeouts (guarantee 3) and the pending limit of
// WithMaxPendingTimeouts (guarantee 5).

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
