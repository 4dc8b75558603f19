package hashedwheel

import (
	"bytes"
	"math"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"
)

// run is the worker goroutine: Netty's Worker.run. Each tick it processes
// the changes queue (unlinking cancelled timeouts, moving those reset to an
// earlier deadline), moves new timeouts into buckets, expires the current
// bucket and advances. Ticks are absolute, counted from startTime, so they do
// not drift; a worker that falls behind processes the missed ticks back to
// back.
func (t *Timer) run() {
	exited := false
	defer func() {
		if !exited {
			// A task called runtime.Goexit (t.FailNow in a test callback
			// does), which recover cannot stop. The wheel is intact and the
			// tick unfinished: carry on in a new goroutine, which processes
			// the rest of this tick with what is left of its transfer
			// budget.
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
		idx := t.tick & t.mask
		t.processChanges()
		t.transferTimeoutsToBuckets()
		t.expireTimeouts(idx)
		t.counters.ticks++
		t.publishStats()
		t.advanceTo(t.tick + 1)
	}
	if t.pool != nil {
		// Tasks already handed to the pool are expired: they run before
		// Stop returns. Periodic runs come back through the queues, where
		// collectUnprocessed finds them.
		t.pool.close()
	}
	t.collectUnprocessed()
	t.publishStats()
	exited = true
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
	to.bucketIndex = int32(idx)
	b := &t.wheel[idx]
	if b.head == nil {
		t.occupied.add(int(idx))
	}
	b.add(to, deadline)
}

// unlink takes to out of its bucket.
func (t *Timer) unlink(to *Timeout) {
	idx := to.bucketIndex
	b := &t.wheel[idx]
	b.remove(to)
	if b.head == nil {
		t.occupied.remove(int(idx))
	}
	to.bucketIndex = -1
}

// slotFor returns the bucket for a deadline: that of the deadline's tick, or
// of the current tick if that has passed.
func (t *Timer) slotFor(deadline int64) int64 {
	return max(deadline/t.tickDuration, t.tick) & t.mask
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
		if to.bucketIndex < 0 {
			continue // left the wheel since it was pushed
		}
		switch s & phaseMask {
		case stCancelled:
			t.unlink(to)
			t.countCancelled(to)
		case stInit:
			deadline := atomic.LoadInt64(&to.deadline)
			if idx := t.slotFor(deadline); idx != int64(to.bucketIndex) {
				t.unlink(to)
				t.link(to, idx, deadline)
			} else {
				b := &t.wheel[idx]
				b.minDeadline = min(b.minDeadline, deadline)
			}
		}
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
// cancelled, and only the worker clears stRunning, so the answer cannot
// change once the worker has taken the timeout.
func droppable(to *Timeout) (drop, counted bool) {
	switch to.state.Load() & (phaseMask | stRunning | stWithdrawn) {
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
	if s&stRunning != 0 {
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
		// is due. A Reset that changes the deadline after this load also
		// changes the state, so the CompareAndSwap fails and the deadline
		// is read again.
		deadline := atomic.LoadInt64(&to.deadline)
		idx := t.slotFor(deadline)
		if to.state.CompareAndSwap(s, s|stLinked) {
			t.link(to, idx, deadline)
			return
		}
		s = to.state.Load()
	}
}

// rearm takes back a periodic timeout whose run has returned: it links it
// for its next run, or drops it if it was cancelled meanwhile. Runs that fall
// more than one period behind are skipped, so a slow run is followed by at
// most one run that is due already.
func (t *Timer) rearm(to *Timeout) {
	t.running.remove(to)
	p := to.task.(*periodicTask)
	// expire advanced the deadline by a period when it handed the run out.
	next := skipBehind(atomic.LoadInt64(&to.deadline), p.period, t.elapsed())
	// Reset returns false while stRunning is set, so the worker alone
	// writes the deadline now.
	atomic.StoreInt64(&to.deadline, next)
	idx := t.slotFor(next)
	for {
		s := to.state.Load()
		if s&phaseMask != stInit {
			// Cancel cancelled it during its run (Stop cancels only in
			// collectUnprocessed, which does not come here).
			to.state.And(^stRunning)
			if s&phaseMask == stCancelled {
				t.countCancelled(to)
			}
			return
		}
		if to.state.CompareAndSwap(s, s&^stRunning|stLinked) {
			t.link(to, idx, next)
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
	var now int64
	handed := 0
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
			b.minDeadline = min(b.minDeadline, deadline)
		case !due:
			if want := t.slotFor(deadline); want != idx {
				t.unlink(to) // reset to a later deadline in another bucket
				t.link(to, want, deadline)
			} else {
				b.minDeadline = min(b.minDeadline, deadline)
			}
		default:
			if t.isStopped() {
				// Undo nothing: claimDue has not changed the state yet.
				return
			}
			// One clock read per batch of runs, for the statistics; one
			// per periodic run, whose skip needs the time of its hand-out
			// (a task before it in this bucket may have blocked).
			periodic := isPeriodic(to)
			if handed%64 == 0 || periodic {
				now = t.elapsed()
			}
			if !t.expire(to, s, now, periodic) {
				continue // the state changed under us: look again
			}
			handed++
			t.countLateness(now - deadline)
			t.handOut(to)
		}
		to = next
	}
}

// claimDue reads to's state and deadline consistently: it waits out a Reset
// that is writing the deadline. It reports whether the timeout is pending and
// due before end.
func (t *Timer) claimDue(to *Timeout, end int64) (s int32, deadline int64, due bool) {
	for {
		s = to.state.Load()
		if s&stBusy == 0 || s&phaseMask != stInit {
			break
		}
		runtime.Gosched() // a Reset holds it for two stores
	}
	deadline = atomic.LoadInt64(&to.deadline)
	return s, deadline, s&phaseMask == stInit && deadline < end
}

// expire moves to, pending and due with state s, to expired (or, if it is
// periodic, to running) and out of its bucket. It returns false if the state
// changed since s was read. now is about the time of the hand-out;
// periodic tells whether to is periodic.
func (t *Timer) expire(to *Timeout, s int32, now int64, periodic bool) bool {
	ns := s | stExpired
	if periodic {
		ns = s&^stLinked | stRunning
	}
	if !to.state.CompareAndSwap(s, ns) {
		return false
	}
	t.unlink(to)
	if periodic {
		// Deadline reports the next run from now on. Reset returns false
		// while stRunning is set, so the worker alone writes it. A worker
		// that fell behind (a task blocked it) hands out this run as the
		// latest one due, skipping those more than a period behind, so
		// that the next is not due at once too.
		period := to.task.(*periodicTask).period
		due := skipBehind(atomic.LoadInt64(&to.deadline), period, now)
		if due <= math.MaxInt64-period {
			atomic.StoreInt64(&to.deadline, due+period)
		} else {
			atomic.StoreInt64(&to.deadline, math.MaxInt64)
		}
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

// handOut runs an expired timeout's task: on the pool, through the executor,
// or here on the worker.
func (t *Timer) handOut(to *Timeout) {
	if t.pool == nil && t.taskExecutor == nil {
		t.runTimeout(to)
		return
	}
	if _, ok := to.task.(*deadlineTask); ok {
		// A context's deadline closes a channel and cancels derived
		// contexts: never queued behind user tasks, which may wait for it.
		t.runTimeout(to)
		return
	}
	if t.pool != nil {
		t.pool.submit(to)
	} else {
		t.execute(to)
	}
}

// runTimeout runs to's task on the calling goroutine. A periodic timeout
// then goes back to the worker, through its queue of new timeouts, even if
// the task panicked or called runtime.Goexit. A periodic run that was
// cancelled, or whose timer was stopped, after it was handed out (while it
// waited in the pool's queue, say) is skipped: the timeout is pending until
// then, so its task must not run after Cancel or Stop.
func (t *Timer) runTimeout(to *Timeout) {
	if isPeriodic(to) {
		defer t.returnRun(to)
		if to.IsCancelled() || t.isStopped() {
			return
		}
	}
	t.callTask(to)
}

// returnRun hands a periodic timeout whose run has returned back to the
// worker, which links it for its next run.
func (t *Timer) returnRun(to *Timeout) {
	t.shardFor(to).timeouts.push(to)
	t.wakeWorker()
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
// t.unprocessed for Stop. It
// runs on the worker as it exits, after the pool has finished. Timeouts that
// Cancel cancelled and that the worker has not yet unlinked get their
// Cancelled call here.
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
			if to.state.Load()&stRunning != 0 {
				t.running.remove(to)
				to.state.And(^stRunning)
			}
			t.unprocessed = t.cancelForStop(to, t.unprocessed)
		}
		t.counters.cancelled += uint64(q.takeDropped())
	}
	for i := range t.wheel {
		b := &t.wheel[i]
		for to := b.head; to != nil; to = b.head {
			b.remove(to)
			to.bucketIndex = -1
			t.unprocessed = t.cancelForStop(to, t.unprocessed)
		}
	}
	t.occupied = occupancy{}
	// Periodic runs still out with an executor: pending, so Stop returns
	// them. Their run comes back to queues nobody reads any more.
	for to := t.running.head; to != nil; to = t.running.head {
		t.running.remove(to)
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
// header cannot be parsed.
func goroutineID() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	b, _, _ = bytes.Cut(b, []byte(" "))
	id, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		return 0
	}
	return id
}
