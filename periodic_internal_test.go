package hashedwheel

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stalledReset does what Reset(0) does, but leaves the push to the changes
// queue that its critical section makes for finish: the worker then finds
// the timeout marked as in the changes queue before it is there, as it finds
// one that a Reset has just pushed and it has not popped yet.
func stalledReset(t *testing.T, to *Timeout) (finish func()) {
	s := to.lock()
	if s.phase() != stPending || s.held() != heldBucket {
		to.unlock(s)
		t.Fatalf("want a pending timeout in a bucket; state %#x", uint32(s))
	}
	tm := to.timer.Load()
	to.deadline.Store(tm.elapsed())
	to.unlock(s.withHeld(heldBucketAndChanges))
	return func() {
		require.True(t, tm.changes.push(to))
		tm.wakeWorker()
	}
}

func TestPeriodicInTheChangesQueueIsNotHandedOut(t *testing.T) {
	// A periodic timeout reset to an earlier deadline is due while the
	// Reset's push to the changes queue is stalled. Handing its run out then
	// would put it in a shard queue, and the push then in the changes queue
	// too, through the same next field, breaking both queues. The worker
	// must wait until the changes queue gives it back.
	synctest.Test(t, func(t *testing.T) {
		tm, err := NewTimer(WithTickDuration(10*time.Millisecond), WithTicksPerWheel(8))
		require.NoError(t, err)
		require.NoError(t, tm.Start())
		w, err := tm.AfterFunc(time.Hour, func() {})
		require.NoError(t, err)
		var runs atomic.Int32
		p, err := tm.Every(50*time.Millisecond, func() {
			if runs.Add(1) == 1 {
				w.Cancel() // pushes to the changes queue from the run
			}
		})
		require.NoError(t, err)
		// Past the first tick, at whose end the worker links p at the
		// latest (it may take new timeouts earlier only while they arrive
		// fast).
		time.Sleep(15 * time.Millisecond)
		synctest.Wait()
		finish := stalledReset(t, p)
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		assert.Zero(t, runs.Load(), "ran while still in the changes queue")
		finish()
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		assert.Positive(t, runs.Load(), "never ran once out of the changes queue")

		var zRan atomic.Bool
		z, err := tm.AfterFunc(time.Hour, func() { zRan.Store(true) })
		require.NoError(t, err)
		time.Sleep(5 * time.Millisecond)
		require.True(t, z.Reset(30*time.Millisecond))
		time.Sleep(200 * time.Millisecond)
		synctest.Wait()
		assert.True(t, zRan.Load(), "a timeout reset earlier did not run: the changes queue is broken")
		done := make(chan struct{})
		go func() {
			tm.Stop()
			close(done)
		}()
		<-done
	})
}
