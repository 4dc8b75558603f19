package hashedwheel

import "math"

// bucket is one slot of the wheel: an intrusive doubly linked list of the
// timeouts whose deadline falls in its tick, this turn of the wheel or a later
// one. It is owned by the worker goroutine: no other goroutine reads or writes
// it, or a linked timeout's bucketNext, bucketPrev, bucketIndex or
// remainingRounds. Timeouts are kept in insertion order, not deadline order:
// everything due in one tick runs in that tick, in the order it arrived.
//
// The worker visits a bucket at every tick whose index it is, one tick in
// len(wheel), and at each visit takes one off the remainingRounds of the
// timeouts not yet due, as Netty does. Unlike Netty's, it may skip a visit
// when it knows that nothing in the bucket is due then; the visits skipped
// are taken off, all at once, at the next visit made. So remainingRounds
// counts the visits still to come after syncTick, not after the current tick.
type bucket struct {
	head, tail *Timeout

	// syncTick is the tick of the last visit made to the bucket, or of the
	// notional visit one turn before the first.
	syncTick int64

	// minRounds is at most the smallest remainingRounds of the bucket's
	// timeouts that are not cancelled, and math.MaxInt64 when there are
	// none. Timeouts that leave the bucket do not raise it; the next visit
	// makes it exact again.
	minRounds int64
}

// newWheel returns n empty buckets, n a power of two.
func newWheel(n int) []bucket {
	wheel := make([]bucket, n)
	for i := range wheel {
		wheel[i].syncTick = int64(i - n)
		wheel[i].minRounds = math.MaxInt64
	}
	return wheel
}

// add appends to, which is due at the visit remainingRounds visits after the
// first one at or after tick, to the bucket. idx is the bucket's index and
// wheelLen the number of buckets.
func (b *bucket) add(to *Timeout, tick, idx, wheelLen int64) {
	firstVisit := tick + (idx-tick)&(wheelLen-1)
	// Count the skipped visits before firstVisit, which the next visit made
	// will take off every timeout in the bucket.
	to.remainingRounds += (firstVisit-b.syncTick)/wheelLen - 1
	b.minRounds = min(b.minRounds, to.remainingRounds)
	if b.tail == nil {
		b.head = to
	} else {
		b.tail.bucketNext = to
		to.bucketPrev = b.tail
	}
	b.tail = to
}

// remove unlinks to, which must be in the bucket.
func (b *bucket) remove(to *Timeout) {
	if to.bucketPrev == nil {
		b.head = to.bucketNext
	} else {
		to.bucketPrev.bucketNext = to.bucketNext
	}
	if to.bucketNext == nil {
		b.tail = to.bucketPrev
	} else {
		to.bucketNext.bucketPrev = to.bucketPrev
	}
	to.bucketNext, to.bucketPrev = nil, nil
	if b.head == nil {
		b.minRounds = math.MaxInt64
	}
}

// dueTick returns the tick of the first visit at which a timeout in the bucket
// may be due. The bucket must not be empty.
func (b *bucket) dueTick(wheelLen int64) int64 {
	return b.syncTick + (max(b.minRounds, 0)+1)*wheelLen
}

// expireTimeouts visits the bucket at tick: it runs the tasks of the timeouts
// due and counts the visit, with any skipped before it, off the others. now is
// the time of the tick being processed, in nanoseconds since the timer
// started. It stops early if the timer is stopped meanwhile (for example by
// one of the tasks), leaving the rest for Stop.
//
// Cancelled timeouts are left linked: the worker unlinks them from the
// cancelled queue at the start of the next tick.
func (b *bucket) expireTimeouts(tick, now, wheelLen int64) {
	skipped := (tick-b.syncTick)/wheelLen - 1
	b.syncTick = tick
	b.minRounds = math.MaxInt64
	for to := b.head; to != nil; {
		next := to.bucketNext
		to.remainingRounds -= skipped
		switch {
		case to.remainingRounds > 0:
			if !to.IsCancelled() {
				to.remainingRounds--
				b.minRounds = min(b.minRounds, to.remainingRounds)
			}
		case to.deadline > now:
			// Unreachable: a timeout with no rounds left is in the bucket of
			// its deadline's tick, and a tick is processed only once it has
			// ended. Netty throws here; never running a task early matters
			// more than running it on time, so leave it for the next turn
			// and say so.
			b.minRounds = 0
			to.timer.logger.Error("hashedwheel: timeout in the wrong bucket; deferring it a turn",
				"timeout", to, "now", now)
		case to.markExpired():
			b.remove(to)
			to.timer.runTask(to)
			if to.timer.isStopped() {
				return
			}
		}
		to = next
	}
}

// clearTimeouts empties the bucket and cancels every timeout in it that is
// still pending, appending those to unprocessed. Worker only; used at Stop.
func (b *bucket) clearTimeouts(unprocessed []*Timeout) []*Timeout {
	for to := b.head; to != nil; {
		next := to.bucketNext
		to.bucketNext, to.bucketPrev = nil, nil
		if _, ok := to.markCancelled(); ok {
			unprocessed = append(unprocessed, to)
		}
		to = next
	}
	b.head, b.tail = nil, nil
	return unprocessed
}
