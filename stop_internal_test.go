package hashedwheel

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cancelCounter is a CancelledTask that counts its Cancelled calls.
type cancelCounter struct{ calls atomic.Int32 }

func (c *cancelCounter) Run(*Timeout)       {}
func (c *cancelCounter) Cancelled(*Timeout) { c.calls.Add(1) }

func TestGuarantee7TimeoutTakenBackFromAStoppedTimerIsNotCancelled(t *testing.T) {
	// A NewTimeout that pushes its timeout just as Stop comes takes it back
	// and returns ErrTimerStopped (see scheduleTimeout). Its caller never
	// gets the timeout, so the worker must not count it as cancelled, call
	// its Cancelled, or have Stop return it: whether the worker drops it as
	// it takes the queue (a plain task) or keeps it for a Cancelled call.
	for name, task := range map[string]TimerTask{
		"plain":     TimerFunc(func(*Timeout) {}),
		"Cancelled": &cancelCounter{},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tm, err := NewTimer(WithTickDuration(10 * time.Millisecond))
				require.NoError(t, err)
				running, release := make(chan struct{}), make(chan struct{})
				_, err = tm.AfterFunc(0, func() { close(running); <-release })
				require.NoError(t, err)
				<-running // the worker is busy until release

				// What scheduleTimeout does up to its push, having found
				// the timer started...
				to := &Timeout{timer: tm, task: task, deadline: int64(time.Hour)}
				tm.shardFor(to).pending().Add(1)
				tm.shardFor(to).timeouts.push(to)
				// ...then Stop comes, and waits for the worker...
				stopped := make(chan []*Timeout)
				go func() { stopped <- tm.Stop() }()
				synctest.Wait()
				require.True(t, tm.isStopped())
				// ...and scheduleTimeout takes the timeout back.
				require.True(t, to.cancel(stWithdrawn))
				close(release)

				assert.Empty(t, <-stopped)
				assert.Zero(t, tm.Stats().Cancelled)
				assert.Zero(t, tm.PendingTimeouts())
				if c, ok := task.(*cancelCounter); ok {
					assert.Zero(t, c.calls.Load())
				}
			})
		})
	}
}
