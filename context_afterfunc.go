package hashedwheel

import "context"

// A deadlineCtx's AfterFunc list: the functions it calls once it is done,
// through which contexts derived from it with the context package learn of
// its end, and the link that tells it of a parent's end when the parent is
// not a deadlineCtx. The rest of the context is in context.go.

// afterFunc is one function registered with a deadlineCtx's AfterFunc, in a
// doubly linked list. Its links and linked are guarded by the owner's mu;
// owner and f are written before it is linked, and then immutable.
type afterFunc struct {
	f          func()
	owner      *deadlineCtx
	prev, next *afterFunc
	linked     bool
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

// watchParent makes a cancellable parent that is not a deadlineCtx tell c
// when it is done, once something (f of AfterFunc, a deadlineCtx child)
// waits for c's finish rather than for its Done channel.
func (c *deadlineCtx) watchParent() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, linked := c.done.Load().(*parentLink); !linked || c.doneState() != ctxPending {
		return
	}
	if e := c.extension(); e.stopParent == nil {
		// context.AfterFunc never calls the function before it returns,
		// so the lock may be held.
		e.stopParent = context.AfterFunc(c.parent, c.parentDone)
	}
}

func (a *afterFunc) stop() bool { return a.owner.removeAfterFunc(a) }

// addAfterFunc links a into the context's list and reports true, or reports
// false if the context is done.
func (c *deadlineCtx) addAfterFunc(a *afterFunc) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.doneState() != ctxPending {
		return false
	}
	e := c.extension()
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
	c.mu.Lock()
	defer c.mu.Unlock()
	if !a.linked {
		return false
	}
	e := c.ext.Load()
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
