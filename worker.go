package hashedwheel

import (
	"bytes"
	"math"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
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
		if !exited {
			// A task called runtime.Goexit (t.FailNow in a test callback
			// does), which recover cannot stop. The wheel is intact and the
			// tick unfinished: carry on in a new goroutine, which processes
			// the rest of this tick with what is left of its transfer
			// budget.
			// The walk of the tick's bucket was cut short, and had not
			// rebuilt its minDeadline: mark the bucket due.
			t.wheel[t.tick&t.mask].minDeadline = 0
			t.logError("hashedwheel: a task called runtime.Goexit on the worker goroutine; " +
				"the worker goes on in a new goroutine")
			go t.run()
			return
		}
		close(t.done)
	}()
	t.workerID.Store(goroutineID())
	// The sleep timer is made here, by the worker, so that in a synctest
	// bubble it runs on the bubble's clock.
	sleep := time.NewTimer(time.Hour)
	sleep.Stop()
	for t.waitForNextTick(sleep) {
		t.processChanges()
		t.transferTimeoutsToBuckets()
		if t.catchUp() {
			continue
		}
		t.expireTimeouts(t.tick & t.mask)
		t.counters.ticks++
		t.publishStats()
		t.advanceTo(t.tick + 1)
	}
	// Cancel what is pending first, so that deadline contexts fall back to
	// the runtime's timers at once rather than when the pool is done.
	t.collectUnprocessed()
	if t.pool != nil {
		// Tasks already handed to the pool are expired: they run before
		// Stop returns. Periodic runs handed to it were cancelled above,
		// and do not start.
		t.pool.close()
	}
	t.publishStats()
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
	clockTick := t.elapsed() / t.tickDuration
	if clockTick <= t.tick+1 || !t.newTimeoutsEmpty() || !t.changes.isEmpty() {
		return false
	}
	target := clockTick // the tick the clock is in, which has not ended
	if due, park := t.nextDueTick(); !park {
		target = min(target, due)
	}
	if target <= t.tick {
		return false
	}
	t.advanceTo(target)
	return true
}

// advanceTo moves the worker to tick, which starts with a fresh transfer
// budget.
func (t *Timer) advanceTo(tick int64) {
	if tick != t.tick {
		t.tick = tick
		t.transferBudget = maxTransfersPerTick
	}
}

// tickEnd returns the end of tick, in nanoseconds since the timer started:
// math.MaxInt64 for a tick that would end past it, which never ends.
func (t *Timer) tickEnd(tick int64) int64 {
	if tick >= math.MaxInt64/t.tickDuration {
		return math.MaxInt64
	}
	return (tick + 1) * t.tickDuration
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
		interval := t.drainInterval / int64(n) * drainBatch
		t.drainInterval = min(max(interval, int64(minDrainInterval)), t.tickDuration)
	}
}

// waitForNextTick waits until tick t.tick has ended. It returns false when
// the timer is stopped.
//
// Netty's worker wakes every tick. This one sleeps longer when it can prove
// nothing is due sooner: both queues are empty and no bucket has a timeout
// that may be due before some later tick. It then skips the ticks before
// that one, or parks until woken if the wheel is empty. A producer that
// pushes while the worker sleeps wakes it; the worker then takes its tick
// from the clock, never past the tick it meant to wake for, so deadlines are
// kept exactly as if it had ticked all along.
func (t *Timer) waitForNextTick(sleep *time.Timer) bool {
	for {
		if t.isStopped() {
			return false
		}
		now := t.elapsed()
		if now >= t.tickEnd(t.tick) {
			return true
		}
		arriving := !t.newTimeoutsEmpty() && t.transferBudget > 0
		if arriving {
			t.drain()
		}
		// While timeouts arrive, keep draining them; sleep longer only once
		// they stop.
		target, park := t.tick, false
		if !arriving && t.wheel[t.tick&t.mask].minDeadline >= t.tickEnd(t.tick) {
			t.sleeping.Store(true)
			newEmpty := t.newTimeoutsEmpty()
			if !newEmpty && t.transferBudget > 0 {
				// A timeout arrived since arriving was computed, and its
				// producer may have found sleeping still false and not
				// woken us: drain it now, not at the end of the tick.
				t.sleeping.Store(false)
				continue
			}
			// Out of budget with timeouts queued: the next tick takes them.
			if newEmpty && t.changes.isEmpty() {
				target, park = t.nextDueTick()
				// A tick that never ends holds nothing that comes due.
				park = park || t.tickEnd(target) == math.MaxInt64
			}
			if target == t.tick && !park {
				t.sleeping.Store(false)
			}
		}
		t.publishStats()
		if park {
			select {
			case <-t.wake:
			case <-t.stopped:
			}
		} else {
			wakeAt := t.tickEnd(target)
			if arriving {
				wakeAt = min(wakeAt, now+t.drainInterval)
			}
			sleep.Reset(time.Duration(wakeAt - now))
			select {
			case <-sleep.C:
			case <-t.wake:
				sleep.Stop()
			case <-t.stopped:
				sleep.Stop()
			}
		}
		t.counters.wakeups++
		if park || target > t.tick {
			t.sleeping.Store(false)
			// Nothing was due in the ticks slept through, and nothing was
			// transferred meanwhile, so the worker may stand at any tick up
			// to the clock's, but not beyond the one it meant to wake for.
			clockTick := t.elapsed() / t.tickDuration
			if !park {
				clockTick = min(clockTick, target)
			}
			t.advanceTo(max(t.tick, clockTick))
		}
	}
}

// nextDueTick returns the first tick, from t.tick on, at which a bucket may
// have a timeout due, or park true if the wheel is empty. It looks only at
// non-empty buckets, in tick order, and stops at the first one due at its
// next visit, or once the next visits are later than the earliest due tick
// found, so its cost does not grow with the wheel.
func (t *Timer) nextDueTick() (due int64, park bool) {
	due, park = math.MaxInt64, true
	cur := int(t.tick & t.mask)
	// Buckets cur..len-1 are visited at offsets 0.., then 0..cur-1.
	for _, span := range [2]struct{ from, to, offset int }{
		{cur, len(t.wheel), -cur},
		{0, cur, len(t.wheel) - cur},
	} {
		for i := t.occupied.next(span.from); i >= 0 && i < span.to; i = t.occupied.next(i + 1) {
			visit := t.tick + int64(i+span.offset)
			if visit >= due {
				return due, park
			}
			t.scanned++
			// The bucket's timeouts due later are due at the tick of their
			// deadline.
			bucketDue := max(t.wheel[i].minDeadline/t.tickDuration, visit)
			if bucketDue == visit {
				return visit, false
			}
			due, park = min(due, bucketDue), false
		}
	}
	return due, park
}

// link puts to into bucket idx of the wheel and marks the bucket occupied.
func (t *Timer) link(to *Timeout, idx, deadline int64) {
	b := &t.wheel[idx]
	if b.head == nil {
		t.occupied.add(int(idx))
	}
	b.add(to, deadline)
}

// bucketOf returns the index of the bucket a linked timeout is in.
func (t *Timer) bucketOf(to *Timeout) int64 { return int64(to.checkTick.Load()) & t.mask }

// unlink takes to out of its bucket.
func (t *Timer) unlink(to *Timeout) {
	idx := t.bucketOf(to)
	b := &t.wheel[idx]
	b.remove(to)
	if b.head == nil {
		t.occupied.remove(int(idx))
	}
}

// place puts to, whose stLinked is set, into the bucket of its deadline,
// taking it out of the bucket it is in if linked is true, and records in its
// checkTick when the worker looks at it again: the deadline's tick, or the
// current one if that has passed. Then it reads the deadline again, as a
// Reset to an earlier one that read checkTick before this wrote it may have
// left the move to the worker (see Timeout.Reset); it reports false if the
// deadline changed, and the caller places the timeout again.
//
// A timeout placed in the current tick's bucket is due at this tick: place
// must not be called while that bucket is being walked, unless the caller
// looks at the timeout again (see expireTimeouts).
func (t *Timer) place(to *Timeout, linked bool) bool {
	deadline := atomic.LoadInt64(&to.deadline)
	check := max(deadline/t.tickDuration, t.tick)
	idx := check & t.mask
	if linked && t.bucketOf(to) != idx {
		t.unlink(to)
		linked = false
	}
	if uint32(check) != to.checkTick.Load() {
		to.checkTick.Store(uint32(check))
	} else if linked {
		// Nothing a Reset relies on has changed.
		b := &t.wheel[idx]
		b.minDeadline = min(b.minDeadline, deadline)
		return true
	}
	if linked {
		b := &t.wheel[idx]
		b.minDeadline = min(b.minDeadline, deadline)
	} else {
		t.link(to, idx, deadline)
	}
	return atomic.LoadInt64(&to.deadline) == deadline
}

// processChanges handles the timeouts that Cancel or Reset pointed out since
// the last tick: it unlinks the cancelled ones from their buckets and moves
// those reset to an earlier deadline to the bucket of that deadline.
func (t *Timer) processChanges() {
	for {
		to := t.changes.pop()
		if to == nil {
			return
		}
		// Clear stQueued before reading the state, so that a change made
		// after this read is pushed again rather than lost.
		s := to.state.And(^stQueued) &^ stQueued
		switch s & phaseMask {
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
	t.nextShard = (t.nextShard + 1) % shardCount
	for i := range shardCount {
		q := &t.shards[(t.nextShard+i)%shardCount].timeouts
		for t.transferBudget > 0 {
			to := q.pop()
			if to == nil {
				break
			}
			t.transferBudget--
			taken++
			t.transfer(to)
		}
		if d := q.takeDropped(); d > 0 {
			t.counters.cancelled += uint64(d)
			t.transferBudget = max(t.transferBudget-d, 0)
			taken += d
		}
	}
	// While timeouts arrive fast, producers kick a worker that has not
	// taken them for kickAfter. Out of budget, or when they arrive slowly,
	// they leave it to the worker's own early drains, or to the next tick's
	// transfer, at most a tick from now.
	kickAt := t.elapsed() + int64(kickAfter)
	if taken < kickBatch || t.transferBudget == 0 {
		kickAt += t.tickDuration
	}
	t.kickAt.Store(kickAt)
	if t.kicked.Load() {
		t.kicked.Store(false)
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
		// Netty's remainingRounds would be (deadline/tick - t.tick) /
		// len(wheel): the visits to the bucket before the one at which it
		// is due.
		if to.state.CompareAndSwap(s, s|stLinked) {
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
	t.running.remove(to)
	for {
		s := to.state.Load()
		if s&phaseMask != stInit {
			// Cancel cancelled it during its run or since (Stop cancels
			// only in collectUnprocessed, which does not come here).
			to.state.And(^stReturning)
			if s&phaseMask == stCancelled {
				t.countCancelled(to)
			}
			return
		}
		if to.state.CompareAndSwap(s, s&^stReturning|stLinked) {
			t.placeNew(to)
			return
		}
	}
}

// skipBehind returns the first of due, due+period, due+2*period, ... that
// is at most one period behind now: the runs more than a period behind are
// skipped, as time.Ticker drops ticks.
func skipBehind(due, period, now int64) int64 {
	if behind := now - due; behind > period {
		// ceil(behind/period) - 1 periods; the sum stays below now.
		due += (behind - 1) / period * period
	}
	return due
}

// nextPeriod returns the due time of the run after one due at due: a period
// later, saturating.
func nextPeriod(due, period int64) int64 {
	if due > math.MaxInt64-period {
		return math.MaxInt64
	}
	return due + period
}

// expireTimeouts visits bucket idx at the end of tick t.tick: it hands out
// the tasks of the timeouts whose deadline is before the end of the tick;
// the others are due in a later turn, or were reset to another bucket, where
// it moves them. It hands out no task once the timer is stopped (for example
// by one of the tasks), leaving the rest for Stop.
//
// Cancelled timeouts are left linked: the worker unlinks them from the
// changes queue at the start of the next tick.
func (t *Timer) expireTimeouts(idx int64) {
	end := t.tickEnd(t.tick)
	b := &t.wheel[idx]
	b.minDeadline = math.MaxInt64
	// now is the time of the hand-outs: read every 64 hand-outs for the
	// statistics, and before a periodic hand-out if a task ran here since
	// (it may have blocked), for the skip of the runs behind.
	var now int64
	stale, handed := true, 0
	for to := b.head; to != nil; {
		next := to.bucketNext
		s, deadline, due := t.claimDue(to, end)
		switch {
		case s&phaseMask != stInit:
			// Cancelled: unlinked by processChanges.
		case due && s&stQueued != 0 && isPeriodic(to):
			// In the changes queue, or about to be pushed there, since
			// processChanges ran: its run would push it onto a shard queue
			// while its next field links the changes queue. processChanges
			// brings it back to the current bucket first.
			t.release(to, s)
			b.minDeadline = min(b.minDeadline, deadline)
		case !due:
			t.release(to, s)
			if !t.place(to, true) {
				continue // reset meanwhile: look at it again
			}
		default:
			if t.isStopped() {
				t.release(to, s)
				return // the rest is for Stop
			}
			periodic := isPeriodic(to)
			if stale && periodic || handed%64 == 0 {
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
		if to.state.CompareAndSwap(s, s|stBusy) {
			s |= stBusy
			deadline = atomic.LoadInt64(&to.deadline)
			if deadline < end {
				return s, deadline, true
			}
			t.release(to, s)
			return s &^ stBusy, deadline, false
		}
	}
}

// release clears the stBusy that claimDue took, if s says it did.
func (t *Timer) release(to *Timeout, s int32) {
	if s&stBusy != 0 {
		to.state.And(^stBusy)
	}
}

// expire moves to, pending and due with state s, to expired (or, if it is
// periodic, to running) and out of its bucket. It returns false, having
// released what claimDue took, if the state changed since s was read. now
// is about the time of the hand-out; periodic tells whether to is periodic.
func (t *Timer) expire(to *Timeout, s int32, now int64, periodic bool) bool {
	ns := s&^stBusy | stExpired
	if periodic {
		ns = s&^(stBusy|stLinked) | stRunning
	}
	if !to.state.CompareAndSwap(s, ns) {
		t.release(to, s)
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
		t.running.add(to, 0)
	} else {
		t.pendingFor(to).Add(-1)
	}
	t.counters.expired++
	return true
}

// countLateness records a run handed out late after its deadline.
func (t *Timer) countLateness(late int64) {
	if late > 2*t.tickDuration {
		t.counters.late++
	}
	t.counters.maxLateness = max(t.counters.maxLateness, late)
}

// handOut results other than the time a periodic run returned.
const (
	ranHere   = -1 // a one-shot task ran on the worker, or went to the executor
	handedOff = -2 // the task went to the pool
)

// handOut runs an expired timeout's task: on the pool, through the executor,
// or here on the worker. It returns the time a periodic run that ran here
// returned, ranHere if a task ran here or went to the executor (which may
// have taken time), or handedOff.
func (t *Timer) handOut(to *Timeout) int64 {
	if t.pool != nil && !isUrgent(to) {
		t.pool.submit(to)
		return handedOff
	}
	// The run counts in Stats before its task starts: a task that blocks
	// must not hide it, nor the runs handed out before it.
	t.published.expired.Store(t.counters.expired)
	if t.taskExecutor != nil && !isUrgent(to) {
		t.execute(to)
		return ranHere
	}
	if p, ok := to.task.(*periodicTask); ok {
		return t.runPeriodic(to, p, true)
	}
	t.callTask(to)
	return ranHere
}

// isUrgent reports whether to's task must run on the worker even with a
// pool or an executor: a context's deadline closes a channel and cancels
// derived contexts, never queued behind user tasks, which may wait for it.
func isUrgent(to *Timeout) bool {
	_, ok := to.task.(*deadlineTask)
	return ok
}

// runTimeout runs to's task on the calling goroutine, a pool goroutine or
// the executor's.
func (t *Timer) runTimeout(to *Timeout) {
	if p, ok := to.task.(*periodicTask); ok {
		t.runPeriodic(to, p, false)
		return
	}
	t.callTask(to)
}

// runPeriodic runs one run of a periodic timeout that the worker handed out,
// on the calling goroutine (the worker's if onWorker), and returns the time
// it returned. A run that was cancelled, or whose timer was stopped, after
// it was handed out (while it waited in the pool's queue, say) is skipped:
// the timeout is pending until then, so its task must not run after Cancel
// or Stop. A run off the worker that starts more than a period after it was
// due starts as the latest run due, so that the next is not due at once.
//
// Then the timeout goes back to the worker for its next run, due a period
// after this one (skipping those more than a period behind the return), even
// if the task panicked or called runtime.Goexit.
func (t *Timer) runPeriodic(to *Timeout, p *periodicTask, onWorker bool) (returned int64) {
	defer func() { returned = t.handBack(to, p) }()
	if to.IsCancelled() || t.isStopped() {
		return
	}
	if !onWorker {
		now := t.elapsed()
		atomic.StoreInt64(&to.deadline, skipBehind(atomic.LoadInt64(&to.deadline), p.period, now))
	}
	t.callTask(to)
	return
}

// handBack gives a periodic timeout whose run has returned (or, if its
// executor failed, never started) back to the worker, through its queue of
// new timeouts, for its next run; from then on Reset may move it. It sets
// that run's deadline first, and returns the time it read to do so. If
// Stop has taken the timeout meanwhile, it hands nothing back.
func (t *Timer) handBack(to *Timeout, p *periodicTask) int64 {
	now := t.elapsed()
	// stRunning still keeps Reset out.
	next := skipBehind(nextPeriod(atomic.LoadInt64(&to.deadline), p.period), p.period, now)
	atomic.StoreInt64(&to.deadline, next)
	for {
		s := to.state.Load()
		if s&stRunning == 0 {
			return now // collectUnprocessed took it off the list of runs
		}
		if to.state.CompareAndSwap(s, s&^stRunning|stReturning) {
			break
		}
	}
	t.shardFor(to).timeouts.push(to)
	t.wakeWorker()
	return now
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

// collectUnprocessed cancels every timeout still pending, in the buckets,
// still queued or out on a periodic run, and keeps those it cancelled in
// t.unprocessed for Stop. It runs on the worker as it exits, before it waits
// for the pool. Timeouts that Cancel cancelled and that the worker has not
// yet unlinked get their Cancelled call here.
//
// It can be resumed: a Cancelled call may call runtime.Goexit, and the
// worker's next goroutine then runs it again. So each timeout leaves its
// list before the call, and the result is kept in t.unprocessed.
func (t *Timer) collectUnprocessed() {
	// A producer that pushes after these pops sees the stop and cancels its
	// timeout itself (see scheduleTimeout).
	for i := range t.shards {
		q := &t.shards[i].timeouts
		for to := q.pop(); to != nil; to = q.pop() {
			if to.state.Load()&stReturning != 0 {
				t.running.remove(to)
				to.state.And(^stReturning)
			}
			t.unprocessed = t.cancelForStop(to, t.unprocessed)
		}
		t.counters.cancelled += uint64(q.takeDropped())
	}
	for i := range t.wheel {
		b := &t.wheel[i]
		for to := b.head; to != nil; to = b.head {
			b.remove(to)
			t.unprocessed = t.cancelForStop(to, t.unprocessed)
		}
	}
	t.occupied = occupancy{}
	// Periodic runs still out on the pool or with an executor: pending,
	// so Stop returns them. Clearing stRunning tells the goroutine that runs
	// one not to hand it back, and one still waiting in the pool's queue
	// does not start, as it is cancelled.
	for to := t.running.head; to != nil; to = t.running.head {
		t.running.remove(to)
		to.state.And(^stRunning)
		t.unprocessed = t.cancelForStop(to, t.unprocessed)
	}
	for t.changes.pop() != nil {
		// Every timeout in it was in a bucket, and has been dealt with
		// there; popping drops the queue's references to them.
	}
}

// cancelForStop cancels to if it is still pending and appends it to
// unprocessed; if Cancel cancelled it first, it delivers its Cancelled call.
func (t *Timer) cancelForStop(to *Timeout, unprocessed []*Timeout) []*Timeout {
	if to.markCancelled() {
		t.counters.cancelled++
		if o, ok := to.task.(stopObserver); ok {
			o.timerStopped(to)
		}
		return append(unprocessed, to)
	}
	if to.IsCancelled() {
		t.countCancelled(to)
	}
	return unprocessed
}

// stopObserver is a task that must know when Stop cancels its timeout:
// a deadline context, which then keeps its deadline on the runtime's timer.
type stopObserver interface {
	timerStopped(to *Timeout)
}

// countCancelled counts a timeout that Cancel cancelled, now that the worker
// has let go of it, and calls its task's Cancelled method if it has one. A
// timeout that its NewTimeout took back (stWithdrawn) was never its
// caller's: it is neither counted nor told.
func (t *Timer) countCancelled(to *Timeout) {
	if to.state.Load()&stWithdrawn != 0 {
		return
	}
	t.counters.cancelled++
	t.notifyCancelled(to)
}

// notifyCancelled calls the task's Cancelled method, if it has one, for a
// timeout that Cancel cancelled and the worker has unlinked.
func (t *Timer) notifyCancelled(to *Timeout) {
	c, ok := to.Task().(CancelledTask)
	if !ok {
		return
	}
	defer t.recoverPanic(to, "Cancelled")
	c.Cancelled(to)
}

// publishStats makes the worker's counters visible to Stats. It runs after
// each tick and before the worker blocks, so counters are at most a tick
// behind.
func (t *Timer) publishStats() {
	c := &t.counters
	t.published.expired.Store(c.expired)
	t.published.cancelled.Store(c.cancelled)
	t.published.ticks.Store(c.ticks)
	t.published.wakeups.Store(c.wakeups)
	t.published.late.Store(c.late)
	t.published.maxLateness.Store(c.maxLateness)
}

// goroutineID returns the ID of the calling goroutine, which Go does not
// expose otherwise. Stop uses it to tell that it runs inside a task on the
// worker or the pool, where waiting for the worker would deadlock. It parses
// the header of the goroutine's stack trace, "goroutine 42 [running]:", and
// costs about a microsecond; only Stop and the start of the worker and of
// pool goroutines call it. It returns 0, which is no goroutine's ID, if the
// header cannot be parsed: NewTimer then fails (see canReadGoroutineIDs).
func goroutineID() uint64 {
	var buf [64]byte
	return parseGoroutineID(buf[:runtime.Stack(buf[:], false)])
}

// parseGoroutineID returns the ID in a stack trace's header, or 0.
func parseGoroutineID(b []byte) uint64 {
	b, ok := bytes.CutPrefix(b, []byte("goroutine "))
	if !ok {
		return 0
	}
	b, _, _ = bytes.Cut(b, []byte(" "))
	id, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		return 0
	}
	return id
}

// canReadGoroutineIDs reports whether goroutineID works in this Go release.
// If it did not, Stop called from a task would wait for the worker that
// runs it, forever; NewTimer fails instead.
var canReadGoroutineIDs = sync.OnceValue(func() bool { return goroutineID() != 0 })
