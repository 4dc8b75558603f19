package hashedwheel

import (
	"bytes"
	"fmt"
	"log/slog"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests look inside the worker. They read worker-owned state only after
// synctest.Wait, which returns once the worker is durably blocked and orders
// its writes before the reads.

// linked counts the timeouts in the wheel: its buckets and the levels above.
func linked(t *Timer) int {
	n := 0
	count := func(b *bucket) {
		for to := b.head; to != nil; to = to.bucketNext {
			n++
		}
	}
	for i := range t.wheel.buckets {
		count(&t.wheel.buckets[i])
	}
	for _, l := range t.wheel.levels {
		for i := 0; l != nil && i < len(l.slots); i++ {
			count(&l.slots[i])
		}
	}
	return n
}

func TestGuarantee3CancelledTimeoutsAreUnlinkedAtTheNextTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, err := NewTimer(WithTickDuration(10*time.Millisecond), WithTicksPerWheel(16))
		require.NoError(t, err)
		defer tm.Stop()
		var timeouts []*Timeout
		for i := range 1000 {
			to, err := tm.AfterFunc(time.Duration(i+1)*time.Second, func() {})
			require.NoError(t, err)
			timeouts = append(timeouts, to)
		}
		time.Sleep(15 * time.Millisecond)
		synctest.Wait()
		require.Equal(t, 1000, linked(tm), "all timeouts should be in buckets after one tick")

		for _, to := range timeouts[1:] {
			require.True(t, to.Cancel())
		}
		assert.Equal(t, int64(1), tm.PendingTimeouts(), "Cancel counts a timeout out at once")
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		assert.Equal(t, 1, linked(tm), "cancelled timeouts must leave their buckets within a tick")
	})
}

func TestIdleWorkerParksAndSleepsUntilSomethingIsDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, err := NewTimer(WithTickDuration(100*time.Millisecond), WithTicksPerWheel(8))
		require.NoError(t, err)
		defer tm.Stop()
		require.NoError(t, tm.Start())
		time.Sleep(time.Hour)
		synctest.Wait()
		assert.True(t, tm.wake.sleeping.Load(), "an idle worker must park")
		assert.Zero(t, tm.wheel.tick, "a parked worker must not count ticks")

		// One timeout 10s away (100 ticks) waits in level 1, in the slot
		// that starts at tick 36096. The worker sleeps until then, takes
		// it down into the bucket of tick 36100, and sleeps until that.
		to, err := tm.AfterFunc(10*time.Second, func() {})
		require.NoError(t, err)
		time.Sleep(1050 * time.Millisecond)
		synctest.Wait()
		// Woken at 1h, the worker took tick 36000 from the clock, moved the
		// timeout into level 1, and sleeps until tick 36096 ends.
		assert.Equal(t, int64(36001), tm.wheel.tick)
		assert.True(t, tm.wake.sleeping.Load())
		// Stop at once, before the clock can move: the worker's next step
		// then follows Stop, which orders it after the reads above.
		assert.Equal(t, []*Timeout{to}, tm.Stop())
	})
}

func TestWorkerSleepsThroughVisitsWithNothingDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, err := NewTimer(WithTickDuration(10*time.Millisecond), WithTicksPerWheel(8))
		require.NoError(t, err)
		defer tm.Stop()
		// Every bucket holds a timeout due in an hour, hundreds of turns
		// away. Netty's worker would wake every tick to count them down.
		for i := range 16 {
			_, err := tm.AfterFunc(time.Hour+time.Duration(i)*10*time.Millisecond, func() {})
			require.NoError(t, err)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, int64(1), tm.wheel.tick, "the worker woke for ticks with nothing due")
		assert.True(t, tm.wake.sleeping.Load())
		assert.Equal(t, 16, linked(tm))
		assert.Len(t, tm.Stop(), 16)
	})
}

func TestSparseWheelGoesToSleepWithoutWalkingIt(t *testing.T) {
	// With 2^20 buckets and one timeout an hour away, each schedule and
	// cancel wakes the worker, which then goes back to sleep. Finding the
	// next due tick must look at the buckets that hold something, not at a
	// million empty ones.
	synctest.Test(t, func(t *testing.T) {
		tm, err := NewTimer(WithTickDuration(10*time.Millisecond), WithTicksPerWheel(1<<20))
		require.NoError(t, err)
		defer tm.Stop()
		_, err = tm.AfterFunc(time.Hour, func() {})
		require.NoError(t, err)
		synctest.Wait()
		before := tm.wheel.scanned
		const rounds = 500
		for i := range rounds {
			to, err := tm.AfterFunc(time.Duration(i+1)*time.Second, func() {})
			require.NoError(t, err)
			synctest.Wait()
			to.Cancel()
			synctest.Wait()
		}
		// Two sleeps a round, each looking at the one or two buckets in use.
		assert.LessOrEqual(t, tm.wheel.scanned-before, uint64(rounds*2*2))
		assert.Equal(t, int64(1), tm.PendingTimeouts())
	})
}

// TestFarTimeoutWaitsInALevelSoAnEarlierResetNeedsNoMove: a timeout due
// more than a turn of the wheel ahead waits in a level above the wheel, in
// the slot of its deadline, whose start is its check tick. A Reset to an
// earlier deadline at or after that tick leaves the worker alone (nothing
// in the changes queue); one before it goes through the changes queue.
// Either way the timeout runs at the end of its new deadline's tick, never
// before, after a look per level.
func TestFarTimeoutWaitsInALevelSoAnEarlierResetNeedsNoMove(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const tick = 10 * time.Millisecond
		tm, err := NewTimer(WithTickDuration(tick), WithTicksPerWheel(8))
		require.NoError(t, err)
		defer tm.Stop()
		start := time.Now()
		ranAt := make(chan time.Duration, 1)
		far, err := tm.AfterFunc(time.Hour, func() { ranAt <- time.Since(start) })
		require.NoError(t, err)
		synctest.Wait()
		// 360,000 ticks ahead: level 3, whose slots are 8*64*64 = 32768
		// ticks wide; the slot of the deadline starts at tick 327,680
		// (54m36.8s).
		s := far.lock()
		got, level := far.checkTick, s.level()
		far.unlock(s)
		require.Equal(t, 3, level)
		require.Equal(t, uint32(327_680>>15), got, "the slot's number")

		// Hold the worker in a task, so that it takes nothing from the
		// changes queue while the resets are looked at.
		hold, held := make(chan struct{}), make(chan struct{})
		_, err = tm.AfterFunc(0, func() { close(held); <-hold })
		require.NoError(t, err)
		<-held
		require.True(t, far.Reset(55*time.Minute))
		assert.True(t, tm.changes.isEmpty(), "a Reset to after the check tick told the worker")
		require.True(t, far.Reset(50*time.Minute))
		assert.False(t, tm.changes.isEmpty(), "a Reset to before the check tick did not tell the worker")
		close(hold)

		// Reset at 10ms, the end of the held task's tick.
		runAt := (10*time.Millisecond+50*time.Minute)/tick*tick + tick
		time.Sleep(time.Until(start.Add(runAt)) - time.Nanosecond)
		synctest.Wait()
		assert.Empty(t, ranAt, "ran before the end of its deadline's tick")
		assert.Equal(t, runAt, <-ranAt)
		// Looked at when it was placed, then once a level on its way down.
		assert.LessOrEqual(t, tm.Stats().Ticks, uint64(8), "ticks processed")
	})
}

// wheelView is where a timeout waits in the wheel, read on the worker
// goroutine (see probeWheel): its level, the start of its slot (its
// bucket's tick, in the wheel), the timeouts the wheel and its levels hold,
// the slots marked occupied, and any slot whose mark disagrees with its
// list.
type wheelView struct {
	level        int
	check        int64
	linked, used int
	badMark      string
}

// probeWheel returns, read on the worker by a task due in tick p (which
// runs as the worker processes that tick, after it has taken in the changes
// and moved down what starts there, and which has left the wheel as it
// runs), where to waits, and what the wheel holds.
func probeWheel(t *testing.T, tm *Timer, to *Timeout, p int64) wheelView {
	t.Helper()
	got := make(chan wheelView, 1)
	tick := time.Duration(tm.conf.tickDuration)
	_, err := tm.AfterFunc(time.Duration(p)*tick-time.Duration(tm.elapsed()), func() {
		var v wheelView
		s := to.lock()
		v.level = s.level()
		var shift uint
		if v.level > 0 {
			shift = tm.levelShift(v.level)
		}
		unit := to.deadline.Load() / tm.conf.tickDuration >> shift
		v.check = (unit - int64(uint32(unit)-to.checkTick)) << shift
		to.unlock(s)
		v.linked = linked(tm)
		for k, l := range tm.wheel.levels {
			for i := 0; l != nil && i < levelSlots; i++ {
				marked := l.occupied&(1<<i) != 0
				if marked != (l.slots[i].head != nil) {
					v.badMark = fmt.Sprintf("level %d, slot %d: marked %v", k+1, i, marked)
				}
				if marked {
					v.used++
				}
			}
		}
		got <- v
	})
	require.NoError(t, err)
	time.Sleep(time.Duration(p+1)*tick - time.Duration(tm.elapsed()))
	synctest.Wait()
	require.Len(t, got, 1, "the probe due in tick %d did not run", p)
	return <-got
}

// TestFarTimeoutMovesDownAtItsSlotsStartAndACancelThenUnlinksIt follows a
// timeout due at tick 4095 on an 8-bucket wheel of 10ms ticks: it waits in
// level 2 in the slot that starts at tick 3584, in level 1 from there in the
// slot that starts at tick 4088, in the wheel's bucket of tick 4095 from
// there, and runs at its end. A Cancel in the tick of a move down (before
// the worker processes it), or just after it, is taken in at the end of that
// tick: the timeout leaves whatever slot or bucket it is in then, and the
// levels hold nothing.
func TestFarTimeoutMovesDownAtItsSlotsStartAndACancelThenUnlinksIt(t *testing.T) {
	const tick = 10 * time.Millisecond
	for _, cancelAt := range []time.Duration{0, 3584*tick + tick/2, 3585 * tick, 4088*tick + tick/2, 4089 * tick} {
		name := fmt.Sprintf("cancelled at %v", cancelAt)
		if cancelAt == 0 {
			name = "not cancelled"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tm, err := NewTimer(WithTickDuration(tick), WithTicksPerWheel(8))
				require.NoError(t, err)
				defer tm.Stop()
				start := time.Now()
				ranAt := make(chan time.Duration, 1)
				to, err := tm.AfterFunc(4095*tick+tick/2, func() { ranAt <- time.Since(start) })
				require.NoError(t, err)
				steps := []struct {
					probe int64 // the tick the probe is due in
					want  wheelView
				}{
					{0, wheelView{level: 2, check: 3584, linked: 1, used: 1}},
					{3583, wheelView{level: 2, check: 3584, linked: 1, used: 1}}, // the tick before its move
					{3584, wheelView{level: 1, check: 4088, linked: 1, used: 1}}, // moved down into level 1
					{4087, wheelView{level: 1, check: 4088, linked: 1, used: 1}},
					{4088, wheelView{level: 0, check: 4095, linked: 1, used: 0}}, // moved down into the wheel
					{4094, wheelView{level: 0, check: 4095, linked: 1, used: 0}},
				}
				for _, st := range steps {
					if cancelAt > 0 && int64(cancelAt/tick) <= st.probe {
						time.Sleep(cancelAt - time.Since(start))
						synctest.Wait() // the worker first, if it wakes at this instant too
						require.True(t, to.Cancel())
						// Taken in as the worker processes this tick.
						v := probeWheel(t, tm, to, int64(cancelAt/tick))
						assert.Zero(t, v.linked, "timeouts in the wheel once the cancel is taken in")
						assert.Zero(t, v.used, "slots marked occupied")
						assert.Empty(t, v.badMark)
						break
					}
					v := probeWheel(t, tm, to, st.probe)
					assert.Equal(t, st.want, v, "as the worker processes tick %d", st.probe)
				}
				time.Sleep(4096*tick - time.Since(start))
				synctest.Wait()
				if cancelAt > 0 {
					assert.Empty(t, ranAt)
					assert.Equal(t, uint64(1), tm.Stats().Cancelled)
					return
				}
				assert.Equal(t, 4096*tick, <-ranAt)
			})
		})
	}
}

func TestGuarantee8SkippedTicksGetAFreshTransferBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, err := NewTimer(WithTickDuration(10 * time.Millisecond))
		require.NoError(t, err)
		defer tm.Stop()
		start := time.Now()
		// Exactly one tick's budget, far away: the worker then sleeps.
		for range maxTransfersPerTick {
			_, err := tm.AfterFunc(time.Hour, func() {})
			require.NoError(t, err)
		}
		time.Sleep(55 * time.Millisecond)
		ranAt := make(chan time.Duration, 1)
		_, err = tm.AfterFunc(0, func() { ranAt <- time.Since(start) })
		require.NoError(t, err)
		assert.Equal(t, 60*time.Millisecond, <-ranAt)
	})
}

func TestGuarantee4HugeElapsedTimeDoesNotOverflowTickArithmetic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const tick = time.Duration(1 << 62) // about 146 years
		tm, err := NewTimer(WithTickDuration(tick), WithTicksPerWheel(1))
		require.NoError(t, err)
		to, err := tm.AfterFunc(0, func() {})
		require.NoError(t, err)
		time.Sleep(150 * 365 * 24 * time.Hour)
		assert.True(t, to.IsExpired())
		late, err := tm.AfterFunc(time.Hour, func() {})
		require.NoError(t, err)
		time.Sleep(time.Hour)
		assert.False(t, late.IsExpired(), "the tick after 2^63ns never ends")
		assert.Equal(t, []*Timeout{late}, tm.Stop())
	})
}

// newTestLogger returns a logger and what it writes. Read the buffer only
// after Stop: the worker logs, and Stop orders its writes before its return.
func newTestLogger() (*slog.Logger, *bytes.Buffer) {
	var b bytes.Buffer
	return slog.New(slog.NewTextHandler(&b, nil)), &b
}

func TestTaskCallingGoexitDoesNotStopTheWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logger, logs := newTestLogger()
		tm, err := NewTimer(WithTickDuration(10*time.Millisecond), WithLogger(logger))
		require.NoError(t, err)
		// t.FailNow in a timer callback does this.
		_, err = tm.AfterFunc(0, runtime.Goexit)
		require.NoError(t, err)
		sameTick, err := tm.AfterFunc(0, func() {})
		require.NoError(t, err)
		time.Sleep(20 * time.Millisecond)
		assert.True(t, sameTick.IsExpired(), "the timeout behind the exiting task must still run")

		later, err := tm.AfterFunc(10*time.Millisecond, func() {})
		require.NoError(t, err)
		pending, err := tm.AfterFunc(time.Hour, func() {})
		require.NoError(t, err)
		time.Sleep(30 * time.Millisecond)
		assert.True(t, later.IsExpired())
		assert.Equal(t, []*Timeout{pending}, tm.Stop())
		assert.Contains(t, logs.String(), "Goexit")
	})
}

// BenchmarkTransferCancelled measures the worker alone: its cost per timeout
// scheduled and cancelled before the worker took it, the common case of a
// deadline that was not needed. The timer is never started; the benchmark
// queues the same cancelled timeouts again and again and plays the worker.
// worker-ns/op is the worker's share; ns/op also counts the pushes.
func BenchmarkTransferCancelled(b *testing.B) {
	tm, err := NewTimer()
	require.NoError(b, err)
	task := TimerFunc(func(*Timeout) {})
	timeouts := make([]*Timeout, 2048) // about what the worker takes at a time
	for i := range timeouts {
		timeouts[i] = newTimeoutOn(tm)
		timeouts[i].task = task
	}
	var worker time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i += len(timeouts) {
		for _, to := range timeouts[:min(len(timeouts), b.N-i)] {
			to.state.Store(uint32(stCancelled | heldNew)) // the worker let go of it last time
			tm.shardFor(to).timeouts.push(to)
		}
		tm.wheel.transferBudget = maxTransfersPerTick
		start := time.Now()
		tm.transferTimeoutsToBuckets()
		worker += time.Since(start)
	}
	b.ReportMetric(float64(worker)/float64(b.N), "worker-ns/op")
	require.Equal(b, uint64(b.N), tm.wheel.counters.cancelled)
}

// TestBusyWorkerSkipsBucketsWithNothingDue: a worker kept awake every tick
// (new timeouts arrive all the time) walks a bucket only when something in
// it needs the worker at that tick, so a timeout 100 turns ahead, alone in
// the wheel, is looked at (its bucket walked) a few times before it runs,
// not once a turn.
func TestBusyWorkerSkipsBucketsWithNothingDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const tick = time.Millisecond
		tm, err := NewTimer(WithTickDuration(tick), WithTicksPerWheel(8))
		require.NoError(t, err)
		defer tm.Stop()
		ran := make(chan struct{})
		_, err = tm.AfterFunc(100*8*tick, func() { close(ran) })
		require.NoError(t, err)
		ticks := 0
		for running := true; running; ticks++ {
			select {
			case <-ran:
				running = false
			case <-time.After(tick):
				// Cancelled before the worker takes it: it wakes the
				// worker, and is dropped without going into a bucket.
				to, err := tm.AfterFunc(time.Hour, func() {})
				require.NoError(t, err)
				to.Cancel()
			}
		}
		synctest.Wait()
		assert.GreaterOrEqual(t, tm.Stats().Ticks, uint64(400), "the worker slept through most ticks: not busy")
		assert.LessOrEqual(t, tm.wheel.walked, uint64(6), "walks of the far timeout's bucket, over %d ticks", ticks)
	})
}
