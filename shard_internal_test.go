package hashedwheel

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// shardFor picks a timeout's shard from its address. These tests fail the
// day a Go release breaks what that rests on.

// TestATimeoutKeepsItsShardForLife: the pending counts add up only if a
// timeout's address, and so its shard, never changes: Go's garbage
// collector does not move heap objects.
func TestATimeoutKeepsItsShardForLife(t *testing.T) {
	tm, err := NewTimer()
	require.NoError(t, err)
	defer tm.Stop()
	timeouts := make([]*Timeout, 1000)
	shards := make([]*shard, len(timeouts))
	for i := range timeouts {
		timeouts[i] = newTimeoutOn(tm)
		shards[i] = tm.shardFor(timeouts[i])
	}
	for range 3 {
		runtime.GC()
	}
	for i, to := range timeouts {
		require.Same(t, shards[i], tm.shardFor(to), "timeout %d changed shard across garbage collections", i)
	}
}

// TestTimeoutsMadeTogetherShareAShard: one goroutine's timeouts come from
// one span of the allocator at a time, so they mostly share a shard, and
// goroutines on other Ps, with spans of their own, mostly use others. If
// the allocator spread consecutive objects over spans, pushes from one
// goroutine would hop between shards and share cache lines with others.
func TestTimeoutsMadeTogetherShareAShard(t *testing.T) {
	tm, err := NewTimer()
	require.NoError(t, err)
	defer tm.Stop()
	const n = 4096
	changes := 0
	var last *shard
	keep := make([]*Timeout, n)
	for i := range keep {
		keep[i] = newTimeoutOn(tm)
		if s := tm.shardFor(keep[i]); s != last {
			changes++
			last = s
		}
	}
	// 4096 objects of 64 bytes fill 32 spans of 8KiB: about 32 changes.
	assert.Less(t, changes, n/16, "shard changes over %d timeouts made in a row", n)
}
