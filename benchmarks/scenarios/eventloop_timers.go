package main

import (
	"context"
	"math"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/hashedwheel/hashedwheel"
	"github.com/hashedwheel/hashedwheel/benchmarks/internal/measure"
)

// The variants of the event-loop scenario. Every type and function here is
// timer code to the profile's attribution (its name holds "Timers"); the
// server's kick and ping methods they call are counted with them, except
// for the connection's own write or close.

// wheelTimers: one hashedwheel.Timer for the server, as a new user would
// write it. The idle deadline is Timer.AfterFunc, re-armed with
// Timeout.Reset on every message; the ping is Timer.Every, pushed back with
// Timeout.Reset on every write. Their tasks run on the wheel's worker, so a
// kick or a ping is handed to the connection's loop (Conn.Close,
// Conn.AsyncWrite), which gnet wakes for it.
type wheelTimers struct {
	s *gnetServer[wheelConn]
	t *hashedwheel.Timer
}

type wheelConn struct {
	idle, ping *hashedwheel.Timeout
}

func newWheelTimers(s *gnetServer[wheelConn]) (*wheelTimers, error) {
	t, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(s.spec.Tick))
	if err != nil {
		return nil, err
	}
	if err := t.Start(); err != nil {
		return nil, err
	}
	return &wheelTimers{s: s, t: t}, nil
}

func (w *wheelTimers) newLoop(*loopState[wheelConn]) any { return nil }

func (w *wheelTimers) opened(cs *conn[wheelConn]) {
	cs.tm.idle, _ = w.t.AfterFunc(time.Duration(cs.limit), func() { w.s.kickAsync(cs) })
	if w.s.spec.Ping > 0 {
		cs.tm.ping, _ = w.t.Every(w.s.spec.Ping, func() { w.s.pingAsync(cs) })
	}
}

func (w *wheelTimers) traffic(cs *conn[wheelConn]) bool {
	return cs.tm.rearmTimers(time.Duration(cs.limit), w.s.spec.Ping)
}

func (w *wheelTimers) closed(cs *conn[wheelConn]) { cs.tm.cancelTimers() }

// rearmTimers pushes both deadlines back after a message; it returns false
// if the idle deadline had run. The ping's Reset is false while the ping
// runs: it is written anyway.
func (c *wheelConn) rearmTimers(limit, ping time.Duration) bool {
	if c.ping != nil {
		c.ping.Reset(ping)
	}
	return c.idle == nil || c.idle.Reset(limit)
}

// cancelTimers cancels both deadlines of a closed connection.
func (c *wheelConn) cancelTimers() {
	if c.idle != nil {
		c.idle.Cancel()
	}
	if c.ping != nil {
		c.ping.Cancel()
	}
}

// stats are the wheel's own figures over the whole run: runs handed out more
// than two ticks late, and the largest lateness.
func (w *wheelTimers) stats() map[string]float64 {
	st := w.t.Stats()
	return map[string]float64{
		"wheel_expired":     float64(st.Expired),
		"wheel_late":        float64(st.Late),
		"wheel_max_late_ms": measure.Millis(st.MaxLateness),
		"wheel_ticks":       float64(st.Ticks),
		"wheel_wakeups":     float64(st.Wakeups),
	}
}

func (w *wheelTimers) usesTicker() bool    { return false }
func (w *wheelTimers) tick() time.Duration { return time.Hour }
func (w *wheelTimers) stop()               { w.t.Stop() }

// afterFuncTimers: a time.AfterFunc per deadline per connection, re-armed
// with Reset on every message (idle) and every write (ping); the ping's
// callback re-arms itself. Callbacks run on goroutines of their own, so a
// kick or a ping is handed to the connection's loop as with the wheel.
type afterFuncTimers struct {
	s *gnetServer[afterFuncConn]
}

type afterFuncConn struct {
	idle, ping *time.Timer
}

func newAfterFuncTimers(s *gnetServer[afterFuncConn]) *afterFuncTimers {
	return &afterFuncTimers{s: s}
}

func (a *afterFuncTimers) newLoop(*loopState[afterFuncConn]) any { return nil }

func (a *afterFuncTimers) opened(cs *conn[afterFuncConn]) {
	cs.tm.idle = time.AfterFunc(time.Duration(cs.limit), func() { a.s.kickAsync(cs) })
	if a.s.spec.Ping > 0 {
		// Made far away and then reset, so that cs.tm.ping is set before the
		// callback reads it.
		cs.tm.ping = time.AfterFunc(time.Hour, func() { a.ping(cs) })
		cs.tm.ping.Reset(a.s.spec.Ping)
	}
}

func (a *afterFuncTimers) ping(cs *conn[afterFuncConn]) {
	if cs.closed.Load() {
		return
	}
	a.s.pingAsync(cs)
	cs.tm.ping.Reset(a.s.spec.Ping)
}

func (a *afterFuncTimers) traffic(cs *conn[afterFuncConn]) bool {
	if cs.tm.ping != nil {
		cs.tm.ping.Reset(a.s.spec.Ping)
	}
	// Reset reports false if the timer had fired: the kick is under way
	// (and the callback is scheduled again, which finds the connection
	// closed).
	return cs.tm.idle.Reset(time.Duration(cs.limit))
}

func (a *afterFuncTimers) closed(cs *conn[afterFuncConn]) {
	cs.tm.idle.Stop()
	if cs.tm.ping != nil {
		cs.tm.ping.Stop()
	}
}

func (a *afterFuncTimers) usesTicker() bool    { return false }
func (a *afterFuncTimers) tick() time.Duration { return time.Hour }
func (a *afterFuncTimers) stop()               {}

// ownerTimers: the wheel driven by its owner, the event loop (WithoutWorker,
// Advance, NextDeadline): one Timer per loop, with no goroutine of its own.
// The idle deadline and the ping are as in wheelTimers (AfterFunc and Every,
// re-armed with Reset on the loop), but their tasks run inside Advance, on
// the loop, so a kick or a ping is a close or a write there, with no
// hand-off. How the loops' Timers are driven is loopTimers.
type ownerTimers struct {
	loopTimers[wheelConn]
}

func newOwnerTimers(s *gnetServer[wheelConn]) *ownerTimers {
	return &ownerTimers{loopTimers[wheelConn]{s: s, ctx: context.Background()}}
}

func (o *ownerTimers) opened(cs *conn[wheelConn]) {
	ol := cs.loop.data.(*ownerTimersLoop)
	cs.tm.idle, _ = ol.t.AfterFunc(time.Duration(cs.limit), func() { o.s.kickOnLoop(cs) })
	if o.s.spec.Ping > 0 {
		cs.tm.ping, _ = ol.t.Every(o.s.spec.Ping, func() { o.s.pingOnLoop(cs, o.s.now()) })
	}
	o.publishTimers(ol)
}

// traffic only moves deadlines later, so the published next one holds.
func (o *ownerTimers) traffic(cs *conn[wheelConn]) bool {
	return cs.tm.rearmTimers(time.Duration(cs.limit), o.s.spec.Ping)
}

func (o *ownerTimers) closed(cs *conn[wheelConn]) { cs.tm.cancelTimers() }

// lazyTimers: the wheel driven by the loop as in ownerTimers, written the way
// the heap variant is: one timeout per connection, and nothing done on
// traffic. The connection's lazyTimersConn is the timeout's task, so there
// is no closure; when it runs, inside Advance on the loop, it kicks the
// connection if it has been silent for its limit, pings it if nothing was
// written to it for the ping interval, and schedules its next look at the
// earlier of the two deadlines, with a new timeout from NewTimeout
// (scheduleTimers re-arms the one it has instead).
type lazyTimers struct {
	loopTimers[lazyTimersConn]
}

// lazyTimersConn is a connection's timeout and the task it runs.
type lazyTimersConn struct {
	to *hashedwheel.Timeout
	cs *conn[lazyTimersConn]
}

func newLazyTimers(s *gnetServer[lazyTimersConn]) *lazyTimers {
	l := &lazyTimers{loopTimers[lazyTimersConn]{s: s, ctx: context.Background()}}
	l.lazy = l
	return l
}

func (l *lazyTimers) opened(cs *conn[lazyTimersConn]) {
	ol := cs.loop.data.(*ownerTimersLoop)
	cs.tm.cs = cs
	next := time.Duration(cs.limit)
	if l.s.spec.Ping > 0 {
		next = min(next, l.s.spec.Ping)
	}
	cs.tm.to, _ = ol.t.NewTimeout(&cs.tm, next)
	l.publishTimers(ol)
}

// traffic has nothing to do: the timeout looks at lastMsg and lastWrite when
// it runs, on the loop, so no kick can race a message.
func (l *lazyTimers) traffic(*conn[lazyTimersConn]) bool { return true }

func (l *lazyTimers) closed(cs *conn[lazyTimersConn]) {
	if cs.tm.to != nil {
		cs.tm.to.Cancel()
	}
}

// Run is the connection's look at its deadlines, on the loop.
func (lc *lazyTimersConn) Run(*hashedwheel.Timeout) {
	cs := lc.cs
	ol := cs.loop.data.(*ownerTimersLoop)
	if next, ok := lookTimers(ol.lazy.s, cs); ok {
		lc.to, _ = ol.t.NewTimeout(lc, next)
	}
}

// lookTimers is the lazy variants' look at a connection, on its loop: it
// kicks the connection if it has been silent for its limit, pings it if
// nothing was written to it for the ping interval, and returns when to look
// again, from now: the earlier of the two deadlines. It returns false if
// the connection is closed or it kicked it.
func lookTimers[T any](s *gnetServer[T], cs *conn[T]) (time.Duration, bool) {
	if cs.closed.Load() {
		return 0, false
	}
	now := s.now()
	next := cs.lastMsg + cs.limit
	if now >= next {
		s.kickOnLoop(cs)
		return 0, false
	}
	if ping := int64(s.spec.Ping); ping > 0 {
		at := cs.lastWrite + ping
		if now >= at {
			s.pingOnLoop(cs, now)
			at = now + ping
		}
		next = min(next, at)
	}
	return time.Duration(next - now), true
}

// scheduleTimers: the lazy variant with the timeout in the connection. Each
// connection embeds one hashedwheel.Timeout, and the connection itself is
// its task (scheduleTimersTask: the same struct, under a type with a Run
// method), so there is no Timeout of its own to allocate, no closure and no
// pointer back. When it runs, inside Advance on the loop, it looks at the
// connection as the lazy variant's task does, and schedules its own Timeout
// again with Timer.Schedule: nothing is allocated per look.
type scheduleTimers struct {
	loopTimers[scheduleTimersConn]
}

// scheduleTimersConn is what the variant keeps in a connection: its one
// timeout, armed on the connection's loop only.
type scheduleTimersConn struct {
	to hashedwheel.Timeout
}

// scheduleTimersTask is a connection seen as its timeout's task.
type scheduleTimersTask conn[scheduleTimersConn]

func newScheduleTimers(s *gnetServer[scheduleTimersConn]) *scheduleTimers {
	st := &scheduleTimers{loopTimers[scheduleTimersConn]{s: s, ctx: context.Background()}}
	st.sched = st
	return st
}

func (st *scheduleTimers) opened(cs *conn[scheduleTimersConn]) {
	ol := cs.loop.data.(*ownerTimersLoop)
	next := time.Duration(cs.limit)
	if st.s.spec.Ping > 0 {
		next = min(next, st.s.spec.Ping)
	}
	_ = ol.t.Schedule(&cs.tm.to, (*scheduleTimersTask)(cs), next)
	st.publishTimers(ol)
}

// traffic has nothing to do, as in the lazy variant.
func (st *scheduleTimers) traffic(*conn[scheduleTimersConn]) bool { return true }

func (st *scheduleTimers) closed(cs *conn[scheduleTimersConn]) { cs.tm.to.Cancel() }

// Run is the connection's look at its deadlines, on the loop. Its Timeout
// has expired once its run is handed out, so Schedule arms it again from
// here; it fails only once the Timer is stopped, at shutdown.
func (t *scheduleTimersTask) Run(to *hashedwheel.Timeout) {
	cs := (*conn[scheduleTimersConn])(t)
	ol := cs.loop.data.(*ownerTimersLoop)
	if next, ok := lookTimers(ol.sched.s, cs); ok {
		_ = ol.t.Schedule(to, t, next)
	}
}

// loopTimers is how the loop-driven variants drive their Timers. gnet's
// OnTick runs on a goroutine of its own, so, as for the heap, OnTick hands a
// loop whose next deadline has come a sweep (EventLoop.Execute) that calls
// Advance; the loop publishes NextDeadline after each sweep and after each
// connection it opens, and OnTick sleeps until the earliest of them, at most
// a tick.
type loopTimers[T any] struct {
	s     *gnetServer[T]
	ctx   context.Context
	lazy  *lazyTimers     // the lazy variant, for its tasks; nil in the others
	sched *scheduleTimers // the Schedule variant, for its tasks; nil in the others
}

// ownerTimersLoop is one event loop's Timer.
type ownerTimersLoop struct {
	t *hashedwheel.Timer // Advance and NextDeadline: the loop only
	// next is NextDeadline, ns since the server's base (MaxInt64 if none):
	// written on the loop, read by OnTick.
	next   atomic.Int64
	queued atomic.Bool // as in heapTimersLoop
	sweep  gnet.Runnable
	lazy   *lazyTimers     // as in loopTimers
	sched  *scheduleTimers // as in loopTimers
}

func (o *loopTimers[T]) newLoop(*loopState[T]) any {
	t, err := hashedwheel.NewTimer(hashedwheel.WithoutWorker(), hashedwheel.WithTickDuration(o.s.spec.Tick))
	if err != nil {
		panic(err) // the options are constants
	}
	ol := &ownerTimersLoop{t: t, lazy: o.lazy, sched: o.sched}
	ol.next.Store(math.MaxInt64)
	ol.sweep = gnet.RunnableFunc(func(context.Context) error {
		ol.queued.Store(false)
		if _, err := ol.t.Advance(time.Now()); err != nil {
			return nil // stopped: the server is shutting down
		}
		o.publishTimers(ol)
		return nil
	})
	return ol
}

func (o *loopTimers[T]) publishTimers(ol *ownerTimersLoop) {
	next := int64(math.MaxInt64)
	if at, ok := ol.t.NextDeadline(); ok {
		next = int64(at.Sub(o.s.base))
	}
	ol.next.Store(next)
}

func (o *loopTimers[T]) usesTicker() bool { return true }

func (o *loopTimers[T]) tick() time.Duration {
	now := o.s.now()
	earliest := int64(math.MaxInt64)
	if p := o.s.loops.Load(); p != nil {
		for _, l := range *p {
			ol := l.data.(*ownerTimersLoop)
			next := ol.next.Load()
			if next <= now && ol.queued.CompareAndSwap(false, true) {
				if err := l.el.Execute(o.ctx, ol.sweep); err != nil {
					ol.queued.Store(false)
				}
				// The sweep publishes the loop's next deadline: look again
				// soon rather than a tick from now.
				earliest = min(earliest, now)
				continue
			}
			earliest = min(earliest, next)
		}
	}
	return min(max(time.Duration(earliest-now), time.Millisecond), o.s.spec.Tick)
}

func (o *loopTimers[T]) stop() {
	if p := o.s.loops.Load(); p != nil {
		for _, l := range *p {
			l.data.(*ownerTimersLoop).t.Stop()
		}
	}
}

// heapTimers: what gnet's maintainer suggests (panjf2000/gnet#635): a
// min-heap of deadlines walked from OnTick. OnTick runs on a goroutine of
// its own in gnet v2, not on an event loop, so each loop keeps its own two
// heaps (idle, ping), and OnTick hands a loop whose earliest deadline has
// passed a sweep (EventLoop.Execute); the sweep kicks and pings on the loop,
// with no further hand-off. Re-arming is lazy: a message only updates
// lastMsg (and lastWrite); a popped entry whose connection was active since
// is pushed back at its new deadline, so a message costs no heap operation,
// and a connection costs at most one push per limit. Closed connections'
// entries are dropped when they come up.
type heapTimers struct {
	s   *gnetServer[heapConn]
	ctx context.Context
}

type heapConn struct{}

// heapTimersLoop is one event loop's heaps.
type heapTimersLoop struct {
	idle, ping timersHeap // the loop's
	// next is the earliest deadline in either heap, ns since the server's
	// base (MaxInt64 if none): written on the loop, read by OnTick.
	next atomic.Int64
	// queued is set by OnTick when it hands the loop a sweep, and cleared
	// when the sweep starts.
	queued atomic.Bool
	sweep  gnet.Runnable
}

func newHeapTimers(s *gnetServer[heapConn]) *heapTimers {
	return &heapTimers{s: s, ctx: context.Background()}
}

func (h *heapTimers) newLoop(*loopState[heapConn]) any {
	hl := &heapTimersLoop{}
	hl.next.Store(math.MaxInt64)
	hl.sweep = gnet.RunnableFunc(func(context.Context) error {
		h.sweepTimers(hl)
		return nil
	})
	return hl
}

func (h *heapTimers) opened(cs *conn[heapConn]) {
	hl := cs.loop.data.(*heapTimersLoop)
	hl.idle.push(heapEntry{at: cs.lastMsg + cs.limit, c: cs})
	if h.s.spec.Ping > 0 {
		hl.ping.push(heapEntry{at: cs.lastWrite + int64(h.s.spec.Ping), c: cs})
	}
	hl.publish()
}

func (h *heapTimers) traffic(*conn[heapConn]) bool { return true } // the sweep reads lastMsg on the loop
func (h *heapTimers) closed(*conn[heapConn])       {}
func (h *heapTimers) usesTicker() bool             { return true }
func (h *heapTimers) stop()                        {}

func (h *heapTimers) tick() time.Duration {
	now := h.s.now()
	if p := h.s.loops.Load(); p != nil {
		for _, l := range *p {
			hl := l.data.(*heapTimersLoop)
			if hl.next.Load() <= now && hl.queued.CompareAndSwap(false, true) {
				if err := l.el.Execute(h.ctx, hl.sweep); err != nil {
					hl.queued.Store(false)
				}
			}
		}
	}
	return h.s.spec.Tick
}

// sweepTimers runs on the loop: it kicks the connections silent for their
// limit and pings those not written to for the ping interval.
func (h *heapTimers) sweepTimers(hl *heapTimersLoop) {
	hl.queued.Store(false)
	now := h.s.now()
	for len(hl.idle) > 0 && hl.idle[0].at <= now {
		e := hl.idle.pop()
		if e.c.closed.Load() {
			continue
		}
		if due := e.c.lastMsg + e.c.limit; due > now {
			hl.idle.push(heapEntry{at: due, c: e.c})
			continue
		}
		h.s.kickOnLoop(e.c)
	}
	ping := int64(h.s.spec.Ping)
	for len(hl.ping) > 0 && hl.ping[0].at <= now {
		e := hl.ping.pop()
		if e.c.closed.Load() {
			continue
		}
		if due := e.c.lastWrite + ping; due > now {
			hl.ping.push(heapEntry{at: due, c: e.c})
			continue
		}
		h.s.pingOnLoop(e.c, now)
		hl.ping.push(heapEntry{at: now + ping, c: e.c})
	}
	hl.publish()
}

// publish makes the loop's earliest deadline visible to OnTick.
func (hl *heapTimersLoop) publish() {
	next := int64(math.MaxInt64)
	if len(hl.idle) > 0 {
		next = hl.idle[0].at
	}
	if len(hl.ping) > 0 && hl.ping[0].at < next {
		next = hl.ping[0].at
	}
	hl.next.Store(next)
}

type heapEntry struct {
	at int64 // ns since the server's base
	c  *conn[heapConn]
}

// timersHeap is a binary min-heap on at. It is written out rather than
// built on container/heap, whose Push boxes every entry into an interface
// (an allocation per push).
type timersHeap []heapEntry

func (h *timersHeap) push(e heapEntry) {
	*h = append(*h, e)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if s[p].at <= s[i].at {
			break
		}
		s[p], s[i] = s[i], s[p]
		i = p
	}
}

func (h *timersHeap) pop() heapEntry {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s[n] = heapEntry{}
	s = s[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && s[r].at < s[l].at {
			m = r
		}
		if s[i].at <= s[m].at {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}
