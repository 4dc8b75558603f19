package hashedwheel_test

import (
	"context"
	"errors"
	"fmt"
	"go/version"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hashedwheel/hashedwheel"
)

// The tests below port, in their own words, what Go's context tests
// (src/context/x_test.go and context_test.go) check of WithDeadline and
// WithTimeout, run against Timer.WithDeadline and Timer.WithTimeout; then
// what is the wheel's own: exact timing on the fake clock, the timeout's
// accounting, and the deadline surviving Stop and the pending limit.

const ctxTick = 10 * time.Millisecond

// withTimeoutFunc is the signature of context.WithTimeout and of
// Timer.WithTimeout.
type withTimeoutFunc = func(context.Context, time.Duration) (context.Context, context.CancelFunc)

// otherContext hides the type of the context it wraps, as a context made by
// another package would.
type otherContext struct{ context.Context }

// isDone reports whether ctx.Done() is closed, without waiting.
func isDone(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return true
	default:
		return false
	}
}

// waitDone waits for ctx to be done, on the real clock, and fails the test
// if it takes more than lateBound.
func waitDone(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	timer := time.NewTimer(lateBound)
	defer timer.Stop()
	select {
	case <-ctx.Done():
	case <-timer.C:
		t.Fatalf("%s: not done after %v", name, lateBound)
	}
}

// requireDoneWith checks that ctx is done, now, with err and cause.
func requireDoneWith(t *testing.T, ctx context.Context, err, cause error) {
	t.Helper()
	require.True(t, isDone(ctx), "context not done")
	assert.Equal(t, err, ctx.Err(), "Err")
	assert.Equal(t, cause, context.Cause(ctx), "Cause")
}

func TestGuarantee16WithDeadlineIsDoneAtTheFirstTickAtOrAfterItsDeadline(t *testing.T) {
	tests := []struct {
		name     string
		at       time.Duration // when WithDeadline is called, since Start
		deadline time.Duration // since Start
		want     time.Duration // when Done is closed, since Start
	}{
		{"mid-tick", 0, 25 * time.Millisecond, 30 * time.Millisecond},
		{"1ns", 0, time.Nanosecond, 10 * time.Millisecond},
		{"on a tick boundary", 0, 20 * time.Millisecond, 30 * time.Millisecond},
		{"just before a boundary", 0, 20*time.Millisecond - time.Nanosecond, 20 * time.Millisecond},
		{"made mid-tick", 15 * time.Millisecond, 17 * time.Millisecond, 20 * time.Millisecond},
		{"after many turns", 5 * time.Millisecond, time.Hour + 5*time.Millisecond, time.Hour + 10*time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tm := newTimer(t, hashedwheel.WithTickDuration(ctxTick), hashedwheel.WithTicksPerWheel(64))
				start := time.Now()
				require.NoError(t, tm.Start())
				time.Sleep(tt.at)

				d := start.Add(tt.deadline)
				ctx, cancel := tm.WithDeadline(context.Background(), d)
				defer cancel()
				dl, ok := ctx.Deadline()
				assert.True(t, ok)
				assert.Equal(t, d, dl, "Deadline reports d")

				time.Sleep(tt.want - tt.at - time.Nanosecond)
				synctest.Wait()
				require.False(t, isDone(ctx), "done before the tick that covers its deadline")
				assert.NoError(t, ctx.Err())
				assert.NoError(t, context.Cause(ctx))

				time.Sleep(time.Nanosecond)
				synctest.Wait()
				requireDoneWith(t, ctx, context.DeadlineExceeded, context.DeadlineExceeded)
				assert.False(t, time.Now().Before(d), "done before its deadline")
				assert.Zero(t, tm.PendingTimeouts())
			})
		})
	}
}

func TestGuarantee16WithTimeoutIsDoneAtTheFirstTickAfterTheTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t, hashedwheel.WithTickDuration(ctxTick))
		start := time.Now()
		ctx, cancel := tm.WithTimeout(context.Background(), 42*time.Millisecond)
		defer cancel()
		dl, ok := ctx.Deadline()
		assert.True(t, ok)
		assert.True(t, dl.Equal(start.Add(42*time.Millisecond)), "Deadline %v, want %v", dl, start.Add(42*time.Millisecond))
		assert.Equal(t, int64(1), tm.PendingTimeouts(), "the context's timeout counts as pending")
		assert.True(t, strings.HasPrefix(fmt.Sprint(ctx), "context.Background.WithDeadline("), fmt.Sprint(ctx))

		<-ctx.Done()
		assert.Equal(t, 50*time.Millisecond, time.Since(start), "done at the end of the deadline's tick")
		requireDoneWith(t, ctx, context.DeadlineExceeded, context.DeadlineExceeded)
		cancel()
		assert.Equal(t, context.DeadlineExceeded, ctx.Err(), "cancel after the deadline changes nothing")
	})
}

func TestGuarantee16WithTimeoutOnTheRealClock(t *testing.T) {
	// TestDeadline and TestTimeout: done with DeadlineExceeded, directly,
	// through a wrapper of another type, and as the child of such a wrapper
	// whose own deadline is earlier. Never early; late only loosely.
	tm := newTimer(t, hashedwheel.WithTickDuration(time.Millisecond))
	check := func(ctx context.Context, name string, deadline time.Time) {
		t.Helper()
		waitDone(t, ctx, name)
		assert.False(t, time.Now().Before(deadline), "%s: done before its deadline", name)
		assert.Equal(t, context.DeadlineExceeded, ctx.Err(), name)
	}

	d := time.Now().Add(5 * time.Millisecond)
	c, cancel := tm.WithDeadline(context.Background(), d)
	defer cancel()
	check(c, "WithDeadline", d)

	d = time.Now().Add(5 * time.Millisecond)
	c, cancel = tm.WithDeadline(context.Background(), d)
	defer cancel()
	check(otherContext{c}, "WithDeadline+otherContext", d)

	d = time.Now().Add(5 * time.Millisecond)
	c, cancel = tm.WithDeadline(context.Background(), d)
	defer cancel()
	c, cancel = tm.WithDeadline(otherContext{c}, time.Now().Add(time.Hour))
	defer cancel()
	dl, _ := c.Deadline()
	assert.Equal(t, d, dl, "the parent's earlier deadline")
	check(c, "WithDeadline+otherContext+WithDeadline", d)

	start := time.Now()
	c, cancel = tm.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	check(c, "WithTimeout", start.Add(5*time.Millisecond))
}

func TestGuarantee16DeadlineInThePastIsDoneAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t, hashedwheel.WithTickDuration(ctxTick))
		for _, tt := range []struct {
			name string
			make func() (context.Context, context.CancelFunc)
		}{
			{"WithDeadline past", func() (context.Context, context.CancelFunc) {
				return tm.WithDeadline(context.Background(), time.Now().Add(-time.Millisecond))
			}},
			{"WithDeadline now", func() (context.Context, context.CancelFunc) {
				return tm.WithDeadline(context.Background(), time.Now())
			}},
			{"WithTimeout 0", func() (context.Context, context.CancelFunc) {
				return tm.WithTimeout(context.Background(), 0)
			}},
			{"WithTimeout negative", func() (context.Context, context.CancelFunc) {
				return tm.WithTimeout(context.Background(), -time.Hour)
			}},
		} {
			ctx, cancel := tt.make()
			assert.True(t, isDone(ctx), tt.name)
			assert.Equal(t, context.DeadlineExceeded, ctx.Err(), tt.name)
			assert.Equal(t, context.DeadlineExceeded, context.Cause(ctx), tt.name)
			cancel()
			assert.Equal(t, context.DeadlineExceeded, ctx.Err(), tt.name)
		}
		assert.Zero(t, tm.PendingTimeouts(), "a past deadline takes no wheel timeout")
	})
}

func TestGuarantee16CancelIsSynchronousAndReleasesTheTimeout(t *testing.T) {
	// TestCanceledTimeout, and guarantee 16: cancel releases the wheel
	// timeout at once.
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t, hashedwheel.WithTickDuration(ctxTick))
		parent, cancelParent := tm.WithTimeout(context.Background(), time.Second)
		defer cancelParent()
		ctx, cancel := tm.WithTimeout(otherContext{parent}, time.Hour)
		dl, _ := ctx.Deadline()
		pdl, _ := parent.Deadline()
		assert.Equal(t, pdl, dl, "the earlier deadline of the parent")
		assert.Equal(t, int64(1), tm.PendingTimeouts(), "a child with a later deadline takes no timeout")

		own, cancelOwn := tm.WithTimeout(otherContext{parent}, time.Millisecond)
		require.Equal(t, int64(2), tm.PendingTimeouts())
		cancelOwn()
		assert.Equal(t, int64(1), tm.PendingTimeouts(), "cancel released the timeout at once")
		requireDoneWith(t, own, context.Canceled, context.Canceled)

		cancel()
		requireDoneWith(t, ctx, context.Canceled, context.Canceled)
		assert.NoError(t, parent.Err(), "cancelling a child cancelled its parent")
	})
}

func TestGuarantee16CancelIsIdempotentAndSafeForConcurrentUse(t *testing.T) {
	tm := newTimer(t, hashedwheel.WithTickDuration(ctxTick))
	for range 100 {
		ctx, cancel := tm.WithTimeout(context.Background(), time.Hour)
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(cancel)
			wg.Go(func() { <-ctx.Done() })
		}
		wg.Wait()
		assert.Equal(t, context.Canceled, ctx.Err())
	}
	assert.Zero(t, tm.PendingTimeouts())
}

type ctxKey1 int
type ctxKey2 int

func TestGuarantee16ValueIsTheParents(t *testing.T) {
	tm := newTimer(t)
	k1, k2, k3 := ctxKey1(1), ctxKey2(1), ctxKey2(3)
	c1 := context.WithValue(context.Background(), k1, "c1k1")
	c2, cancel2 := tm.WithTimeout(c1, time.Hour)
	defer cancel2()
	c3 := context.WithValue(c2, k2, "c3k2")
	c4, cancel4 := tm.WithTimeout(otherContext{c3}, time.Hour)
	defer cancel4()
	c5 := context.WithValue(c4, k1, nil)

	for _, tt := range []struct {
		ctx        context.Context
		v1, v2, v3 any
	}{
		{c2, "c1k1", nil, nil},
		{c4, "c1k1", "c3k2", nil},
		{c5, nil, "c3k2", nil},
	} {
		assert.Equal(t, tt.v1, tt.ctx.Value(k1))
		assert.Equal(t, tt.v2, tt.ctx.Value(k2))
		assert.Equal(t, tt.v3, tt.ctx.Value(k3))
	}
	cancel2()
	assert.Equal(t, "c3k2", c5.Value(k2), "values outlive cancellation")
}

func TestGuarantee16NilParentPanics(t *testing.T) {
	tm := newTimer(t)
	var parent context.Context
	assert.PanicsWithValue(t, "cannot create context from nil parent", func() { tm.WithDeadline(parent, time.Now()) })
	assert.PanicsWithValue(t, "cannot create context from nil parent", func() { tm.WithTimeout(parent, time.Second) })
}

func TestGuarantee16ParentDoneMakesTheContextDone(t *testing.T) {
	// TestWithCancelCanceledParent and XTestParentFinishesChild: a parent
	// done before or after the context makes it done with the parent's error
	// and cause; so are contexts derived from it, and the context's timeout
	// is released.
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t, hashedwheel.WithTickDuration(ctxTick))
		cause := errors.New("because")

		parent, cancelParent := context.WithCancelCause(context.Background())
		ctx, cancel := tm.WithTimeout(parent, time.Hour)
		defer cancel()
		pre := ctx.Done() // fetched before the parent is cancelled
		child, cancelChild := context.WithCancel(ctx)
		defer cancelChild()
		valueChild := context.WithValue(ctx, ctxKey1(1), "v")
		timerChild, cancelTimerChild := context.WithTimeout(valueChild, 2*time.Hour)
		defer cancelTimerChild()
		require.False(t, isDone(ctx))
		require.False(t, isDone(child))

		cancelParent(cause)
		select {
		case <-pre:
		default:
			t.Fatal("the Done channel fetched before the parent was cancelled is open")
		}
		requireDoneWith(t, ctx, context.Canceled, cause)
		for name, c := range map[string]context.Context{"child": child, "valueChild": valueChild, "timerChild": timerChild} {
			<-c.Done()
			assert.Equal(t, context.Canceled, c.Err(), name)
			assert.Equal(t, cause, context.Cause(c), name)
		}
		assert.Zero(t, tm.PendingTimeouts(), "a context done by its parent still holds its timeout")

		// A parent done already.
		late, cancelLate := tm.WithTimeout(parent, time.Hour)
		defer cancelLate()
		requireDoneWith(t, late, context.Canceled, cause)
		assert.Zero(t, tm.PendingTimeouts())
	})
}

func TestGuarantee16ParentCancelledConcurrentlyWithCreation(t *testing.T) {
	// TestWithCancelSimultaneouslyCanceledParent.
	tm := newTimer(t, hashedwheel.WithTickDuration(ctxTick))
	for range 100 {
		parent, cancelParent := context.WithCancelCause(context.Background())
		cause := errors.New("because")
		go cancelParent(cause)
		ctx, cancel := tm.WithTimeout(parent, time.Hour)
		waitDone(t, ctx, "child of a cancelled parent")
		assert.Equal(t, context.Canceled, ctx.Err())
		assert.Equal(t, cause, context.Cause(ctx))
		cancel()
	}
	assert.Zero(t, tm.PendingTimeouts())
}

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

func TestGuarantee16DerivedContextsSeeDeadlineExceeded(t *testing.T) {
	// Contexts derived with the context package from one of the wheel's
	// see its error and cause, as from a context.WithTimeout context.
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t, hashedwheel.WithTickDuration(ctxTick))
		start := time.Now()
		ctx, cancel := tm.WithTimeout(context.Background(), 25*time.Millisecond)
		defer cancel()
		child, cancelChild := context.WithCancel(ctx)
		defer cancelChild()
		causeChild, cancelCauseChild := context.WithCancelCause(context.WithValue(ctx, ctxKey1(1), 1))
		defer cancelCauseChild(nil)
		timerChild, cancelTimerChild := context.WithTimeout(ctx, time.Hour)
		defer cancelTimerChild()
		dl, _ := timerChild.Deadline()
		want, _ := ctx.Deadline()
		assert.Equal(t, want, dl, "context.WithTimeout of it keeps its earlier deadline")
		afterFuncRan := make(chan struct{})
		context.AfterFunc(ctx, func() { close(afterFuncRan) })

		<-child.Done()
		assert.Equal(t, 30*time.Millisecond, time.Since(start), "a child is done at the deadline's tick")
		for name, c := range map[string]context.Context{"WithCancel": child, "WithCancelCause": causeChild, "WithTimeout": timerChild} {
			<-c.Done() // the WithValue between stops the context package's shortcut: later
			assert.Equal(t, context.DeadlineExceeded, c.Err(), name)
			assert.Equal(t, context.DeadlineExceeded, context.Cause(c), name)
		}
		<-afterFuncRan
	})
}

func TestGuarantee16Cause(t *testing.T) {
	// TestCause, the rows about WithTimeout, with the wheel's.
	tm := newTimer(t, hashedwheel.WithTickDuration(ctxTick))
	var (
		forever       = 1e6 * time.Second
		parentCause   = errors.New("parentCause")
		finishedEarly = errors.New("finishedEarly")
	)
	for _, tt := range []struct {
		name       string
		ctx        func() context.Context
		err, cause error
	}{
		{"WithTimeout", func() context.Context {
			ctx, cancel := tm.WithTimeout(context.Background(), 0)
			cancel()
			return ctx
		}, context.DeadlineExceeded, context.DeadlineExceeded},
		{"WithTimeout canceled", func() context.Context {
			ctx, cancel := tm.WithTimeout(context.Background(), forever)
			cancel()
			return ctx
		}, context.Canceled, context.Canceled},
		{"WithTimeout stacked", func() context.Context {
			ctx, cancel := context.WithCancelCause(context.Background())
			ctx, _ = tm.WithTimeout(ctx, 0)
			cancel(finishedEarly)
			return ctx
		}, context.DeadlineExceeded, context.DeadlineExceeded},
		{"WithTimeout stacked canceled", func() context.Context {
			ctx, cancel := context.WithCancelCause(context.Background())
			ctx, _ = tm.WithTimeout(ctx, forever)
			cancel(finishedEarly)
			return ctx
		}, context.Canceled, finishedEarly},
		{"WithTimeout canceled, then parent with cause", func() context.Context {
			parent, cancelParent := context.WithCancelCause(context.Background())
			ctx, cancel := tm.WithTimeout(parent, forever)
			cancel()
			cancelParent(parentCause)
			return ctx
		}, context.Canceled, context.Canceled},
		{"parent with cause, then WithTimeout canceled", func() context.Context {
			parent, cancelParent := context.WithCancelCause(context.Background())
			ctx, cancel := tm.WithTimeout(parent, forever)
			cancelParent(parentCause)
			cancel()
			return ctx
		}, context.Canceled, parentCause},
		{"WithCancelCause of WithTimeout", func() context.Context {
			ctx, cancel := tm.WithTimeout(context.Background(), forever)
			defer cancel()
			child, cancelChild := context.WithCancelCause(ctx)
			cancelChild(parentCause)
			return child
		}, context.Canceled, parentCause},
		{"WithoutCancel of WithTimeout", func() context.Context {
			ctx, cancel := tm.WithTimeout(context.Background(), 0)
			cancel()
			return context.WithoutCancel(ctx)
		}, nil, nil},
		{"WithTimeout of a WithTimeout of a parent done with a cause", func() context.Context {
			parent, cancelParent := context.WithCancelCause(context.Background())
			mid, _ := tm.WithTimeout(parent, forever)
			ctx, _ := tm.WithTimeout(mid, forever/2)
			cancelParent(parentCause)
			return ctx
		}, context.Canceled, parentCause},
		{"WithCancel of a WithTimeout of a parent done with a cause", func() context.Context {
			parent, cancelParent := context.WithCancelCause(context.Background())
			mid, _ := tm.WithTimeout(parent, forever)
			ctx, cancel := context.WithCancel(mid)
			t.Cleanup(cancel)
			cancelParent(parentCause)
			<-ctx.Done() // mid learns of it on the goroutine of context.AfterFunc
			return ctx
		}, context.Canceled, parentCause},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := tt.ctx()
			assert.Equal(t, tt.err, ctx.Err())
			assert.Equal(t, tt.cause, context.Cause(ctx))
		})
	}
}

func TestGuarantee16CauseRace(t *testing.T) {
	tm := newTimer(t)
	cause := errors.New("TestCauseRace")
	parent, cancelParent := context.WithCancelCause(context.Background())
	ctx, cancel := tm.WithTimeout(parent, time.Hour)
	defer cancel()
	go cancelParent(cause)
	for {
		// Poll Cause, not Done, so that the race detector sees the reads.
		if err := context.Cause(ctx); err != nil {
			if errors.Is(err, context.Canceled) && version.Compare(runtime.Version(), "go1.26") < 0 {
				// Go 1.25's Cause looks for the cause before it calls
				// Err, so it may return Err alone while the parent is
				// being cancelled: with the standard library's own
				// contexts too, about once in 30,000 runs. Go 1.26 calls
				// Err first.
				break
			}
			assert.Equal(t, cause, err)
			break
		}
		runtime.Gosched()
	}
}

func TestGuarantee16ErrIsSetOnlyOnceDoneIsClosed(t *testing.T) {
	// TestContextErrDoneRace, with the context done by cancel and by its
	// parent.
	tm := newTimer(t)
	for i := range 20 {
		parent, cancelParent := context.WithCancel(context.Background())
		ctx, cancel := tm.WithTimeout(parent, time.Hour)
		done := ctx.Done()
		if i%2 == 0 {
			go cancel()
		} else {
			go cancelParent()
		}
		for ctx.Err() == nil {
			runtime.Gosched()
		}
		select {
		case <-done:
		default:
			t.Fatal("Err is not nil but Done is open")
		}
		cancel()
		cancelParent()
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

func TestGuarantee16AfterFuncOnTheContext(t *testing.T) {
	// TestAfterFuncCalledAfterTimeout, ...AfterCancel, ...Immediately,
	// ...NotCalledAfterStop and ...CalledAsynchronously, on the wheel's
	// context.
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t, hashedwheel.WithTickDuration(ctxTick))

		start := time.Now()
		ctx, cancel := tm.WithTimeout(context.Background(), 25*time.Millisecond)
		defer cancel()
		ranAt := make(chan time.Duration, 1)
		stop := context.AfterFunc(ctx, func() { ranAt <- time.Since(start) })
		assert.Equal(t, 30*time.Millisecond, <-ranAt, "after the timeout, at its tick")
		assert.False(t, stop(), "stop after the function ran")

		var ran atomic.Bool
		ctx, cancel = tm.WithTimeout(context.Background(), time.Hour)
		stop = context.AfterFunc(ctx, func() { ran.Store(true) })
		synctest.Wait()
		assert.False(t, ran.Load(), "called before the context was done")
		cancel()
		synctest.Wait()
		assert.True(t, ran.Load(), "not called after cancel")
		assert.False(t, stop())

		ran.Store(false)
		context.AfterFunc(ctx, func() { ran.Store(true) })
		synctest.Wait()
		assert.True(t, ran.Load(), "not called for a context done already")

		ctx, cancel = tm.WithTimeout(context.Background(), time.Hour)
		ran.Store(false)
		stop = context.AfterFunc(ctx, func() { ran.Store(true) })
		assert.True(t, stop())
		cancel()
		synctest.Wait()
		assert.False(t, ran.Load(), "called after stop")
		assert.False(t, stop())

		ctx, cancel = tm.WithTimeout(context.Background(), time.Hour)
		blocked := make(chan struct{})
		stop = context.AfterFunc(ctx, func() { blocked <- struct{}{} })
		defer stop()
		cancel() // must not wait for the function
		<-blocked
	})
}

func TestGuarantee16NoGoroutinePerContext(t *testing.T) {
	// 1e5 live contexts (1e4 with -race), each with Done called: with a
	// Background parent, with a context.WithCancel parent, with a parent of
	// the wheel's, directly and through a WithValue, and with context
	// package children.
	n := 100_000
	if raceEnabled {
		n = 10_000
	}
	tm := newTimer(t, hashedwheel.WithTickDuration(ctxTick))
	cancellable, cancelAll := context.WithCancel(context.Background())
	defer cancelAll()
	own, cancelOwn := tm.WithTimeout(context.Background(), 2*time.Hour)
	defer cancelOwn()
	for _, p := range []struct {
		name  string
		make  func() (context.Context, context.CancelFunc)
		child bool
	}{
		{"parent=Background", func() (context.Context, context.CancelFunc) {
			return tm.WithTimeout(context.Background(), time.Hour)
		}, false},
		{"parent=WithCancel", func() (context.Context, context.CancelFunc) {
			return tm.WithTimeout(cancellable, time.Hour)
		}, false},
		{"parent=Timer.WithTimeout", func() (context.Context, context.CancelFunc) {
			return tm.WithTimeout(own, time.Hour)
		}, false},
		{"parent=WithValue(Timer.WithTimeout)", func() (context.Context, context.CancelFunc) {
			return tm.WithTimeout(context.WithValue(own, ctxKey1(1), 1), time.Hour)
		}, false},
		{"context.WithCancel(Timer.WithTimeout)", func() (context.Context, context.CancelFunc) {
			return tm.WithTimeout(cancellable, time.Hour)
		}, true},
	} {
		t.Run(p.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			cancels := make([]context.CancelFunc, 0, 2*n)
			for range n {
				ctx, cancel := p.make()
				cancels = append(cancels, cancel)
				if p.child {
					ctx, cancel = context.WithCancel(ctx)
					cancels = append(cancels, cancel)
				}
				ctx.Done()
			}
			assert.Less(t, runtime.NumGoroutine()-before, 3, "goroutines started for %d contexts", n)
			for _, cancel := range cancels {
				cancel()
			}
		})
	}
	assert.Equal(t, int64(1), tm.PendingTimeouts())
}

func TestGuarantee16ParentCancellationStartsNoGoroutine(t *testing.T) {
	// Contexts linked to a context.WithCancel parent by Done: its cancel
	// closes their Done channels before it returns, without a goroutine.
	n := 10_000
	if raceEnabled {
		n = 1_000
	}
	tm := newTimer(t)
	parent, cancelParent := context.WithCancel(context.Background())
	dones := make([]<-chan struct{}, n)
	cancels := make([]context.CancelFunc, n)
	for i := range n {
		var ctx context.Context
		ctx, cancels[i] = tm.WithTimeout(parent, time.Hour)
		dones[i] = ctx.Done()
	}
	before := runtime.NumGoroutine()
	cancelParent()
	open := 0
	for _, done := range dones {
		select {
		case <-done:
		default:
			open++
		}
	}
	assert.Zero(t, open, "Done channels still open when the parent's cancel returned")
	assert.Less(t, runtime.NumGoroutine()-before, 3, "goroutines started by the parent's cancellation of %d contexts", n)
	for _, cancel := range cancels {
		cancel()
	}
	assert.Zero(t, tm.PendingTimeouts())
}

func TestContextAllocs(t *testing.T) {
	// TestAllocs, and the target: one allocation for the context and
	// its timeout, one for the cancel function, one more for the Done
	// channel. Exact, so that a change either way is seen.
	tm := newTimer(t, hashedwheel.WithTickDuration(ctxTick))
	require.NoError(t, tm.Start())
	cancellable, cancelAll := context.WithCancel(context.Background())
	defer cancelAll()
	cancellable.Done() // its channel, made once
	for _, tt := range []struct {
		name string
		f    func()
		want float64
	}{
		{"WithTimeout+cancel", func() {
			_, cancel := tm.WithTimeout(context.Background(), time.Hour)
			cancel()
		}, 2},
		{"WithTimeout(WithCancel)+cancel", func() {
			_, cancel := tm.WithTimeout(cancellable, time.Hour)
			cancel()
		}, 2},
		{"WithTimeout+Done+cancel", func() {
			ctx, cancel := tm.WithTimeout(context.Background(), time.Hour)
			ctx.Done()
			cancel()
			<-ctx.Done()
		}, 3},
		{"WithTimeout(WithCancel)+Done+cancel", func() {
			// The link to the parent is a context.WithCancel child of it:
			// its context, its cancel function, its Done channel, and the
			// parentLink that holds the last two.
			ctx, cancel := tm.WithTimeout(cancellable, time.Hour)
			ctx.Done()
			cancel()
			<-ctx.Done()
		}, 6},
		{"WithDeadline+cancel", func() {
			// The context, its cancel function, and the ctxExt that holds
			// the deadline.
			_, cancel := tm.WithDeadline(context.Background(), time.Now().Add(time.Hour))
			cancel()
		}, 3},
		{"WithTimeout past", func() {
			// The context, its cancel function, and the ctxExt that holds
			// the deadline.
			ctx, _ := tm.WithTimeout(context.Background(), -time.Second)
			<-ctx.Done()
		}, 3},
	} {
		assert.Equal(t, tt.want, testing.AllocsPerRun(100, tt.f), tt.name)
	}
}

func TestGuarantee17StopKeepsThePendingContextsDeadline(t *testing.T) {
	// Guarantee 17: the context's timeout is pending, Stop cancels and
	// returns it, and the context is still done exactly at its deadline.
	synctest.Test(t, func(t *testing.T) {
		tm, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(ctxTick))
		require.NoError(t, err)
		start := time.Now()
		ctx, cancel := tm.WithTimeout(context.Background(), 95*time.Millisecond)
		defer cancel()
		ctx.Done()
		other, cancelOther := tm.WithTimeout(context.Background(), time.Hour)
		require.Equal(t, int64(2), tm.PendingTimeouts())
		time.Sleep(40 * time.Millisecond)

		stopped := tm.Stop()
		require.Len(t, stopped, 2)
		for _, to := range stopped {
			assert.True(t, to.IsCancelled())
		}
		assert.Zero(t, tm.PendingTimeouts())
		require.False(t, isDone(ctx), "Stop made the context done")

		time.Sleep(55*time.Millisecond - time.Nanosecond)
		synctest.Wait()
		require.False(t, isDone(ctx), "done before its deadline")
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		requireDoneWith(t, ctx, context.DeadlineExceeded, context.DeadlineExceeded)
		assert.Equal(t, 95*time.Millisecond, time.Since(start))

		// A context cancelled after Stop releases its runtime timer: the
		// bubble would not end with it pending an hour.
		cancelOther()
		requireDoneWith(t, other, context.Canceled, context.Canceled)
	})
}

func TestGuarantee17StoppedTimerKeepsTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(ctxTick))
		require.NoError(t, err)
		tm.Stop()
		start := time.Now()
		ctx, cancel := tm.WithTimeout(context.Background(), 25*time.Millisecond)
		defer cancel()
		dl, _ := ctx.Deadline()
		assert.True(t, dl.Equal(start.Add(25*time.Millisecond)))
		<-ctx.Done()
		assert.Equal(t, 25*time.Millisecond, time.Since(start), "the runtime's timer is exact")
		assert.Equal(t, context.DeadlineExceeded, ctx.Err())

		ctx, cancel = tm.WithDeadline(context.Background(), time.Now().Add(time.Hour))
		cancel()
		assert.Equal(t, context.Canceled, ctx.Err())
	})
}

func TestGuarantee17PendingLimitKeepsTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t, hashedwheel.WithTickDuration(ctxTick), hashedwheel.WithMaxPendingTimeouts(1))
		start := time.Now()
		first, cancelFirst := tm.WithTimeout(context.Background(), time.Hour)
		defer cancelFirst()
		ctx, cancel := tm.WithTimeout(context.Background(), 25*time.Millisecond)
		defer cancel()
		assert.Equal(t, int64(1), tm.PendingTimeouts(), "the second context is kept off the wheel")
		<-ctx.Done()
		assert.Equal(t, 25*time.Millisecond, time.Since(start))
		assert.Equal(t, context.DeadlineExceeded, ctx.Err())
		assert.False(t, isDone(first))
	})
}

func TestGuarantee17StopRacingContexts(t *testing.T) {
	// Contexts made and cancelled while another goroutine stops the timer
	// all end done, with the error they should have, and no timeout is
	// left behind.
	for range 20 {
		tm, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(time.Millisecond))
		require.NoError(t, err)
		var wg sync.WaitGroup
		ctxs := make([]context.Context, 200)
		cancels := make([]context.CancelFunc, len(ctxs))
		wg.Go(func() {
			for i := range ctxs {
				ctxs[i], cancels[i] = tm.WithTimeout(context.Background(), time.Duration(i%5)*time.Millisecond)
				if i%3 == 0 {
					cancels[i]()
				}
			}
		})
		tm.Stop()
		wg.Wait()
		for i, ctx := range ctxs {
			waitDone(t, ctx, fmt.Sprint("context ", i))
			if i%3 != 0 && i%5 != 0 {
				assert.Equal(t, context.DeadlineExceeded, ctx.Err(), "context %d", i)
			}
			cancels[i]()
		}
		assert.Zero(t, tm.PendingTimeouts())
	}
}
