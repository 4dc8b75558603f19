package hashedwheel_test

import (
	"context"
	"errors"
	"fmt"
	"go/version"
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
// WithTimeout, run against Timer.WithDeadline and Timer.WithTimeout
// (guarantee 16), with exact timing on the fake clock and the timeout's
// accounting. Trees of contexts are in context_tree_test.go, the deadline
// kept when the wheel cannot keep it (guarantee 17) in
// context_fallback_test.go, and the comparison with the standard library's
// Err and Cause in context_std_test.go.

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

// TestGuarantee16ErrIsSetOnlyOnceDoneIsClosedUnderEachParent ports Go's
// TestContextErrDoneRace (go.dev/issue/75533) with a Background, a
// context.WithCancel and a wheel parent.
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

// withoutCancelKey is a context key of the test's own type.
type withoutCancelKey struct{}

// TestGuarantee16WithoutCancelKeepsValuesAndDropsTheDeadline:
// context.WithoutCancel of a wheel context keeps its values and drops its
// deadline and cancellation.
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
