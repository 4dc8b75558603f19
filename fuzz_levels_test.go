package hashedwheel_test

import (
	"math"
	"time"
)

// This file holds what FuzzTimerLevels adds to the model (fuzzModel.far):
// delays, periods and moves of the fake clock that reach the levels above
// the wheel, and the polling owner's far intervals. The model's checks are
// unchanged: it knows nothing of the levels but their geometry, which the
// decoders below use to aim at the ticks where a timeout moves down, as
// docs/design.md describes it: level j >= 1 has fuzzLevelSlots slots, each
// the wheel's span times 64^(j-1) wide, and a timeout waiting there moves
// down at the start of the slot that holds its deadline.

// fuzzLevelSlots is the number of slots of a level above the wheel.
const fuzzLevelSlots = 64

// maxFuzzNow is as far as the far moves take the fake clock: a century,
// well short of the 292 years an int64 of nanoseconds holds.
const maxFuzzNow = 100 * 365 * 24 * int64(time.Hour)

const (
	fuzzDay  = 24 * int64(time.Hour)
	fuzzYear = 365 * fuzzDay
)

// levelTicks returns the width in ticks of a slot of level j above the
// wheel, saturated: the wheel's span for level 1, 64 times the width of the
// level below for the next; 1 for j = 0, a tick of the wheel.
func (m *fuzzModel) levelTicks(j int) int64 {
	if j == 0 {
		return 1
	}
	w := m.wheel
	for range j - 1 {
		w = mulSat(w, fuzzLevelSlots)
	}
	return w
}

// slotOffset decodes an offset from the start of a slot: a tick before it,
// a nanosecond before or after it, in the middle of its first tick, at the
// last nanosecond of that tick, and at and after its end, when the worker
// has moved the slot's timeouts down.
func (m *fuzzModel) slotOffset(b byte) int64 {
	T := m.tick
	return [8]int64{-T, -1, 0, 1, T / 2, T - 1, T, T + 1}[b&7]
}

// slotTime returns the time off from the start of a slot of level j (for j
// = 0, the start of a deadline's tick): the slot that holds the deadline of
// the latest arm of the Timeout that b picks, if it is pending and that time
// is still ahead; otherwise the first slot of level j that starts after the
// current tick.
func (m *fuzzModel) slotTime(j int, off int64, b byte) int64 {
	T, wt := m.tick, m.levelTicks(j)
	if h := m.pick(b); h != nil && h.state == statePending {
		start := h.deadline / T / wt * wt
		if at := addOff(mulSat(start, T), off); at > m.now {
			return at
		}
	}
	return addOff(m.slotStartAfter(j, 1), off)
}

// slotStartAfter returns the start, in nanoseconds, of the k-th slot of
// level j that starts after the current tick's slot.
func (m *fuzzModel) slotStartAfter(j int, k int64) int64 {
	wt := m.levelTicks(j)
	nowTick := m.now / m.tick
	return mulSat(addSat(nowTick/wt*wt, mulSat(k, wt)), m.tick)
}

// farDelay decodes a far delay for NewTimeout, Schedule or Reset, from b1
// with bit 7 set. With bit 6 set too, the delay to a time around the start
// of a slot (slotTime: bits 3-5 the level, bits 0-2 the offset, b2 the
// Timeout whose deadline's slot it is, so that a Reset moves a timeout to
// just before or after the start of its own slot). Otherwise, with the
// level j = 1 + (b2 & 7) and k = 1 + b2>>3 (1 to 32): at and around level
// j's span and k of its slots, the start of its k-th next slot, an hour, a
// day, a year, a century, up to a deadline just short of saturation, and
// saturation.
func (m *fuzzModel) farDelay(b1, b2 byte) time.Duration {
	T := m.tick
	x := b1 & 0x7f
	if x&0x40 != 0 {
		at := m.slotTime(int(x>>3&7), m.slotOffset(x), b2)
		return time.Duration(at - m.now)
	}
	j := 1 + int(b2&7)
	k := 1 + int64(b2>>3)
	w := mulSat(m.levelTicks(j), T)
	span := mulSat(w, fuzzLevelSlots)
	next := m.slotStartAfter(j, k) - m.now
	around := (k%3 - 1) * T // a tick before, at, or a tick after
	var d int64
	switch x % 24 {
	case 0:
		d = span
	case 1:
		d = span - T
	case 2:
		d = addSat(span, T)
	case 3:
		d = span - 1
	case 4:
		d = addSat(span, 1)
	case 5:
		d = mulSat(k, w)
	case 6:
		d = mulSat(k, w) - T
	case 7:
		d = addSat(mulSat(k, w), T)
	case 8:
		d = mulSat(k, w) - 1
	case 9:
		d = addSat(mulSat(fuzzLevelSlots-k, w), T/2)
	case 10:
		d = next
	case 11:
		d = next - 1
	case 12:
		d = addSat(next, T-1)
	case 13:
		d = addSat(next, T)
	case 14:
		d = int64(time.Hour) + around
	case 15:
		d = fuzzDay + around
	case 16:
		d = 30 * fuzzDay
	case 17:
		d = fuzzYear + around
	case 18:
		d = 100 * fuzzYear
	case 19:
		d = math.MaxInt64 - m.now - k*T // a deadline k ticks short of saturation
	case 20:
		d = 1 << (20 + b2%43)
	case 21:
		d = span / 256 * int64(b2)
	case 22:
		d = mulSat(k, int64(time.Hour))
	default:
		d = math.MaxInt64
	}
	return time.Duration(d)
}

// farPeriod decodes a far period, from b1 with bit 7 set: at and around the
// span of level j = 1 + (b2 & 3) and k of its slots, an hour and a day.
// Each run is then due levels away from the one before.
func (m *fuzzModel) farPeriod(b1, b2 byte) time.Duration {
	T := m.tick
	w := mulSat(m.levelTicks(1+int(b2&3)), T)
	span := mulSat(w, fuzzLevelSlots)
	k := 1 + int64(b2>>2)%fuzzLevelSlots
	var d int64
	switch (b1 & 0x7f) % 8 {
	case 0:
		d = span
	case 1:
		d = span - T
	case 2:
		d = addSat(span, T)
	case 3:
		d = mulSat(k, w)
	case 4:
		d = addSat(span, T/3)
	case 5:
		d = w - 1
	case 6:
		d = int64(time.Hour)
	default:
		d = fuzzDay
	}
	return time.Duration(d)
}

// farAdvanceBy decodes a far move of the clock, from b1 with bit 7 set.
// With bit 6 set too, to a time around the start of a slot, as farDelay
// (at once if that time has passed): into the tick in which a timeout moves
// down, just before it or just after it. Otherwise, with j and k as in
// farDelay: level j's span, k of its slots, each and a tick either side,
// to the start of its k-th next slot and around it, an hour, a day, 30
// days, a year, k days, ten years.
//
// Unlike advanceBy, it moves the clock far while a task blocks or may block
// the worker (or the owner), which then catches up across levels in time
// that grows with what is due, not with the ticks missed; but no further
// than 64 periods of a periodic timeout pending, nor 64 polls of the polling
// owner, nor past maxFuzzNow.
func (m *fuzzModel) farAdvanceBy(b1, b2 byte) time.Duration {
	T := m.tick
	x := b1 & 0x7f
	var d int64
	if x&0x40 != 0 {
		d = max(m.slotTime(int(x>>3&7), m.slotOffset(x), b2)-m.now, 0)
	} else {
		j := 1 + int(b2&7)
		k := 1 + int64(b2>>3)
		w := mulSat(m.levelTicks(j), T)
		span := mulSat(w, fuzzLevelSlots)
		next := m.slotStartAfter(j, k) - m.now
		switch x % 16 {
		case 0:
			d = span
		case 1:
			d = span - T
		case 2:
			d = addSat(span, T)
		case 3:
			d = mulSat(k, w)
		case 4:
			d = mulSat(k, w) - T
		case 5:
			d = addSat(mulSat(k, w), T)
		case 6:
			d = next
		case 7:
			d = next - 1
		case 8:
			d = addSat(next, T-1)
		case 9:
			d = addSat(next, T)
		case 10:
			d = int64(time.Hour)
		case 11:
			d = fuzzDay
		case 12:
			d = 30 * fuzzDay
		case 13:
			d = fuzzYear
		case 14:
			d = mulSat(k, fuzzDay)
		default:
			d = 10 * fuzzYear
		}
	}
	d = max(min(d, maxFuzzNow-m.now), 0)
	for _, h := range m.handles {
		if h.period != 0 && h.state == statePending {
			d = min(d, mulSat(64, max(T, h.period)))
		}
	}
	if m.poll > 0 {
		d = min(d, 64*m.poll)
	}
	return time.Duration(d)
}

// farPoll returns the polling owner's far interval that bits 5-6 of style
// pick (FuzzTimerLevels, bit 4 set): an hour, a day, a little more than a
// slot of level 3, a tick short of a slot of level 2. Each Advance then
// spans many slots' starts.
func farPoll(style byte, tick, wheel int64) int64 {
	polls := [4]int64{int64(time.Hour), fuzzDay, 64*64*wheel*tick + tick/3, 64*wheel*tick - tick}
	return polls[style>>5&3]
}

// mulSat returns a*b, for a, b >= 0, saturated at math.MaxInt64.
func mulSat(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

// addOff returns a+off, for a >= 0, saturated at math.MaxInt64.
func addOff(a, off int64) int64 {
	if off > 0 {
		return addSat(a, off)
	}
	return a + off
}
