package hashedwheel_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashedwheel/hashedwheel"
)

// Regression tests from a review of context.go: wheel contexts stacked under
// wheel contexts and context package contexts, a deadline kept off the pool
// and the executor, contexts from a Timer outside a synctest bubble, and the
// timeouts Stop returns.

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

// testLayers with a deadline that shrinks layer by layer, so that every
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

// TestContextErrDoneRace (go.dev/issue/75533).
func TestGuarantee16ErrIsSetOnlyOnceDoneIsClosedUnderEachParent(t *testing.T) {
	tm := newTimer(t)
	for _, parent := range []string{"Background", "WithCancel", "wheel"} {
		for range 200 {
			var p context.Context = context.Background()
			switch parent {
			case "WithCancel":
				var c context.CancelFunc
				p, c = context.WithCancel(p)
				defer c()
			case "wheel":
				var c context.CancelFunc
				p, c = tm.WithTimeout(p, 2*time.Hour)
				defer c()
			}
			ctx, cancel := tm.WithTimeout(p, time.Hour)
			donec := ctx.Done()
			go cancel()
			for ctx.Err() == nil {
			}
			select {
			case <-donec:
			default:
				t.Fatalf("%s: ctx.Err is non-nil, but ctx.Done is not closed", parent)
			}
		}
	}
}

// layerKey is the context key of a layer's value.
type layerKey int

// withoutCancelKey is a context key of the test's own type.
type withoutCancelKey struct{}

// TestGuarantee16WithoutCancelKeepsValuesAndDropsTheDeadline: context.WithoutCancel of a wheel context
// keeps its values and drops its deadline and cancellation.
func TestGuarantee16WithoutCancelKeepsValuesAndDropsTheDeadline(t *testing.T) {
	tm := newTimer(t)
	key, value := withoutCancelKey{}, "value"
	ctx := context.WithValue(context.Background(), key, value)
	ctx, cancel := tm.WithTimeout(ctx, time.Hour)
	ctx = context.WithoutCancel(ctx)
	if d, ok := ctx.Deadline(); !d.IsZero() || ok {
		t.Errorf("Deadline = %v, %v", d, ok)
	}
	if ctx.Done() != nil {
		t.Errorf("Done non-nil")
	}
	cancel()
	if err := ctx.Err(); err != nil {
		t.Errorf("Err = %v", err)
	}
	if v := ctx.Value(key); v != value {
		t.Errorf("Value = %v", v)
	}
	if c := context.Cause(ctx); c != nil {
		t.Errorf("Cause = %v", c)
	}
}

// A concurrent mess: a chain of wheel contexts with shrinking deadlines
// (each a real wheel context) under a cancellable root, with context
// package children; racing cancels of every level, Done, Err, Cause.
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

// A shared timer made outside a bubble, used inside one.
func TestGuarantee17TimerFromOutsideTheBubbleKeepsAContextsDeadline(t *testing.T) {
	tm := newTimer(t, hashedwheel.WithTickDuration(ctxTick))
	_ = tm.Start()
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		ctx, cancel := tm.WithTimeout(context.Background(), 25*time.Millisecond)
		defer cancel()
		<-ctx.Done()
		if d := time.Since(start); d < 25*time.Millisecond {
			t.Fatalf("done after %v", d)
		}
		if ctx.Err() != context.DeadlineExceeded {
			t.Fatal(ctx.Err())
		}
		p, cp := context.WithCancel(context.Background())
		ctx2, cancel2 := tm.WithDeadline(p, time.Now().Add(time.Hour))
		defer cancel2()
		d2 := ctx2.Done()
		cp()
		<-d2
	})
}

// Inside a bubble: Stop, then the fallback keeps the deadline; a context
// whose Done is waited on by a goroutine durably blocks.
func TestGuarantee17StopHandsAStackOfContextsToTheRuntimesTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, _ := hashedwheel.NewTimer(hashedwheel.WithTickDuration(ctxTick))
		start := time.Now()
		root, cancelRoot := context.WithCancel(context.Background())
		defer cancelRoot()
		mid, c1 := tm.WithTimeout(root, 2*time.Hour)
		defer c1()
		leaf, c2 := tm.WithTimeout(mid, time.Hour)
		defer c2()
		got := make(chan time.Duration)
		go func() { <-leaf.Done(); got <- time.Since(start) }()
		synctest.Wait()
		if n := len(tm.Stop()); n != 2 {
			t.Errorf("Stop returned %d", n)
		}
		if d := <-got; d != time.Hour {
			t.Errorf("leaf done after %v", d)
		}
	})
}

// An executor that fails once (a closed pool, say) loses a deadline for good.
func TestGuarantee17PanickingExecutorDoesNotLoseADeadline(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	exec := func(task func()) {
		if fail.Swap(false) {
			panic("pool closed")
		}
		go task()
	}
	tm := newTimer(t, hashedwheel.WithTickDuration(ctxTick), hashedwheel.WithTaskExecutor(exec))
	ctx, cancel := tm.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	done := ctx.Done()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatalf("20ms context not done after 2s; PendingTimeouts=%d", tm.PendingTimeouts())
	}
}

// Bug A: a wheel context whose parent is a wheel context linked (through
// context.WithCancel) to a context-package parent never learns that the
// root was cancelled: its Done channel, fetched before, stays open.
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

// Bug B: with WithTaskWorkers(1), the context's deadline is a task in the
// pool queue; a pool task that waits for a wheel context deadlocks.
func TestGuarantee17DeadlineIsNotQueuedBehindAPooledTask(t *testing.T) {
	tm := newTimer(t, hashedwheel.WithTickDuration(ctxTick), hashedwheel.WithTaskWorkers(1))
	res := make(chan error, 1)
	_, err := tm.AfterFunc(0, func() {
		ctx, cancel := tm.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		<-ctx.Done() // a write bounded by a deadline, say
		res <- ctx.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-res:
		t.Logf("done with %v", err)
	case <-time.After(3 * time.Second):
		t.Fatal("the pooled task's 50ms context is not done after 3s")
	}
}

// Bug B': the executor is the user's; a deadline handed to it is only as
// good as it is.
func TestGuarantee17DeadlineDoesNotWaitForABusyExecutor(t *testing.T) {
	sem := make(chan struct{}, 1)
	exec := func(task func()) { sem <- struct{}{}; go func() { defer func() { <-sem }(); task() }() }
	tm := newTimer(t, hashedwheel.WithTickDuration(ctxTick), hashedwheel.WithTaskExecutor(exec))
	res := make(chan error, 1)
	_, err := tm.AfterFunc(0, func() {
		ctx, cancel := tm.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		select {
		case <-ctx.Done():
			res <- ctx.Err()
		case <-time.After(3 * time.Second):
			res <- errors.New("not done after 3s")
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-res; err != context.DeadlineExceeded {
		t.Fatal(err)
	}
}

// Bug C: Stop hands out the contexts' timeouts; running their tasks, as
// one does with Netty's unprocessed timeouts, ends the contexts early.
func TestGuarantee17RunningTheTimeoutsStopReturnsEndsNoContext(t *testing.T) {
	tm, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(ctxTick))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := tm.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	for _, to := range tm.Stop() {
		to.Task().Run(to) // flush what was pending
	}
	if err := ctx.Err(); err != nil {
		dl, _ := ctx.Deadline()
		t.Fatalf("context due in %v is done with %v", time.Until(dl).Round(time.Minute), err)
	}
}
