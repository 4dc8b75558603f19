package hashedwheel

import (
	"errors"
	"math"
	"time"
)

// ErrHasWorker is returned by Advance on a Timer that has a worker goroutine:
// only a Timer made [WithoutWorker] is driven by its owner. See the example of
// [Timer.Advance].
var ErrHasWorker = errors.New("hashedwheel: Advance on a Timer with a worker; " +
	"make the Timer with WithoutWorker to drive it yourself")

// ErrConcurrentAdvance is returned by Advance when another call of Advance or
// NextDeadline on the same Timer is in progress (from a task that Advance runs,
// say). Advance and NextDeadline belong to one owner, which calls them one at a
// time. See the example of [Timer.Advance].
var ErrConcurrentAdvance = errors.New("hashedwheel: Advance called while another Advance or " +
	"NextDeadline of the same Timer is in progress; they belong to one owner")

// Advance runs, on the calling goroutine and before it returns, every task
// run that is due by now on a Timer made [WithoutWorker], and returns how many
// runs it started. A timeout is due once the tick that holds its deadline has
// ended, as with a worker: its task never runs before its Deadline. Runs
// start tick by tick, in deadline order across ticks, each exactly once.
//
// now is the owner's reading of the timer's clock, usually time.Now() taken
// at the top of its loop; a now later than the clock lets runs start early
// by the difference, and nothing else changes. A now earlier than one given
// before counts as that one.
//
// A call first takes in every timeout scheduled, reset or cancelled (from any
// goroutine) before it began; what tasks schedule or re-arm during the call
// waits for the next call, so one call is bounded. After a long gap, a call
// costs time that grows with the runs due and the buckets in use, not with
// the ticks that passed.
//
// Advance returns [ErrNotCreated] on a Timer that [NewTimer] did not make,
// [ErrHasWorker] on a Timer with a worker, [ErrConcurrentAdvance] if another
// Advance or [Timer.NextDeadline] of the Timer is in progress (it then changes
// nothing), and [ErrTimerStopped] after [Timer.Stop]. A task may call Stop:
// the call then starts no more runs and cancels what is pending before it
// returns. See guarantee 18 in docs/guarantees.md, and the example of
// Timer.Advance.
func (t *Timer) Advance(now time.Time) (int, error) {
	if !t.conf.owned {
		if t.wheel.buckets == nil {
			return 0, ErrNotCreated
		}
		return 0, ErrHasWorker
	}
	if !t.own.advancing.CompareAndSwap(false, true) {
		if t.isStopped() {
			return 0, ErrTimerStopped
		}
		return 0, ErrConcurrentAdvance
	}
	if t.isStopped() {
		t.releaseOwner()
		return 0, ErrTimerStopped
	}
	target := max(int64(now.Sub(t.life.startTime)), t.own.lastNow)
	t.own.lastNow = target
	if target < t.own.nextDueAt && t.nothingToTakeIn() {
		// Nothing is due, and nothing to take in: the common case of an
		// event loop's turn.
		t.releaseOwner()
		return 0, nil
	}
	return t.advance(target), nil
}

// advance is Advance once the caller holds advancing and the call has
// something to do: it processes the ticks that end by target.
func (t *Timer) advance(target int64) int {
	before := t.wheel.counters.expired
	walked := true
	defer func() {
		if !walked {
			// A task called runtime.Goexit in the middle of a bucket's
			// walk: mark the bucket due, so the next call walks the rest.
			t.wheel.buckets[t.wheel.tick&t.conf.mask].minDue = 0
		}
		t.publishStats()
		t.releaseOwner()
	}()
	endTick := target / t.conf.tickDuration // ticks before it have ended
	t.wheel.clockTick = endTick
	t.takeIn()
	for t.wheel.tick < endTick && !t.isStopped() {
		// Skip to the next tick with something due, as a sleeping worker
		// does; the ticks skipped are not counted in Stats.
		due, park := t.nextDueTick()
		if park {
			t.advanceTo(endTick)
			break
		}
		if due > t.wheel.tick {
			t.advanceTo(min(due, endTick))
			continue
		}
		t.cascade()
		walked = false
		t.expireTimeouts(t.wheel.tick & t.conf.mask)
		walked = true
		t.wheel.counters.ticks++
		t.advanceTo(t.wheel.tick + 1)
	}
	t.updateNextDueAt()
	return int(t.wheel.counters.expired - before)
}

// NextDeadline reports when, at the latest, the owner of a Timer made
// [WithoutWorker] must call [Timer.Advance] again, and false if no timeout is
// pending. The time is never later than the first at which Advance would run
// something, and may be earlier: then that Advance runs nothing. It is earlier
// when the first timeout is due more than a turn of the wheel ahead: an owner
// that sleeps until NextDeadline then wakes a few times with nothing to run.
//
// NextDeadline first takes in the timeouts scheduled, reset or cancelled from
// any goroutine before the call, so an owner that sleeps until the time it
// returns, or until another goroutine wakes it after scheduling, misses
// nothing. It does not walk the timeouts, and allocates nothing unless a
// timeout it takes in is the first to wait in a level above the wheel: that
// level is made then (1.5 KiB, once per level and Timer). It returns false,
// and changes nothing, on a Timer with a worker, after [Timer.Stop], and while
// an Advance or NextDeadline of the Timer is in progress. See guarantee 19 in
// docs/guarantees.md, and the example of Timer.Advance.
func (t *Timer) NextDeadline() (time.Time, bool) {
	if !t.conf.owned || !t.own.advancing.CompareAndSwap(false, true) {
		return time.Time{}, false
	}
	// Let go of as it returns, or as a Cancelled call that the take-in
	// makes calls runtime.Goexit; if the Timer was stopped meanwhile, the
	// clean-up is done first (see releaseOwner).
	defer t.releaseOwner()
	if t.isStopped() {
		return time.Time{}, false
	}
	if !t.nothingToTakeIn() {
		t.takeIn()
		t.updateNextDueAt()
		t.publishStats() // the cancels it took in count at once
	}
	at := t.own.nextDueAt
	if !t.nothingToTakeIn() {
		// A Cancelled call made as it took them in scheduled more, or
		// another goroutine did meanwhile: the next Advance takes that in,
		// and is due at once.
		at = min(at, t.own.lastNow)
	}
	if at == math.MaxInt64 && t.PendingTimeouts() == 0 {
		return time.Time{}, false
	}
	return t.life.startTime.Add(time.Duration(at)), true
}

// nothingToTakeIn reports whether no timeout was scheduled, returned from a
// periodic run, cancelled in a bucket or reset before its check tick since
// the owner last took them in: nothing pushed since, and nothing left in the
// consumers' lists of the queues, which takeIn empties unless a Cancelled
// call it makes calls runtime.Goexit. Its caller holds advancing.
func (t *Timer) nothingToTakeIn() bool {
	for i := range t.shards {
		q := &t.shards[i].timeouts
		if q.producerTop.Load() != nil || q.consumerHead != nil {
			return false
		}
	}
	return t.changes.producerTop.Load() == nil && t.changes.consumerHead == nil
}

// takeIn does for an owned Timer what the worker does at the start of a
// tick, for everything pushed so far and nothing pushed meanwhile: it
// processes the changes queue and moves every new timeout into its bucket,
// with no transfer cap: what arrives while it runs waits for the next call.
func (t *Timer) takeIn() {
	t.processChanges()
	for i := range t.shards {
		t.shards[i].timeouts.takeAll()
	}
	t.wheel.transferBudget = math.MaxInt
	t.transferTimeoutsToBuckets()
	t.wheel.transferBudget = maxTransfersPerTick
}

// updateNextDueAt sets nextDueAt from the wheel, looking only at the buckets
// in use (see nextDueTick).
func (t *Timer) updateNextDueAt() {
	due, park := t.nextDueTick()
	if park {
		t.own.nextDueAt = math.MaxInt64
		return
	}
	t.own.nextDueAt = t.tickEnd(due)
}

// releaseOwner lets go of advancing, which the caller holds. If the Timer
// has been stopped (by a task, or by another goroutine whose Stop found
// advancing held and left the clean-up to its holder), it cleans up first:
// it cancels what is pending and closes the queues (see shutdown), once.
// A Stop that comes as it lets go finds advancing held, so it looks again
// after letting go, and takes advancing back to clean up if nobody else
// holds it. Then it makes the Cancelled calls the clean-up owes, and returns
// the timeouts the clean-up cancelled (nil if it did none), for Stop.
//
// Advance and NextDeadline defer it, so it also runs as their goroutine
// exits by runtime.Goexit (a task's or a Cancelled call's): advancing is let
// go of whatever the user's code does.
func (t *Timer) releaseOwner() []*Timeout {
	var stopped []*Timeout
	var calls []*Timeout
	for {
		if t.isStopped() && t.wheel.cleanUp != cleanUpDone {
			t.shutdown()
			calls, t.wheel.calls = t.wheel.calls, nil
			stopped = t.life.unprocessed
		}
		done := t.wheel.cleanUp == cleanUpDone // read while advancing is held
		t.own.advancing.Store(false)
		if done || !t.isStopped() || !t.own.advancing.CompareAndSwap(false, true) {
			break
		}
	}
	t.makeCalls(calls)
	return stopped
}
