package hashedwheel_test

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hashedwheel/hashedwheel"
)

// The tests in this file reproduce what FuzzTimer found.

// TestGuarantee12PeriodicRunsOnceWhenTheWorkerCatchesUp: guarantee 12 says runs that
// fall more than one period behind are skipped, never run back to back to
// catch up. A periodic timeout already linked for its next run while another
// task blocks the worker must run once when the worker catches up, not twice
// at the same instant.
func TestGuarantee12PeriodicRunsOnceWhenTheWorkerCatchesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t, hashedwheel.WithTickDuration(time.Millisecond), hashedwheel.WithTicksPerWheel(8))
		require.NoError(t, tm.Start())
		start := time.Now()

		var mu sync.Mutex
		var runs []time.Duration
		// Runs at 2ms (due 1.5ms), then is linked for the run due at 3ms.
		_, err := tm.Every(1500*time.Microsecond, func() {
			mu.Lock()
			runs = append(runs, time.Since(start))
			mu.Unlock()
		})
		require.NoError(t, err)
		// Blocks the worker from 3ms (the end of tick 2) to 10ms.
		release := make(chan struct{})
		mustSchedule(t, tm, 2500*time.Microsecond, func() { <-release })

		time.Sleep(10 * time.Millisecond)
		close(release)
		synctest.Wait()

		mu.Lock()
		defer mu.Unlock()
		require.NotEmpty(t, runs)
		assert.Equal(t, 2*time.Millisecond, runs[0])
		for i := 1; i < len(runs); i++ {
			assert.NotEqual(t, runs[i-1], runs[i], "two runs at %v, back to back; all runs: %v", runs[i], runs)
		}
	})
}

// TestGuarantee12PeriodicRunsOnceAfterATaskInItsTickBlockedTheWorker: the skip at
// hand-out must use the time of the hand-out. A periodic timeout due in the
// same tick as a task that blocks the worker, and handed out after it, must
// run once when the worker is released, not twice at the same instant.
func TestGuarantee12PeriodicRunsOnceAfterATaskInItsTickBlockedTheWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t, hashedwheel.WithTickDuration(time.Millisecond), hashedwheel.WithTicksPerWheel(8))
		require.NoError(t, tm.Start())
		start := time.Now()

		// Both are due in tick 1, which ends at 2ms; the blocking task is
		// scheduled first. It blocks the worker from 2ms to 8ms.
		release := make(chan struct{})
		mustSchedule(t, tm, time.Millisecond, func() { <-release })
		var mu sync.Mutex
		var runs []time.Duration
		_, err := tm.Every(time.Millisecond, func() {
			mu.Lock()
			runs = append(runs, time.Since(start))
			mu.Unlock()
		})
		require.NoError(t, err)

		time.Sleep(8 * time.Millisecond)
		close(release)
		synctest.Wait()

		mu.Lock()
		defer mu.Unlock()
		require.NotEmpty(t, runs)
		for i := 1; i < len(runs); i++ {
			assert.NotEqual(t, runs[i-1], runs[i], "two runs at %v, back to back; all runs: %v", runs[i], runs)
		}
	})
}
