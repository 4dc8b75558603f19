package hashedwheel

import "fmt"

// Invariant checks. Built with the tag hashedwheel_assert (CI runs the fuzz
// targets and the soak with it), assertInvariants is true and the worker
// checks the two invariants below as it goes, panicking on the first one
// broken, so that the fuzzer reports the input that broke it rather than a
// late run much later. Without the tag the checks compile to nothing.

// assertCheckTick panics if check and level k, where the worker at tick
// t.wheel.tick places to, due at deadline, break the invariant of
// checktick.go: a check tick at or after the worker's tick and at most the
// deadline's, or the worker's tick if that is later; for a timeout due
// within a turn of the wheel of the clock's tick, exactly that, in the
// wheel's buckets; for one due later, the start of a slot of the lowest
// level whose span holds it, after the worker's tick. It restates the
// invariant apart from checkTickOf, which keeps it by construction today, so
// that a change to checkTickOf that breaks it fails the fuzzers.
func (t *Timer) assertCheckTick(to *Timeout, deadline, check int64, k int) {
	tick := t.wheel.tick
	due := deadline / t.conf.tickDuration
	latest := max(due, tick)
	withinTurn := due-max(tick, t.wheel.clockTick) <= int64(len(t.wheel.buckets))
	broken := check < tick || check > latest || withinTurn != (k == 0) || withinTurn && check != latest
	if k > 0 {
		width := int64(1) << t.levelShift(k)
		lowest := k == 1 || due-tick >= width // a level lower would not hold it
		broken = broken || check <= tick || check%width != 0 || due-check >= width ||
			due-tick >= width*levelSlots || !lowest
	}
	if broken {
		panic(fmt.Sprintf("hashedwheel: check tick %d at level %d for %s, due at tick %d, placed by the worker "+
			"at tick %d with the clock at tick %d: the invariant of checktick.go is broken",
			check, k, to.describeLocked(), due, tick, t.wheel.clockTick))
	}
}

// assertNothingDue panics if bucket idx, whose walk the worker skips at tick
// t.wheel.tick because its minDue says nothing in it needs the worker then,
// holds a pending timeout due before the tick ends: minDue was not a lower
// bound. A timeout in the changes queue is left out: the worker brings it
// back where it belongs first.
func (t *Timer) assertNothingDue(idx int64) {
	end := t.tickEnd(t.wheel.tick)
	b := &t.wheel.buckets[idx]
	for to := b.head; to != nil; to = to.bucketNext {
		s := to.lock()
		d := to.deadline.Load()
		to.unlock(s)
		if s.phase() != stPending || s.held() != heldBucket {
			continue
		}
		if d < end {
			panic(fmt.Sprintf("hashedwheel: the walk of bucket %d was skipped at tick %d (minDue %d, "+
				"tick end %d), but it holds %v, due at %d: minDue is not a lower bound",
				idx, t.wheel.tick, b.minDue, end, to, d))
		}
	}
}

// assertFoundIn panics if to, which the worker found in the list or queue
// named list with state s, is not held there by its state: a Timeout is in
// one place at a time, the one its held value says.
func assertFoundIn(to *Timeout, s state, list string, held ...state) {
	for _, h := range held {
		if s.held() == h {
			return
		}
	}
	panic(fmt.Sprintf("hashedwheel: found %s in %s, but its state %#x says it is held elsewhere",
		to.describeLocked(), list, uint32(s)))
}

// describeLocked describes to for an invariant's panic, by its caller that
// holds its lock (String would take it again).
func (to *Timeout) describeLocked() string {
	return fmt.Sprintf("Timeout %p (deadline %d ns since its Timer's start, task %T)", to, to.deadline.Load(), to.task)
}
