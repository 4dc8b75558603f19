package hashedwheel_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hashedwheel/hashedwheel"
)

// The tests below build the same tree of contexts twice, once with
// context.WithDeadline and once with Timer.WithDeadline, drive both through
// the same events on the fake clock, and require the same Err and Cause
// everywhere. context.Cause asks a context for its cause in a different
// order on Go 1.25 and on Go 1.26 (Value first there, Err first here); CI
// runs these tests on both.

// withDeadlineFunc is the signature of context.WithDeadline and of
// Timer.WithDeadline.
type withDeadlineFunc = func(context.Context, time.Time) (context.Context, context.CancelFunc)

// errParentCause is the cause with which the tests below cancel a parent.
var errParentCause = errors.New("the parent's cause")

// causeParent is a parent of the context under test. make builds it from a
// root made by context.WithCancelCause, with the WithDeadline under test,
// and returns it, the function that makes it done (nil if neverDone), and
// one that releases it.
type causeParent struct {
	name      string
	neverDone bool
	make      func(root context.Context, cancelRoot context.CancelCauseFunc, withDeadline withDeadlineFunc) (p context.Context, makeDone, release func())
}

func nothing() {}

var causeParents = []causeParent{
	{"Background", true, func(context.Context, context.CancelCauseFunc, withDeadlineFunc) (context.Context, func(), func()) {
		return context.Background(), nil, nothing
	}},
	{"WithValue(Background)", true, func(context.Context, context.CancelCauseFunc, withDeadlineFunc) (context.Context, func(), func()) {
		return context.WithValue(context.Background(), ctxKey1(1), 1), nil, nothing
	}},
	{"WithCancelCause", false, func(root context.Context, cancelRoot context.CancelCauseFunc, _ withDeadlineFunc) (context.Context, func(), func()) {
		return root, func() { cancelRoot(errParentCause) }, nothing
	}},
	{"WithCancelCause, cancelled without a cause", false, func(root context.Context, cancelRoot context.CancelCauseFunc, _ withDeadlineFunc) (context.Context, func(), func()) {
		return root, func() { cancelRoot(nil) }, nothing
	}},
	{"WithValue(WithCancelCause)", false, func(root context.Context, cancelRoot context.CancelCauseFunc, _ withDeadlineFunc) (context.Context, func(), func()) {
		return context.WithValue(root, ctxKey1(1), 1), func() { cancelRoot(errParentCause) }, nothing
	}},
	{"otherContext(WithCancelCause)", false, func(root context.Context, cancelRoot context.CancelCauseFunc, _ withDeadlineFunc) (context.Context, func(), func()) {
		return otherContext{root}, func() { cancelRoot(errParentCause) }, nothing
	}},
	{"WithDeadline(WithCancelCause), root cancelled", false, func(root context.Context, cancelRoot context.CancelCauseFunc, withDeadline withDeadlineFunc) (context.Context, func(), func()) {
		p, cancel := withDeadline(root, time.Now().Add(2*time.Hour))
		return p, func() { cancelRoot(errParentCause) }, cancel
	}},
	{"WithDeadline(WithCancelCause), cancelled", false, func(root context.Context, _ context.CancelCauseFunc, withDeadline withDeadlineFunc) (context.Context, func(), func()) {
		p, cancel := withDeadline(root, time.Now().Add(2*time.Hour))
		return p, cancel, cancel
	}},
	{"WithValue(WithDeadline(Background)), cancelled", false, func(_ context.Context, _ context.CancelCauseFunc, withDeadline withDeadlineFunc) (context.Context, func(), func()) {
		p, cancel := withDeadline(context.Background(), time.Now().Add(2*time.Hour))
		return context.WithValue(p, ctxKey1(1), 1), cancel, cancel
	}},
	{"WithCancelCause(WithDeadline(WithCancelCause)), root cancelled", false, func(root context.Context, cancelRoot context.CancelCauseFunc, withDeadline withDeadlineFunc) (context.Context, func(), func()) {
		p, cancel := withDeadline(root, time.Now().Add(2*time.Hour))
		p, cancelCause := context.WithCancelCause(p)
		return p, func() { cancelRoot(errParentCause) }, func() { cancelCause(nil); cancel() }
	}},
}

// causeEvent is something that happens to the context under test.
type causeEvent string

const (
	evCancel   causeEvent = "cancel"   // its cancel function is called
	evDeadline causeEvent = "deadline" // its deadline passes
	evParent   causeEvent = "parent"   // its parent is made done
)

var causeEventSeqs = [][]causeEvent{
	nil,
	{evCancel},
	{evDeadline},
	{evParent},
	{evCancel, evParent},
	{evDeadline, evParent},
	{evParent, evCancel},
	{evParent, evDeadline},
}

// hasParentEvent reports whether events make the parent done.
func hasParentEvent(events []causeEvent) bool {
	for _, ev := range events {
		if ev == evParent {
			return true
		}
	}
	return false
}

// ctxOutcome is what a context reports.
type ctxOutcome struct {
	Done       bool
	Err, Cause error
}

func (o ctxOutcome) String() string {
	return fmt.Sprintf("done=%v err=%v cause=%v", o.Done, o.Err, o.Cause)
}

// errOwnCause is the cause with which the tests below cancel a context
// derived from the one under test.
var errOwnCause = errors.New("its own cause")

// causeTree builds, with withDeadline, a context under parent with a
// deadline 25ms away (done at 30ms on a wheel of 10ms ticks), and contexts
// derived from it with the context package, then applies events, letting
// the bubble settle after each, and returns what each context reports:
// before the events, after each one, and at the end, with more contexts
// derived from it then. It runs in a synctest bubble.
func causeTree(p causeParent, events []causeEvent, callDone bool, withDeadline withDeadlineFunc) map[string]ctxOutcome {
	root, cancelRoot := context.WithCancelCause(context.Background())
	defer cancelRoot(nil)
	parent, makeParentDone, release := p.make(root, cancelRoot, withDeadline)
	defer release()
	ctx, cancel := withDeadline(parent, time.Now().Add(25*time.Millisecond))
	defer cancel()
	if callDone {
		ctx.Done()
	}
	ctxs := map[string]context.Context{
		"ctx":                ctx,
		"WithValue(ctx)":     context.WithValue(ctx, ctxKey2(2), 2),
		"WithoutCancel(ctx)": context.WithoutCancel(ctx),
	}
	var cancels []func()
	defer func() {
		for _, c := range cancels {
			c()
		}
	}()
	derive := func(suffix string) {
		c1, cancel1 := context.WithCancel(ctx)
		c2, cancel2 := context.WithCancelCause(ctx)
		c3, cancel3 := context.WithTimeout(ctx, time.Hour)
		c4, cancel4 := context.WithCancel(context.WithValue(ctx, ctxKey2(3), 3))
		c5, cancel5 := context.WithCancelCause(ctx)
		cancel5(errOwnCause)
		ctxs["WithCancel(ctx)"+suffix] = c1
		ctxs["WithCancelCause(ctx)"+suffix] = c2
		ctxs["WithTimeout(ctx, 1h)"+suffix] = c3
		ctxs["WithCancel(WithValue(ctx))"+suffix] = c4
		ctxs["WithCancelCause(ctx), cancelled"+suffix] = c5
		cancels = append(cancels, cancel1, func() { cancel2(nil) }, cancel3, cancel4)
	}
	derive("")

	out := make(map[string]ctxOutcome)
	record := func(when string) {
		synctest.Wait()
		for name, c := range ctxs {
			out[when+": "+name] = ctxOutcome{Done: isDone(c), Err: c.Err(), Cause: context.Cause(c)}
		}
	}
	record("before")
	for i, ev := range events {
		switch ev {
		case evCancel:
			cancel()
		case evDeadline:
			time.Sleep(40 * time.Millisecond)
		case evParent:
			makeParentDone()
		}
		record(fmt.Sprintf("after %d %s", i, ev))
	}
	derive(" made at the end")
	record("end")
	return out
}

func TestGuarantee16CauseAsTheStandardLibrary(t *testing.T) {
	for _, p := range causeParents {
		for _, events := range causeEventSeqs {
			if p.neverDone && hasParentEvent(events) {
				continue
			}
			for _, callDone := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%v/Done=%v", p.name, events, callDone), func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						want := causeTree(p, events, callDone, context.WithDeadline)
						tm := newTimer(t, hashedwheel.WithTickDuration(ctxTick))
						got := causeTree(p, events, callDone, tm.WithDeadline)
						require.Equal(t, len(want), len(got))
						for k, w := range want {
							assert.Equal(t, w.String(), got[k].String(), k)
						}
					})
				})
			}
		}
	}
}

func TestGuarantee16CauseAsTheStandardLibraryCoversTheCases(t *testing.T) {
	// The comparison above is only as good as the cases it sees: the
	// standard library's answers include each of those the issue names.
	synctest.Test(t, func(t *testing.T) {
		std := map[string]ctxOutcome{}
		for _, p := range causeParents {
			for _, events := range causeEventSeqs {
				if p.neverDone && hasParentEvent(events) {
					continue
				}
				for k, v := range causeTree(p, events, false, context.WithDeadline) {
					std[p.name+fmt.Sprint(events)+" "+k] = v
				}
			}
		}
		for key, want := range map[string]ctxOutcome{
			"WithCancelCause[] before: ctx":                                              {false, nil, nil},
			"Background[deadline] end: ctx":                                              {true, context.DeadlineExceeded, context.DeadlineExceeded},
			"WithCancelCause[cancel] end: ctx":                                           {true, context.Canceled, context.Canceled},
			"WithCancelCause[parent] end: ctx":                                           {true, context.Canceled, errParentCause},
			"WithCancelCause[cancel parent] end: ctx":                                    {true, context.Canceled, context.Canceled},
			"WithCancelCause[deadline parent] end: ctx":                                  {true, context.DeadlineExceeded, context.DeadlineExceeded},
			"WithCancelCause[parent cancel] end: ctx":                                    {true, context.Canceled, errParentCause},
			"WithCancelCause[parent] after 0 parent: WithCancel(ctx)":                    {true, context.Canceled, errParentCause},
			"WithCancelCause[deadline parent] end: WithCancelCause(ctx) made at the end": {true, context.DeadlineExceeded, context.DeadlineExceeded},
			"Background[cancel] end: WithCancelCause(ctx), cancelled":                    {true, context.Canceled, errOwnCause},
			"WithCancelCause[parent] end: WithoutCancel(ctx)":                            {false, nil, nil},
		} {
			got, ok := std[key]
			if assert.True(t, ok, key) {
				assert.Equal(t, want.String(), got.String(), key)
			}
		}
	})
}

func TestGuarantee16ContextPackageChildrenStartNoGoroutine(t *testing.T) {
	// Since Go 1.21 the context package links a child to a parent of
	// another package that has an AfterFunc method through that method,
	// with no goroutine; the wheel's contexts have one. Making many
	// children starts no goroutine, and cancelling the wheel context
	// cancels them all before its cancel returns, with no goroutine either.
	// (Through a wrapper that hides the method, such as otherContext, the
	// context package would start a goroutine per child.)
	//
	// runtime.NumGoroutine can count too many while a garbage collection
	// frees the stacks of goroutines that ended, so each count starts after
	// runtime.GC, and no goroutine of this test ends.
	n := 2_000
	if raceEnabled {
		n = 500
	}
	tm := newTimer(t, hashedwheel.WithTickDuration(ctxTick))
	cancellable, cancelAll := context.WithCancel(context.Background())
	defer cancelAll()
	own, cancelOwn := tm.WithTimeout(context.Background(), 2*time.Hour)
	defer cancelOwn()
	children := []struct {
		name string
		make func(context.Context) (context.Context, context.CancelFunc)
	}{
		{"WithCancel", context.WithCancel},
		{"WithCancelCause", func(ctx context.Context) (context.Context, context.CancelFunc) {
			c, cancel := context.WithCancelCause(ctx)
			return c, func() { cancel(nil) }
		}},
		{"WithTimeout", func(ctx context.Context) (context.Context, context.CancelFunc) {
			return context.WithTimeout(ctx, 3*time.Hour)
		}},
	}
	for _, parent := range []struct {
		name string
		ctx  context.Context
	}{{"Background", context.Background()}, {"WithCancel", cancellable}, {"Timer.WithTimeout", own}} {
		for _, child := range children {
			t.Run(parent.name+"/"+child.name, func(t *testing.T) {
				ctx, cancel := tm.WithTimeout(parent.ctx, time.Hour)
				defer cancel()
				runtime.GC()
				before := runtime.NumGoroutine()
				kids := make([]context.Context, n)
				for i := range kids {
					var c context.CancelFunc
					kids[i], c = child.make(ctx)
					defer c()
				}
				assert.Less(t, runtime.NumGoroutine()-before, 3, "goroutines started for %d children", n)

				cancel()
				open := 0
				for _, k := range kids {
					if !isDone(k) {
						open++
					}
				}
				assert.Zero(t, open, "children still open when the context's cancel returned")
				assert.Less(t, runtime.NumGoroutine()-before, 3, "goroutines started to cancel %d children", n)
				for _, k := range kids {
					assert.Equal(t, context.Canceled, k.Err())
					assert.Equal(t, context.Canceled, context.Cause(k))
				}
			})
		}
	}
}
