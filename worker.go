package hashedwheel

import (
	"bytes"
	"math"
	"runtime"
	"strconv"
	"time"
)

// run is the worker goroutine: Netty's Worker.run. Each tick it unlinks the
// timeouts cancelled in buckets, moves new timeouts into buckets, expires the
// current bucket and advances. Ticks are absolute, counted from startTime, so
// they do not drift; a worker that falls behind processes the missed ticks
// back to back.
func (t *Timer) run() {
	exited := false
	defer func() {
		if !exited {
			// A task called runtime.Goexit (t.FailNow in a test callback
			// does), which recover cannot stop. The wheel is intact and the
			// tick unfinished: carry on in a new goroutine, which processes
			// the rest of this tick.
			t.logger.Error("hashedwheel: a task called runtime.Goexit on the worker goroutine; " +
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
	t.transferBudget = maxTransfersPerTick
	t.drainInterval = t.tickDuration
	for {
		if !t.waitForNextTick(sleep) {
			break
		}
		idx := t.tick & t.mask
		t.processCancelledTasks()
		t.transferTimeoutsToBuckets()
		t.wheel[idx].expireTimeouts(t.tickEnd(t.tick))
		t.advanceTo(t.tick + 1)
	}
	t.unprocessed = t.collectUnprocessed()
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
			if t.newTimeoutsEmpty() && t.cancelledTimeouts.isEmpty() {
				target, park = t.nextDueTick()
				// A tick that never ends holds nothing that comes due.
				park = park || t.tickEnd(target) == math.MaxInt64
			}
			if target == t.tick && !park {
				t.sleeping.Store(false)
			}
		}
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
// have a timeout due, or park true if the wheel is empty. It scans the wheel
// in tick order and stops at the first bucket due at its next visit, so the
// cost of a scan is at most one check per tick it lets the worker sleep.
func (t *Timer) nextDueTick() (due int64, park bool) {
	due, park = math.MaxInt64, true
	for i := range int64(len(t.wheel)) {
		b := &t.wheel[(t.tick+i)&t.mask]
		if b.head == nil {
			continue
		}
		// The bucket's next visit is at tick t.tick+i; its timeouts due
		// later are due at the tick of their deadline.
		bucketDue := max(b.minDeadline/t.tickDuration, t.tick+i)
		if bucketDue == t.tick+i {
			return bucketDue, false
		}
		due, park = min(due, bucketDue), false
	}
	return due, park
}

// processCancelledTasks unlinks the timeouts cancelled since the last tick
// from their buckets.
func (t *Timer) processCancelledTasks() {
	for {
		to := t.cancelledTimeouts.pop()
		if to == nil {
			return
		}
		t.wheel[to.bucketIndex].remove(to)
	}
}

// transferTimeoutsToBuckets moves new timeouts into their buckets, as many
// as the tick's transfer budget allows, and returns how many it took from the
// queues. It starts at a different shard each time, so that none waits
// behind the others. A timeout whose deadline is in a tick already processed
// goes into the current bucket and expires this tick. Timeouts cancelled
// before they got here are dropped; they count against the budget, as in
// Netty.
func (t *Timer) transferTimeoutsToBuckets() int {
	n := 0
	t.nextShard = (t.nextShard + 1) % shardCount
	for i := range shardCount {
		q := &t.shards[(t.nextShard+i)%shardCount].timeouts
		for ; n < t.transferBudget; n++ {
			to := q.pop()
			if to == nil {
				break
			}
			t.transfer(to)
		}
	}
	t.transferBudget -= n
	return n
}

// transfer puts a new timeout into its bucket, or drops it if it was
// cancelled while queued.
func (t *Timer) transfer(to *Timeout) {
	// Only Cancel competes for a queued timeout, and cancelled is final: a
	// plain load spares the compare-and-swap in that common case.
	if to.state.Load() != stInit || !to.state.CompareAndSwap(stInit, stLinked) {
		return // cancelled; Cancel has already counted it out
	}
	// Netty's remainingRounds would be (calculated - t.tick) / len(wheel):
	// the visits to the bucket before the one at which it is due.
	calculated := to.deadline / t.tickDuration
	idx := max(calculated, t.tick) & t.mask
	to.bucketIndex = int32(idx)
	t.wheel[idx].add(to)
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

// collectUnprocessed cancels every timeout still pending, in the buckets or
// still queued, and returns those it cancelled. It runs on the worker as it
// exits.
func (t *Timer) collectUnprocessed() []*Timeout {
	var unprocessed []*Timeout
	for i := range t.wheel {
		unprocessed = t.wheel[i].clearTimeouts(unprocessed)
	}
	// A producer that pushed before it could see the stop is in a queue,
	// possibly still in a bubble: wait for it rather than lose its timeout.
	for i := range t.shards {
		q := &t.shards[i].timeouts
		for !q.isEmpty() {
			to := q.pop()
			if to == nil {
				runtime.Gosched()
				continue
			}
			if _, ok := to.markCancelled(); ok {
				unprocessed = append(unprocessed, to)
			}
		}
	}
	for t.cancelledTimeouts.pop() != nil {
		// Unlinked already, with their buckets; popping drops the queue's
		// references to them.
	}
	for _, to := range unprocessed {
		if o, ok := to.task.(stopObserver); ok {
			o.timerStopped(to)
		}
	}
	return unprocessed
}

// stopObserver is implemented by tasks that must learn that Stop cancelled
// their timeout, such as the deadline of a context (see context.go), which
// then keeps its deadline by other means. The worker calls timerStopped as it
// exits, after cancelling the timeout and before Stop returns.
type stopObserver interface{ timerStopped(to *Timeout) }

// goroutineID returns the ID of the calling goroutine, which Go does not
// expose otherwise. Stop uses it to tell that it runs inside a task on the
// worker, where waiting for the worker would deadlock. It parses the header
// of the goroutine's stack trace, "goroutine 42 [running]:", and costs about
// a microsecond; only Stop and the worker's start call it. It returns 0,
// which is no goroutine's ID, if the header cannot be parsed.
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
