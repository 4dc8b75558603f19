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

func TestGuarantee7TimeoutPushedAsStopComesIsReturnedByStop(t *testing.T) {
	// A NewTimeout (or Schedule) that pushes its timeout just as Stop comes,
	// having found the timer started: the stopping worker takes it and
	// cancels it, Stop returns it, and its Cancelled is not called (Stop
	// cancelled it). A push after the worker has let go of its queues fails
	// (see TestStoppedTimerRefusesPushes).
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
				to := newTimeoutOn(tm)
				to.task = task
				to.deadline.Store(int64(time.Hour))
				tm.pendingFor(to).Add(1)
				to.initState(stPending | heldNew | wantsCancelled(task))
				require.True(t, tm.shardFor(to).timeouts.push(to))
				// ...then Stop comes, and waits for the worker.
				stopped := make(chan []*Timeout)
				go func() { stopped <- tm.Stop() }()
				synctest.Wait()
				require.True(t, tm.isStopped())
				close(release)
				assert.Equal(t, []*Timeout{to}, <-stopped)
				assert.True(t, to.IsCancelled())
				assert.Equal(t, heldNowhere, to.load().held(), "the worker let go of it")
				assert.Equal(t, uint64(1), tm.Stats().Cancelled)
				if c, ok := task.(*cancelCounter); ok {
					assert.Zero(t, c.calls.Load())
				}
			})
		})
	}
}

func TestStoppedTimerRefusesPushes(t *testing.T) {
	// Once Stop has returned, the worker has let go of its queues: a push
	// onto one fails, so that whoever pushed knows nobody will take it.
	synctest.Test(t, func(t *testing.T) {
		tm, err := NewTimer(WithTickDuration(10 * time.Millisecond))
		require.NoError(t, err)
		require.NoError(t, tm.Start())
		tm.Stop()
		for i := range tm.shards {
			assert.False(t, tm.shards[i].timeouts.push(newTimeoutOn(tm)), "shard %d", i)
		}
		assert.False(t, tm.changes.push(newTimeoutOn(tm)))
	})
}

// TestGuarantee7TimeoutPushedWhileStopWaitsForThePoolIsCancelledAtOnce: a
// NewTimeout (or Schedule) whose check found the Timer started, and whose
// push comes after the stopping worker has cancelled what was pending,
// while it waits for a pooled task: the worker takes it and cancels it at
// once, not when the pool is done, so that a deadline context falls back to
// the runtime's timer and a pooled task that waits on it returns.
func TestGuarantee7TimeoutPushedWhileStopWaitsForThePoolIsCancelledAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, err := NewTimer(WithTickDuration(10*time.Millisecond), WithTaskWorkers(1))
		require.NoError(t, err)
		running, release := make(chan struct{}), make(chan struct{})
		_, err = tm.AfterFunc(0, func() { close(running); <-release })
		require.NoError(t, err)
		<-running // the pool is busy until release
		stopped := make(chan []*Timeout)
		go func() { stopped <- tm.Stop() }()
		synctest.Wait() // the worker has cancelled what was pending, and waits for the pool

		// What scheduleTimeout does from its push on, its check of the
		// Timer's state having come before Stop.
		to := newTimeoutOn(tm)
		to.task = TimerFunc(func(*Timeout) {})
		to.deadline.Store(int64(time.Hour))
		tm.pendingFor(to).Add(1)
		to.initState(stPending | heldNew)
		require.True(t, tm.shardFor(to).timeouts.push(to), "the queues are closed already")
		tm.nudgeWorker(tm.elapsed())
		synctest.Wait()
		assert.True(t, to.IsCancelled(), "not cancelled while Stop waits for the pool")

		close(release)
		assert.Equal(t, []*Timeout{to}, <-stopped)
		assert.Equal(t, uint64(1), tm.Stats().Cancelled)
	})
}
