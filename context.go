package hashedwheel

import (
	"context"
	"fmt"
	"time"
)

// WithDeadline returns a copy of parent that is done when the deadline d
// passes, when the returned cancel function is called, or when parent is
// done, whichever happens first: [context.WithDeadline], with the deadline
// kept by the timer's wheel instead of a runtime timer of its own. Canceling
// the context releases its wheel timeout at once, so code should call cancel
// as soon as the operations running in the context complete; cancel is
// idempotent and safe for concurrent use.
//
// The context behaves as one made by context.WithDeadline except for
// precision: Done is closed at the first tick at or after d, never before it,
// and on an idle machine at most about one tick after it; Err and
// [context.Cause] then return [context.DeadlineExceeded]. If parent's deadline
// is earlier than d, WithDeadline returns context.WithCancel(parent). If d has
// passed already, the context is done at once.
//
// It costs three allocations, and starts no goroutine when parent was made by
// the context package or by this one. While pending, the context counts in
// [Timer.PendingTimeouts]. The deadline is never lost: if [Timer.Stop] cancels
// it, or the timer is stopped or at its [WithMaxPendingTimeouts] limit, the
// context keeps its deadline with a runtime timer. See guarantees 16 and 17
// in docs/guarantees.md, and the example of Timer.WithTimeout.
func (t *Timer) WithDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc) {
	if parent == nil {
		panic("cannot create context from nil parent")
	}
	if cur, ok := parent.Deadline(); ok && cur.Before(d) {
		// The parent's deadline comes first; it alone counts.
		return context.WithCancel(parent)
	}
	return t.newDeadlineCtx(parent, d, true, time.Until(d))
}

// WithTimeout is [Timer.WithDeadline] with the deadline timeout from now: a
// copy of parent that is done at the first tick at or after timeout has
// passed, when cancel is called, or when parent is done. It costs two
// allocations. See WithDeadline.
//
// The deadline is read on the timer's clock, as [Timeout.Deadline] is: its
// monotonic reading is exact, and its wall clock reading is the timer's start
// plus the monotonic time since, which differs from time.Now's if the wall
// clock has been set since the timer started. See the example of
// Timer.WithTimeout.
func (t *Timer) WithTimeout(parent context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if parent == nil {
		panic("cannot create context from nil parent")
	}
	if cur, ok := parent.Deadline(); ok && cur.Before(time.Now().Add(timeout)) {
		return context.WithCancel(parent)
	}
	// The deadline is the wheel timeout's: one clock read, where
	// time.Now().Add(timeout) would be a second; on some virtual machines a
	// read costs more than the rest of WithTimeout.
	return t.newDeadlineCtx(parent, time.Time{}, false, timeout)
}

// newDeadlineCtx returns a deadlineCtx for parent, due dur from now, and its
// cancel function. If hasDeadline, d is the deadline; otherwise it is the
// wheel timeout's.
func (t *Timer) newDeadlineCtx(parent context.Context, d time.Time, hasDeadline bool, dur time.Duration) (context.Context, context.CancelFunc) {
	c := &deadlineCtx{parent: parent}
	if hasDeadline {
		e := &ctxExt{deadline: d}
		e.state.Store(ctxHasDeadline)
		c.ext.Store(e)
	}
	pending := dur > 0 && parent.Err() == nil
	if pending {
		c.to.timer.Store(t)
		c.to.task = (*deadlineTask)(c)
		if t.scheduleTimeout(&c.to, dur, 0) == nil {
			return c, c.cancel
		}
		// The timeout was never pushed: nobody else has c yet.
	}
	e := c.ext.Load()
	if e == nil {
		e = &ctxExt{deadline: time.Now().Add(dur)}
		c.ext.Store(e)
	}
	e.state.Store(ctxHasDeadline | ctxUnscheduled) // nobody else has c yet
	switch {
	case pending:
		c.startFallback(time.Until(e.deadline))
	case parent.Err() != nil:
		c.finish(ctxParentDone)
	default:
		c.finish(ctxDeadlineExceeded)
	}
	return c, c.cancel
}

// Context states. A deadlineCtx moves once from ctxPending to one of the three
// done states, under its mu, so exactly one goroutine finishes it.
// ctxUnscheduled and ctxHasDeadline are flags beside them, set before the
// context is returned: the context's timeout was not scheduled, although
// to.timer is set; and ext.deadline is the deadline.
const (
	ctxPending          int32 = 0
	ctxCanceled         int32 = 1 // by cancel; Err is context.Canceled
	ctxDeadlineExceeded int32 = 2 // Err is context.DeadlineExceeded
	ctxParentDone       int32 = 3 // Err is parent.Err(), the cause parent's
	ctxDoneMask         int32 = 3
	ctxUnscheduled      int32 = 4
	ctxHasDeadline      int32 = 8
)

// deadlineCtx is the context of Timer.WithDeadline. Its methods are safe for
// concurrent use.
//
// Who runs where: the goroutine that made it, then any goroutine, calls Done,
// Err, Value and cancel; the timer's worker calls the task's Run at the
// deadline, or timerStopped when Stop cancels the timeout; a deadlineCtx
// parent calls parentDone as it finishes, and another parent, once a derived
// context is registered, through context.AfterFunc on a goroutine of its
// own; a fallback runtime timer calls expire on another. Any of them may
// finish the context; the first to set the done state, under mu, does.
//
// One object, 112 bytes, holds what a context needs while nothing watches
// it: its timeout, its parent, a mutex and its Done channel. Its state and
// everything else (its deadline, if it is not the timeout's, derived
// contexts, what unregisters it from its parent, the fallback timer) are in
// ext, made when first needed. A context that finishes without one points
// ext to one of doneExts, whose state is the done state. The cancel function
// is the method value c.cancel, 16 bytes of its own.
//
// Locks: a context's mu is taken before those of its ancestors, never after,
// and no lock is held while the functions of derived contexts run.
type deadlineCtx struct {
	// to is the context's wheel timeout. Its task is the context itself, as
	// a deadlineTask. to.timer is set only if it was scheduled, or
	// scheduling it was tried (then ext.state has ctxUnscheduled).
	// Immutable once the context is returned, but for what the timer does
	// to it.
	to Timeout

	parent context.Context // immutable

	// mu guards the store to done and ext's fields. ext and the done state
	// are written only under it too (or before the context is returned);
	// readers load them without it.
	mu mutex

	// done is the Done channel, nil until Done is first called, then stored
	// once, under mu: a chan struct{} that finish closes, or closedChan if
	// the context was done already; or, for a context linked to a
	// cancellable parent, a *parentLink. Any goroutine reads it.
	done atomicValue

	// ext is nil while the context is pending and needs nothing more; then
	// its ctxExt for life, or one of doneExts. Any goroutine reads it; it is
	// set once from nil, under mu or before the context is returned.
	ext atomicPointer[ctxExt]
}

// ctxExt is the part of a deadlineCtx that only some contexts need. Its
// fields but state are guarded by the context's mu.
type ctxExt struct {
	// state is ctxPending or a done state, with the flags. Any goroutine
	// reads it; the done state is set once, under the context's mu, and the
	// flags before the context is returned.
	state atomicInt32

	// deadline is the context's deadline if state has ctxHasDeadline, else
	// unused: the deadline is the timeout's. Immutable.
	deadline time.Time

	// afterFuncs are the functions registered by AfterFunc (derived
	// contexts) and not yet stopped or called; finish takes them all.
	afterFuncs *afterFunc

	// stopParent unregisters parentDone from the parent.
	stopParent func() bool

	// fallback keeps the deadline on the runtime's timers when the wheel
	// cannot.
	fallback *time.Timer
}

// parentLink is the Done channel of a context linked to a cancellable parent
// that is not a deadlineCtx: that of a context.WithCancel child of the
// parent, which the context package closes when it cancels the parent,
// synchronously, and its cancel, which finish calls otherwise. Immutable.
type parentLink struct {
	done   <-chan struct{}
	cancel context.CancelFunc
}

// doneExts are the ext of contexts that finished without one of their own,
// indexed by their done state. Nothing writes them after init.
var doneExts [4]ctxExt

func init() {
	for i := range doneExts {
		doneExts[i].state.Store(int32(i))
	}
}

// extension returns the context's ctxExt, made if need be. c.mu must be held,
// and the context pending.
func (c *deadlineCtx) extension() *ctxExt {
	e := c.ext.Load()
	if e == nil {
		e = new(ctxExt)
		c.ext.Store(e)
	}
	return e
}

// doneState returns ctxPending or the context's done state.
func (c *deadlineCtx) doneState() int32 {
	if e := c.ext.Load(); e != nil {
		return e.state.Load() & ctxDoneMask
	}
	return ctxPending
}

// deadlineKey is the key for which a deadlineCtx's Value returns the
// context itself, so that a deadlineCtx child finds its nearest deadlineCtx
// ancestor through contexts that wrap it, as context.WithValue does.
var deadlineKey byte

// closedChan is the Done channel of a context that finished before anyone
// asked for it.
var closedChan = make(chan struct{})

func init() { close(closedChan) }

// Deadline returns the context's deadline.
func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.deadline(), true }

func (c *deadlineCtx) deadline() time.Time {
	if e := c.ext.Load(); e != nil && e.state.Load()&ctxHasDeadline != 0 {
		return e.deadline
	}
	return c.to.Deadline()
}

// Done returns a channel that is closed when the context is done. The first
// call makes it, and links the context to a cancellable parent.
func (c *deadlineCtx) Done() <-chan struct{} {
	if d := c.loadDone(); d != nil {
		c.checkParent()
		return d
	}
	return c.makeDone()
}

// loadDone returns the Done channel, or nil if it is not made yet.
func (c *deadlineCtx) loadDone() <-chan struct{} {
	switch d := c.done.Load().(type) {
	case chan struct{}:
		return d
	case *parentLink:
		return d.done
	}
	return nil
}

// makeDone makes the Done channel and returns it. If the parent may be
// cancelled, the channel is one that the parent's cancellation closes
// without a goroutine: if the parent is, or wraps, a deadlineCtx whose Done
// is the parent's, a channel of the context's own, which that context closes
// through parentDone as it finishes; otherwise that of a context.WithCancel
// child of the parent, which the context package cancels with the parent,
// synchronously, and finish cancels otherwise. The context itself learns
// that the parent is done when Done, Err, cancel or the deadline's tick
// asks (checkParent), unless a derived context is registered with
// AfterFunc: then a context.AfterFunc on the parent tells it.
func (c *deadlineCtx) makeDone() <-chan struct{} {
	pdone := c.parent.Done()
	var anc *deadlineCtx
	if pdone != nil && !c.checkParent() {
		if a, ok := c.parent.Value(&deadlineKey).(*deadlineCtx); ok && a.loadDone() == pdone {
			anc = a
		}
	}
	c.mu.Lock()
	if d := c.loadDone(); d != nil {
		c.mu.Unlock()
		return d // another call made it
	}
	if c.doneState() != ctxPending {
		c.done.Store(closedChan)
		c.mu.Unlock()
		return closedChan
	}
	switch {
	case pdone == nil:
		// The parent is never done, as context.Background: a channel
		// that only finish closes.
		ch := make(chan struct{})
		c.done.Store(ch)
		c.mu.Unlock()
		return ch
	case anc != nil:
		a := &afterFunc{f: c.parentDone}
		if !anc.addAfterFunc(a) {
			c.mu.Unlock()
			c.finish(ctxParentDone)
			return c.Done()
		}
		c.extension().stopParent = a.stop
		ch := make(chan struct{})
		c.done.Store(ch)
		c.mu.Unlock()
		anc.watchParent() // anc must learn of its own parent's end now
		return ch
	default:
		inner, cancel := context.WithCancel(c.parent)
		l := &parentLink{done: inner.Done(), cancel: cancel}
		c.done.Store(l)
		c.mu.Unlock()
		return l.done
	}
}

// checkParent finishes a pending context whose parent is done, and reports
// whether the context is done.
func (c *deadlineCtx) checkParent() bool {
	if c.doneState() != ctxPending {
		return true
	}
	if c.parent.Err() == nil {
		return false
	}
	c.finish(ctxParentDone)
	return true
}

// Err returns nil while the context is pending, and then why it is done:
// context.Canceled, context.DeadlineExceeded or the parent's error. Done is
// closed before Err returns an error.
func (c *deadlineCtx) Err() error {
	if !c.checkParent() {
		return nil
	}
	if d := c.loadDone(); d != nil {
		<-d // finish may still be closing it
	}
	switch c.doneState() {
	case ctxCanceled:
		return context.Canceled
	case ctxDeadlineExceeded:
		return context.DeadlineExceeded
	default:
		return c.parent.Err()
	}
}

// Value returns the parent's value for key.
//
// context.Cause(ctx) asks ctx.Value for the innermost context package
// context above it that can hold a cause, and returns that context's cause
// if it has one, else ctx.Err(). While the context is pending, or once its
// parent made it done, the parent answers: its cause is the context's. Once
// the context is done on its own (cancel or deadline), the parent may still
// be cancelled later, with a cause that is not the context's; then
// context.WithoutCancel(parent) answers, which has the parent's values but
// hides its cancellation, so that Cause returns Err, as the standard
// library's does. Cause asks Err before Value from Go 1.26 on, and after it
// before; the answer is the same either way, since the state it depends on
// is set once.
func (c *deadlineCtx) Value(key any) any {
	if key == any(&deadlineKey) {
		return c
	}
	if s := c.doneState(); s == ctxCanceled || s == ctxDeadlineExceeded {
		return context.WithoutCancel(c.parent).Value(key)
	}
	return c.parent.Value(key)
}

// String describes the context as context.WithDeadline's do.
func (c *deadlineCtx) String() string {
	d := c.deadline()
	return contextName(c.parent) + ".WithDeadline(" + d.String() +
		" [" + time.Until(d).String() + "])"
}

func contextName(c context.Context) string {
	if s, ok := c.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%T", c)
}

// parentDone is called when the parent is done.
func (c *deadlineCtx) parentDone() { c.finish(ctxParentDone) }

// cancel is the context's cancel function.
func (c *deadlineCtx) cancel() {
	if !c.checkParent() {
		c.finish(ctxCanceled)
	}
}

// expire is called at the deadline, by the wheel or the fallback timer.
func (c *deadlineCtx) expire() {
	if !c.checkParent() {
		c.finish(ctxDeadlineExceeded)
	}
}

// finish makes a pending context done in state done, and releases what it
// holds: its wheel timeout, its fallback timer and its link to the parent.
// Then it calls the functions registered with AfterFunc. Only the first call
// does anything.
func (c *deadlineCtx) finish(done int32) {
	// Release the wheel timeout before the state says done, so that a
	// cancel that finds the context done already (another goroutine
	// finished it) returns with the timeout released too. Cancel is
	// idempotent, and false if the timeout expired or Stop cancelled it.
	// ctxUnscheduled is set before the context is returned, and a timeout
	// that was never scheduled must not be cancelled.
	if c.to.timer.Load() != nil {
		if e := c.ext.Load(); e == nil || e.state.Load()&ctxUnscheduled == 0 {
			c.to.Cancel()
		}
	}
	var (
		fallback   *time.Timer
		stopParent func() bool
		first      *afterFunc
	)
	c.mu.Lock()
	if e := c.ext.Load(); e == nil {
		c.ext.Store(&doneExts[done]) // nothing else to release
	} else {
		s := e.state.Load()
		if s&ctxDoneMask != ctxPending {
			c.mu.Unlock()
			return // done already
		}
		e.state.Store(s | done)
		// Whoever registers with e, or makes the Done channel, checks
		// the state under mu, so what is registered is taken here.
		fallback, stopParent, first = e.fallback, e.stopParent, e.afterFuncs
		e.fallback, e.stopParent, e.afterFuncs = nil, nil, nil
		for a := first; a != nil; a = a.next {
			a.linked = false // stop now returns false; nothing writes the links
		}
	}
	// A Done channel made from now on is closedChan.
	d := c.done.Load()
	c.mu.Unlock()

	// Without the lock: cancelling the link takes the parent's, and the
	// functions of derived contexts may call back into this one.
	switch d := d.(type) {
	case chan struct{}:
		close(d)
	case *parentLink:
		d.cancel() // closes the Done channel, the inner context's
	}
	if fallback != nil {
		fallback.Stop()
	}
	if stopParent != nil {
		stopParent()
	}
	for a := first; a != nil; {
		next := a.next
		a.f()
		a = next
	}
}

// startFallback keeps the deadline, dur from now, with time.AfterFunc.
func (c *deadlineCtx) startFallback(dur time.Duration) {
	if dur <= 0 {
		c.expire()
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.doneState() == ctxPending {
		c.extension().fallback = time.AfterFunc(dur, c.expire)
	}
}

// deadlineTask is the wheel task of a deadlineCtx: the same object, so that
// the timeout costs no allocation of its own, under a type of its own, so
// that the context has no Run method for its users to call.
type deadlineTask deadlineCtx

// Run is called by the worker at the deadline.
func (t *deadlineTask) Run(*Timeout) {
	if t.to.IsExpired() { // not a caller of Task().Run on a timeout Stop returned
		(*deadlineCtx)(t).expire()
	}
}

// timerStopped is called by the worker when Stop cancelled the context's
// timeout: the rest of the deadline goes to the runtime's timers.
func (t *deadlineTask) timerStopped(*Timeout) {
	c := (*deadlineCtx)(t)
	if c.doneState() == ctxPending {
		c.startFallback(time.Until(c.deadline()))
	}
}

// urgent makes the deadline run on the worker even with a pool or an
// executor, never queued behind user tasks that may wait for the context.
func (t *deadlineTask) urgent() {}

// String describes the context, for Timeout.String.
func (t *deadlineTask) String() string { return (*deadlineCtx)(t).String() }
