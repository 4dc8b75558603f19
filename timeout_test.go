package hashedwheel_test

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hashedwheel/hashedwheel"
)

// These tests check a Timeout: Cancel (guarantee 3), its accessors and
// String.

func TestGuarantee3CancelReturnsTrueOnlyOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t)
		to := mustSchedule(t, tm, time.Second, func() { t.Error("a cancelled timeout ran") })
		var wins atomic.Int32
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				if to.Cancel() {
					wins.Add(1)
				}
			})
		}
		wg.Wait()
		assert.Equal(t, int32(1), wins.Load())
		assert.True(t, to.IsCancelled())
		assert.False(t, to.IsExpired())
		time.Sleep(2 * time.Second)
	})
}

func TestGuarantee3CancelAfterExpiryReturnsFalse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t)
		to := mustSchedule(t, tm, 0, func() {})
		time.Sleep(200 * time.Millisecond)
		require.True(t, to.IsExpired())
		assert.False(t, to.Cancel())
		assert.False(t, to.IsCancelled())
	})
}

func TestTimeoutAccessorsAndString(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t)
		task := hashedwheel.TimerFunc(func(*hashedwheel.Timeout) {})
		start := time.Now()
		to, err := tm.NewTimeout(task, 3*time.Second)
		require.NoError(t, err)
		assert.Same(t, tm, to.Timer())
		assert.NotNil(t, to.Task())
		assert.Equal(t, start.Add(3*time.Second), to.Deadline())
		assert.Equal(t, "hashedwheel.Timeout(deadline: 3s later, task: "+fmt.Sprint(task)+")", to.String())

		to.Cancel()
		assert.Contains(t, to.String(), "3s later, cancelled")

		past := mustSchedule(t, tm, -time.Second, func() {})
		assert.Equal(t, start, past.Deadline(), "a negative delay is due now")
		time.Sleep(time.Second)
		assert.True(t, strings.HasPrefix(past.String(), "hashedwheel.Timeout(deadline: 1s ago"), past.String())
	})
}
