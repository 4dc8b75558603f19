package hashedwheel

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHandOutClockReadsOncePerBatchOfShortTasks: a walk that hands out
// runs whose tasks take no time reads the clock after the first run, then
// after batches that double up to 64 runs: 1000 runs cost about 1000/64
// readings, not 1000, and every run is timed exactly.
func TestHandOutClockReadsOncePerBatchOfShortTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, err := NewTimer(WithoutWorker(), WithTickDuration(time.Millisecond))
		require.NoError(t, err)
		defer tm.Stop()
		time.Sleep(time.Second)
		deadline := int64(time.Second - time.Millisecond)
		c := handOutClock{t: tm}
		for range 1000 {
			assert.Equal(t, int64(time.Second), c.handOut(deadline, false), "the hand-out time")
			c.taskRan()
		}
		c.finish()
		assert.Equal(t, 1+7+(1000-127)/64+1, c.reads, "readings: the first, batches of 1 to 64, the last")
		assert.Equal(t, time.Millisecond, time.Duration(tm.wheel.counters.maxLateness))
		assert.Zero(t, tm.wheel.counters.late)
	})
}

// TestHandOutClockHidesNoLatenessBehindATaskThatBlocked: in a long walk, a
// task blocks for a second inside a batch. No run handed out after it is
// counted less late than it was: Late counts all of them, and at most the
// runs of the batch handed out before the block besides; MaxLateness is the
// second. The runs after the block are timed exactly again: the batch after
// a slow one is one run.
func TestHandOutClockHidesNoLatenessBehindATaskThatBlocked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, err := NewTimer(WithoutWorker(), WithTickDuration(time.Millisecond))
		require.NoError(t, err)
		defer tm.Stop()
		time.Sleep(time.Second)
		deadline := int64(time.Second)
		c := handOutClock{t: tm}
		for i := range 1000 {
			c.handOut(deadline, false)
			if i == 600 {
				time.Sleep(time.Second) // the task blocks
			}
			c.taskRan()
		}
		c.finish()
		late := tm.wheel.counters.late
		assert.GreaterOrEqual(t, late, uint64(399), "runs handed out after the block")
		assert.Less(t, late, uint64(399+maxHandOutBatch), "runs counted late from before the block")
		assert.Equal(t, time.Second, time.Duration(tm.wheel.counters.maxLateness))
	})
}
