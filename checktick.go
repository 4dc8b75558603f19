package hashedwheel

// The check tick. Each timeout in the wheel sits in the bucket of its check
// tick, the tick at which the worker looks at it next, and the bucket's
// minDue makes the worker visit it then. At that look the worker runs the
// timeout if its deadline is before the end of the tick, and otherwise
// places it again. The invariant, kept by every placement, by a Reset to a
// later deadline or to one at or after the check tick, and restored by the
// worker, before it visits any bucket, for a Reset to an earlier one:
//
//	check tick <= the deadline's tick, or = the worker's tick if the
//	deadline has passed
//
// so the worker never looks at a timeout too late to run it on time. For a
// timeout due within a turn of the wheel the check tick is the deadline's
// tick: the worker looks at it once, when it runs. For one due later it is
// earlier (checkAheadShift), so that a Reset to an earlier deadline at or
// after it leaves the worker nothing to do: a Reset to a later deadline keeps
// the invariant by itself, and only one to a deadline in a tick before the
// check tick goes through the changes queue (beforeCheck), which the worker
// processes before it visits any bucket.
//
// A timeout keeps the low 32 bits of its check tick (Timeout.checkTick), so
// that Reset can read them atomically; checkTickOf and beforeCheck read the
// full tick back from them and the tick it cannot be after.

// checkAheadShift sets how early the worker first looks at a timeout due more
// than a turn of the wheel ahead: at its deadline's tick less an eighth
// (a shift right by 3) of the ticks left. At that look an eighth is left, and the worker
// places it again the same way: a timeout due n turns ahead is looked at about
// log8(n) + 1 times before the look at which it runs (three times at 100
// turns, five at 10,000), where Netty's worker visits it every turn. (The
// worker walks a bucket only at a tick at which something in it needs the
// worker, by its minDue; a walk looks at every timeout in the bucket, so a
// far timeout that shares its bucket with others due in earlier turns is
// also looked at then, at the cost of a load of its state and deadline.)
const checkAheadShift = 3

// checkTickOf returns the check tick of to, due at deadline, that the worker
// at tick t.wheel.tick places: the worker's tick if that deadline has passed,
// the deadline's tick if it is due within a turn of the wheel, and otherwise
// the deadline's tick less an eighth of the ticks left (checkAheadShift).
//
// "Within a turn" counts from the clock's tick when that is ahead of the
// worker's (a worker catching up, or an owner's Advance to a later now): a
// timeout already due by the clock is placed at its deadline's tick, not
// looked at early and placed again. A linked timeout whose check tick is
// still ahead and not after its deadline's keeps it, so that a visit to its
// bucket for the others in it does not move it; read back from 32 bits, a
// check tick more than 2^32 ticks ahead comes back earlier than it was set,
// and the worker then looks at the timeout early, which is harmless.
func (t *Timer) checkTickOf(to *Timeout, deadline int64, linked bool) int64 {
	tick := t.wheel.tick
	due := deadline / t.conf.tickDuration
	ahead := due - max(tick, t.wheel.clockTick)
	if ahead <= int64(len(t.wheel.buckets)) {
		return max(due, tick)
	}
	if linked {
		check := tick + int64(to.checkTick-uint32(tick))
		if check > tick && check <= due {
			return check
		}
	}
	return due - ahead>>checkAheadShift
}

// beforeCheck reports whether deadline, which Reset writes over old on a
// linked timeout, falls in a tick before the timeout's check tick, so that
// the worker must be told.
//
// It reads the check tick back as the latest tick up to old's with the low 32
// bits kept. By the invariant the true check tick is at most old's tick, or,
// when old had passed, the worker's tick: so the tick read back is never
// earlier than the true one, or the true one is the worker's. In that last
// case a deadline before it is due at once anyway: the worker's tick is at
// most the clock's, and so at most deadline's, except on an owned Timer that
// Advance moved past the clock, where such a timeout runs when that tick is
// processed, as it would had it been pushed. At worst, with a check tick
// 2^32 ticks or more before old's, Reset tells the worker without need.
func (t *Timer) beforeCheck(to *Timeout, old, deadline int64) bool {
	oldTick := old / t.conf.tickDuration
	check := oldTick - int64(uint32(oldTick)-to.checkTick)
	// deadline/tickDuration < check, without a second division; check is
	// at most oldTick, so the product does not overflow.
	return check > 0 && deadline < check*t.conf.tickDuration
}
