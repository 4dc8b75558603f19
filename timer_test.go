package hashedwheel_test

import (
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hashedwheel/hashedwheel"
)

// The tests below port Netty's HashedWheelTimerTest: a timer's basics,
// NewTimeout and AfterFunc, never early (guarantee 1) and huge delays
// (guarantee 4). Most run on the fake clock of a synctest bubble, where they
// are exact and take no real time; the last two run on the real clock.

func TestGuarantee1NewTimeoutDoesNotRunBeforeDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t)
		start := time.Now()
		var ranAt atomic.Int64
		to := mustSchedule(t, tm, 10*time.Second, func() { ranAt.Store(int64(time.Since(start))) })

		time.Sleep(10*time.Second - time.Nanosecond)
		assert.False(t, to.IsExpired(), "expired before its deadline")
		assert.Zero(t, ranAt.Load(), "task ran before its deadline")

		time.Sleep(time.Second)
		assert.True(t, to.IsExpired(), "not expired a tick after its deadline")
		assert.GreaterOrEqual(t, time.Duration(ranAt.Load()), 10*time.Second, "task ran early")
	})
}

func TestGuarantee1NewTimeoutRunsAfterDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t)
		start := time.Now()
		fired := make(chan time.Duration, 1)
		to := mustSchedule(t, tm, 2*time.Second, func() { fired <- time.Since(start) })

		select {
		case d := <-fired:
			// 2s is the first instant of tick 20, which is processed when it
			// ends, at 2.1s.
			assert.Equal(t, 2100*time.Millisecond, d)
		case <-time.After(3 * time.Second):
			t.Fatal("a 2s timeout did not run within 3s")
		}
		assert.True(t, to.IsExpired())
		assert.False(t, to.IsCancelled())
	})
}

func TestGuarantee4MaxDelayDoesNotOverflow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t)
		start := time.Now()
		to := mustSchedule(t, tm, math.MaxInt64, func() { t.Error("a timeout of math.MaxInt64 ran") })
		assert.True(t, to.Deadline().After(start.Add(290*365*24*time.Hour)),
			"deadline %v did not saturate far in the future", to.Deadline())
		assert.Contains(t, to.String(), "later")

		time.Sleep(time.Hour)
		assert.False(t, to.IsExpired())
		assert.True(t, to.Cancel())
		assert.Zero(t, tm.PendingTimeouts())
	})
}

// TestGuarantee4NonPositiveDelayRunsAtTheNextTick: a delay of zero, a
// negative one, even math.MinInt64, is due at once: the deadline is now, and
// the task runs when the current tick ends, as with a delay of 1ns.
func TestGuarantee4NonPositiveDelayRunsAtTheNextTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, start := startedTimer(t)
		log := &runLog{start: start}
		time.Sleep(25 * time.Millisecond) // mid-tick
		for _, d := range []time.Duration{0, -time.Second, math.MinInt64, time.Nanosecond} {
			to := mustSchedule(t, tm, d, log.record)
			assert.Equal(t, start.Add(25*time.Millisecond+max(d, 0)), to.Deadline(), "delay %v", d)
		}
		time.Sleep(time.Second)
		assert.Equal(t, []time.Duration{runEnd(25 * time.Millisecond), runEnd(25 * time.Millisecond),
			runEnd(25 * time.Millisecond), runEnd(25 * time.Millisecond)}, log.runs())
	})
}

func TestStartIsIdempotent(t *testing.T) {
	tm := newTimer(t)
	require.NoError(t, tm.Start())
	require.NoError(t, tm.Start())
	done := make(chan struct{})
	mustSchedule(t, tm, 0, func() { close(done) })
	<-done
}

func TestTimerOverflowWheelLength(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A wheel of 32 ticks of 100ms turns every 3.2s; a task that
		// reschedules itself every 100ms goes round it.
		tm := newTimer(t, hashedwheel.WithTickDuration(100*time.Millisecond), hashedwheel.WithTicksPerWheel(32))
		start := time.Now()
		var runs []time.Duration
		var task hashedwheel.TimerFunc
		task = func(to *hashedwheel.Timeout) {
			runs = append(runs, time.Since(start))
			_, err := to.Timer().NewTimeout(task, 100*time.Millisecond)
			assert.NoError(t, err)
		}
		_, err := tm.NewTimeout(task, 100*time.Millisecond)
		require.NoError(t, err)

		time.Sleep(7*time.Second - time.Millisecond)
		// Stop waits for the worker, so runs can be read after it.
		assert.Len(t, tm.Stop(), 1, "the rescheduled timeout must be pending at Stop")
		// Each run is at the end of a tick, k*100ms; 100ms later is the
		// first instant of tick k+1, which is processed when it ends. So the
		// task runs every 200ms, from 0.2s, over two turns of the wheel.
		require.Len(t, runs, 34)
		for i, at := range runs {
			assert.Equal(t, time.Duration(i+1)*200*time.Millisecond, at, "run %d", i)
		}
	})
}

func TestAfterFuncTaskCallsTheFunction(t *testing.T) {
	tm := newTimer(t)
	var called atomic.Bool
	to := mustSchedule(t, tm, time.Hour, func() { called.Store(true) })
	to.Task().Run(to)
	assert.True(t, called.Load())
	to.Cancel()
}

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
