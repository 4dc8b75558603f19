package hashedwheel

import (
	"errors"
	"math"
	"time"
)

// ErrHasWorker is returned by Advance on a Timer that has a worker goroutine:
// only a Timer made [WithoutWorker] is driven by its owner.
//
// See the example of [Timer.Advance].
var ErrHasWorker = errors.New("hashedwheel: Advance on a Timer with a worker; " +
	"make the Timer with WithoutWorker to drive it yourself")

// ErrConcurrentAdvance is returned by Advance when another call of Advance or
// NextDeadline on the same Timer is in progress (from a task that Advance
// runs, say). Advance and NextDeadline belong to one owner, which calls them
// one at a time.
//
// See the example of [Timer.Advance].
var ErrConcurrentAdvance = errors.New("hashedwheel: Advance called while another Advance or " +
	"NextDeadline of the same Timer is in progress; they belong to one owner")

// Advance runs, on the calling goroutine and before it returns, every task
// run that is due by now on a Timer made [WithoutWorker], and returns how many
// runs it handed out. A timeout is due once the tick that holds its deadline
// has ended, as with a worker: its task never runs before Deadline. Runs are
// handed out tick by tick, in deadline order across ticks, each exactly once;
// with [WithTaskExecutor] they go to the executor.
//
// now is the owner's reading of the timer's clock, usually time.Now() taken
// at the top of its loop; a now later than the clock lets runs start early
// by the difference, and nothing else changes. A now earlier than one given
// before counts as that one.
//
// A call first takes in every timeout scheduled, reset or cancelled (from any
// goroutine) before it began: all of them, whatever their number. What tasks
// schedule or re-arm during the call is taken in by the next call, so one
// call is bounded. After a long gap, a call costs time that grows with the
// runs due and the buckets in use, not with the ticks that passed.
//
// Advance returns [ErrNotCreated] on a Timer that [NewTimer] did not make,
// [ErrHasWorker] on a Timer with a worker,
// [ErrConcurrentAdvance] if another Advance or [Timer.NextDeadline] of the
// Timer is in progress (it then changes nothing), and [ErrTimerStopped] after
// [Timer.Stop]. A task may call Stop: the call then hands out nothing more and
// cancels what is pending before it returns.
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
		t.own.advancing.Store(false)
		if t.isStopped() {
			t.collectForStop() // a Stop that found advancing held left it to us
		}
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
// [WithoutWorker] must call [Timer.Advance] again: a time never later than the
// first at which Advance would run something (it may be earlier; then that
// Advance runs nothing), and false if no timeout is pending. It is earlier
// when the first timeout is due more than a turn of the wheel ahead, which
// waits in a level above the wheel and is taken down a level at a time: an
// owner that sleeps until NextDeadline then wakes once a level with nothing
// to run (three times for a timeout an hour ahead on a wheel of 8 buckets of
// 10ms). It first takes in the timeouts scheduled, reset or cancelled from
// any goroutine before the call, so an owner that sleeps until the time it
// returns, or until another goroutine wakes it after scheduling, misses
// nothing. It allocates nothing and does not walk the timeouts.
//
// It counts the runs handed to a [WithTaskExecutor] executor that have not
// returned: as one returns it hands its Timeout back (a periodic one for its
// next run, or one its task armed again), and nothing tells the owner. While
// one is out and a timeout is pending, NextDeadline is at most the end of the
// tick the owner is in (the first at which what comes back could run), so
// an owner that sleeps until NextDeadline looks once a tick until the run
// returns. With nothing pending it returns false, runs out or not: a task
// that arms its Timeout again from a run on the executor is one more
// goroutine that schedules, and wakes the owner after it has.
//
// NextDeadline returns false, and changes nothing, on a Timer with a worker,
// after [Timer.Stop], and while an Advance or NextDeadline of the Timer is in
// progress.
//
// See the example of [Timer.Advance].
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
	// Loaded before the queues are looked at: a run hands its Timeout back
	// (pushes it) before it stops counting (executorRunReturned), so a
	// run not counted here has pushed already, and the look below sees it.
	runsOut := t.own.runsOut.Load() > 0
	if !t.nothingToTakeIn() {
		// A Cancelled call made as it took them in scheduled more, or a
		// run returned meanwhile: the next Advance takes that in, and is
		// due at once.
		at = min(at, t.own.lastNow)
	}
	if at < math.MaxInt64 && !runsOut {
		return t.life.startTime.Add(time.Duration(at)), true // the common case
	}
	pending := t.PendingTimeouts() > 0
	if at == math.MaxInt64 && !pending {
		return time.Time{}, false
	}
	if pending && runsOut {
		// A run out on the executor hands its Timeout back (a periodic
		// one, or one armed again from its task, both pending) as it
		// returns, which no call tells the owner: the owner looks again
		// at the end of the tick it is in, the first at which what it
		// hands back could run. (Advance with nothing to do leaves the
		// wheel's tick behind the owner's.)
		at = min(at, t.tickEnd(max(t.wheel.tick, t.own.lastNow/t.conf.tickDuration)))
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

// releaseOwner lets go of advancing. If the Timer was stopped meanwhile, by
// a task or by another goroutine whose Stop found advancing held, it
// cleans up first (see cleanUpOwned). It is safe to call as the goroutine
// exits by runtime.Goexit (a task's or a Cancelled call's): it lets go of
// advancing whatever happens.
func (t *Timer) releaseOwner() {
	defer func() {
		t.own.advancing.Store(false)
		if t.isStopped() {
			t.collectForStop() // a Stop that came after the check below left it to us
		}
	}()
	if t.isStopped() {
		t.cleanUpOwned()
	}
}

// collectForStop cancels the pending timeouts of a stopped owned Timer, if
// nobody has, and returns them. It returns nil if another goroutine holds
// advancing: that one collects them as it lets go.
func (t *Timer) collectForStop() []*Timeout {
	if !t.own.advancing.CompareAndSwap(false, true) {
		return nil
	}
	defer t.own.advancing.Store(false)
	if t.own.collected {
		return nil
	}
	t.cleanUpOwned()
	return t.life.unprocessed
}

// cleanUpOwned is the clean-up of a stopped owned Timer, by the holder of
// advancing, once: it cancels what is pending (and makes the Cancelled
// calls still owed) and closes the queues. A Cancelled call may call
// runtime.Goexit: the clean-up then goes on from where it was, as the
// goroutine exits (each timeout has left its list before its call, see
// collectUnprocessed), so that it ends however many calls do.
func (t *Timer) cleanUpOwned() {
	if t.own.collected {
		return
	}
	done := false
	defer func() {
		if !done {
			if r := recover(); r != nil {
				panic(r) // not a Goexit: an invariant broken (hashedwheel_assert) or the explorer's abort
			}
			t.cleanUpOwned() // a Cancelled call called runtime.Goexit
		}
	}()
	t.shutdown()
	t.own.collected = true
	done = true
}
