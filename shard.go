package hashedwheel

import (
	"fmt"
	"unsafe"
)

// shardCount is the number of shards of a Timer.
const shardCount = 8

// allocSpanBytes is the size of the spans from which Go's allocator hands out
// small objects, one span at a time to each P.
const allocSpanBytes = 8192

// shard is one of a Timer's queues of new timeouts, with a count of pending
// timeouts. A timeout's shard follows from its address: the allocator gives
// each P a span of its own to allocate from, so goroutines running on
// different Ps mostly push to different shards and do not take each other's
// cache lines. A timeout keeps its shard for life, so the counts add up.
// FIFO order holds within a shard, not across shards.
type shard struct {
	// timeouts is the queue of new timeouts. Its producerCount is the
	// shard's pending count: the shard's timeouts scheduled and neither
	// expired nor cancelled; with a pending limit, shard 0 counts all of
	// them, so that the limit is exact.
	timeouts mpscQueue

	// cancelledAside counts the shard's cancelled timeouts that the worker
	// never sees: those that Schedule armed again where they were before the
	// worker saw the cancel, and those that a run hands back after the
	// stopping worker closed its queues (see Timer.endRun). They count in
	// Stats.Cancelled from here. Any goroutine; atomic.
	cancelledAside atomicUint64
}

// pending returns the shard's count of pending timeouts.
func (s *shard) pending() *atomicInt64 { return &s.timeouts.producerCount }

// shardFor returns the shard of to, from its address: the one use of unsafe
// in the package. TestATimeoutKeepsItsShardForLife and
// TestTimeoutsMadeTogetherShareAShard fail the day a Go release breaks what
// that rests on (heap objects never move; one goroutine's allocations share
// a span).
func (t *Timer) shardFor(to *Timeout) *shard {
	if exploring {
		// The explorer replays schedules step by step: a shard that
		// followed from the address would change the steps with it.
		return &t.shards[0]
	}
	return &t.shards[uintptr(unsafe.Pointer(to))/allocSpanBytes%shardCount]
}

// pendingFor returns the counter that counts to among the pending timeouts.
func (t *Timer) pendingFor(to *Timeout) *atomicInt64 {
	if t.conf.maxPendingTimeouts > 0 {
		return t.shards[0].pending()
	}
	return t.shardFor(to).pending()
}

// reservePending counts a new timeout among the pending ones of a timer
// with a pending limit, or reports false, with the count it found, if the
// limit is reached. It never counts past the limit, so a rejected call is
// never seen in PendingTimeouts and never makes another call fail. (Without
// a limit, each shard counts its own timeouts; see pendingFor.)
func (t *Timer) reservePending() (n int64, ok bool) {
	pending := t.shards[0].pending()
	for {
		n := pending.Load()
		if n >= t.conf.maxPendingTimeouts {
			return n, false
		}
		if pending.CompareAndSwap(n, n+1) {
			return n + 1, true
		}
	}
}

// tooManyPending returns the error of a call refused at the pending limit,
// where it found n pending.
func (t *Timer) tooManyPending(n int64) error {
	return fmt.Errorf("%w: %d pending, limit %d", ErrTooManyPendingTimeouts, n, t.conf.maxPendingTimeouts)
}
