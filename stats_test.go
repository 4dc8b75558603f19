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

// These tests hold guarantee 15: Stats.

func TestGuarantee15StatsCountWhatTheWorkerDid(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, _ := startedTimer(t)
		for range 3 {
			mustSchedule(t, tm, 15*time.Millisecond, func() {}) // run at 20ms
		}
		mustSchedule(t, tm, time.Second, func() {}).Cancel()
		mustSchedule(t, tm, time.Hour, func() {})
		// A task that blocks the worker from 60ms to 110ms, so that the
		// timeout due at 75ms is handed out at 110ms, 35ms late.
		mustSchedule(t, tm, 50*time.Millisecond, func() { time.Sleep(50 * time.Millisecond) })
		mustSchedule(t, tm, 75*time.Millisecond, func() {})
		time.Sleep(200 * time.Millisecond)
		synctest.Wait()
		s := tm.Stats()
		assert.Equal(t, hashedwheel.Stats{
			Pending:     1,
			Expired:     5,
			Cancelled:   1,
			Ticks:       s.Ticks,
			Wakeups:     s.Wakeups,
			Late:        1,
			MaxLateness: 35 * time.Millisecond,
		}, s)
		// Ticks 0 to 18 ended by 190ms; the worker slept through some.
		assert.Positive(t, s.Ticks)
		assert.LessOrEqual(t, s.Ticks, uint64(19))
		assert.Positive(t, s.Wakeups)

		periodic, err := tm.Every(20*time.Millisecond, func() {})
		require.NoError(t, err)
		time.Sleep(100 * time.Millisecond)
		require.True(t, periodic.Cancel())
		tm.Stop()
		after := tm.Stats()
		assert.Zero(t, after.Pending)
		assert.Equal(t, uint64(5+4), after.Expired, "runs at 230, 250, 270 and 290ms")
		assert.Equal(t, uint64(3), after.Cancelled, "two by Cancel and one by Stop")
		assert.GreaterOrEqual(t, after.Ticks, s.Ticks, "counters only grow")
		assert.GreaterOrEqual(t, after.Wakeups, s.Wakeups)
	})
}

// TestGuarantee15StatsCountARunBeforeItsTaskStarts: a run is counted in
// Expired before its task starts, so a task that blocks the worker (or an
// executor that waits for it) hides neither its own run nor those handed out
// before it.
func TestGuarantee15StatsCountARunBeforeItsTaskStarts(t *testing.T) {
	for name, opts := range map[string][]hashedwheel.Option{
		"worker":   nil,
		"executor": {hashedwheel.WithTaskExecutor(func(task func()) { task() })},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tm, _ := startedTimer(t, opts...)
				release := make(chan struct{})
				// In consecutive ticks: within a tick the order is not promised.
				mustSchedule(t, tm, 5*time.Millisecond, func() {})
				mustSchedule(t, tm, 15*time.Millisecond, func() { <-release })
				time.Sleep(time.Minute)
				synctest.Wait() // the worker is stuck in the second task
				assert.Equal(t, uint64(2), tm.Stats().Expired, "runs handed out before a stuck task")
				close(release)
			})
		})
	}
}

// TestGuarantee15StatsCountAPooledRunBeforeItsTaskStarts: on a pool too,
// every task sees its own run, and every run started before it, in
// Expired. The worker hands out 20,000 runs in one tick, faster than the
// pool starts them.
func TestGuarantee15StatsCountAPooledRunBeforeItsTaskStarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, _ := startedTimer(t, hashedwheel.WithTaskWorkers(4), hashedwheel.WithTickDuration(time.Millisecond))
		const n = 20_000
		var started, behind atomic.Int64
		for range n {
			mustSchedule(t, tm, time.Millisecond, func() {
				if runs := started.Add(1); tm.Stats().Expired < uint64(runs) {
					behind.Add(1)
				}
			})
		}
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		require.Equal(t, int64(n), started.Load())
		assert.Zero(t, behind.Load(), "tasks that saw Expired below the runs started")
	})
}

// TestGuarantee15StatsCountRunsLateBehindATaskThatBlocked: of three
// timeouts due in one tick, the first to run blocks the worker for a
// second; the other two are handed out a second late, and Stats says so.
// Within a tick the order is not promised, so whichever runs first blocks.
func TestGuarantee15StatsCountRunsLateBehindATaskThatBlocked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, _ := startedTimer(t)
		var first atomic.Bool
		lateness := make(chan time.Duration, 3)
		for i := range 3 {
			_, err := tm.NewTimeout(hashedwheel.TimerFunc(func(to *hashedwheel.Timeout) {
				lateness <- time.Since(to.Deadline())
				if first.CompareAndSwap(false, true) {
					time.Sleep(time.Second)
				}
			}), time.Duration(i+1)*time.Millisecond)
			require.NoError(t, err)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		var longest time.Duration
		for range 3 {
			longest = max(longest, <-lateness)
		}
		require.GreaterOrEqual(t, longest, time.Second, "the tasks saw")
		s := tm.Stats()
		assert.Equal(t, uint64(2), s.Late, "runs handed out more than two ticks late")
		assert.Equal(t, longest, s.MaxLateness)
	})
}

// countingCancel counts its Cancelled calls.
type countingCancel struct{ calls atomic.Int64 }

func (c *countingCancel) Run(*hashedwheel.Timeout)       {}
func (c *countingCancel) Cancelled(*hashedwheel.Timeout) { c.calls.Add(1) }

func TestGuarantee15StatsCountEachCancelledTimeoutOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Timeouts cancelled while queued (dropped as the worker takes the
		// queue, or kept for their Cancelled call), periodic ones cancelled
		// while queued, ones cancelled in a bucket, and ones Stop cancels:
		// Stats counts each exactly once, and each CancelledTask hears of
		// its cancellation once.
		tm, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(jobTick))
		require.NoError(t, err)
		defer tm.Stop()
		const goroutines, each = 4, 5_000
		var notified countingCancel
		linked := make(chan *hashedwheel.Timeout, goroutines*each)
		var wg sync.WaitGroup
		for range goroutines {
			wg.Go(func() {
				for i := range each {
					switch i % 5 {
					case 0:
						mustSchedule(t, tm, time.Hour, func() {}).Cancel()
					case 1:
						to, err := tm.NewTimeout(&notified, time.Hour)
						require.NoError(t, err)
						to.Cancel()
					case 2:
						to, err := tm.Every(time.Hour, func() {})
						require.NoError(t, err)
						to.Cancel()
					case 3:
						linked <- mustSchedule(t, tm, time.Hour, func() {})
					case 4:
						mustSchedule(t, tm, time.Hour, func() {}) // left to Stop
					}
				}
			})
		}
		wg.Wait()
		time.Sleep(jobTick) // every timeout reaches the wheel or is dropped
		synctest.Wait()
		close(linked)
		for to := range linked {
			require.True(t, to.Cancel())
		}
		time.Sleep(jobTick)
		synctest.Wait()
		const perKind = goroutines * each / 5
		assert.Equal(t, uint64(4*perKind), tm.Stats().Cancelled, "all but those left to Stop")
		assert.Equal(t, int64(perKind), notified.calls.Load())

		assert.Len(t, tm.Stop(), perKind)
		assert.Equal(t, uint64(5*perKind), tm.Stats().Cancelled)
		assert.Equal(t, int64(perKind), notified.calls.Load())
	})
}
