package hashedwheel

import "math"

// bucket is one slot of the wheel: an intrusive doubly linked list of the
// timeouts whose deadline falls in its tick, this turn of the wheel or a later
// one. It is owned by the worker goroutine: no other goroutine reads or writes
// it, or a linked timeout's bucketNext, bucketPrev or bucketIndex. Timeouts
// are kept in the order they were transferred, not in deadline order:
// everything due in one tick runs in that tick, in that order.
//
// Netty keeps in each timeout its remainingRounds, the turns of the wheel
// left, and takes one off at every visit to the bucket, so that the worker
// must visit every bucket every turn. Here a visit at tick T expires exactly
// the timeouts whose remainingRounds Netty would find at zero or below: those
// with a deadline before the end of tick T. That needs no counter to keep, so
// the worker may skip the visits at which nothing is due: minDeadline tells
// it which those are.
type bucket struct {
	head, tail *Timeout

	// minDeadline is at most the earliest deadline in the bucket, and
	// math.MaxInt64 when it is empty. Timeouts that leave the bucket do not
	// raise it; the next visit makes it exact again.
	minDeadline int64
}

// newWheel returns n empty buckets.
func newWheel(n int) []bucket {
	wheel := make([]bucket, n)
	for i := range wheel {
		wheel[i].minDeadline = math.MaxInt64
	}
	return wheel
}

// add appends to to the bucket.
func (b *bucket) add(to *Timeout) {
	b.minDeadline = min(b.minDeadline, to.deadline)
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
		b.minDeadline = math.MaxInt64
	}
}

// expireTimeouts visits the bucket at the end of a tick: it runs the tasks of
// the timeouts whose deadline is before end, the end of the tick in
// nanoseconds since the timer started; the others are due in a later turn. It
// starts no task once the timer is stopped (for example by one of the tasks),
// leaving the rest for Stop.
//
// Cancelled timeouts are left linked: the worker unlinks them from the
// cancelled queue at the start of the next tick.
func (b *bucket) expireTimeouts(end int64) {
	b.minDeadline = math.MaxInt64
	for to := b.head; to != nil; {
		next := to.bucketNext
		switch {
		case to.deadline >= end:
			if !to.IsCancelled() {
				b.minDeadline = min(b.minDeadline, to.deadline)
			}
		case to.timer.isStopped():
			return
		case to.markExpired():
			b.remove(to)
			to.timer.runTask(to)
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
	b.minDeadline = math.MaxInt64
	return unprocessed
}
