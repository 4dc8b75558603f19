package hashedwheel_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hashedwheel/hashedwheel"
)

// TestGuarantee17ContextIsDoneAtItsDeadlineWhileStopWaitsForThePool holds guarantee 17
// while Stop waits: a context pending when Stop is called falls back to the
// runtime's timer at once, and is done at its deadline even though Stop
// waits for a pooled task that runs long after it.
func TestGuarantee17ContextIsDoneAtItsDeadlineWhileStopWaitsForThePool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t, hashedwheel.WithTickDuration(10*time.Millisecond), hashedwheel.WithTaskWorkers(1))
		start := time.Now()
		// Runs on the pool from 100ms to 1.1s.
		mustSchedule(t, tm, 95*time.Millisecond, func() { time.Sleep(time.Second) })
		ctx, cancel := tm.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()

		time.Sleep(200 * time.Millisecond)
		stopped := make(chan []*hashedwheel.Timeout)
		go func() { stopped <- tm.Stop() }()

		<-ctx.Done()
		assert.Equal(t, 300*time.Millisecond, time.Since(start), "when the context was done")
		assert.ErrorIs(t, ctx.Err(), context.DeadlineExceeded)
		require.Len(t, <-stopped, 1, "Stop returns the context's timeout")
		assert.Equal(t, 1100*time.Millisecond, time.Since(start), "Stop returns when the pooled task has")
	})
}
