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
// the last tick: it unlinks the cancelled ones from their buckets and lets go
// of them, and moves those reset to a deadline before their check tick to
// the bucket of their new one. A cancelled one that Schedule armed again
// meanwhile is pending again, and is placed as a Reset one is.
func (t *Timer) processChanges() {
	for {
		to := t.changes.pop()
		if to == nil {
			return
		}
		t.processChange(to)
	}
}

// processChange handles one timeout taken from the changes queue. Only a
// linked timeout is pushed, and nothing else unlinks a pending or cancelled
// one.
func (t *Timer) processChange(to *Timeout) {
	if to.state.Load()&phaseMask == stCancelled {
		// Unlink first, as another Timer may link it once it is let go.
		// stQueued is cleared with stLinked, so that a Cancel of a revived
		// arm meanwhile does not push it again: the let-go then sees it.
		t.unlink(to)
		if s, ok := to.letGo(stLinked | stQueued); ok {
			t.countCancelled(to, s)
			return
		}
		// Revived: pending again, and no longer in its bucket.
		to.takeChange()
		t.placeNew(to)
		return
	}
	// Pending: reset, or revived. (A one-shot in this queue is not expired:
	// expireTimeouts leaves a due one that is queued for here.) stQueued is
	// cleared first: a change made later is pushed again rather than lost.
	to.takeChange()
	for !t.place(to, true) {
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

// transfer puts a timeout from the new-timeouts queue into its bucket, or
// lets go of it if it was cancelled meanwhile.
func (t *Timer) transfer(to *Timeout) {
	for {
		s := to.state.Load()
		switch {
		case s&stReturning != 0:
			t.rearm(to)
			return
		case s&phaseMask == stPending:
			// Netty's remainingRounds would be (deadline/tick -
			// t.wheel.tick) / len(wheel): the visits to the bucket before
			// the one at which it is due.
			if to.markLinked(s) {
				t.placeNew(to)
				return
			}
		default:
			// Cancelled while queued; Cancel has counted it out. letGo
			// waits for a Schedule that holds it, and fails if one revived
			// it: then it is pending, and placed above.
			if s, ok := to.letGo(stNew); ok {
				t.countCancelled(to, s)
				return
			}
		}
	}
}

// placeNew places a timeout that has just been marked linked.
func (t *Timer) placeNew(to *Timeout) {
	for linked := false; !t.place(to, linked); linked = true {
	}
}

// rearm takes back a periodic timeout whose run has returned: it links it
// for its next run, which the goroutine that ran it has set, or lets go of it
// if it was cancelled meanwhile.
func (t *Timer) rearm(to *Timeout) {
	t.wheel.running.remove(to)
	s, linked := to.endReturn()
	switch {
	case linked:
		t.placeNew(to)
	case s&phaseMask == stCancelled:
		// Cancel cancelled it during its run or since (Stop cancels only in
		// collectUnprocessed, which does not come here).
		t.countCancelled(to, s)
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
		case s&phaseMask != stPending:
			// Cancelled: unlinked by processChanges.
		case due && s&stQueued != 0:
			// In the changes queue, or about to be pushed there, since
			// processChanges ran: its next field links that queue, and on
			// an owned Timer it was reset during this Advance, and runs at
			// the next. processChanges brings it back to the current bucket
			// first. (claimDue did not claim it.)
			b.minDue = min(b.minDue, deadline)
		case !due:
			if !t.place(to, true) {
				continue // reset meanwhile: look at it again
			}
		default:
			if t.isStopped() {
				to.release()
				return // the rest is for Stop
			}
			// stBusy keeps Schedule from rewriting the task until the
			// run is handed out with it.
			task := to.task
			if stale || handed%64 == 0 {
				now, stale = t.elapsed(), false
			}
			if !t.expire(to, idx, s, now, task) {
				break // cancelled meanwhile: processChanges unlinks it
			}
			handed++
			t.countLateness(now - deadline)
			switch returned := t.handOut(to, task); {
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
// writing the deadline. For a due timeout that is not in the changes queue,
// it takes stBusy, so that no Reset moves the deadline, and no Schedule
// rewrites the task, before the worker hands the timeout out; s then has
// stBusy set, and the caller clears it (with the expiry, or with release).
func (t *Timer) claimDue(to *Timeout, end int64) (s int32, deadline int64, due bool) {
	for {
		s = to.state.Load()
		if s&phaseMask != stPending {
			return s, 0, false
		}
		if s&stBusy != 0 {
			runtime.Gosched() // a Reset holds it for two stores
			continue
		}
		deadline = atomic.LoadInt64(&to.deadline)
		if deadline >= end || s&stQueued != 0 {
			return s, deadline, deadline < end
		}
		if to.claim(s) {
			// A Reset may have written the deadline since it was read.
			s |= stBusy
			deadline = atomic.LoadInt64(&to.deadline)
			if deadline < end {
				return s, deadline, true
			}
			to.release()
			return s &^ stBusy, deadline, false
		}
	}
}

// expire moves to, pending and due with state s (claimed by claimDue), to
// expired (or, if its task is periodic, to running) and out of bucket idx.
// It returns false if a Cancel came since the claim: the timeout is then
// linked again, for processChanges to let go of. now is about the time of
// the hand-out.
func (t *Timer) expire(to *Timeout, idx int64, s int32, now int64, task TimerTask) bool {
	p, periodic := task.(*periodicTask)
	// Out of its bucket before it is expired, as a Schedule may then arm it
	// on another Timer, whose worker links it.
	t.unlink(to)
	if !to.markExpired(s, periodic) {
		t.link(to, idx, math.MaxInt64)
		return false
	}
	if periodic {
		// Deadline reports this run's due time until the run returns.
		// Reset returns false while stRunning is set, so the worker alone
		// writes it. A worker that fell behind (a task held it up) hands
		// out this run as the latest one due, skipping those more than a
		// period behind.
		atomic.StoreInt64(&to.deadline, skipBehind(atomic.LoadInt64(&to.deadline), p.period, now))
		t.wheel.running.add(to, 0)
	} else {
		t.pendingFor(to).Add(-1)
	}
	t.wheel.counters.expired++
	return true
}
