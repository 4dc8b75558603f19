package hashedwheel

import "sync/atomic"

// cacheLineSize is the size the queue pads its two ends to, so that the
// producers' end and the worker's end never share a cache line.
const cacheLineSize = 64

// mpscQueue is an unbounded, lock-free, intrusive queue of timeouts with many
// producers and a single consumer: Dmitry Vyukov's intrusive MPSC node-based
// queue with a stub node. Any goroutine may push; only the worker pops. The link is the
// timeout's own next field, so pushing allocates nothing.
//
// The ends are named by role. producerTail is the node pushed last; every
// push swaps it. consumerHead is the oldest node not yet handed out (or the
// stub); only the consumer reads or writes it.
//
// Memory ordering. A push is
//
//	prev := producerTail.Swap(n)  // 1: n becomes the tail
//	prev.next.Store(n)            // 2: n becomes reachable from the head
//
// Go's atomics are sequentially consistent, so everything the producer wrote
// to n before step 1 (its deadline, task and timer) happens before the
// consumer's next.Load that returns n. Between steps 1 and 2 the queue has a
// bubble: n is the tail but prev.next is still nil, so the consumer cannot see
// n or anything pushed after it. pop then returns nil although the queue is not
// empty; the consumer tries again later (the next tick), and the final drain at
// Stop waits for the producer to finish step 2.
//
// A node is handed out only when its next is already linked, or after the stub
// has been pushed behind it, so no producer writes a node's next once pop has
// returned it. pop clears that field, which lets the same node be pushed to
// another queue later (a transferred timeout that is cancelled goes to the
// changes queue).
type mpscQueue struct {
	_ [cacheLineSize]byte

	// producerTail is the last node pushed. Producers swap it; the consumer
	// loads it to tell an empty queue from a bubble.
	producerTail atomic.Pointer[Timeout]
	_            [cacheLineSize - 8]byte

	// consumerHead is the next node to hand out, or the stub. Consumer only.
	consumerHead *Timeout
	_            [cacheLineSize - 8]byte

	// stub is a node that is never handed out. It keeps the list non-empty,
	// so that push never has to special-case an empty queue.
	stub Timeout
}

// init makes the queue empty. It must run before the first push, and the
// queue must not be copied afterwards (it points into itself).
func (q *mpscQueue) init() {
	q.producerTail.Store(&q.stub)
	q.consumerHead = &q.stub
}

// push appends n. It is safe for concurrent use. n.next must be nil.
func (q *mpscQueue) push(n *Timeout) {
	prev := q.producerTail.Swap(n)
	// Bubble: n is the tail, but not yet reachable from consumerHead.
	prev.next.Store(n)
}

// pop removes and returns the oldest node, or nil if the queue is empty or
// its oldest node is still in a bubble. Consumer only.
func (q *mpscQueue) pop() *Timeout {
	head := q.consumerHead
	next := head.next.Load()
	if head == &q.stub {
		if next == nil {
			return nil
		}
		// Step past the stub. Nobody links behind it again until it is
		// re-pushed, so its next can be cleared for that push.
		q.consumerHead = next
		q.stub.next.Store(nil)
		head = next
		next = next.next.Load()
	}
	if next != nil {
		q.consumerHead = next
		head.next.Store(nil)
		return head
	}
	if q.producerTail.Load() != head {
		// A producer has swapped the tail but not yet linked head.next.
		return nil
	}
	// head is the last node. Push the stub behind it so it can go.
	q.push(&q.stub)
	next = head.next.Load()
	if next == nil {
		// Another producer swapped in before the stub; wait for its link.
		return nil
	}
	q.consumerHead = next
	head.next.Store(nil)
	return head
}

// isEmpty reports whether nothing has been pushed that pop has not returned,
// counting nodes still in a bubble. Consumer only.
func (q *mpscQueue) isEmpty() bool {
	return q.consumerHead == &q.stub && q.producerTail.Load() == &q.stub
}
