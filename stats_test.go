package hashedwheel_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/hashedwheel/hashedwheel"
)

// TestGuarantee15StatsCountARunBeforeItsTaskStarts holds guarantee 15: a run is counted
// in Expired before its task starts, so a task that blocks the worker (or an
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
				mustSchedule(t, tm, 5*time.Millisecond, func() {})
				mustSchedule(t, tm, 5*time.Millisecond, func() { <-release })
				time.Sleep(time.Minute)
				synctest.Wait() // the worker is stuck in the second task
				assert.Equal(t, uint64(2), tm.Stats().Expired, "runs handed out before a stuck task")
				close(release)
			})
		})
	}
}
