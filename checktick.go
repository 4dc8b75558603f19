package hashedwheel

import "math/bits"

// The check tick, and the levels above the wheel. Each timeout in the wheel
// waits for its check tick, the tick at which the worker looks at it next.
// At that look the worker runs the timeout if its deadline is before the end
// of the tick, and otherwise places it again. The invariant, kept by every
// placement, by a Reset to a later deadline or to one at or after the check
// tick, and restored by the worker, before it visits any bucket, for a Reset
// to an earlier one:
//
//	check tick <= the deadline's tick, or = the worker's tick if the
//	deadline has passed
//
// so the worker never looks at a timeout too late to run it on time.
//
// A timeout due within a turn of the wheel (ticks per wheel ticks) waits in
// the wheel's bucket of its deadline's tick: its check tick is that tick, and
// the worker looks at it once, when it runs. One due later waits in a level
// above the wheel, where nothing looks at it until its turn comes. Level k
// (k >= 1) has levelSlots slots, each levelWidth(k) ticks wide: the wheel's
// span for level 1, and levelSlots times the width of the level below for
// the next, so that level k spans levelSlots times its width. A timeout due
// d ticks after the worker's tick waits in the lowest level whose span
// exceeds d, in the slot of its deadline's tick; its check tick is the start
// of that slot, later than the worker's tick and at most its deadline's. When
// the worker comes to that tick it takes the slot's timeouts down (cascade):
// each is due less than a slot's width later, so it goes to a lower level,
// or into the wheel. A timeout is thus looked at at most once per level it
// starts above the wheel, and once more as it runs: levelFor(d) + 1 times,
// however far its deadline (4 times for an hour at a 1ms tick and 512 ticks
// per wheel; at most 12 at any tick and wheel).
//
// A Reset to a later deadline keeps the invariant by itself: the timeout is
// placed anew when its check tick comes. Only one to a deadline in a tick
// before the check tick goes through the changes queue (beforeCheck), which
// the worker processes before it visits any bucket. So a Reset that moves a
// far deadline earlier, but not before the start of its slot, leaves the
// worker nothing to do either.
//
// A timeout keeps the low 32 bits of its check tick (Timeout.checkTick) for
// the wheel, or of its slot's number (the check tick over the slot's width)
// for a level; the level is in its state (stLevel). beforeCheck reads the
// full check tick back from them and the tick it cannot be after.

// levelSlots is the number of slots of each level above the wheel, and
// levelBits its log2.
const (
	levelBits  = 6
	levelSlots = 1 << levelBits
)

// maxLevels is the most levels a Timer may need above its wheel: with a
// wheel of one tick, enough for any tick an int64 of nanoseconds holds.
const maxLevels = (63 + levelBits - 1) / levelBits

// levelShift returns log2 of the width, in ticks, of a slot of level k >= 1.
func (t *Timer) levelShift(k int) uint {
	return t.conf.wheelBits + uint(k-1)*levelBits
}

// levelFor returns the level above the wheel for a timeout due d ticks after
// the worker's tick, d > the wheel's span: the lowest level whose span,
// levelSlots times its slots' width, exceeds d.
func (t *Timer) levelFor(d int64) int {
	return (bits.Len64(uint64(d)) - int(t.conf.wheelBits) + levelBits - 1) / levelBits
}

// checkTickOf returns where the worker at tick t.wheel.tick places to, due at
// deadline: its check tick, and its level (0 for the wheel). That is the
// worker's tick if the deadline has passed, the deadline's tick if it is due
// within a turn of the wheel, and otherwise the start of the slot of the
// deadline's tick in the lowest level whose span holds it.
//
// "Within a turn" counts from the clock's tick when that is ahead of the
// worker's (a worker catching up, or an owner's Advance to a later now): a
// timeout already due by the clock goes into the wheel at its deadline's
// tick, not through the levels. Its bucket may then come up a turn or more
// before that tick; the worker looks at it there, finds it not due, and
// leaves it where it is (placing it again gives the same bucket).
func (t *Timer) checkTickOf(deadline int64) (check int64, level int) {
	tick := t.wheel.tick
	due := deadline / t.conf.tickDuration
	if due-max(tick, t.wheel.clockTick) <= int64(len(t.wheel.buckets)) {
		return max(due, tick), 0
	}
	level = t.levelFor(due - tick)
	shift := t.levelShift(level)
	return due >> shift << shift, level
}

// beforeCheck reports whether deadline, which Reset writes over old on a
// timeout in the wheel or a level (level, from its state), falls in a tick
// before the timeout's check tick, so that the worker must be told.
//
// It reads the check tick back as the latest tick (or slot, for a level)
// up to old's with the low 32 bits kept. By the invariant the true check tick
// is at most old's tick, or, when old had passed, the worker's tick: so the
// tick read back is never earlier than the true one, or the true one is the
// worker's. In that last case a deadline before it is due at once anyway:
// the worker's tick is at most the clock's, and so at most deadline's, except
// on an owned Timer that Advance moved past the clock, where such a timeout
// runs when that tick is processed, as it would had it been pushed. At
// worst, with a check tick 2^32 ticks (or slots) or more before old's, Reset
// tells the worker without need.
func (t *Timer) beforeCheck(to *Timeout, level int, old, deadline int64) bool {
	var shift uint
	if level > 0 {
		shift = t.levelShift(level)
	}
	oldUnit := old / t.conf.tickDuration >> shift
	check := (oldUnit - int64(uint32(oldUnit)-to.checkTick)) << shift
	// deadline/tickDuration < check, without a second division; check is
	// at most old's tick, so the product does not overflow.
	return check > 0 && deadline < check*t.conf.tickDuration
}
