package hashedwheel

import (
	"bytes"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTooManyLiveTimersWarnsOnce(t *testing.T) {
	tooManyTimersLogged.Store(false)
	t.Cleanup(func() { tooManyTimersLogged.Store(false) })
	before := liveTimers.Load()

	var logs bytes.Buffer // NewTimer logs synchronously, from this goroutine
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	var timers []*Timer
	for range instanceCountLimit + 10 - before {
		tm, err := NewTimer(WithLogger(logger))
		require.NoError(t, err)
		timers = append(timers, tm)
	}
	assert.Equal(t, 1, strings.Count(logs.String(), "too many live timers"), logs.String())
	assert.Contains(t, logs.String(), "live=65")

	for _, tm := range timers {
		tm.Stop()
		tm.Stop() // counted out once
	}
	assert.Equal(t, before, liveTimers.Load())
}

func TestDroppedTimerIsCountedOutWhenCollected(t *testing.T) {
	before := liveTimers.Load()
	func() {
		_, err := NewTimer()
		require.NoError(t, err)
	}()
	require.Equal(t, before+1, liveTimers.Load())
	assert.Eventually(t, func() bool {
		runtime.GC()
		return liveTimers.Load() == before
	}, 5*time.Second, 10*time.Millisecond, "a never-started timer that was collected still counts as live")
}

// TestTimersWithoutAWorkerAreNotCountedAsLive: a Timer made WithoutWorker
// has no goroutine to leak, so any number of them (one per event loop, say)
// neither counts among the live timers nor brings the warning.
func TestTimersWithoutAWorkerAreNotCountedAsLive(t *testing.T) {
	tooManyTimersLogged.Store(false)
	t.Cleanup(func() { tooManyTimersLogged.Store(false) })
	before := liveTimers.Load()
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	for range 2 * instanceCountLimit {
		tm, err := NewTimer(WithoutWorker(), WithLogger(logger))
		require.NoError(t, err)
		defer tm.Stop()
	}
	assert.Equal(t, before, liveTimers.Load())
	assert.Empty(t, logs.String())
}
