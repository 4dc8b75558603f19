package hashedwheel

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newQueue() *mpscQueue { return new(mpscQueue) }

func TestQueueIsFIFO(t *testing.T) {
	q := newQueue()
	assert.True(t, q.isEmpty())
	assert.Nil(t, q.pop())

	nodes := make([]Timeout, 5)
	for i := range nodes {
		nodes[i].deadline.Store(int64(i))
		q.push(&nodes[i])
	}
	assert.False(t, q.isEmpty())
	for i := range nodes {
		n := q.pop()
		require.NotNil(t, n)
		assert.Equal(t, int64(i), n.deadline.Load())
		assert.Nil(t, n.next, "pop must clear the link it hands out")
	}
	assert.Nil(t, q.pop())
	assert.True(t, q.isEmpty())

	// Popped nodes can go into another queue, as a cancelled timeout does.
	other := newQueue()
	other.push(&nodes[3])
	assert.Same(t, &nodes[3], other.pop())
	assert.True(t, other.isEmpty())
}

func TestQueueInterleavedPushAndPop(t *testing.T) {
	q := newQueue()
	nodes := make([]Timeout, 100)
	next := 0
	for i := range nodes {
		nodes[i].deadline.Store(int64(i))
		q.push(&nodes[i])
		if i%3 == 2 { // drain sometimes, down to empty
			for n := q.pop(); n != nil; n = q.pop() {
				require.Equal(t, int64(next), n.deadline.Load())
				next++
			}
			require.True(t, q.isEmpty())
		}
	}
	for n := q.pop(); n != nil; n = q.pop() {
		require.Equal(t, int64(next), n.deadline.Load())
		next++
	}
	assert.Equal(t, len(nodes), next)
}

func TestQueueManyProducersOneConsumer(t *testing.T) {
	const producers, perProducer = 8, 20_000
	q := newQueue()
	nodes := make([]Timeout, producers*perProducer)
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := range perProducer {
				n := &nodes[p*perProducer+i]
				n.deadline.Store(int64(p*perProducer + i))
				q.push(n)
			}
		})
	}

	// Consume while the producers run: each node exactly once, and each
	// producer's nodes in the order it pushed them.
	seen := make([]bool, len(nodes))
	lastSeq := make([]int, producers)
	for i := range lastSeq {
		lastSeq[i] = -1
	}
	for got := 0; got < len(nodes); {
		n := q.pop()
		if n == nil {
			continue // empty for now
		}
		id := int(n.deadline.Load())
		require.False(t, seen[id], "node %d popped twice", id)
		seen[id] = true
		p, seq := id/perProducer, id%perProducer
		require.Greater(t, seq, lastSeq[p], "producer %d's nodes out of order", p)
		lastSeq[p] = seq
		got++
	}
	wg.Wait()
	assert.Nil(t, q.pop())
	assert.True(t, q.isEmpty())
}
