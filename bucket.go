package hashedwheel

import (
	"math"
	"math/bits"
)

// bucket is one slot of the wheel: an intrusive doubly linked list of the
// timeouts whose check tick (see checktick.go) falls in its tick, this turn
// of the wheel or a later one. It is owned by the worker goroutine: no other
// goroutine reads or writes it, or a linked timeout's bucketNext and
// bucketPrev (a timeout's checkTick, which names its bucket, is written by
// the worker alone, and read by Reset). Timeouts are kept in the order they
// were linked (one placed again goes to the tail), not in deadline order:
// everything due in one tick runs in that tick, in that order.
//
// Netty keeps in each timeout its remainingRounds, the turns of the wheel
// left, and takes one off at every visit to the bucket, so that the worker
// must visit every bucket every turn. Here a visit at tick T expires exactly
// the timeouts whose remainingRounds Netty would find at zero or below: those
// with a deadline before the end of tick T. That needs no counter to keep, so
// the worker may skip the visits at which nothing is due: minDue tells it
// which those are.
//
// A timeout in the wheel sits in the bucket of its check tick, the tick at
// which the worker looks at it next; checktick.go states the invariant that
// keeps it from being looked at too late.
type bucket struct {
	head, tail *Timeout

	// minDue is at most the earliest time at which a timeout in the bucket
	// needs the worker: its deadline, or the start of its check tick if
	// that is earlier; math.MaxInt64 when the bucket is empty. Timeouts
	// that leave the bucket, or that Reset moves to a later deadline, do not
	// raise it; the next visit makes it exact again, and moves a timeout
	// whose check tick has come, or whose new deadline belongs to another
	// bucket, where it now belongs.
	minDue int64
}

// newBuckets returns n empty buckets.
func newBuckets(n int) []bucket {
	wheel := make([]bucket, n)
	for i := range wheel {
		wheel[i].minDue = math.MaxInt64
	}
	return wheel
}

// add appends to to the bucket; from is when it needs the worker (see
// minDue).
func (b *bucket) add(to *Timeout, from int64) {
	b.minDue = min(b.minDue, from)
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
		b.minDue = math.MaxInt64
	}
}

// level is a level of slots above the wheel's buckets (see checktick.go):
// lists of timeouts as buckets are, whose minDue is not used, and the set
// of the non-empty ones, a bit per slot. Worker only.
type level struct {
	slots    [levelSlots]bucket
	occupied uint64
}

// occupancy is the set of the wheel's non-empty buckets, so that the worker
// can find the next bucket that holds anything without walking the empty
// ones: with 2^20 buckets and a handful of timeouts, going to sleep must not
// cost a million checks. Level 0 has a bit per bucket; each level above has a
// bit per word of the level below, set when that word is not zero; the top
// level is one word. Finding the next member looks at most two words a level
// (six levels for 2^30 buckets). It costs a bit per bucket, plus 1/64 of that
// for the levels above. Worker only.
type occupancy struct {
	levels [][]uint64
}

// newOccupancy returns an empty set for n buckets.
func newOccupancy(n int) occupancy {
	var o occupancy
	for {
		words := (n + 63) / 64
		o.levels = append(o.levels, make([]uint64, words))
		if words == 1 {
			return o
		}
		n = words
	}
}

// add puts bucket i in the set.
func (o *occupancy) add(i int) {
	for _, level := range o.levels {
		w := i >> 6
		was := level[w]
		level[w] = was | 1<<(i&63)
		if was != 0 {
			return // the levels above know this word already
		}
		i = w
	}
}

// remove takes bucket i out of the set.
func (o *occupancy) remove(i int) {
	for _, level := range o.levels {
		w := i >> 6
		level[w] &^= 1 << (i & 63)
		if level[w] != 0 {
			return
		}
		i = w
	}
}

// next returns the smallest bucket index >= i in the set, or -1 if there is
// none.
func (o *occupancy) next(i int) int {
	lvl := 0
	for {
		if lvl == len(o.levels) {
			return -1
		}
		level := o.levels[lvl]
		w := i >> 6
		if w >= len(level) {
			return -1
		}
		if rest := level[w] >> (i & 63); rest != 0 {
			i += bits.TrailingZeros64(rest)
			break
		}
		// Nothing at or after i in this word: look for the next non-zero
		// word one level up.
		i = w + 1
		lvl++
	}
	for lvl > 0 {
		lvl--
		i = i<<6 + bits.TrailingZeros64(o.levels[lvl][i])
	}
	return i
}
