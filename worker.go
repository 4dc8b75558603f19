package hashedwheel

import (
	"math"
	"math/bits"
	"runtime"
	"time"
)

// run is the worker goroutine: Netty's Worker.run. Each tick it processes
// the changes queue (unlinking cancelled timeouts, moving those reset to an
// earlier deadline), moves new timeouts into buckets, expires the current
// bucket and advances. Ticks are absolute, counted from startTime, so they do
// not drift; a worker that falls behind processes the missed ticks at which
// something is due back to back, and skips the others (see catchUp).
func (t *Timer) run() {
	exited := false
	defer func() {
		if !exited && t.wheel.cleanUp != cleanUpDone {
			// A task or a Cancelled call ran runtime.Goexit (t.FailNow in
			// a test callback does), which recover cannot stop. The wheel
			// is intact and the tick unfinished (or Stop's clean-up, which
			// resumes at its next phase): carry on in a new goroutine,
			// which processes the rest of this tick with what is left of
			// its transfer budget. If it was a task, the walk of the
			// tick's bucket was cut short and had not rebuilt its minDue:
			// mark the bucket due (harmless otherwise).
			t.wheel.buckets[t.wheel.tick&t.conf.mask].minDue = 0
			go t.run()
			return
		}
		// Exited, or a Cancelled call that Stop's clean-up made at its end
		// called runtime.Goexit, and makeCalls made the rest as it unwound.
		close(t.life.done)
	}()
	t.life.workerID.Store(goroutineID())
	// The sleep timer is made here, by the worker, so that in a synctest
	// bubble it runs on the bubble's clock.
	sleep := time.NewTimer(time.Hour)
	sleep.Stop()
	for t.waitForNextTick(sleep) {
		t.wheel.clockTick = t.elapsed() / t.conf.tickDuration
		t.processChanges()
		t.transferTimeoutsToBuckets()
		if t.catchUp() {
			continue
		}
		t.cascade()
		if idx := t.wheel.tick & t.conf.mask; t.wheel.buckets[idx].minDue < t.tickEnd(t.wheel.tick) {
			t.expireTimeouts(idx)
		} else if assertInvariants {
			t.assertNothingDue(idx)
		}
		t.wheel.counters.ticks++
		t.publishStats()
		t.advanceTo(t.wheel.tick + 1)
	}
	t.shutdown()
	exited = true
}

// catchUp moves a worker that has fallen more than a tick behind the clock
// (a task held it up) straight to the next tick at which something may be
// due, as a sleeping worker does, so that catching up costs time that grows
// with the timeouts due and the buckets in use, not with the ticks missed.
// It reports whether it moved; the caller then processes the tick it moved
// to, which has a fresh transfer budget. It does not move while new
// timeouts wait beyond the transfer budget, as they may be due in the ticks
// it would skip.
func (t *Timer) catchUp() bool {
	clockTick := t.wheel.clockTick // read at the start of the tick
	if clockTick <= t.wheel.tick+1 || !t.newTimeoutsEmpty() || !t.changes.isEmpty() {
		return false
	}
	target := clockTick // the tick the clock is in, which has not ended
	if due, park := t.nextDueTick(); !park {
		target = min(target, due)
	}
	if target <= t.wheel.tick {
		return false
	}
	t.advanceTo(target)
	return true
}

// advanceTo moves the worker to tick, which starts with a fresh transfer
// budget.
func (t *Timer) advanceTo(tick int64) {
	if tick != t.wheel.tick {
		t.wheel.tick = tick
		t.wheel.transferBudget = maxTransfersPerTick
	}
}

// tickEnd returns the end of tick, in nanoseconds since the timer started:
// math.MaxInt64 for a tick that would end past it, which never ends.
func (t *Timer) tickEnd(tick int64) int64 {
	if tick >= math.MaxInt64/t.conf.tickDuration {
		return math.MaxInt64
	}
	return (tick + 1) * t.conf.tickDuration
}

// Early draining. A timeout cancelled while still queued stays reachable,
// and so is marked by every garbage collection, until the worker pops it. At
// a million schedule-and-cancels a second, a 10ms tick keeps tens of
// thousands of them queued, and marking them cost more than the rest of the
// work. So while new timeouts arrive the worker also transfers in the middle
// of the tick it waits for, aiming at about drainBatch timeouts a drain
// (64KiB of them) but waking no more often than every minDrainInterval. The
// transfers count against that tick's maxTransfersPerTick, and a timeout
// transferred early is placed exactly as it would be at the tick itself.
const (
	drainBatch       = 1024
	minDrainInterval = 250 * time.Microsecond
)

// drain transfers what has arrived since the last drain and adapts the
// interval to the next one.
func (t *Timer) drain() {
	n := t.transferTimeoutsToBuckets()
	if n > 0 {
		interval := t.wheel.drainInterval / int64(n) * drainBatch
		t.wheel.drainInterval = min(max(interval, int64(minDrainInterval)), t.conf.tickDuration)
	}
}

// waitForNextTick waits until tick t.wheel.tick has ended. It returns false
// when the timer is stopped.
//
// Netty's worker wakes every tick. This one sleeps longer when it can prove
// nothing is due sooner (see planSleep), and drains new timeouts in the
// middle of a tick while they arrive (see drain). A producer that pushes
// while the worker sleeps past its tick wakes it; the worker then takes its
// tick from the clock, never past the tick it meant to wake for, so
// deadlines are kept exactly as if it had ticked all along.
func (t *Timer) waitForNextTick(sleep *time.Timer) bool {
	for {
		if t.isStopped() {
			return false
		}
		now := t.elapsed()
		if now >= t.tickEnd(t.wheel.tick) {
			return true
		}
		arriving := !t.newTimeoutsEmpty() && t.wheel.transferBudget > 0
		if arriving {
			t.drain()
		}
		plan, again := t.planSleep(now, arriving)
		if again {
			continue
		}
		t.publishStats()
		t.sleepFor(sleep, plan, now)
		t.wheel.counters.wakeups++
		if plan.park || plan.target > t.wheel.tick {
			t.wake.sleeping.Store(false)
			// Nothing was due in the ticks slept through, and nothing was
			// transferred meanwhile, so the worker may stand at any tick up
			// to the clock's, but not beyond the one it meant to wake for.
			clockTick := t.elapsed() / t.conf.tickDuration
			if !plan.park {
				clockTick = min(clockTick, plan.target)
			}
			t.advanceTo(max(t.wheel.tick, clockTick))
		}
	}
}

// sleepPlan is what the worker waits for before it looks again: the end of
// tick target, woken early if drainAt comes first; or, if park, nothing but a
// wake-up, as the wheel is empty. A target past the current tick, or park,
// means sleeping past ticks: the worker has set wake.sleeping, so that a
// producer wakes it.
type sleepPlan struct {
	target  int64 // the tick whose end the worker wakes at
	park    bool  // wait for a wake-up or Stop alone
	drainAt int64 // when to wake to drain new timeouts, or math.MaxInt64
}

// planSleep decides how long the worker, at time now in tick t.wheel.tick,
// may sleep. While new timeouts arrive (arriving), it wakes for the end of
// the tick or the next drain, whichever comes first. Once they stop, and
// nothing in the current bucket may be due in this tick, it sleeps until the
// first tick at which a bucket may have something due (nextDueTick), or
// parks if the wheel is empty; it sets wake.sleeping first, and reports
// again if a timeout arrived meanwhile, whose producer may not have seen it:
// the caller then drains it at once rather than at the end of the tick. With
// timeouts queued beyond the transfer budget, or changes queued, it sleeps to
// the end of the tick, where they are taken.
func (t *Timer) planSleep(now int64, arriving bool) (plan sleepPlan, again bool) {
	tick := t.wheel.tick
	plan = sleepPlan{target: tick, drainAt: math.MaxInt64}
	if arriving {
		plan.drainAt = now + t.wheel.drainInterval
		return plan, false
	}
	if t.wheel.buckets[tick&t.conf.mask].minDue < t.tickEnd(tick) {
		return plan, false // something may be due in this tick
	}
	t.wake.sleeping.Store(true)
	newEmpty := t.newTimeoutsEmpty()
	if !newEmpty && t.wheel.transferBudget > 0 {
		t.wake.sleeping.Store(false)
		return plan, true
	}
	if newEmpty && t.changes.isEmpty() {
		plan.target, plan.park = t.nextDueTick()
		// A tick that never ends holds nothing that comes due.
		plan.park = plan.park || t.tickEnd(plan.target) == math.MaxInt64
	}
	if plan.target == tick && !plan.park {
		t.wake.sleeping.Store(false)
	}
	return plan, false
}

// sleepFor waits as plan says, or until Stop or a wake-up; now is the time
// the plan was made.
func (t *Timer) sleepFor(sleep *time.Timer, plan sleepPlan, now int64) {
	if plan.park {
		select {
		case <-t.wake.ch:
		case <-t.life.stopped:
		}
		return
	}
	wakeAt := min(t.tickEnd(plan.target), plan.drainAt)
	sleep.Reset(time.Duration(wakeAt - now))
	select {
	case <-sleep.C:
	case <-t.wake.ch:
		sleep.Stop()
	case <-t.life.stopped:
		sleep.Stop()
	}
}

// nextDueTick returns the first tick, from t.wheel.tick on, at which a bucket may
// have a timeout due or a level a slot to take down (see cascade), or park
// true if the wheel and its levels are empty. It looks only at non-empty
// buckets, in tick order, and stops at the first one due at its next
// visit, or once the next visits are later than the earliest due tick
// found, and at one word a level: its cost does not grow with the wheel.
func (t *Timer) nextDueTick() (due int64, park bool) {
	due, park = t.nextCascade()
	cur := int(t.wheel.tick & t.conf.mask)
	// Buckets cur..len-1 are visited at offsets 0.., then 0..cur-1.
	for _, span := range [2]struct{ from, to, offset int }{
		{cur, len(t.wheel.buckets), -cur},
		{0, cur, len(t.wheel.buckets) - cur},
	} {
		for i := t.wheel.occupied.next(span.from); i >= 0 && i < span.to; i = t.wheel.occupied.next(i + 1) {
			visit := t.wheel.tick + int64(i+span.offset)
			if visit >= due {
				return due, park
			}
			t.wheel.scanned++
			// The bucket's timeouts that are not due at this visit need
			// the worker at their check tick, which minDue bounds.
			bucketDue := max(t.wheel.buckets[i].minDue/t.conf.tickDuration, visit)
			if bucketDue == visit {
				return visit, false
			}
			due, park = min(due, bucketDue), false
		}
	}
	return due, park
}

// nextCascade returns the first tick, from t.wheel.tick on, at which a level
// above the wheel has a slot to take down, or park true if the levels are
// empty. The slot that holds the worker's tick comes at its start if that is
// the worker's tick (not processed yet), else a whole span later.
func (t *Timer) nextCascade() (at int64, park bool) {
	at, park = math.MaxInt64, true
	for k := 1; k <= maxLevels; k++ {
		l := t.wheel.levels[k-1]
		if l == nil || l.occupied == 0 {
			continue
		}
		shift := t.levelShift(k)
		cur := t.wheel.tick >> shift
		p := int(cur & (levelSlots - 1))
		var offset int64
		if cur<<shift != t.wheel.tick || l.occupied&(1<<p) == 0 {
			// Slot p+1+j comes at offset j+1; slot p, a span later.
			offset = int64(bits.TrailingZeros64(bits.RotateLeft64(l.occupied, -(p+1)))) + 1
		}
		at, park = min(at, (cur+offset)<<shift), false
	}
	return at, park
}

// newTimeoutsEmpty reports whether every shard's queue is empty.
func (t *Timer) newTimeoutsEmpty() bool {
	for i := range t.shards {
		if !t.shards[i].timeouts.isEmpty() {
			return false
		}
	}
	return true
}

// wakeWorker wakes the worker if it is sleeping past the next tick, after a
// push that may give it work sooner. It reports whether it woke it.
func (t *Timer) wakeWorker() bool {
	if t.wake.sleeping.Load() && t.wake.sleeping.CompareAndSwap(true, false) {
		select {
		case t.wake.ch <- struct{}{}:
		default:
		}
		return true
	}
	return false
}

// kickAfter is how long new timeouts that arrive fast, at least kickBatch
// of them between two transfers, may wait for the worker before the
// goroutine that schedules one wakes it; see kickWorker.
const (
	kickAfter = 2 * minDrainInterval
	kickBatch = drainBatch / 4
)

// kickWorker wakes the worker, which is late to take new timeouts: the
// caller pushed one at or after kickAt. A timeout cancelled while still
// queued is reachable, and marked by every garbage collection, until the
// worker takes it; at a million schedule-and-cancels a second the queued
// ones would cost more than the rest of the work. The worker's own early
// drains (see drainBatch) keep the queues short while it gets a CPU, and then
// nobody kicks it. With GOMAXPROCS=1 it gets none while the scheduling
// goroutine runs: a woken worker waits until that goroutine blocks or is
// preempted, 10ms later. So there the kicking goroutine also yields, once per
// kick, which costs it a few hundred nanoseconds per kick, at most one per
// kickAfter.
func (t *Timer) kickWorker() {
	if t.wake.kicked.Load() || !t.wake.kicked.CompareAndSwap(false, true) {
		return
	}
	select {
	case t.wake.ch <- struct{}{}:
	default:
	}
	if runtime.GOMAXPROCS(0) == 1 {
		runtime.Gosched()
	}
}
