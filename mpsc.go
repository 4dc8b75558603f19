package hashedwheel

// cacheLineSize is the size the queue pads its producers' end to, so that it
// shares its cache line with nothing the worker writes.
const cacheLineSize = 64

// mpscQueue is an unbounded, lock-free, intrusive queue of timeouts with many
// producers and a single consumer. Any goroutine may push; only the worker
// pops. The link is the timeout's own next field, so pushing allocates
// nothing.
//
// Producers push onto a stack (Treiber's): one CompareAndSwap on
// producerTop, the node pushed last. The consumer takes the whole stack at
// once with one Swap, and reverses it into consumerHead, its own list, oldest
// first, from which pop hands out nodes in the order they were pushed. A
// push costs one atomic operation, and the consumer one per batch rather than
// one per node. The queues of new timeouts leave out, as they reverse the
// stack, the cancelled timeouts that need nothing more from the worker (see
// take). A stopping worker closes the queues (see close).
//
// Memory ordering. A push is
//
//	top := producerTop.Load()
//	n.next = top                           // a plain write: n is not published
//	producerTop.CompareAndSwap(top, n)     // n is published
//
// and the consumer's take is producerTop.Swap(nil). Go's atomics are
// sequentially consistent, and the successful CompareAndSwaps and the Swaps
// on producerTop form one chain in which each reads what the one before
// wrote, so everything a producer wrote to n before its CompareAndSwap (its
// deadline, task, timer and next) happens before the Swap that takes n, and
// before everything the consumer does with n afterwards. There is no bubble:
// a pushed node is reachable from producerTop at once, so pop returns nil
// only when the queue is empty.
//
// The stack has no ABA problem, because nothing is ever removed from it by a
// CompareAndSwap: if a producer's CompareAndSwap succeeds, top is the top at
// that moment, whatever happened in between, and n.next links to it.
//
// A node's next is written by its producer before it is published, and then
// only by the consumer, which reads it only after the Swap that took it. pop
// clears it, and so does take for a node it drops, so that the consumer can
// hand the node to another queue later (a transferred timeout that is
// cancelled goes to the changes queue), and so that a dropped timeout its
// caller keeps holds no others. The consumer clears it before the state
// change that lets a producer push the node again (the worker letting go of
// a dropped timeout, which Schedule may then arm), and that change is the
// happens-before edge to the next push.
type mpscQueue struct {
	_ [cacheLineSize]byte

	// producerTop is the last node pushed, or nil. Producers
	// CompareAndSwap it; the consumer swaps it to nil to take every node.
	producerTop atomicPointer[Timeout]

	// producerCount is a count the queue's owner keeps for its producers
	// (a shard counts its pending timeouts in it). It shares producerTop's
	// cache line, which the push has just taken, so that counting right
	// after it costs no second cache miss. Any goroutine; atomic.
	producerCount atomicInt64
	_             [cacheLineSize - 16]byte

	// consumerHead is the oldest node taken and not yet handed out, the
	// start of a list linked by next. Consumer only; on a line of its own,
	// as the consumer writes it at every pop.
	consumerHead *Timeout

	// dropsCancelled makes take leave out the timeouts that need nothing
	// more from the worker (see Timeout.dropCancelled). Set for the queues of new
	// timeouts by NewTimer; immutable after.
	dropsCancelled bool

	// dropped counts the cancelled timeouts take left out since
	// takeDropped last read it.
	// Consumer only.
	dropped int
	_       [cacheLineSize - 24]byte
}

// closedQueue is the top of a closed queue: a push onto it fails.
var closedQueue Timeout

// push appends n and reports true, or reports false if the queue is closed
// (see close). It is safe for concurrent use. n must not be in a queue.
func (q *mpscQueue) push(n *Timeout) bool {
	for {
		top := q.producerTop.Load()
		if top == &closedQueue {
			return false
		}
		n.next = top
		if q.producerTop.CompareAndSwap(top, n) {
			return true
		}
	}
}

// close makes every later push fail, so that a producer learns that nobody
// will take its node any more; handle gets the nodes pushed before, oldest
// first. A stopping worker closes the queues once it has taken everything.
// Consumer only. A closed queue stays closed: closing it again, or taking
// from it, finds nothing.
func (q *mpscQueue) close(handle func(*Timeout)) {
	for {
		for n := q.pop(); n != nil; n = q.pop() {
			handle(n)
		}
		if q.producerTop.CompareAndSwap(nil, &closedQueue) || q.isClosed() {
			return
		}
	}
}

// isClosed reports whether close has closed the queue. Consumer only.
func (q *mpscQueue) isClosed() bool { return q.producerTop.Load() == &closedQueue }

// pop removes and returns the oldest node, or nil if the queue is empty.
// Consumer only.
func (q *mpscQueue) pop() *Timeout {
	if q.consumerHead == nil {
		q.consumerHead = q.take()
	}
	return q.popTaken()
}

// popTaken removes and returns the oldest node of those taken so far (by
// pop or takeAll), or nil if there is none: it does not take the nodes
// pushed since. Consumer only.
func (q *mpscQueue) popTaken() *Timeout {
	n := q.consumerHead
	if n == nil {
		return nil
	}
	q.consumerHead = n.next
	n.next = nil
	return n
}

// takeAll takes every node pushed so far, after those taken before, for
// popTaken to hand out. Consumer only.
func (q *mpscQueue) takeAll() {
	taken := q.take()
	if q.consumerHead == nil {
		q.consumerHead = taken
		return
	}
	last := q.consumerHead
	for last.next != nil {
		last = last.next
	}
	last.next = taken
}

// take takes every node pushed so far and returns the oldest, linked by next
// to the others in the order they were pushed. A queue that drops cancelled
// timeouts leaves out, and counts, those that need nothing more (see
// Timeout.dropCancelled): reversing the stack reads every node anyway, and a
// timeout scheduled and cancelled before the worker took it, the common case,
// is then touched once. Consumer only.
func (q *mpscQueue) take() *Timeout {
	var head *Timeout
	// Empty: no Swap. Closed: only the consumer closes the queue, so one
	// it finds open stays open through the Swap.
	if top := q.producerTop.Load(); top == nil || top == &closedQueue {
		return nil
	}
	for top := q.producerTop.Swap(nil); top != nil; {
		n := top
		top = n.next
		// Cleared before the drop lets go of n, after which n may be
		// pushed again.
		n.next = nil
		if q.dropsCancelled && n.dropCancelled() {
			q.dropped++
			continue
		}
		n.next = head
		head = n
	}
	return head
}

// takeDropped returns how many timeouts take has dropped since the last call.
// Consumer only.
func (q *mpscQueue) takeDropped() int {
	n := q.dropped
	q.dropped = 0
	return n
}

// isEmpty reports whether nothing has been pushed that pop has not returned.
// Consumer only.
func (q *mpscQueue) isEmpty() bool {
	if q.consumerHead != nil {
		return false
	}
	top := q.producerTop.Load()
	return top == nil || top == &closedQueue
}
