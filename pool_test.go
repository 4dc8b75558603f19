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

// These tests hold guarantee 14: the task pool of WithTaskWorkers.

func TestGuarantee14SlowPooledTaskDoesNotDelayExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, start := startedTimer(t, hashedwheel.WithTaskWorkers(2))
		log := &runLog{start: start}
		release := make(chan struct{})
		mustSchedule(t, tm, 0, func() { <-release }) // a blocked write
		for i := range 5 {
			mustSchedule(t, tm, time.Duration(i+1)*20*time.Millisecond, log.record)
		}
		time.Sleep(200 * time.Millisecond)
		assert.Equal(t, []time.Duration{30 * time.Millisecond, 50 * time.Millisecond, 70 * time.Millisecond,
			90 * time.Millisecond, 110 * time.Millisecond}, log.runs())
		close(release)
	})
}

func TestGuarantee14StopWaitsForPooledTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, _ := startedTimer(t, hashedwheel.WithTaskWorkers(3))
		var finished atomic.Int32
		var timeouts []*hashedwheel.Timeout
		for range 5 {
			timeouts = append(timeouts, mustSchedule(t, tm, 0, func() {
				time.Sleep(time.Second)
				finished.Add(1)
			}))
		}
		// At the end of the first tick the worker hands all five out: three
		// run, two wait in the pool's queue.
		time.Sleep(15 * time.Millisecond)
		synctest.Wait()
		for _, to := range timeouts {
			require.True(t, to.IsExpired())
		}
		tm.Stop()
		// Handed out before Stop, so expired: they all run, before Stop returns.
		assert.Equal(t, int32(5), finished.Load())
	})
}

func TestGuarantee14StopFromAPooledTaskDoesNotWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, _ := startedTimer(t, hashedwheel.WithTaskWorkers(2))
		stopped := make(chan []*hashedwheel.Timeout, 1)
		mustSchedule(t, tm, 0, func() { stopped <- tm.Stop() })
		later := mustSchedule(t, tm, time.Second, func() { t.Error("ran after Stop") })
		assert.Nil(t, <-stopped)
		assert.Nil(t, tm.Stop())
		assert.True(t, later.IsCancelled())
	})
}

func TestGuarantee14TaskWorkersOptionIsValidated(t *testing.T) {
	for _, n := range []int{0, -1} {
		tm, err := hashedwheel.NewTimer(hashedwheel.WithTaskWorkers(n))
		assert.Nil(t, tm)
		assert.ErrorContains(t, err, "WithTaskWorkers")
	}
	tm, err := hashedwheel.NewTimer(hashedwheel.WithTaskWorkers(2), hashedwheel.WithTaskExecutor(func(f func()) { f() }))
	assert.Nil(t, tm)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "WithTaskWorkers")
	assert.Contains(t, err.Error(), "WithTaskExecutor")
}

// TestGuarantee14PooledTasksStartInTheOrderTheyExpire: while the only pool
// goroutine is held up, the tasks the worker hands out wait for it, and start
// once it is free in the order they were handed out: that of their
// deadlines' ticks, not of their NewTimeout calls.
func TestGuarantee14PooledTasksStartInTheOrderTheyExpire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, _ := startedTimer(t, hashedwheel.WithTaskWorkers(1))
		release := make(chan struct{})
		mustSchedule(t, tm, 0, func() { <-release }) // holds the pool from 10ms
		var mu sync.Mutex
		var started []int
		for i, d := range []time.Duration{55, 15, 35, 25, 45} {
			mustSchedule(t, tm, d*time.Millisecond, func() {
				mu.Lock()
				defer mu.Unlock()
				started = append(started, i)
			})
		}
		time.Sleep(100 * time.Millisecond) // all five handed out, one a tick
		synctest.Wait()
		mu.Lock()
		assert.Empty(t, started, "a task started while the pool was held up")
		mu.Unlock()
		close(release)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, []int{1, 3, 2, 4, 0}, started, "the order the tasks started in")
	})
}
