package hashedwheel_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hashedwheel/hashedwheel"
)

// These tests run on the real clock. They assert "never early" strictly and
// "not too late" loosely, so that a loaded machine cannot fail them.

// lateBound is how late a task may run before a test calls it a failure. A
// tick plus scheduling noise is the norm; a busy CI machine running the race
// detector can stall a goroutine for far longer.
const lateBound = 5 * time.Second

func TestGuarantee1ExecutionOnTime(t *testing.T) {
	// Netty's testExecutionOnTime, smaller: many timeouts, each timed from
	// its own NewTimeout call.
	const tick, delay, n = 20 * time.Millisecond, 50 * time.Millisecond, 10_000
	tm := newTimer(t, hashedwheel.WithTickDuration(tick))
	var wg sync.WaitGroup
	var early, late atomic.Int64
	var maxLate atomic.Int64
	for range n {
		wg.Add(1)
		scheduledAt := time.Now()
		mustSchedule(t, tm, delay, func() {
			defer wg.Done()
			took := time.Since(scheduledAt)
			if took < delay {
				early.Add(1)
			}
			if took > delay+lateBound {
				late.Add(1)
			}
			for {
				m := maxLate.Load()
				if int64(took-delay) <= m || maxLate.CompareAndSwap(m, int64(took-delay)) {
					break
				}
			}
		})
	}
	wg.Wait()
	assert.Zero(t, early.Load(), "tasks ran before their delay")
	assert.Zero(t, late.Load(), "tasks ran more than %v late", lateBound)
	t.Logf("%d timeouts of %v at tick %v: latest %v after its delay", n, delay, tick, time.Duration(maxLate.Load()))
}

func TestGuarantee1RealClockNeverEarlyAtOneMillisecondTicks(t *testing.T) {
	tm := newTimer(t, hashedwheel.WithTickDuration(time.Millisecond), hashedwheel.WithTicksPerWheel(16))
	var wg sync.WaitGroup
	for i := range 500 {
		wg.Add(1)
		delay := time.Duration(i%40) * 500 * time.Microsecond
		scheduledAt := time.Now()
		var to *hashedwheel.Timeout
		var ready sync.WaitGroup
		ready.Add(1)
		to = mustSchedule(t, tm, delay, func() {
			defer wg.Done()
			ready.Wait()
			now := time.Now()
			assert.False(t, now.Before(to.Deadline()), "ran before Deadline()")
			assert.GreaterOrEqual(t, now.Sub(scheduledAt), delay, "ran before its delay")
		})
		ready.Done()
	}
	wg.Wait()
}

func TestGuarantee7StopReturnsPromptlyOnTheRealClock(t *testing.T) {
	tm, err := hashedwheel.NewTimer()
	require.NoError(t, err)
	for range 5 {
		mustSchedule(t, tm, 5*time.Second, func() { t.Error("ran after Stop") })
	}
	begin := time.Now()
	stopped := tm.Stop()
	assert.Len(t, stopped, 5)
	assert.Less(t, time.Since(begin), lateBound, "Stop of an idle timer must not wait for a tick")
}
