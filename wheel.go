package hashedwheel

import (
	"math"
	"runtime"
	"sync/atomic"
)

// maxTransfersPerTick bounds how many new timeouts the worker moves into
// buckets in one tick, so that goroutines calling NewTimeout in a loop cannot
// keep it from expiring timeouts.
const maxTransfersPerTick = 100_000

// link puts to into bucket idx of the wheel, from being when it needs the
// worker (see bucket.minDue), and marks the bucket occupied.
func (t *Timer) link(to *Timeout, idx, from int64) {
	b := &t.wheel.buckets[idx]
	if b.head == nil {
		t.wheel.occupied.add(int(idx))
	}
	b.add(to, from)
}

// bucketOf returns the index of the bucket a linked timeout is in.
func (t *Timer) bucketOf(to *Timeout) int64 { return int64(to.checkTick.Load()) & t.conf.mask }

// unlink takes to out of its bucket.
func (t *Timer) unlink(to *Timeout) {
	idx := t.bucketOf(to)
	b := &t.wheel.buckets[idx]
	b.remove(to)
	if b.head == nil {
		t.wheel.occupied.remove(int(idx))
	}
}

// place puts to, whose stLinked is set, into the bucket of its check tick
// (see checktick.go), taking it out of the bucket it is in if linked is
// true, and records that tick in its checkTick. Then it
// reads the deadline again, as a Reset to an earlier one that read checkTick
// before this wrote it may have left the move to the worker (see
// Timeout.Reset); it reports false if the deadline changed, and the caller
// places the timeout again.
//
// A timeout placed in the current tick's bucket is due at this tick: place
// must not be called while that bucket is being walked, unless the caller
// looks at the timeout again (see expireTimeouts).
func (t *Timer) place(to *Timeout, linked bool) bool {
	deadline := atomic.LoadInt64(&to.deadline)
	check := t.checkTickOf(to, deadline, linked)
	if assertInvariants {
		t.assertCheckTick(to, deadline, check)
	}
	// The bucket must be visited at the check tick: from its start, or
	// from the deadline if that is earlier (it is due there, or passed).
	from := min(deadline, check*t.conf.tickDuration)
	idx := check & t.conf.mask
	if t.conf.owned {
		t.own.nextDueAt = min(t.own.nextDueAt, t.tickEnd(check))
	}
	if linked && t.bucketOf(to) != idx {
		t.unlink(to)
		linked = false
	}
	moved := uint32(check) != to.checkTick.Load()
	if moved {
		to.checkTick.Store(uint32(check))
	}
	if linked {
		b := &t.wheel.buckets[idx]
		b.minDue = min(b.minDue, from)
		if !moved {
			return true // nothing a Reset relies on has changed
		}
	} else {
		t.link(to, idx, from)
	}
	return atomic.LoadInt64(&to.deadline) == deadline
}

// processChanges handles the timeouts that Cancel or Reset pointed out since
// the last tick: it unlinks the cancelled ones from their buckets and moves
// those reset to a deadline before their check tick to the bucket of their
// new one.
func (t *Timer) processChanges() {
	for {
		to := t.changes.pop()
		if to == nil {
			return
		}
		switch to.takeChange() & phaseMask {
		case stCancelled:
			// Cancel pushes only a linked timeout, and nothing else
			// unlinks a cancelled one.
			t.unlink(to)
			t.countCancelled(to)
		case stInit:
			// Reset pushes only a linked timeout, and the worker hands a
			// periodic one out only once it is out of this queue.
			for !t.place(to, true) {
			}
		}
		// stExpired: a one-shot timeout expired since it was pushed.
	}
}

// transferTimeoutsToBuckets moves new timeouts, and periodic timeouts back
// from a run, into their buckets, as many as the tick's transfer budget
// allows, and returns how many it took from the queues. It starts at a
// different shard each time, so that none waits behind the others. A timeout
// whose deadline is in a tick already processed goes into the current bucket
// and expires this tick.
//
// Timeouts cancelled before they got here are dropped. As in Netty they
// count against the budget, but only up to what is left of it: most are
// dropped as a queue is taken (see take) and charged together once that
// shard's live timeouts have been moved, and what they would take beyond
// the budget is forgiven. So a flood of cancelled timeouts does not hold
// back the live ones in its own shard, and holds back those in the others
// for about a tick per shard; in Netty, which skips the cancelled ones one
// by one in queue order, for as many ticks as the flood takes at 100,000 a
// tick.
func (t *Timer) transferTimeoutsToBuckets() int {
	taken := 0
	t.wheel.nextShard = (t.wheel.nextShard + 1) % shardCount
	for i := range shardCount {
		q := &t.shards[(t.wheel.nextShard+i)%shardCount].timeouts
		for t.wheel.transferBudget > 0 {
			var to *Timeout
			if t.conf.owned {
				to = q.popTaken() // only what takeAll took as Advance began
			} else {
				to = q.pop()
			}
			if to == nil {
				break
			}
			t.wheel.transferBudget--
			taken++
			t.transfer(to)
		}
		if d := q.takeDropped(); d > 0 {
			t.wheel.counters.cancelled += uint64(d)
			t.wheel.transferBudget = max(t.wheel.transferBudget-d, 0)
			taken += d
		}
	}
	if t.conf.owned {
		return taken // no worker to kick
	}
	// While timeouts arrive fast, producers kick a worker that has not
	// taken them for kickAfter. Out of budget, or when they arrive slowly,
	// they leave it to the worker's own early drains, or to the next tick's
	// transfer, at most a tick from now.
	kickAt := t.elapsed() + int64(kickAfter)
	if taken < kickBatch || t.wheel.transferBudget == 0 {
		kickAt += t.conf.tickDuration
	}
	t.wake.kickAt.Store(kickAt)
	if t.wake.kicked.Load() {
		t.wake.kicked.Store(false)
	}
	return taken
}

// droppable reports whether a timeout taken from a queue of new timeouts
// needs nothing more from the worker: Cancel cancelled it while it was
// queued, it is not a periodic run coming back (which the worker takes off
// its list of runs), and its task has no Cancelled method to call (or it was
// withdrawn, and gets no call). counted reports whether it counts among the
// cancelled timeouts: all but the withdrawn ones. A cancelled timeout stays
// cancelled, and only the worker clears stReturning, so the answer cannot
// change once the worker has taken the timeout.
func droppable(to *Timeout) (drop, counted bool) {
	switch to.state.Load() & (phaseMask | stReturning | stWithdrawn) {
	case stCancelled:
		_, notify := to.Task().(CancelledTask)
		return !notify, true
	case stCancelled | stWithdrawn:
		return true, false
	}
	return false, false
}

// transfer puts a timeout from the new-timeouts queue into its bucket, or
// drops it if it was cancelled meanwhile.
func (t *Timer) transfer(to *Timeout) {
	s := to.state.Load()
	if s&stReturning != 0 {
		t.rearm(to)
		return
	}
	for {
		if s&phaseMask != stInit {
			// Cancelled while queued; Cancel has counted it out.
			t.countCancelled(to)
			return
		}
		// Netty's remainingRounds would be (deadline/tick - t.wheel.tick) /
		// len(wheel): the visits to the bucket before the one at which it
		// is due.
		if to.markLinked(s) {
			t.placeNew(to)
			return
		}
		s = to.state.Load()
	}
}

// placeNew places a timeout that has just been marked linked.
func (t *Timer) placeNew(to *Timeout) {
	for linked := false; !t.place(to, linked); linked = true {
	}
}

// rearm takes back a periodic timeout whose run has returned: it links it
// for its next run, which the goroutine that ran it has set, or drops it if
// it was cancelled meanwhile.
func (t *Timer) rearm(to *Timeout) {
	t.wheel.running.remove(to)
	s, linked := to.endReturn()
	switch {
	case linked:
		t.placeNew(to)
	case s&phaseMask == stCancelled:
		// Cancel cancelled it during its run or since (Stop cancels only in
		// collectUnprocessed, which does not come here).
		t.countCancelled(to)
	}
}

// expireTimeouts visits bucket idx at the end of tick t.wheel.tick: it hands
// out the tasks of the timeouts whose deadline is before the end of the
// tick, and places the others again, where their next check tick says (it
// keeps those looked at in a later turn where they are). It hands out no
// task once the timer is stopped (for example by one of the tasks), leaving
// the rest for Stop. Callers visit a bucket only if its minDue says
// something in it may need the worker at this tick.
//
// Cancelled timeouts are left linked: the worker unlinks them from the
// changes queue at the start of the next tick.
func (t *Timer) expireTimeouts(idx int64) {
	t.wheel.walked++
	end := t.tickEnd(t.wheel.tick)
	b := &t.wheel.buckets[idx]
	b.minDue = math.MaxInt64
	// now is the time of the hand-outs, for the statistics and for the skip
	// of a periodic timeout's runs behind: read every 64 hand-outs, and
	// again after a task ran here (it may have blocked).
	var now int64
	stale, handed := true, 0
	for to := b.head; to != nil; {
		next := to.bucketNext
		s, deadline, due := t.claimDue(to, end)
		switch {
		case s&phaseMask != stInit:
			// Cancelled: unlinked by processChanges.
		case due && s&stQueued != 0 && (isPeriodic(to) || t.conf.owned):
			// In the changes queue, or about to be pushed there, since
			// processChanges ran. A periodic run would push it onto a shard
			// queue while its next field links the changes queue; on an
			// owned Timer it was reset during this Advance, and runs at the
			// next. processChanges brings it back to the current bucket
			// first.
			to.release(s)
			b.minDue = min(b.minDue, deadline)
		case !due:
			to.release(s)
			if !t.place(to, true) {
				continue // reset meanwhile: look at it again
			}
		default:
			if t.isStopped() {
				to.release(s)
				return // the rest is for Stop
			}
			periodic := isPeriodic(to)
			if stale || handed%64 == 0 {
				now, stale = t.elapsed(), false
			}
			if !t.expire(to, s, now, periodic) {
				continue // the state changed under us: look again
			}
			handed++
			t.countLateness(now - deadline)
			switch returned := t.handOut(to); {
			case returned >= 0:
				now = returned // a periodic run returned here
			case returned == ranHere:
				stale = true
			}
		}
		to = next
	}
}

// claimDue reads to's state and deadline consistently, and reports whether
// the timeout is pending and due before end. It waits out a Reset that is
// writing the deadline. For a timeout that Reset has moved, and that is due,
// it takes stBusy, so that no Reset can move the deadline before the worker
// hands the timeout out; s then has stBusy set, and the caller clears it
// (with the expiry, or with release).
func (t *Timer) claimDue(to *Timeout, end int64) (s int32, deadline int64, due bool) {
	for {
		s = to.state.Load()
		if s&stBusy != 0 && s&phaseMask == stInit {
			runtime.Gosched() // a Reset holds it for two stores
			continue
		}
		deadline = atomic.LoadInt64(&to.deadline)
		due = s&phaseMask == stInit && deadline < end
		if !due || s&stReset == 0 {
			return s, deadline, due
		}
		if to.claim(s) {
			s |= stBusy
			deadline = atomic.LoadInt64(&to.deadline)
			if deadline < end {
				return s, deadline, true
			}
			to.release(s)
			return s &^ stBusy, deadline, false
		}
	}
}

// expire moves to, pending and due with state s, to expired (or, if it is
// periodic, to running) and out of its bucket. It returns false, having
// released what claimDue took, if the state changed since s was read. now
// is about the time of the hand-out; periodic tells whether to is periodic.
func (t *Timer) expire(to *Timeout, s int32, now int64, periodic bool) bool {
	if !to.markExpired(s, periodic) {
		return false
	}
	t.unlink(to)
	if periodic {
		// Deadline reports this run's due time until the run returns.
		// Reset returns false while stRunning is set, so the worker alone
		// writes it. A worker that fell behind (a task held it up) hands
		// out this run as the latest one due, skipping those more than a
		// period behind.
		period := to.task.(*periodicTask).period
		atomic.StoreInt64(&to.deadline, skipBehind(atomic.LoadInt64(&to.deadline), period, now))
		t.wheel.running.add(to, 0)
	} else {
		t.pendingFor(to).Add(-1)
	}
	t.wheel.counters.expired++
	return true
}
