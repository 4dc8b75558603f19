package hashedwheel

import (
	"context"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDeadlineCtxIs112Bytes(t *testing.T) {
	// 112 bytes is a size class of its own; one byte more would cost 16.
	assert.Equal(t, uintptr(112), unsafe.Sizeof(deadlineCtx{}))
}

func TestContextInternalsAreLearned(t *testing.T) {
	assert.NotNil(t, cancelCtxKey, "context.Cause asked no key")
	assert.NotZero(t, cancelCode, "cancel closures are not laid out as a boundFunc")
}

func TestContextsWorkWithAllocatedClosures(t *testing.T) {
	// What the contexts do if the compiler lays out closures differently
	// one day: the same, with a closure allocated for the cancel function.
	saved := cancelCode
	cancelCode = 0
	t.Cleanup(func() { cancelCode = saved })

	tm, err := NewTimer(WithTickDuration(10 * time.Millisecond))
	require.NoError(t, err)
	defer tm.Stop()

	ctx, cancel := tm.WithTimeout(context.Background(), time.Hour)
	cancel()
	assert.Equal(t, context.Canceled, ctx.Err())

	parent, cancelParent := context.WithCancel(context.Background())
	ctx, cancel = tm.WithTimeout(parent, time.Hour)
	defer cancel()
	done := ctx.Done()
	cancelParent()
	<-done
	assert.Equal(t, context.Canceled, ctx.Err())

	own, cancelOwn := tm.WithTimeout(context.Background(), time.Hour)
	ctx, cancel = tm.WithTimeout(own, 2*time.Hour)
	defer cancel()
	done = ctx.Done()
	cancelOwn()
	<-done
	assert.Equal(t, context.Canceled, ctx.Err())
	assert.Zero(t, tm.PendingTimeouts())
}
