package hashedwheel

// A timeout's way through the worker, in the order it takes it: the worker
// takes it in from a queue of new timeouts (takeNew) and places it in the
// bucket of its check tick (place); it takes it in again from the changes
// queue when Cancel or Reset pointed it out (takeChange); it looks at it when
// it walks its bucket (expireTimeouts), places it again or hands its run out
// (expireDue, then handOut in run.go); and it lets go of a cancelled one
// (letGo). Each step is one critical section under the timeout's lock (see
// state.go), in which the worker also changes its own lists.

import "math"

// maxTransfersPerTick bounds how many new timeouts the worker moves into
// buckets in one tick, so that goroutines calling NewTimeout in a loop cannot
// keep it from expiring timeouts.
const maxTransfersPerTick = 100_000

// link puts to, whose check tick is check, into the wheel: the bucket of
// that tick (level 0), or the slot of that tick in level k above the
// buckets, from being when it needs the worker (see bucket.minDue). It
// records where in to.checkTick, and marks the bucket or slot occupied.
func (t *Timer) link(to *Timeout, check int64, k int, from int64) {
	if k == 0 {
		idx := check & t.conf.mask
		b := &t.wheel.buckets[idx]
		if b.head == nil {
			t.wheel.occupied.add(int(idx))
		}
		b.add(to, from)
		to.checkTick = uint32(check)
		return
	}
	l := t.wheel.levels[k-1]
	if l == nil {
		l = &level{}
		for i := range l.slots {
			l.slots[i].minDue = math.MaxInt64
		}
		t.wheel.levels[k-1] = l
	}
	slot := check >> t.levelShift(k)
	idx := slot & (levelSlots - 1)
	l.slots[idx].add(to, from)
	l.occupied |= 1 << idx
	to.checkTick = uint32(slot)
}

// unlink takes to, held in the wheel at level k (from its state), out of
// its bucket or slot.
func (t *Timer) unlink(to *Timeout, k int) {
	if k == 0 {
		idx := int64(to.checkTick) & t.conf.mask
		b := &t.wheel.buckets[idx]
		b.remove(to)
		if b.head == nil {
			t.wheel.occupied.remove(int(idx))
		}
		return
	}
	l := t.wheel.levels[k-1]
	idx := to.checkTick & (levelSlots - 1)
	l.slots[idx].remove(to)
	if l.slots[idx].head == nil {
		l.occupied &^= 1 << idx
	}
}

// place puts to, under its lock with state s, where its check tick says
// (see checktick.go): a bucket of the wheel, or a slot of a level above it,
// taking it out of where it is first if linked. It returns s with the level
// it went to.
//
// A timeout placed in the current tick's bucket is due at this tick: place
// must not be called while that bucket is being walked, unless the caller
// looks at the timeout again (see expireTimeouts).
func (t *Timer) place(to *Timeout, s state, linked bool) state {
	deadline := to.deadline.Load()
	check, k := t.checkTickOf(deadline)
	if assertInvariants {
		t.assertCheckTick(to, deadline, check, k)
	}
	// The bucket must be visited at the check tick: from its start, or
	// from the deadline if that is earlier (it is due there, or passed).
	from := min(deadline, check*t.conf.tickDuration)
	if t.conf.owned {
		t.own.nextDueAt = min(t.own.nextDueAt, t.tickEnd(check))
	}
	if linked {
		if k == 0 && s.level() == 0 && int64(to.checkTick)&t.conf.mask == check&t.conf.mask {
			// Staying in its bucket: a look at it for the others there
			// does not move it.
			b := &t.wheel.buckets[check&t.conf.mask]
			b.minDue = min(b.minDue, from)
			to.checkTick = uint32(check)
			return s
		}
		t.unlink(to, s.level())
	}
	t.link(to, check, k, from)
	return s.withLevel(k)
}

// cascade takes down the timeouts of the levels whose slot starts at the
// worker's tick: it places each again, into a lower level or the wheel's
// bucket of its deadline, as each is due less than a slot's width after
// that start. The worker calls it at every tick it processes, before it
// walks the tick's bucket; nextDueTick makes it stop at every such tick.
func (t *Timer) cascade() {
	tick := t.wheel.tick
	for k := 1; k <= maxLevels; k++ {
		shift := t.levelShift(k)
		if shift >= 62 || tick&(1<<shift-1) != 0 {
			return // not a slot's start here, nor in the levels above
		}
		l := t.wheel.levels[k-1]
		idx := tick >> shift & (levelSlots - 1)
		if l == nil || l.occupied&(1<<idx) == 0 {
			continue
		}
		to := l.slots[idx].head
		l.slots[idx] = bucket{minDue: math.MaxInt64}
		l.occupied &^= 1 << idx
		for to != nil {
			s := to.lock()
			next := to.bucketNext
			to.bucketNext, to.bucketPrev = nil, nil
			to.unlock(t.place(to, s, false))
			to = next
		}
	}
}

// processChanges takes in the timeouts that Cancel or Reset pointed out
// since the last tick (see takeChange).
func (t *Timer) processChanges() {
	for to := t.changes.pop(); to != nil; to = t.changes.pop() {
		t.takeChange(to)
	}
}

// takeChange takes in a timeout popped from the changes queue: it unlinks a
// cancelled one and lets go of it, and places again one that is pending
// (Reset to a deadline before its check tick, or cancelled and armed again
// by Schedule since). A stopping worker has taken one held heldChanges out
// of its bucket and counted it already: it just lets go of it.
func (t *Timer) takeChange(to *Timeout) {
	s := to.lock()
	if assertInvariants {
		assertFoundIn(to, s, "the changes queue", heldBucketAndChanges, heldChanges)
	}
	switch {
	case s.held() == heldChanges:
		t.endCancelled(to, s, false)
	case s.phase() == stPending:
		to.unlock(t.place(to, s, true).withHeld(heldBucket))
	default:
		t.unlink(to, s.level())
		t.endCancelled(to, s, true)
	}
}

// transferTimeoutsToBuckets takes in new timeouts, and periodic timeouts
// back from a run (see takeNew), as many as the tick's transfer budget
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
			t.takeNew(to)
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

// takeNew takes in a timeout popped from a queue of new timeouts: a new
// one, or a periodic one whose run has returned (heldReturning), which
// leaves the list of runs. It places a pending one in its bucket, and lets
// go of one cancelled meanwhile.
func (t *Timer) takeNew(to *Timeout) {
	s := to.lock()
	if assertInvariants {
		assertFoundIn(to, s, "a queue of new timeouts", heldNew, heldReturning)
	}
	if s.held() == heldReturning {
		t.wheel.running.remove(to)
	}
	if s.phase() != stPending {
		t.endCancelled(to, s, true)
		return
	}
	// Netty's remainingRounds would be (deadline/tick - t.wheel.tick) /
	// len(wheel): the visits to the bucket before the one at which it is
	// due.
	to.unlock(t.place(to, s, false).withHeld(heldBucket))
}

// dropCancelled lets go, in one step, of a timeout that a queue of new
// timeouts takes and that needs nothing more from the worker: Cancel
// cancelled it while it was queued and no Cancelled call is owed. It
// reports whether it did; the caller counts it.
func (to *Timeout) dropCancelled() bool {
	s := to.load()
	return s&(phaseMask|heldMask|stOwesCancelled) == stCancelled|heldNew &&
		to.swap(s, s.withHeld(heldNowhere))
}

// letGo ends the critical section of a cancelled timeout s that its
// Timer is done with, out of its lists and levels: it lets go of it (held
// nowhere), counts the cancel if count (the worker's counters: only the
// worker counts), and returns the Cancelled call owed, if any, with the task
// read inside the section, for the caller to make after it.
func (t *Timer) letGo(to *Timeout, s state, count bool) owedCall {
	if count {
		t.wheel.counters.cancelled++
	}
	var c owedCall
	if s&stOwesCancelled != 0 {
		c = owedCall{to, to.task}
	}
	to.unlock(s.withHeld(heldNowhere) &^ stOwesCancelled)
	return c
}

// expireTimeouts visits bucket idx at the end of tick t.wheel.tick: it hands
// out the runs of the timeouts whose deadline is before the end of the tick,
// and places the others again, where their next check tick says (it keeps
// those looked at in a later turn where they are). It hands out no run once
// the timer is stopped (for example by one of the tasks), leaving the rest
// for Stop. Callers visit a bucket only if its minDue says something in it
// may need the worker at this tick.
//
// A timeout in the changes queue (cancelled, reset or revived since the
// last tick) is left where it is, and leaves minDue as it is: its next
// field links that queue, and takeChange brings it where it belongs, and
// sets the minDue of the bucket it goes to, at the start of the worker's
// next tick, or at the owner's next Advance or NextDeadline. (Kept at its
// deadline here, minDue would make an owner's Advance across a long gap
// walk this bucket at every turn of the wheel until the call ends.)
func (t *Timer) expireTimeouts(idx int64) {
	t.wheel.walked++
	end := t.tickEnd(t.wheel.tick)
	b := &t.wheel.buckets[idx]
	b.minDue = math.MaxInt64
	// The time of the hand-outs, for the statistics and for the skip of a
	// periodic timeout's runs behind (see handOutClock).
	clock := handOutClock{t: t}
	defer clock.finish()
	for to := b.head; to != nil; {
		next := to.bucketNext
		s := to.lock()
		if assertInvariants {
			assertFoundIn(to, s, "a bucket", heldBucket, heldBucketAndChanges)
		}
		deadline := to.deadline.Load()
		switch {
		case s.held() != heldBucket:
			to.unlock(s) // queued for takeChange

		case deadline >= end:
			to.unlock(t.place(to, s, true))
		case t.isStopped():
			to.unlock(s)
			return // the rest is for Stop
		default:
			_, periodic := to.task.(*periodicTask)
			now := clock.handOut(deadline, periodic)
			switch returned := t.handOut(t.expireDue(to, s, now)); {
			case returned >= 0:
				clock.read(returned) // a periodic run returned here
			case returned == ranHere:
				clock.taskRan()
			}
		}
		to = next
	}
}

// expireDue ends the critical section of to, pending in its bucket and
// due, with state s: it takes it out of the bucket and hands its run out,
// returning what handOut needs. A one-shot arm expires, held by its run
// (heldRun) until the run returns, so that an arm made meanwhile is not
// handed out before that (see endRun). A periodic arm
// stays pending, on the list of runs (heldPeriodicRun), due at the time of
// this run (skipping those more than a period behind now) until the run
// returns.
func (t *Timer) expireDue(to *Timeout, s state, now int64) hand {
	task := to.task
	h := hand{to: to, task: task, where: t.runsWhere(task)}
	t.unlink(to, 0)
	var ns state
	if p, periodic := task.(*periodicTask); periodic {
		to.deadline.Store(skipBehind(to.deadline.Load(), p.period, now))
		t.wheel.running.add(to, 0)
		ns = s.withHeld(heldPeriodicRun)
	} else {
		ns = s.withPhase(stExpired).withHeld(heldRun)
		t.pendingFor(to).Add(-1)
	}
	to.unlock(ns)
	t.wheel.counters.expired++
	return h
}
