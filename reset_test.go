package hashedwheel_test

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hashedwheel/hashedwheel"
)

// These tests hold guarantee 11: Timeout.Reset. Its allocations are counted
// in alloc_test.go.

func TestGuarantee11ResetLaterRunsAtTheNewTickOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, start := startedTimer(t)
		log := &runLog{start: start}
		to := mustSchedule(t, tm, 25*time.Millisecond, log.record)
		time.Sleep(5 * time.Millisecond)
		// 5ms + 300ms: more than a turn of the 8-bucket wheel away.
		require.True(t, to.Reset(300*time.Millisecond))
		assert.Equal(t, start.Add(305*time.Millisecond), to.Deadline())

		time.Sleep(runEnd(305*time.Millisecond) - 5*time.Millisecond - time.Nanosecond)
		assert.Empty(t, log.runs(), "ran before the new deadline's tick")
		time.Sleep(time.Second)
		assert.Equal(t, []time.Duration{runEnd(305 * time.Millisecond)}, log.runs())
		assert.True(t, to.IsExpired())
	})
}

func TestGuarantee11ResetEarlierRunsAtTheNewTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, start := startedTimer(t)
		log := &runLog{start: start}
		// The worker sleeps until an hour's tick: Reset must wake it.
		to := mustSchedule(t, tm, time.Hour, log.record)
		time.Sleep(42 * time.Millisecond)
		require.True(t, to.Reset(30*time.Millisecond))
		time.Sleep(time.Second)
		assert.Equal(t, []time.Duration{runEnd(72 * time.Millisecond)}, log.runs())
	})
}

func TestGuarantee11ResetRepeatedlyRunsOnceAtTheLastDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, start := startedTimer(t)
		log := &runLog{start: start}
		to := mustSchedule(t, tm, 50*time.Millisecond, log.record)
		// An idle deadline re-armed on every message, later and earlier.
		delays := []time.Duration{50, 200, 20, 90, 400, 35}
		for _, d := range delays {
			time.Sleep(7 * time.Millisecond)
			require.True(t, to.Reset(d*time.Millisecond))
		}
		last := 7*time.Duration(len(delays))*time.Millisecond + 35*time.Millisecond
		time.Sleep(time.Second)
		assert.Equal(t, []time.Duration{runEnd(last)}, log.runs())
	})
}

func TestGuarantee11ResetEdgeDelays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, start := startedTimer(t)
		log := &runLog{start: start}
		time.Sleep(13 * time.Millisecond)
		to := mustSchedule(t, tm, time.Hour, log.record)
		require.True(t, to.Reset(-time.Second), "a negative delay means now")
		assert.Equal(t, start.Add(13*time.Millisecond), to.Deadline())
		time.Sleep(100 * time.Millisecond)
		assert.Equal(t, []time.Duration{runEnd(13 * time.Millisecond)}, log.runs())

		huge := mustSchedule(t, tm, time.Millisecond, log.record)
		require.True(t, huge.Reset(math.MaxInt64), "a huge delay saturates")
		time.Sleep(time.Hour)
		assert.False(t, huge.IsExpired())
		assert.Len(t, log.runs(), 1)
	})
}

func TestGuarantee11ResetOnExpiredOrCancelledReturnsFalse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, _ := startedTimer(t)
		expired := mustSchedule(t, tm, 0, func() {})
		time.Sleep(15 * time.Millisecond)
		require.True(t, expired.IsExpired())
		deadline := expired.Deadline()
		assert.False(t, expired.Reset(time.Second))
		assert.Equal(t, deadline, expired.Deadline(), "a failed Reset changed the deadline")

		cancelled := mustSchedule(t, tm, time.Second, func() { t.Error("a cancelled timeout ran") })
		require.True(t, cancelled.Cancel())
		deadline = cancelled.Deadline()
		assert.False(t, cancelled.Reset(time.Millisecond))
		assert.Equal(t, deadline, cancelled.Deadline())
		assert.Zero(t, tm.PendingTimeouts())
		time.Sleep(2 * time.Second)
	})
}

func TestGuarantee11ResetFromItsOwnTaskReturnsFalse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, _ := startedTimer(t)
		got := make(chan bool, 1)
		var to *hashedwheel.Timeout
		var err error
		to, err = tm.NewTimeout(hashedwheel.TimerFunc(func(self *hashedwheel.Timeout) {
			got <- self.Reset(time.Second)
		}), 0)
		require.NoError(t, err)
		assert.False(t, <-got, "Reset of a timeout being run must return false")
		assert.True(t, to.IsExpired())
	})
}

func TestGuarantee11ResetWhileTheTaskRunsReturnsFalse(t *testing.T) {
	// The case examples/idle handles when Reset returns false: a line came,
	// but the timeout fired and its task is closing the connection.
	synctest.Test(t, func(t *testing.T) {
		timer := newTimer(t, hashedwheel.WithTickDuration(10*time.Millisecond))
		closing, release := make(chan struct{}), make(chan struct{})
		var runs atomic.Int32
		idle, err := timer.AfterFunc(300*time.Millisecond, func() {
			runs.Add(1)
			close(closing)
			<-release // a slow close
		})
		require.NoError(t, err)
		deadline := idle.Deadline()
		<-closing
		assert.False(t, time.Now().Before(deadline), "the idle task ran before its deadline")
		assert.False(t, idle.Reset(300*time.Millisecond), "Reset of a timeout whose task is running")
		assert.Equal(t, deadline, idle.Deadline(), "a failed Reset changed the deadline")
		assert.False(t, idle.Cancel(), "Cancel of a timeout whose task is running")
		assert.True(t, idle.IsExpired())
		close(release)
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, int32(1), runs.Load(), "the idle task ran again after a failed Reset")
		assert.False(t, idle.Reset(time.Millisecond), "Reset after the task ran")
	})
}

func TestGuarantee11ResetCancelExpiryAndStopRaceExactlyOnce(t *testing.T) {
	// Real clock: many goroutines Reset and Cancel timeouts around their
	// deadlines while the worker expires them and, at the end, Stop cancels
	// the rest. Each timeout must end expired (ran once, never before the
	// deadline of the last successful Reset) or cancelled (never ran).
	tm, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(time.Millisecond),
		hashedwheel.WithTicksPerWheel(64))
	require.NoError(t, err)
	const n = 4000
	type entry struct {
		to    *hashedwheel.Timeout
		ran   atomic.Int32
		ranAt atomic.Int64 // nanoseconds since start
	}
	start := time.Now()
	entries := make([]*entry, n)
	for i := range entries {
		e := &entry{}
		entries[i] = e
		to, err := tm.AfterFunc(time.Duration(i%7)*time.Millisecond, func() {
			e.ranAt.Store(int64(time.Since(start)))
			e.ran.Add(1)
		})
		require.NoError(t, err)
		e.to = to
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := g; i < n; i += 4 {
				e := entries[i]
				switch i % 3 {
				case 0:
					e.to.Reset(time.Duration(i%5) * time.Millisecond)
				case 1:
					e.to.Cancel()
				default:
					e.to.Reset(time.Hour) // Stop cancels these
				}
			}
		})
	}
	wg.Wait()
	time.Sleep(20 * time.Millisecond)
	returned := map[*hashedwheel.Timeout]bool{}
	for _, to := range tm.Stop() {
		returned[to] = true
	}
	for i, e := range entries {
		ran := e.ran.Load()
		switch {
		case e.to.IsExpired():
			assert.Equal(t, int32(1), ran, "timeout %d expired but ran %d times", i, ran)
			// A failed Reset changes nothing, so Deadline is that of the
			// last Reset that returned true.
			ranAt := start.Add(time.Duration(e.ranAt.Load()))
			assert.False(t, ranAt.Before(e.to.Deadline()), "timeout %d ran before its deadline", i)
		case e.to.IsCancelled():
			assert.Zero(t, ran, "timeout %d cancelled but ran", i)
		default:
			t.Errorf("timeout %d neither expired nor cancelled after Stop", i)
		}
		if returned[e.to] {
			assert.True(t, e.to.IsCancelled())
		}
	}
	assert.Zero(t, tm.PendingTimeouts())
}

func TestGuarantee11ResetLaterWhileTheWorkerLinksItIsNotLateByATurn(t *testing.T) {
	// Real clock: a goroutine keeps moving a new timeout's deadline later
	// while the worker links it. The bucket's lower bound must come from the
	// deadline that chose the bucket, or the worker sleeps past the visit at
	// which the timeout is due and runs it a wheel turn (here 65s) late.
	if testing.Short() {
		t.Skip("real clock")
	}
	for range 20 {
		tm, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(time.Millisecond),
			hashedwheel.WithTicksPerWheel(1<<16))
		require.NoError(t, err)
		require.NoError(t, tm.Start())
		ran := make(chan struct{})
		var target atomic.Pointer[hashedwheel.Timeout]
		var wg sync.WaitGroup
		wg.Go(func() {
			var to *hashedwheel.Timeout
			for to = target.Load(); to == nil; to = target.Load() {
				runtime.Gosched()
			}
			for k := 1; k <= 100; k++ {
				to.Reset(20*time.Millisecond + time.Duration(k)*time.Millisecond)
			}
		})
		to := mustSchedule(t, tm, 20*time.Millisecond, func() { close(ran) })
		target.Store(to)
		wg.Wait()
		select {
		case <-ran:
		case <-time.After(time.Until(to.Deadline()) + 5*time.Second):
			t.Errorf("not run 5s after its deadline: %v", to)
		}
		tm.Stop()
	}
}

// TestGuarantee11ResetAcrossLevels: Reset moves a timeout between the wheel
// and the levels above it, and within them, either way, and it runs once,
// at the end of its new deadline's tick, never before, and not at its old
// one. On the 8-bucket wheel of 10ms ticks, level 1's slots are 80ms wide,
// level 2's 5.12s, level 3's 327.68s and level 4's 5h49m; a timeout an hour
// ahead (tick 360,000) waits in level 3, in the slot that starts at tick
// 327,680 (54m36.8s), and from there in level 2, in the slot that starts at
// tick 359,936. An earlier deadline before the start of its slot needs the
// worker, one at or after it does not; both are kept.
func TestGuarantee11ResetAcrossLevels(t *testing.T) {
	const ms = time.Millisecond
	const slot3, slot2 = 327_680 * jobTick, 359_936 * jobTick // the slots' starts
	for _, tt := range []struct {
		name    string
		delay   time.Duration // scheduled at 0
		resetAt time.Duration // since start
		to      time.Duration // the new deadline, since start
	}{
		{"a day ahead, reset to 30ms: level 4 to the wheel", 24 * time.Hour, time.Second, time.Second + 30*ms},
		{"30ms ahead, reset to a day: the wheel to level 4", 30 * ms, 10 * ms, 10*ms + 24*time.Hour},
		{"an hour ahead, reset to a minute: level 3 to level 2", time.Hour, time.Second, time.Second + time.Minute},
		{"a minute ahead, reset to an hour: level 2 to level 3", time.Minute, time.Second, time.Second + time.Hour},
		{"a second ahead, reset to a year: level 1 to level 5", time.Second, 10 * ms, 10*ms + 365*24*time.Hour},
		{"an hour ahead, reset to a nanosecond before its slot's start", time.Hour, time.Second, slot3 - 1},
		{"an hour ahead, reset to its slot's start", time.Hour, time.Second, slot3},
		{"an hour ahead, reset to after its slot's start", time.Hour, time.Second, 55 * time.Minute},
		{"an hour ahead, reset in the tick of its move down", time.Hour, slot3 + 5*ms, slot3 + 5*ms + time.Second},
		{"an hour ahead, reset just after its move down to before its new slot's start", time.Hour, slot3 + jobTick,
			slot2 - 1},
		{"an hour ahead, reset just after its move down to after its new slot's start", time.Hour, slot3 + jobTick,
			slot2 + 5*ms},
		{"an hour ahead, reset just after its move down to a day", time.Hour, slot3 + jobTick, 24 * time.Hour},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tm, start := startedTimer(t)
				log := &runLog{start: start}
				to := mustSchedule(t, tm, tt.delay, log.record)
				time.Sleep(tt.resetAt)
				synctest.Wait() // the worker first, if it wakes at this instant too
				require.True(t, to.Reset(tt.to-tt.resetAt))
				assert.Equal(t, start.Add(tt.to), to.Deadline())
				want := runEnd(tt.to)
				time.Sleep(want - tt.resetAt - time.Nanosecond)
				synctest.Wait()
				assert.Empty(t, log.runs(), "ran before the end of its new deadline's tick")
				time.Sleep(max(tt.delay, tt.to) + time.Hour)
				synctest.Wait()
				assert.Equal(t, []time.Duration{want}, log.runs())
				assert.True(t, to.IsExpired())
				assert.Zero(t, tm.PendingTimeouts())
			})
		})
	}
}
