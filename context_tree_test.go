package hashedwheel_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hashedwheel/hashedwheel"
)

// These tests hold guarantee 16 for trees of contexts: the wheel's and the
// context package's stacked in every order, cancelled from any level.

func TestGuarantee16ChildFinishesFirst(t *testing.T) {
	// XTestChildFinishesFirst: cancelling the child leaves its parent alone.
	tm := newTimer(t)
	cancellable, stop := context.WithCancel(context.Background())
	defer stop()
	own, stopOwn := tm.WithTimeout(context.Background(), time.Hour)
	defer stopOwn()
	for name, parent := range map[string]context.Context{
		"Background": context.Background(), "WithCancel": cancellable, "Timer.WithTimeout": own,
	} {
		ctx, cancel := tm.WithTimeout(parent, 30*time.Minute)
		ctx.Done()
		require.False(t, isDone(ctx), name)
		cancel()
		requireDoneWith(t, ctx, context.Canceled, context.Canceled)
		assert.False(t, isDone(parent), name)
		assert.NoError(t, parent.Err(), name)
	}
}

func TestGuarantee16CancellationReachesDescendantsAtOnce(t *testing.T) {
	// Synchronous, as in the context package: from a wheel context to wheel
	// contexts below it, also through a context.WithValue, and to context
	// package contexts derived from one; and from any parent to a wheel
	// context, as soon as that is asked. (From a context package context to
	// a wheel context below it, the link is context.AfterFunc, whose
	// goroutine closes the Done channel.)
	tm := newTimer(t)
	root, cancelRoot := tm.WithTimeout(context.Background(), time.Hour)
	own, cancelOwn := tm.WithTimeout(root, 30*time.Minute)
	defer cancelOwn()
	ownDone := own.Done()
	below, cancelBelow := tm.WithTimeout(context.WithValue(own, ctxKey1(1), 1), 10*time.Minute)
	defer cancelBelow()
	belowDone := below.Done()
	child, cancelChild := context.WithCancel(below)
	defer cancelChild()
	childDone := child.Done()

	cancelRoot()
	for name, done := range map[string]<-chan struct{}{
		"wheel child": ownDone, "wheel grandchild, through WithValue": belowDone, "context package child": childDone,
	} {
		select {
		case <-done:
		default:
			t.Errorf("%s: not done when its ancestor's cancel returned", name)
		}
	}
	requireDoneWith(t, child, context.Canceled, context.Canceled)

	parent, cancelParent := context.WithCancel(context.Background())
	ctx, cancel := tm.WithTimeout(parent, time.Hour)
	defer cancel()
	cancelParent()
	assert.True(t, isDone(ctx), "a context package parent's cancellation not seen by Done")
	assert.Equal(t, context.Canceled, ctx.Err())
}

// TestGuarantee16WheelGrandchildOfACancelledRootIsDone: a wheel context under
// a wheel context under a context package root is done once the root is
// cancelled, with no other child made of it.
func TestGuarantee16WheelGrandchildOfACancelledRootIsDone(t *testing.T) {
	tm := newTimer(t, hashedwheel.WithTickDuration(ctxTick))
	root, cancelRoot := context.WithCancel(context.Background())
	mid, cancelMid := tm.WithTimeout(root, 2*time.Hour)
	defer cancelMid()
	leaf, cancelLeaf := tm.WithTimeout(mid, time.Hour)
	defer cancelLeaf()
	leafDone := leaf.Done()
	cancelRoot()
	select {
	case <-leafDone:
	case <-time.After(2 * time.Second):
		t.Errorf("leaf: Done not closed 2s after the root was cancelled")
	}
}

// TestGuarantee16WheelGrandchildAndItsChildrenSeeTheRootCancelled: a wheel
// context whose parent is a wheel context under a context package root, and
// a context package child of it, learn that the root was cancelled: their
// Done channels, fetched before, close.
func TestGuarantee16WheelGrandchildAndItsChildrenSeeTheRootCancelled(t *testing.T) {
	tm := newTimer(t, hashedwheel.WithTickDuration(ctxTick))
	root, cancelRoot := context.WithCancelCause(context.Background())
	mid, cancelMid := tm.WithTimeout(root, 2*time.Hour)
	defer cancelMid()
	leaf, cancelLeaf := tm.WithTimeout(mid, time.Hour)
	defer cancelLeaf()
	derived, cancelDerived := context.WithCancel(leaf)
	defer cancelDerived()
	leafDone, derivedDone := leaf.Done(), derived.Done()

	cause := errors.New("because")
	cancelRoot(cause)
	for name, done := range map[string]<-chan struct{}{"leaf": leafDone, "context.WithCancel(leaf)": derivedDone} {
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			t.Errorf("%s: Done not closed 2s after the root was cancelled", name)
		}
	}
	if !isDone(mid) {
		t.Errorf("mid not done")
	}
}

func TestGuarantee16SimultaneousCancels(t *testing.T) {
	// TestSimultaneousCancels, with the wheel's contexts and the context
	// package's mixed in one tree.
	tm := newTimer(t, hashedwheel.WithTickDuration(ctxTick))
	root, cancel := tm.WithTimeout(context.Background(), time.Hour)
	cancels := map[context.Context]context.CancelFunc{root: cancel}
	queue := []context.Context{root}
	for len(queue) != 0 && len(cancels) < 100 {
		parent := queue[0]
		queue = queue[1:]
		for i := range 4 {
			var ctx context.Context
			var cancel context.CancelFunc
			if i%2 == 0 {
				ctx, cancel = tm.WithTimeout(parent, time.Hour)
			} else {
				ctx, cancel = context.WithCancel(parent)
			}
			cancels[ctx] = cancel
			queue = append(queue, ctx)
		}
	}
	var wg sync.WaitGroup
	for _, cancel := range cancels {
		wg.Go(cancel)
	}
	for ctx := range cancels {
		waitDone(t, ctx, "a context of the tree")
		assert.Equal(t, context.Canceled, ctx.Err())
	}
	wg.Wait()
	assert.Zero(t, tm.PendingTimeouts())
}

func TestGuarantee16InterlockedCancels(t *testing.T) {
	tm := newTimer(t)
	parent, cancelParent := tm.WithTimeout(context.Background(), time.Hour)
	child, cancelChild := tm.WithTimeout(parent, 2*time.Hour)
	go func() {
		<-parent.Done()
		cancelChild()
	}()
	cancelParent()
	waitDone(t, child, "child")
}

// TestGuarantee16RacingCancelsOfAChainEndCanceled: a chain of wheel
// contexts with shrinking deadlines (each a real wheel context) under a
// cancellable root, with context package children; racing cancels of every
// level, Done, Err, Cause. The leaf ends done with context.Canceled.
func TestGuarantee16RacingCancelsOfAChainEndCanceled(t *testing.T) {
	tm := newTimer(t, hashedwheel.WithTickDuration(time.Millisecond))
	for iter := range 300 {
		root, cancelRoot := context.WithCancelCause(context.Background())
		cause := errors.New("root")
		var ctxs []context.Context
		var cancels []context.CancelFunc
		ctx := context.Context(root)
		d := time.Hour
		for i := range 6 {
			var c context.CancelFunc
			d /= 2
			if i%3 == 2 {
				ctx, c = context.WithCancel(ctx)
			} else {
				ctx, c = tm.WithTimeout(ctx, d)
			}
			ctxs = append(ctxs, ctx)
			cancels = append(cancels, c)
		}
		var wg sync.WaitGroup
		for _, c := range ctxs {
			wg.Go(func() { c.Done(); _ = c.Err(); _ = context.Cause(c) })
		}
		k := iter % (len(cancels) + 1)
		wg.Go(func() { cancelRoot(cause) })
		if k < len(cancels) {
			wg.Go(cancels[k])
		}
		wg.Wait()
		leaf := ctxs[len(ctxs)-1]
		select {
		case <-leaf.Done():
		case <-time.After(2 * time.Second):
			t.Fatalf("iter %d: leaf not done", iter)
		}
		err, c := leaf.Err(), context.Cause(leaf)
		if err != context.Canceled || (c != cause && c != context.Canceled) {
			t.Fatalf("iter %d: Err %v Cause %v", iter, err, c)
		}
		for _, c := range cancels {
			c()
		}
	}
	// A goroutine that context.AfterFunc started for a context.WithCancel
	// child may still be inside the Cancel of a timeout whose context a
	// cancel above found done: Cancel counts the timeout out a few
	// instructions after it marks it cancelled, and nothing tells when.
	deadline := time.Now().Add(10 * time.Second)
	for tm.PendingTimeouts() != 0 && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	if n := tm.PendingTimeouts(); n != 0 {
		t.Errorf("%d pending", n)
	}
	_ = fmt.Sprint()
}

func TestGuarantee16Layers(t *testing.T) {
	// TestLayersCancel and TestLayersTimeout: random stacks of WithValue,
	// WithCancel, context.WithTimeout and Timer.WithTimeout.
	for _, timeout := range []bool{false, true} {
		t.Run(fmt.Sprint("timeout=", timeout), func(t *testing.T) {
			tm := newTimer(t, hashedwheel.WithTickDuration(time.Millisecond))
			seed := uint64(time.Now().UnixNano())
			r := rand.New(rand.NewPCG(seed, seed))
			type value int
			var (
				vals    []*value
				cancels []context.CancelFunc
				wheel   int
				ctx     = context.Background()
			)
			for i := 0; i < 30 || wheel == 0 || len(cancels) == 0 || len(vals) == 0; i++ {
				var cancel context.CancelFunc
				d := time.Hour
				if timeout {
					d = time.Millisecond
				}
				switch r.IntN(4) {
				case 0:
					v := new(value)
					ctx = context.WithValue(ctx, v, v)
					vals = append(vals, v)
				case 1:
					ctx, cancel = context.WithCancel(ctx)
				case 2:
					ctx, cancel = context.WithTimeout(ctx, d)
				case 3:
					ctx, cancel = tm.WithTimeout(ctx, d)
					wheel++
				}
				if cancel != nil {
					cancels = append(cancels, cancel)
				}
			}
			defer func() {
				for _, cancel := range cancels {
					cancel()
				}
			}()
			checkValues := func(when string) {
				for _, key := range vals {
					assert.Equal(t, key, ctx.Value(key), "seed %d, %s", seed, when)
				}
			}
			// Not checked: fmt.Sprint(ctx). The context package names the
			// parent of its context "context.stopCtx" when that parent has
			// an AfterFunc method, as the wheel's contexts do.
			checkValues("before cancel")
			if timeout {
				waitDone(t, ctx, fmt.Sprint("stack of seed ", seed))
				checkValues("after timeout")
				return
			}
			require.False(t, isDone(ctx), "seed %d: done before cancel", seed)
			cancels[r.IntN(len(cancels))]()
			// Not at once: where a context package context is cancelled
			// below a wheel context with context package contexts above it,
			// these learn of it on the goroutine of context.AfterFunc.
			waitDone(t, ctx, fmt.Sprint("stack of seed ", seed))
			checkValues("after cancel")
		})
	}
}

// layerKey is the context key of a layer's value.
type layerKey int

// TestGuarantee16LayersWithShrinkingDeadlines is TestGuarantee16Layers with
// a deadline that shrinks layer by layer, so that every
// Timer.WithTimeout layer is a wheel context (with one fixed d, all but the
// first become context.WithCancel, as in TestGuarantee16Layers).
func TestGuarantee16LayersWithShrinkingDeadlines(t *testing.T) {
	for _, timeout := range []bool{false, true} {
		for range 10 {
			tm := newTimer(t, hashedwheel.WithTickDuration(time.Millisecond))
			seed := uint64(time.Now().UnixNano())
			r := rand.New(rand.NewPCG(seed, seed))
			var cancels []context.CancelFunc
			ctx := context.Background()
			d := 10 * time.Hour
			if timeout {
				d = 200 * time.Millisecond
			}
			var kinds []string
			for i := 0; i < 12; i++ {
				var cancel context.CancelFunc
				d -= d / 20
				switch r.IntN(4) {
				case 0:
					ctx = context.WithValue(ctx, layerKey(i), i)
					kinds = append(kinds, "V")
				case 1:
					ctx, cancel = context.WithCancel(ctx)
					kinds = append(kinds, "C")
				case 2:
					ctx, cancel = context.WithTimeout(ctx, 2*d) // later: a WithCancel
					kinds = append(kinds, "T")
				case 3:
					ctx, cancel = tm.WithTimeout(ctx, d)
					kinds = append(kinds, "W")
				}
				if cancel != nil {
					cancels = append(cancels, cancel)
				}
			}
			if len(cancels) == 0 {
				continue
			}
			done := ctx.Done()
			var which int
			if !timeout {
				which = r.IntN(len(cancels))
				cancels[which]()
			}
			select {
			case <-done:
			case <-time.After(2 * time.Second):
				t.Fatalf("timeout=%v stack %v (cancelled #%d): leaf not done after 2s", timeout, kinds, which)
			}
			if ctx.Err() == nil {
				t.Fatalf("Err nil after Done")
			}
			for _, c := range cancels {
				c()
			}
			tm.Stop()
		}
	}
}

// customDoneContext has a Done channel of its own, so that the context
// package cannot see through it.
type customDoneContext struct {
	context.Context
	donec chan struct{}
}

func (c *customDoneContext) Done() <-chan struct{} { return c.donec }

func TestGuarantee16CustomContextPropagation(t *testing.T) {
	// TestCustomContextPropagation: a parent of another package, with a Done
	// channel of its own.
	tm := newTimer(t)
	cause := errors.New("TestCustomContextPropagation")
	donec := make(chan struct{})
	ctx1, cancel1 := context.WithCancelCause(context.Background())
	ctx2 := &customDoneContext{Context: ctx1, donec: donec}
	ctx3, cancel3 := tm.WithTimeout(ctx2, time.Hour)
	defer cancel3()
	ctx3.Done()

	cancel1(cause)
	close(donec)

	waitDone(t, ctx3, "child of a custom context")
	assert.Equal(t, context.Canceled, ctx3.Err())
	assert.Equal(t, cause, context.Cause(ctx3))
}
