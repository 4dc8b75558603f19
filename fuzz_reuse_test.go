package hashedwheel_test

import (
	"errors"
	"fmt"
	"math"
	"testing/synctest"
	"time"

	"github.com/hashedwheel/hashedwheel"
)

// This file holds what the model adds for Timeouts that are armed again
// (guarantees 21 and 22): Timer.Schedule or Timer.ScheduleAt of a
// session's Timeout, or of one that NewTimeout, AfterFunc or an earlier arm
// armed; Cancel and Reset on them; kindRearm, a task that schedules its own
// Timeout again from inside its run or its Cancelled call, with Schedule or
// at its last deadline plus a delay with ScheduleAt; and a second Timer,
// which runs nothing, to which Timeouts move and from which they come back.
// All three drivers use it.
//
// ScheduleAt's deadlines are those Schedule's delays give, and passed ones
// no earlier than the start of the current tick: such a deadline is due in
// the tick a delay of zero is, whatever the driver. (One passed before it
// runs at the next tick the Timer processes, which may be an earlier one
// that has ended: the tests of guarantee 22 hold those, in every driver.)
//
// What the model expects of Schedule: an error wrapping ErrTimeoutPending,
// changing nothing, while the latest arm is pending, or was cancelled by
// Cancel with a Cancelled call not yet made, or is a periodic run cancelled
// while out and not yet taken back, or was cancelled on the other Timer,
// which has not taken the cancel in; on the other Timer, also while a run
// of the Timeout is out. Otherwise a new arm at once (a cancelled one
// revived in place on its own Timer), which the Timeout reports from then
// on, and which runs by the rules of a NewTimeout made at that moment. The
// one exception is the pool: an arm made while an earlier arm's run is out
// reaches the worker when that run returns (see fuzzModel.runReturned), as
// runs of one Timeout never overlap. Stats counts every arm cancelled,
// revived in place or not.

// numSessions is the number of Timeouts the model owns, as a server's
// sessions would: the zero Timeout at first, reused for arm after arm.
const numSessions = 6

// fuzzSession is a struct of the caller's with a Timeout in it.
type fuzzSession struct {
	timeout hashedwheel.Timeout
}

// reuseOps is the first op byte of the operations on reused Timeouts. Below
// it op bytes keep their meaning (see fuzzModel.op), so that the seeds made
// before these operations still run what they were made for.
const reuseOps = 0xc0

// Tasks that scheduleOn arms a Timeout with: the one-shot kinds and
// kindRearm, and two that call Schedule with a nil task and a nil Timeout.
const (
	kindNilTask    = -1
	kindNilTimeout = -2
)

var scheduleKinds = [16]int{kindPlain, kindRearm, kindBlock, kindRearm, kindPlain, kindRearm, kindChain, kindStop,
	kindPanic, kindGoexit, kindRearm, kindBlock, kindRearm, kindPlain, kindNilTask, kindNilTimeout}

// reuseOp reads one operation on reused Timeouts.
func (m *fuzzModel) reuseOp(op byte, in *fuzzInput) {
	switch (op - reuseOps) % 8 {
	case 0, 1, 2:
		m.scheduleOn(in.next(), in.next(), in.next(), in.next(), false, (op-reuseOps)&8 != 0)
	case 3:
		m.scheduleOn(in.next(), in.next(), in.next(), in.next(), true, (op-reuseOps)&8 != 0)
	case 7:
		m.takeInOther()
	case 4, 5:
		to, h := m.target(in.next())
		if h == nil {
			m.unarmed(to, "Cancel")
			return
		}
		m.cancelArm(h)
	default:
		to, h := m.target(in.next())
		d := m.delay(in.next(), in.next())
		if h == nil {
			m.unarmed(to, "Reset")
			return
		}
		m.resetArm(h, d)
	}
}

// target decodes the Timeout that an operation on reused Timeouts acts on,
// and returns it with its latest arm: a session's if b < 0x80, which may
// never have been armed (then the arm is nil), else that of one of the
// model's arms, whatever armed it.
func (m *fuzzModel) target(b byte) (*hashedwheel.Timeout, *fuzzHandle) {
	if b < 0x80 || len(m.handles) == 0 {
		to := &m.sessions[int(b&0x7f)%numSessions].timeout
		return to, m.latest[to]
	}
	to := m.handles[int(b&0x7f)%len(m.handles)].to
	return to, m.latest[to]
}

// unarmed checks Cancel and Reset on a Timeout never armed: both false.
func (m *fuzzModel) unarmed(to *hashedwheel.Timeout, call string) {
	m.tracef("%s on a session's Timeout never armed", call)
	if to.Cancel() || to.Reset(0) {
		m.fatalf("Cancel or Reset returned true on a Timeout never armed")
	}
	m.checkSessions()
}

// scheduleOn is Timer.Schedule of the Timeout that tb picks, or, if at,
// Timer.ScheduleAt at the deadline the delay gives (see atDeadline), with a
// task that kindByte describes: bits 0-3 its kind (scheduleKinds), bit 4 a
// CancelledTask, and for kindRearm bits 5-6 its rearmMode and bit 7 how
// many arms it makes (one or three); its arms use ScheduleAt if bit 6 of b2
// is set. onOther schedules it on the second Timer, which runs nothing,
// with a plain task.
func (m *fuzzModel) scheduleOn(tb, kindByte, b1, b2 byte, onOther, at bool) {
	// The Cancelled calls made and not yet seen (a stopped worker that
	// waits for a blocked task makes them before it waits): Schedule
	// refuses a Timeout whose call is owed.
	m.consumeCallbacks()
	to, p := m.target(tb)
	kind := scheduleKinds[kindByte&15]
	tm := m.tm
	if onOther {
		tm = m.other
		if kind >= 0 {
			kind = kindPlain
		}
	}
	delay := m.delay(b1, b2)
	var task hashedwheel.TimerTask
	h := &fuzzHandle{id: len(m.handles), kind: kind, cb: kindByte&16 != 0, elsewhere: onOther}
	switch kind {
	case kindNilTimeout:
		to = nil
		task = hashedwheel.TimerFunc(func(*hashedwheel.Timeout) {})
	case kindNilTask:
	default:
		if kind == kindBlock {
			h.release = make(chan struct{})
		}
		ft := &fuzzTask{m: m, id: h.id, kind: kind, cb: h.cb, release: h.release, chainDelay: m.delay(b2, b1)}
		if kind == kindRearm {
			ft.rearms = 1 + 2*int(kindByte>>7)
			ft.rearmMode = int(kindByte>>5) & 3
			ft.rearmDelay = m.delay(b2, b1)
			ft.resetDelay = m.delay(b1^b2, b1>>4)
			ft.rearmAt = b2&0x40 != 0
		}
		h.chainDelay, h.ft, task = ft.chainDelay, ft, ft.task()
	}
	wantErr, maybePending := m.armWant(to, p, task == nil, onOther)
	desc := "never armed"
	if p != nil {
		desc = fmt.Sprintf("latest arm #%d %s", p.id, stateName(p.state))
		if p.elsewhere {
			desc += " on the second Timer"
		}
	}
	on := ""
	if onOther {
		on = "the second Timer's "
	}
	deadline := addSat(m.now, int64(max(delay, 0)))
	var err error
	if at {
		deadline = m.atDeadline(delay)
		m.tracef("%sScheduleAt(%s, %s #%d, start + %v)", on, desc, kindName(kind, h), h.id, time.Duration(deadline))
		err = tm.ScheduleAt(to, task, m.start.Add(time.Duration(deadline)))
	} else {
		m.tracef("%sSchedule(%s, %s #%d, %v)", on, desc, kindName(kind, h), h.id, delay)
		err = tm.Schedule(to, task, delay)
	}
	if maybePending && errors.Is(err, hashedwheel.ErrTimeoutPending) {
		wantErr = err
	}
	if !errors.Is(err, wantErr) || (wantErr == nil && err != nil) {
		m.fatalf("Schedule(%v) = %v, want %v", delay, err, wantErr)
	}
	if err != nil {
		m.tracef("  rejected: %v", err)
		if h.release != nil {
			close(h.release)
		}
		m.checkSessions()
		return
	}
	if onOther && p != nil && !p.elsewhere && p.state == statePending {
		p.state, p.byStop = stateCancelled, true // by the stopped worker: see armWant
	}
	h.to, h.task = to, task
	h.deadline = deadline
	h.dueTick = h.deadline / m.tick
	if !onOther {
		h.waitRun = m.outArm(to)
	}
	m.add(h)
	m.checkDeadline(h)
	m.checkTask(h)
	m.poke()
	synctest.Wait()
	m.settle()
}

// atDeadline returns the deadline, since the start, at which scheduleOn
// arms with ScheduleAt for delay: now plus delay, saturated, as Schedule's
// deadline; for a delay below zero, one passed by as much, but no earlier
// than the start of the current tick.
func (m *fuzzModel) atDeadline(delay time.Duration) int64 {
	if delay >= 0 {
		return addSat(m.now, int64(delay))
	}
	return max(m.now+int64(delay), m.now-m.now%m.tick) // m.now >= 0: no overflow
}

// kindName names the kind of task h for the trace.
func kindName(kind int, h *fuzzHandle) string {
	switch kind {
	case kindNilTask:
		return "nil task"
	case kindNilTimeout:
		return "nil Timeout"
	}
	s := kindNames[kind]
	if h.ft != nil && kind == kindRearm {
		s += fmt.Sprintf("(%d arms, mode %d, %v", h.ft.rearms, h.ft.rearmMode, h.ft.rearmDelay)
		if h.ft.rearmAt {
			s += " after its deadline, with ScheduleAt"
		}
		s += ")"
	}
	if h.cb {
		s += " (CancelledTask)"
	}
	return s
}

// armWant returns the error that Schedule of to must return now, given its
// latest arm p (nil if never armed), nil if it must arm it. On the second
// Timer (onOther) that waits for a run of to on the first to return. maybePending
// says it may also return ErrTimeoutPending: p is a periodic timeout that
// Cancel cancelled during a run, or after a run that the worker (or the
// polling owner, at its next poll) may not have taken back yet; or p was
// cancelled on the first Timer, which may not have taken the cancel in, and
// to is scheduled on the second (onOther).
func (m *fuzzModel) armWant(to *hashedwheel.Timeout, p *fuzzHandle, nilTask, onOther bool) (want error,
	maybePending bool) {
	switch {
	case to == nil:
		return hashedwheel.ErrNilTimeout, false
	case nilTask:
		return hashedwheel.ErrNilTask, false
	case m.stop != stopNone && !onOther:
		return hashedwheel.ErrTimerStopped, false
	}
	if p != nil {
		switch {
		case onOther && !p.elsewhere && m.stopOpen(p):
			// The stopped worker may have cancelled it and let go of it.
			maybePending = true
		case p.state == statePending:
			return hashedwheel.ErrTimeoutPending, false
		case p.cbWant && p.cbGot == 0:
			return hashedwheel.ErrTimeoutPending, false // its Cancelled call is owed
		case p.cancelledInRun && p.running && !p.returned:
			return hashedwheel.ErrTimeoutPending, false // its run is still out
		case p.cancelledInRun, p.period != 0 && (p.running || m.now < p.takenBackAt):
			maybePending = true
		}
		// A Timeout moves to another Timer once its run there has
		// returned, or once that Timer has taken its cancel in.
		switch {
		case onOther && m.runOut(to):
			return hashedwheel.ErrTimeoutPending, false
		case p.state != stateCancelled || p.elsewhere == onOther:
		case p.elsewhere && !p.takenIn:
			return hashedwheel.ErrTimeoutPending, false
		case !p.elsewhere && !m.tookIn(p):
			maybePending = true
		}
	}
	if !onOther && m.limit > 0 && m.pending() >= m.limit {
		return hashedwheel.ErrTooManyPendingTimeouts, maybePending
	}
	return nil, maybePending
}

// tookIn reports whether the Timer has certainly taken in the cancel of p,
// cancelled: its Cancelled call has been made, or the Timer has stopped.
// Otherwise it may have or not.
func (m *fuzzModel) tookIn(p *fuzzHandle) bool {
	return p.cbWant && p.cbGot > 0 || m.stop == stopDone
}

// otherBound is the cbBound of an arm on the second Timer: its Cancelled
// call comes when the test goroutine takes the cancel in (takeInOther), or
// stops that Timer.
const otherBound = math.MaxInt64 - 1

// timerOf returns the Timer h was armed on.
func (m *fuzzModel) timerOf(h *fuzzHandle) *hashedwheel.Timer {
	if h.elsewhere {
		return m.other
	}
	return m.tm
}

// pendingOther returns the model's count of pending timeouts on the second
// Timer.
func (m *fuzzModel) pendingOther() int64 {
	var n int64
	for _, h := range m.handles {
		if h.state == statePending && h.elsewhere {
			n++
		}
	}
	return n
}

// runOut reports whether the run of an arm of to is out: on the pool, or
// blocking the worker (or the owner). Schedule on the second Timer waits
// for it to return.
func (m *fuzzModel) runOut(to *hashedwheel.Timeout) bool {
	return m.outArm(to) != nil || m.blockedBy != nil && m.blockedBy.to == to && m.blockedBy.period == 0
}

// takeInOther calls NextDeadline on the second Timer, which takes in what
// was scheduled, reset and cancelled there, and makes the Cancelled calls
// owed, here.
func (m *fuzzModel) takeInOther() {
	m.tracef("the second Timer's NextDeadline()")
	at, ok := m.other.NextDeadline()
	if pending := m.pendingOther(); ok != (pending > 0) {
		m.fatalf("NextDeadline() of the second Timer = %v, %v with %d timeouts pending", at.Sub(m.start), ok, pending)
	}
	for _, h := range m.handles {
		if h.elsewhere && h.state == stateCancelled && !h.takenIn {
			h.takenIn = true
			if h.cbWant {
				h.cbBound = m.now
			}
		}
	}
	m.consumeCallbacks()
	m.checkCallbacksBy(m.now)
	synctest.Wait()
	m.settle()
}

// stopOther stops the second Timer at the end: it returns exactly the
// timeouts pending there, and makes the Cancelled calls still owed.
func (m *fuzzModel) stopOther() {
	got := m.other.Stop()
	want := make(map[*hashedwheel.Timeout]bool)
	for _, h := range m.handles {
		if !h.elsewhere {
			continue
		}
		if h.state == statePending {
			h.state, h.byStop = stateCancelled, true
			want[h.to] = true
		}
		if h.cbWant && h.cbGot == 0 {
			h.cbBound = m.now
		}
	}
	for _, to := range got {
		if !want[to] {
			m.fatalf("Stop of the second Timer returned a timeout that was not pending there: %v", to)
		}
		delete(want, to)
	}
	if len(want) > 0 {
		m.fatalf("Stop of the second Timer did not return %d of its pending timeouts", len(want))
	}
	m.consumeCallbacks()
	m.checkCallbacksBy(m.now)
}

// outArm returns the arm of to whose run is out on the pool, or nil.
func (m *fuzzModel) outArm(to *hashedwheel.Timeout) *fuzzHandle {
	for _, h := range m.handles {
		if h.to == to && h.out {
			return h
		}
	}
	return nil
}

// checkSessions checks the sessions' Timeouts never armed: they report the
// zero Timeout (guarantee 21).
func (m *fuzzModel) checkSessions() {
	for i := range m.sessions {
		to := &m.sessions[i].timeout
		if m.latest[to] != nil {
			continue
		}
		if to.IsExpired() || to.IsCancelled() || !to.Deadline().IsZero() || to.Timer() != nil || to.Task() != nil {
			m.fatalf("session %d's Timeout, never armed, is not the zero Timeout: %v", i, to)
		}
	}
}

// rearm is what a kindRearm task does with its own Timeout, to: if it has
// arms left to make, it schedules to again with a task like itself that has
// one fewer (child), and then, from inside its run (inRun), by rearmMode:
//
//	0: nothing more;
//	1: Schedule again, which must find it pending, and Reset to resetDelay;
//	2: Cancel the new arm;
//	3: Cancel it, and Schedule it again with another child, revived in place
//	   unless the task is a CancelledTask, whose Cancelled call is then owed.
//
// From inside Cancelled, in modes 2 and 3, it schedules to again and does
// nothing more. r receives what the calls returned.
func (ft *fuzzTask) rearm(to *hashedwheel.Timeout, r *runRecord, inRun bool) {
	if ft.kind != kindRearm || ft.rearms == 0 || !inRun && ft.rearmMode < 2 {
		return
	}
	tm := ft.m.tm // to.Timer() may be the second one's: see fuzzTask.Run
	r.rearm = ft.child()
	r.rearmBase, r.rearmAt, r.rearmErr = ft.armOwn(tm, to, r.rearm.task(), r.at)
	if r.rearmErr != nil || !inRun {
		return
	}
	switch ft.rearmMode {
	case 1:
		r.again = tm.Schedule(to, ft.task(), 0)
		r.resetOK = to.Reset(ft.resetDelay)
	case 2:
		r.cancelOK = to.Cancel()
	case 3:
		r.cancelOK = to.Cancel()
		r.rearm2 = ft.child()
		r.rearm2At0, r.rearm2At, r.rearm2Err = ft.armOwn(tm, to, r.rearm2.task(), r.at)
	}
}

// armOwn arms to, the task's own Timeout, with task, from inside its run or
// its Cancelled call at time at: with Schedule after rearmDelay, or, if
// rearmAt, with ScheduleAt at its latest deadline plus rearmDelay, no
// earlier than the start of at's tick (see the top of this file). It
// returns what Deadline reported before the arm (with ScheduleAt), the
// deadline, since the start, that the arm must have, and what the call
// returned.
func (ft *fuzzTask) armOwn(tm *hashedwheel.Timer, to *hashedwheel.Timeout, task hashedwheel.TimerTask,
	at int64) (base, deadline int64, err error) {
	if !ft.rearmAt {
		return 0, addSat(at, int64(max(ft.rearmDelay, 0))), tm.Schedule(to, task, ft.rearmDelay)
	}
	m := ft.m
	last := to.Deadline()
	deadline = max(int64(last.Add(ft.rearmDelay).Sub(m.start)), at-at%m.tick)
	return int64(last.Sub(m.start)), deadline, tm.ScheduleAt(to, task, m.start.Add(time.Duration(deadline)))
}

// child returns the task of an arm that ft makes of its own Timeout.
func (ft *fuzzTask) child() *fuzzTask {
	return &fuzzTask{m: ft.m, id: -1, kind: kindRearm, cb: ft.cb, rearms: ft.rearms - 1,
		rearmMode: ft.rearmMode, rearmDelay: ft.rearmDelay, resetDelay: ft.resetDelay, rearmAt: ft.rearmAt}
}

// rearmed checks what a kindRearm arm, parent, did with its Timeout from
// inside its run (inRun) or its Cancelled call, recorded in r, and adds the
// arms it made.
func (m *fuzzModel) rearmed(parent *fuzzHandle, r runRecord, inRun bool) {
	if r.rearm == nil {
		return
	}
	ft := parent.ft
	wantErr, _ := m.armWant(r.to, m.latest[r.to], false, false)
	if m.poolMay(r.rearmErr) {
		wantErr = r.rearmErr
	}
	if !errors.Is(r.rearmErr, wantErr) || (wantErr == nil && r.rearmErr != nil) {
		m.fatalf("Schedule of its own Timeout from task #%d (%s) = %v, want %v", parent.id,
			map[bool]string{true: "run", false: "Cancelled"}[inRun], r.rearmErr, wantErr)
	}
	if r.rearmErr != nil {
		m.tracef("  task #%d: Schedule(its own Timeout) = %v", parent.id, r.rearmErr)
		return
	}
	// A Stop from a task on another pool goroutine may have come after the
	// Schedule: then the arms are cancelled by it, or by the calls below.
	uncertain := m.stop != stopNone
	// Deadline, read in the run or the Cancelled call, reported the arm
	// that ran or was cancelled: nothing else can arm the Timeout
	// meanwhile, but on the pool, whose runs race the test goroutine.
	if ft.rearmAt && !m.pool && r.rearmBase != parent.deadline {
		m.fatalf("task #%d: Deadline() in its %s = start + %v, want start + %v", parent.id,
			map[bool]string{true: "run", false: "Cancelled call"}[inRun], time.Duration(r.rearmBase),
			time.Duration(parent.deadline))
	}
	n1 := m.armedByTask(r, r.rearm, r.rearmAt)
	m.tracef("  task #%d: Schedule(its own Timeout, rearm #%d, %v), due at %v", parent.id, n1.id, ft.rearmDelay,
		time.Duration(n1.deadline))
	if !inRun {
		return
	}
	switch ft.rearmMode {
	case 1:
		if !uncertain && (!errors.Is(r.again, hashedwheel.ErrTimeoutPending) || !r.resetOK) {
			m.fatalf("task #%d: a second Schedule of its pending Timeout = %v (want ErrTimeoutPending), "+
				"Reset = %v (want true)", parent.id, r.again, r.resetOK)
		}
		if r.resetOK {
			n1.deadline = addSat(r.at, int64(max(ft.resetDelay, 0)))
			n1.dueTick = n1.deadline / m.tick
			m.tracef("  task #%d: Reset(#%d, %v)", parent.id, n1.id, ft.resetDelay)
		}
	case 2, 3:
		if !uncertain && !r.cancelOK {
			m.fatalf("task #%d: Cancel of the arm it just made returned false", parent.id)
		}
		if r.cancelOK {
			m.tracef("  task #%d: Cancel(#%d)", parent.id, n1.id)
			m.cancelledInRun(n1, r.at)
		}
	}
	if ft.rearmMode != 3 || !r.cancelOK {
		return
	}
	wantErr, _ = m.armWant(r.to, n1, false, false)
	if uncertain || m.poolMay(r.rearm2Err) {
		wantErr = r.rearm2Err
	}
	if !errors.Is(r.rearm2Err, wantErr) || (wantErr == nil && r.rearm2Err != nil) {
		m.fatalf("task #%d: Schedule of the arm it just cancelled = %v, want %v", parent.id, r.rearm2Err, wantErr)
	}
	if r.rearm2Err == nil {
		if ft.rearmAt && !m.pool && r.rearm2At0 != n1.deadline {
			m.fatalf("task #%d: Deadline() after it cancelled rearm #%d = start + %v, want start + %v", parent.id,
				n1.id, time.Duration(r.rearm2At0), time.Duration(n1.deadline))
		}
		n2 := m.armedByTask(r, r.rearm2, r.rearm2At)
		m.tracef("  task #%d: Schedule(its own Timeout, rearm #%d, %v) again, due at %v", parent.id, n2.id,
			ft.rearmDelay, time.Duration(n2.deadline))
	}
}

// armedByTask adds the arm of r.to that a task armed with task ft, due at
// deadline.
func (m *fuzzModel) armedByTask(r runRecord, ft *fuzzTask, deadline int64) *fuzzHandle {
	h := &fuzzHandle{to: r.to, kind: kindRearm, cb: ft.cb, ft: ft, task: ft.task(), deadline: deadline}
	h.dueTick = h.deadline / m.tick
	h.waitRun = m.outArm(r.to)
	if m.stop != stopNone {
		// Made on the pool just before a Stop on another pool goroutine.
		h.state, h.byStop, h.uncertain = stateCancelled, true, true
	}
	m.add(h)
	return h
}

// cancelledInRun records that a task cancelled arm h at time at, from
// inside its run. The worker (or the owner) takes the cancel in once the
// run has returned: the Cancelled call is due then.
func (m *fuzzModel) cancelledInRun(h *fuzzHandle, at int64) {
	h.byStop, h.uncertain = false, false
	m.cancelled(h)
	h.cancelAt = at
	if !h.cb || m.stop != stopNone || m.owned || h.waitRun != nil {
		// After a Stop, when the worker exits; on an owner, when it next
		// takes in (see endCall); on the pool, when the run returns (see
		// runReturned).
		return
	}
	h.cbBound, h.cbAfterRun = unknownBound, true // see tickDone
}
