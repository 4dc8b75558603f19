package hashedwheel

// bucket is one slot of the wheel: an intrusive doubly linked list of the
// timeouts whose deadline falls in its tick, this turn of the wheel or a later
// one. It is owned by the worker goroutine: no other goroutine reads or writes
// it, or a linked timeout's bucketNext, bucketPrev, bucketIndex or
// remainingRounds. Timeouts are kept in insertion order, not deadline order:
// everything due in one tick runs in that tick, in the order it arrived.
type bucket struct {
	head, tail *Timeout
}

// add appends to to the bucket.
func (b *bucket) add(to *Timeout) {
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
}

// expireTimeouts runs the tasks of the timeouts due in this turn of the wheel
// and counts one turn off the others. now is the time of the tick being
// processed, in nanoseconds since the timer started. It stops early if the
// timer is stopped meanwhile (for example by one of the tasks), leaving the
// rest for Stop.
//
// Cancelled timeouts are left linked and keep their rounds: the worker
// unlinks them from the cancelled queue at the start of the next tick.
func (b *bucket) expireTimeouts(now int64) {
	for to := b.head; to != nil; {
		next := to.bucketNext
		switch {
		case to.remainingRounds > 0:
			if !to.IsCancelled() {
				to.remainingRounds--
			}
		case to.deadline > now:
			// Unreachable: a timeout with no rounds left is in the bucket of
			// its deadline's tick, and a tick is processed only once it has
			// ended. Netty throws here; never running a task early matters
			// more than running it on time, so leave it for the next turn
			// and say so.
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
