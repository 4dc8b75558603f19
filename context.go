package hashedwheel

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// WithDeadline returns a copy of parent that is done when the deadline d
// passes, when the returned cancel function is called, or when parent is
// done, whichever happens first: context.WithDeadline, with the deadline kept
// by the timer's wheel instead of a runtime timer of its own.
//
// The context behaves as one made by context.WithDeadline, except for
// precision: Done is closed at the first tick at or after d, never before it,
// and on an idle machine at most about one tick after it. Then Err returns
// context.DeadlineExceeded, and so does context.Cause. Deadline reports d. If
// parent's deadline is earlier than d, WithDeadline returns
// context.WithCancel(parent), as context.WithDeadline does. A parent that is
// done makes the context done with the parent's error and cause, and contexts
// derived from it with the context package see its error and cause as they
// would with the standard library. Value is the parent's. If d has passed
// already, the context is done at once.
//
// Cancelling the context releases its wheel timeout at once, so call cancel as
// soon as the work the context covers is finished. cancel is idempotent and
// safe for concurrent use.
//
// The context, its wheel timeout and its cancel function are one allocation of
// 112 bytes; the Done channel is made on the first call to Done. No goroutine
// is started for the context while it is pending, nor for its deadline or its
// cancel, when parent was made by the context package or by this one. The
// first call to Done links the context to a cancellable parent: its Done channel is then that of a context.WithCancel child of the
// parent (or, for a parent made by WithDeadline, one the parent closes), so
// the parent's cancellation closes it at once. Done, Err, cancel and the
// deadline's tick notice a cancelled parent; until one of them does, the
// wheel timeout stays pending. A context derived from this one with the
// context package learns at once that this one is done by its deadline or
// cancel, and that a parent made by the context package is done on the
// goroutine context.AfterFunc starts, as a context derived from any context
// of another package does.
//
// The deadline is never lost. While pending, the context's timeout counts in
// PendingTimeouts, and Stop cancels and returns it like any other; the context
// then keeps the rest of its deadline with time.AfterFunc. It does the same
// from the start when the timer is stopped or holds its
// WithMaxPendingTimeouts limit.
func (t *Timer) WithDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc) {
	if parent == nil {
		panic("cannot create context from nil parent")
	}
	if cur, ok := parent.Deadline(); ok && cur.Before(d) {
		// The parent's deadline comes first; it alone counts.
		return context.WithCancel(parent)
	}
	return t.newDeadlineCtx(parent, &d, time.Until(d))
}

// WithTimeout is WithDeadline with the deadline timeout from now: a copy of
// parent that is done at the first tick at or after timeout has passed, when
// cancel is called, or when parent is done. See WithDeadline.
//
// The deadline is read on the timer's clock, as Timeout.Deadline is: its
// monotonic reading is exact, and its wall clock reading is the timer's start
// plus the monotonic time since, which differs from time.Now's if the wall
// clock has been set since the timer started.
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
	return t.newDeadlineCtx(parent, nil, timeout)
}

// newDeadlineCtx returns a deadlineCtx for parent, due dur from now, and its
// cancel function. d is the deadline, or nil if it is to be the wheel
// timeout's.
func (t *Timer) newDeadlineCtx(parent context.Context, d *time.Time, dur time.Duration) (context.Context, context.CancelFunc) {
	c := &deadlineCtx{parent: parent}
	cancel := c.cancelFunc()
	pending := dur > 0 && parent.Err() == nil
	if pending {
		c.to.timer, c.to.task = t, (*deadlineTask)(c)
		if d != nil {
			c.ext.Store(newExt(d))
		}
		if t.scheduleTimeout(&c.to, dur) == nil {
			return c, cancel
		}
		// The timeout was never pushed, or was taken back before the
		// worker saw it: nobody else has c yet.
	}
	if d == nil {
		now := time.Now().Add(dur)
		d = &now
	}
	e := c.ext.Load()
	if e == nil {
		e = newExt(d)
		c.ext.Store(e)
	}
	e.state.Store(ctxUnscheduled) // nobody else has c yet
	switch {
	case pending:
		c.startFallback(time.Until(*d))
	case parent.Err() != nil:
		c.finish(ctxParentDone)
	default:
		c.finish(ctxDeadlineExceeded)
	}
	return c, cancel
}

// Context states. A deadlineCtx moves once from ctxPending to one of the three
// done states, only by CompareAndSwap, so exactly one goroutine finishes it.
// ctxUnscheduled is a flag beside them: the context's timeout was not
// scheduled, although to.timer is set.
const (
	ctxPending          int32 = 0
	ctxCanceled         int32 = 1 // by cancel; Err is context.Canceled
	ctxDeadlineExceeded int32 = 2 // Err is context.DeadlineExceeded
	ctxParentDone       int32 = 3 // Err is parent.Err(), the cause parent's
	ctxDoneMask         int32 = 3
	ctxUnscheduled      int32 = 4
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
// finish the context; the one whose CompareAndSwap of the state wins does.
//
// One object, 112 bytes, holds what a context needs while nothing watches
// it: its timeout, its parent, its cancel function and its Done channel. Its
// state and everything else (its deadline, if it is not the timeout's, the
// link to a cancellable parent, derived contexts, the fallback timer) are in
// ext, made when first needed. A context that finishes without one points
// ext to one of doneExts, whose state is the done state.
type deadlineCtx struct {
	// to is the context's wheel timeout. Its task is the context itself, as
	// a deadlineTask. to.timer is set only if it was scheduled, or
	// scheduling it was tried (then ext.state has ctxUnscheduled).
	// Immutable once the context is returned, but for what the timer does
	// to it.
	to Timeout

	parent context.Context // immutable

	// cancelFn is the memory of the context's cancel function; see
	// boundFunc. Immutable.
	cancelFn boundFunc

	// done is the Done channel: nil until Done is first called; then a
	// channel that finish closes, or closedChan if finish got there first,
	// or the Done channel of the context.WithCancel child of the parent
	// (see linkParent), which the parent or finish cancels. Any goroutine;
	// set once from nil, by CompareAndSwap or by linkParent under ext.mu
	// while the state is pending. Only the goroutine that finished the
	// context closes a channel of its own.
	done atomic.Pointer[hchan]

	// ext is nil while the context is pending and needs nothing more; then
	// its ctxExt for life, or one of doneExts. Any goroutine; set only by
	// CompareAndSwap from nil, or before the context is returned.
	ext atomic.Pointer[ctxExt]
}

// ctxExt is the part of a deadlineCtx that only some contexts need.
type ctxExt struct {
	// state is ctxPending or a done state, with ctxUnscheduled. Any
	// goroutine; the done state is set once, by CompareAndSwap, and
	// ctxUnscheduled before the context is returned.
	state atomic.Int32

	// deadline is the context's deadline, or nil if it is the timeout's.
	// Immutable.
	deadline *time.Time

	// mu guards the fields below.
	mu sync.Mutex

	// afterFuncs are the functions registered by AfterFunc (derived
	// contexts) and not yet stopped or called; finish takes them all.
	afterFuncs *afterFunc

	// stopParent unregisters parentDone from the parent.
	stopParent func() bool

	// innerCancel cancels the context.WithCancel child of the parent whose
	// Done channel is the context's (see linkParent).
	innerCancel context.CancelFunc

	// fallback keeps the deadline on the runtime's timers when the wheel
	// cannot.
	fallback *time.Timer
}

// doneExts are the ext of contexts that finished without one of their own,
// indexed by their done state.
var doneExts [4]ctxExt

func init() {
	for i := range doneExts {
		doneExts[i].state.Store(int32(i))
	}
}

// newExt returns a ctxExt with deadline d.
func newExt(d *time.Time) *ctxExt { return &ctxExt{deadline: d} }

// extension returns the context's ctxExt, made on first use: one of doneExts
// if the context finished without one.
func (c *deadlineCtx) extension() *ctxExt {
	if e := c.ext.Load(); e != nil {
		return e
	}
	if e := newExt(nil); c.ext.CompareAndSwap(nil, e) {
		return e
	}
	return c.ext.Load()
}

// doneState returns ctxPending or the context's done state.
func (c *deadlineCtx) doneState() int32 {
	if e := c.ext.Load(); e != nil {
		return e.state.Load() & ctxDoneMask
	}
	return ctxPending
}

// afterFunc is one function registered with a deadlineCtx's AfterFunc, in a
// doubly linked list. Its links and linked are guarded by the owner's ext.mu;
// owner and f are written before it is linked, and then immutable.
type afterFunc struct {
	f          func()
	owner      *deadlineCtx
	prev, next *afterFunc
	linked     bool
}

// deadlineKey is the key for which a deadlineCtx's Value returns the
// context itself, so that a deadlineCtx child finds its nearest deadlineCtx
// ancestor through contexts that wrap it, as context.WithValue does.
var deadlineKey byte

// cancelCtxKey is the key with which context.Cause asks a context for the
// innermost context package context that holds its cause. A deadlineCtx
// answers it itself (see Value), so that Cause reports its own error when it
// was cancelled or timed out, and its parent's cause when the parent made it
// done. The key is unexported; probeCancelCtxKey learns it from Cause.
var cancelCtxKey = probeCancelCtxKey()

// causeProbe is a context that is done and records the key Value is asked.
type causeProbe struct{ key any }

func (*causeProbe) Deadline() (time.Time, bool) { return time.Time{}, false }
func (*causeProbe) Done() <-chan struct{}       { return closedChan }
func (*causeProbe) Err() error                  { return context.Canceled }
func (p *causeProbe) Value(key any) any {
	p.key = key
	return nil
}

func probeCancelCtxKey() any {
	p := new(causeProbe)
	_ = context.Cause(p)
	return p.key
}

// closedChan is the Done channel of a context that finished before anyone
// asked for it.
var closedChan = make(chan struct{})

func init() { close(closedChan) }

// Deadline returns the context's deadline.
func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.deadline(), true }

func (c *deadlineCtx) deadline() time.Time {
	if e := c.ext.Load(); e != nil && e.deadline != nil {
		return *e.deadline
	}
	return c.to.Deadline()
}

// Done returns a channel that is closed when the context is done. The first
// call makes it, and links the context to a cancellable parent.
func (c *deadlineCtx) Done() <-chan struct{} {
	if p := c.done.Load(); p != nil {
		c.checkParent()
		return chanOf(p)
	}
	if c.doneState() != ctxPending {
		// Done already; finish sets closedChan unless we do first.
		c.done.CompareAndSwap(nil, chanPointer(closedChan))
		return chanOf(c.done.Load())
	}
	pdone := c.parent.Done()
	if pdone == nil {
		// The parent is never done, as context.Background: a channel
		// that only finish closes.
		ch := make(chan struct{})
		if !c.done.CompareAndSwap(nil, chanPointer(ch)) {
			return chanOf(c.done.Load())
		}
		return ch
	}
	if c.checkParent() {
		return c.Done()
	}
	return c.linkParent(pdone)
}

// linkParent makes the Done channel of a context whose parent may be
// cancelled, such that the parent's cancellation closes it without a
// goroutine, and returns it. pdone is the parent's Done channel.
//
// If the parent is, or wraps, a deadlineCtx whose Done is pdone, that
// context calls parentDone in its finish. Otherwise the channel is that of a
// context.WithCancel child of the parent, which the context package cancels
// with the parent, synchronously; finish cancels it otherwise. The context
// itself learns that the parent is done when Done, Err, cancel or the
// deadline's tick asks (checkParent), unless a derived context is registered
// with AfterFunc: then a context.AfterFunc on the parent tells it.
func (c *deadlineCtx) linkParent(pdone <-chan struct{}) <-chan struct{} {
	e := c.extension()
	if e.state.Load()&ctxDoneMask != ctxPending {
		return c.Done() // one of doneExts: done
	}
	e.mu.Lock()
	if e.state.Load()&ctxDoneMask != ctxPending {
		e.mu.Unlock()
		return c.Done()
	}
	if p := c.done.Load(); p != nil {
		e.mu.Unlock()
		return chanOf(p) // another Done call linked it
	}
	var ch <-chan struct{}
	if anc, ok := c.parent.Value(&deadlineKey).(*deadlineCtx); ok && anc.done.Load() == chanPointer(pdone) {
		a := &afterFunc{f: c.parentDone}
		if !anc.addAfterFunc(a) {
			e.mu.Unlock()
			c.finish(ctxParentDone)
			return c.Done()
		}
		e.stopParent = a.stop
		anc.watchParent() // anc must learn of its own parent's end now
		ch = make(chan struct{})
	} else {
		var inner context.Context
		inner, e.innerCancel = context.WithCancel(c.parent)
		ch = inner.Done()
	}
	// Under e.mu with the state pending: a finish that follows takes
	// innerCancel under e.mu, and closes the channel with it.
	c.done.Store(chanPointer(ch))
	e.mu.Unlock()
	return ch
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
	if c.done.Load() != chanPointer(closedChan) {
		// finish may still be closing the channel.
		<-c.Done()
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

// Value returns the parent's value for key. context.Cause asks for
// cancelCtxKey: a context done on its own, or pending, answers nil, so that
// Cause returns Err; one done by its parent passes the question on, so that
// Cause returns the parent's cause. (Before Go 1.26, Cause asks before it
// calls Err, so Value looks at the parent first.)
func (c *deadlineCtx) Value(key any) any {
	if key == any(&deadlineKey) {
		return c
	}
	if key == cancelCtxKey && cancelCtxKey != nil {
		if c.checkParent(); c.doneState() != ctxParentDone {
			return nil
		}
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

// AfterFunc arranges to call f once the context is done, and is how contexts
// derived from it with the context package (and context.AfterFunc) learn
// that it is, without a goroutine each. Unlike context.AfterFunc, it calls f
// on the goroutine that finishes the context (the timer's worker, at the
// deadline), so f must not block; the context package's own callbacks do
// not. If the context is done already, f runs on a new goroutine, since the
// caller may hold a lock f takes. stop reports whether it kept f from being
// called.
func (c *deadlineCtx) AfterFunc(f func()) (stop func() bool) {
	c.Done() // link to the parent from now on
	a := &afterFunc{f: f}
	if !c.addAfterFunc(a) {
		go f()
		return func() bool { return false }
	}
	c.watchParent()
	return a.stop
}

// watchParent makes a parent that is not a deadlineCtx tell c when it is
// done, once something (f of AfterFunc, a deadlineCtx child) waits for c's
// finish rather than for its Done channel.
func (c *deadlineCtx) watchParent() {
	e := c.ext.Load()
	e.mu.Lock()
	if e.state.Load()&ctxDoneMask == ctxPending && e.innerCancel != nil && e.stopParent == nil {
		// context.AfterFunc never calls the function before it returns,
		// so the lock may be held.
		e.stopParent = context.AfterFunc(c.parent, c.parentDone)
	}
	e.mu.Unlock()
}

func (a *afterFunc) stop() bool { return a.owner.removeAfterFunc(a) }

// addAfterFunc links a into the context's list and reports true, or reports
// false if the context is done.
func (c *deadlineCtx) addAfterFunc(a *afterFunc) bool {
	e := c.extension()
	if e.state.Load()&ctxDoneMask != ctxPending {
		return false // without the lock, which doneExts share
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.state.Load()&ctxDoneMask != ctxPending {
		return false
	}
	a.owner = c
	a.prev, a.next = nil, e.afterFuncs
	if a.next != nil {
		a.next.prev = a
	}
	e.afterFuncs = a
	a.linked = true
	return true
}

// removeAfterFunc unlinks a, which addAfterFunc linked into the context's
// list, and reports whether it was still there.
func (c *deadlineCtx) removeAfterFunc(a *afterFunc) bool {
	e := c.ext.Load()
	e.mu.Lock()
	defer e.mu.Unlock()
	if !a.linked {
		return false
	}
	if a.prev == nil {
		e.afterFuncs = a.next
	} else {
		a.prev.next = a.next
	}
	if a.next != nil {
		a.next.prev = a.prev
	}
	a.prev, a.next, a.linked = nil, nil, false
	return true
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
	if c.to.timer != nil {
		if e := c.ext.Load(); e == nil || e.state.Load()&ctxUnscheduled == 0 {
			c.to.Cancel()
		}
	}
	var e *ctxExt
	var s int32
	for {
		if e = c.ext.Load(); e != nil {
			if s = e.state.Load(); s&ctxDoneMask != ctxPending {
				return // done already, or e is one of doneExts
			}
			if e.state.CompareAndSwap(s, s|done) {
				break
			}
			continue
		}
		if c.ext.CompareAndSwap(nil, &doneExts[done]) {
			break // nothing else to release
		}
	}
	var (
		fallback    *time.Timer
		stopParent  func() bool
		innerCancel context.CancelFunc
		first       *afterFunc
	)
	if e != nil {
		// Whoever registers with e, or links the Done channel to the
		// parent, checks the state under the lock after taking it, so what
		// is registered is taken here.
		e.mu.Lock()
		fallback, stopParent, innerCancel, first = e.fallback, e.stopParent, e.innerCancel, e.afterFuncs
		e.fallback, e.stopParent, e.innerCancel, e.afterFuncs = nil, nil, nil, nil
		for a := first; a != nil; a = a.next {
			a.linked = false // stop now returns false; nothing writes the links
		}
		e.mu.Unlock()
	}
	if innerCancel != nil {
		innerCancel() // closes the Done channel, the inner context's
	} else {
		for {
			p := c.done.Load()
			if p == nil {
				if c.done.CompareAndSwap(nil, chanPointer(closedChan)) {
					break
				}
				continue // Done made the channel meanwhile
			}
			if p != chanPointer(closedChan) {
				close(chanOf(p))
			}
			break
		}
	}
	// Without the lock: a deadlineCtx parent takes its own, and the
	// functions of derived contexts may call back into this one.
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
	e := c.extension()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.state.Load()&ctxDoneMask == ctxPending {
		e.fallback = time.AfterFunc(dur, c.expire)
	}
}

// cancelFunc returns the context's cancel function, without allocating when
// it can.
func (c *deadlineCtx) cancelFunc() context.CancelFunc {
	if cancelCode == 0 {
		return c.cancel
	}
	c.cancelFn = boundFunc{code: cancelCode, ctx: c}
	return c.cancelFn.fn()
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

// String describes the context, for Timeout.String.
func (t *deadlineTask) String() string { return (*deadlineCtx)(t).String() }

// Function values without an allocation.
//
// A func value points to a closure: a code pointer followed by the captured
// variables, here a *deadlineCtx. A method value such as c.cancel would be
// such a closure, allocated on its own (16 bytes). boundFunc lays the same
// two words out inside the object that needs the function, and fn returns a
// func value pointing to them. The code pointer is taken, at init, from a
// closure of the same shape, which also checks the layout: if the compiler
// ever lays it out differently, the code pointer stays 0 and the callers use
// an allocated method value instead.

// boundFunc is the memory of a closure that calls a method of ctx.
type boundFunc struct {
	code uintptr      // the closure's code; never a heap pointer
	ctx  *deadlineCtx // its captured variable
}

var cancelCode = closureCode(cancelClosure)

//go:noinline
func cancelClosure(c *deadlineCtx) func() { return func() { c.cancel() } }

// closureCode returns the code pointer of the closures that newClosure
// makes, or 0 if they are not laid out as a boundFunc's first two words.
func closureCode(newClosure func(*deadlineCtx) func()) uintptr {
	probe := new(deadlineCtx)
	f := newClosure(probe)
	words := *(**[2]unsafe.Pointer)(unsafe.Pointer(&f))
	if words[1] != unsafe.Pointer(probe) {
		return 0
	}
	return uintptr(words[0])
}

// fn returns b as a func value. b.code must not be 0.
func (b *boundFunc) fn() func() { return *(*func())(unsafe.Pointer(&b)) }

// hchan stands for the runtime's channel header: a chan value is a pointer
// to one. It lets a Done channel live in an atomic.Pointer, one word.
type hchan struct{}

func chanPointer(ch <-chan struct{}) *hchan { return *(**hchan)(unsafe.Pointer(&ch)) }

func chanOf(p *hchan) chan struct{} { return *(*chan struct{})(unsafe.Pointer(&p)) }
