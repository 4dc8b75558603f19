package hashedwheel_test

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashedwheel/hashedwheel"
)

// This file holds the reference model that FuzzTimer, FuzzTimerPool and
// FuzzTimerOwned check the Timer against (see FuzzTimer for what it knows of
// the contract, and FuzzTimerOwned for what changes when an owner drives the
// Timer): the operations decoded from the input, the expected state of every
// timeout, the runs and Cancelled calls it must see, and the checks. What
// each driver alone needs is in fuzz_worker_test.go, fuzz_pool_test.go and
// fuzz_owned_test.go.

// Task kinds: what a fuzzed timeout's task does when it runs.
const (
	kindPlain  = iota
	kindBlock  // waits until a later operation releases it
	kindStop   // calls Stop on its own timer, from the worker
	kindPanic  // panics; the timer recovers and logs
	kindGoexit // calls runtime.Goexit; the worker (or the owner) goes on in a new goroutine
	kindChain  // schedules another timeout, from the worker
	kindFunc   // plain, scheduled with AfterFunc
	kindEvery  // periodic, scheduled with Every
	kindPeriod // periodic: NewPeriodicTimeout; may cancel or reset itself
	kindSlow   // periodic whose first run blocks until released
	numKinds   // the kinds the schedule op picks from

	// kindRearm is armed by Timer.Schedule alone (see scheduleOn): it
	// schedules its own Timeout again from inside its run, and from inside
	// its Cancelled call if it is a CancelledTask (see fuzzTask.rearm).
	kindRearm = numKinds
)

var kindNames = [numKinds + 1]string{"plain", "block", "stop", "panic", "goexit", "chain", "func",
	"every", "periodic", "slow-periodic", "rearm"}

// Model states of a timeout.
const (
	statePending = iota
	stateExpired
	stateCancelled
)

// Model states of the timer's Stop.
const (
	stopNone     = iota
	stopWaiting  // Stop called while a task blocks; not returned yet
	stopDone     // a Stop has returned the pending timeouts
	stopFromTask // a task stopped the timer; nobody gets the pending timeouts
)

// unknownBound is a Cancelled call's deadline while the worker is blocked
// (or the owner is inside an Advance).
const unknownBound = math.MaxInt64

// fuzzHandle is the model of one timeout.
//
// A handle is one arm of a Timeout: Timer.Schedule arms a Timeout again once
// it has ended, and each arm gets a handle of its own, with the same to. The
// Timeout reports its latest arm (fuzzModel.latest); the runs and the
// Cancelled calls of a fuzzTask name their arm by the task, which is the
// arm's own.
type fuzzHandle struct {
	id     int
	to     *hashedwheel.Timeout
	kind   int
	ft     *fuzzTask             // its task, if a fuzzTask
	task   hashedwheel.TimerTask // what Task must report once armed; nil: not checked
	state  int
	byStop bool // cancelled by Stop rather than by Cancel

	// deadline is what Deadline must report; dueTick is the tick whose
	// processing runs it (a periodic timeout: when it is not running).
	deadline int64
	dueTick  int64

	release    chan struct{} // kindBlock, kindSlow: closed to let the task return
	released   bool
	chainDelay time.Duration // kindChain: the delay of the timeout it schedules

	// Periodic timeouts.
	period     int64 // 0 for a one-shot timeout
	selfCancel int32 // the run in which the task cancels the timeout; 0 never
	selfReset  bool  // the task calls Reset, which must return false
	runs       int
	running    bool  // a run was handed out and the worker has not taken it back
	returned   bool  // the run has returned, and Reset may move the next one
	ranTick    int64 // the tick of the last run

	// CancelledTask.
	cb       bool  // the task is a CancelledTask
	cbWant   bool  // Cancel cancelled it: one Cancelled call is due
	cbGot    int   // Cancelled calls seen
	cancelAt int64 // when Cancel cancelled it
	cbBound  int64 // the latest time the call may come

	uncertain bool // FuzzTimerPool: handed out or not when a task stopped the timer

	// FuzzTimerPool: out says the run of this one-shot arm has been handed
	// to the pool and has not returned; waitRun is the arm of the same
	// Timeout whose run was out when this one was armed: the worker gets
	// this one when that run returns (see fuzzModel.runReturned).
	out     bool
	waitRun *fuzzHandle

	// cbAfterRun: Cancel cancelled it inside a run on the worker; its
	// Cancelled call comes once the worker has finished that tick.
	cbAfterRun     bool
	cancelledInRun bool  // periodic: cancelled while a run was out
	takenBackAt    int64 // periodic: when the worker (or the owner) takes back the run that returned last

	// elsewhere: armed on the model's second Timer, fuzzModel.other, which
	// runs nothing; takenIn: cancelled there, and taken in by a
	// NextDeadline of the test goroutine (see takeInOther).
	elsewhere bool
	takenIn   bool
}

// ready reports whether the worker (or the owner) has h, pending, to run:
// not out on a periodic run, nor waiting for an earlier arm's run.
func (h *fuzzHandle) ready() bool {
	return h.state == statePending && !h.running && h.waitRun == nil && !h.elsewhere
}

// runRecord is what a task records when it runs, or its Cancelled method.
type runRecord struct {
	id        int                  // the handle's id; -1 for a timeout a task scheduled
	task      *fuzzTask            // the task that ran, if a fuzzTask: it names the arm
	to        *hashedwheel.Timeout // what Run received
	at        int64                // time.Since(start) when it ran
	cancelled bool                 // a Cancelled call, not a run

	child    *hashedwheel.Timeout // kindChain: what NewTimeout returned
	childErr error
	stopped  []*hashedwheel.Timeout // kindStop: what Stop returned

	selfCancelled bool // periodic: what Cancel from the task returned
	selfReset     bool // periodic: what Reset from the task returned

	call  int64              // FuzzTimerOwned: fuzzOwner.in when it was recorded
	other bool               // a Cancelled call of an arm on fuzzModel.other
	timer *hashedwheel.Timer // what to.Timer() returned in the run

	// kindRearm (see fuzzTask.rearm): the tasks of the arms it made of its
	// own Timeout, and what Schedule, Reset and Cancel returned.
	rearm, rearm2        *fuzzTask
	rearmErr, rearm2Err  error
	rearmAt, rearm2At    int64 // the deadlines of those arms, since the start
	rearmBase, rearm2At0 int64 // with ScheduleAt: what Deadline reported before each arm
	again                error // a second Schedule, while the new arm is pending
	resetOK, cancelOK    bool
}

// fuzzModel is the reference model of one fuzzed Timer, shared by the three
// drivers: the timeouts and their expected states, the ticks as the worker
// (or the owner, inside Advance) processes them, the runs recorded and the
// checks. What only one driver needs is in its own file: fuzz_worker_test.go
// (settle and stopOp, which hand over to the others), fuzz_pool_test.go
// (poolModel) and fuzz_owned_test.go (ownerModel, and the owner's goroutine).
// It runs on the test goroutine, except where a field says otherwise.
type fuzzModel struct {
	t     *testing.T
	tm    *hashedwheel.Timer
	start time.Time
	tick  int64 // nanoseconds
	wheel int64 // buckets
	limit int64 // 0: unlimited
	now   int64 // the fake clock, nanoseconds since Start

	handles []*fuzzHandle
	byTO    map[*hashedwheel.Timeout]*fuzzHandle // each Timeout's first arm
	latest  map[*hashedwheel.Timeout]*fuzzHandle // each Timeout's latest arm
	byTask  map[*fuzzTask]*fuzzHandle

	// sessions own the Timeouts that scheduleOn arms: the zero Timeout at
	// first, reused for arm after arm.
	sessions [numSessions]fuzzSession

	// other is a second Timer, made WithoutWorker, which the test
	// goroutine alone drives, with NextDeadline only: the sessions'
	// Timeouts move between the two (see scheduleOn and takeInOther).
	other *hashedwheel.Timer

	// The worker (or the owner), as the model sees it. Ticks are processed
	// in order; while inTick is not empty the worker is in the middle of
	// tick curTick, whose runs happen at curAt. blockedBy is the task that
	// holds the worker.
	inTick    []*fuzzHandle
	curTick   int64
	curAt     int64
	freeAt    int64 // when the worker last came back from a blocking task
	blockedBy *fuzzHandle
	blockTick int64 // the tick in which a task last blocked the worker

	stop      int
	stopCalls []chan []*hashedwheel.Timeout // Stops called and not yet returned

	execCalls atomic.Int64 // calls of the executor, if there is one
	hasExec   bool

	// What only FuzzTimerPool's and FuzzTimerOwned's drivers use, in
	// fuzz_pool_test.go and fuzz_owned_test.go.
	poolModel
	ownerModel

	mu       sync.Mutex
	records  []runRecord
	consumed int // records the model has matched
	runs     int // records matched to a due timeout

	trace []string // the operations so far, for failure messages

	// far: FuzzTimerLevels, whose delays, periods and moves of the clock
	// reach the levels above the wheel (see fuzz_levels_test.go).
	far bool
}

func (m *fuzzModel) tracef(format string, args ...any) {
	m.trace = append(m.trace, fmt.Sprintf("%v: ", time.Duration(m.now))+fmt.Sprintf(format, args...))
}

// fatalf fails the execution with the operations that led to the failure.
func (m *fuzzModel) fatalf(format string, args ...any) {
	m.t.Helper()
	m.mu.Lock()
	var runs []string
	for _, r := range m.records {
		what := "ran"
		if r.cancelled {
			what = "Cancelled"
		}
		if h := m.handleOf(r); h != nil {
			runs = append(runs, fmt.Sprintf("%v: #%d %s", time.Duration(r.at), h.id, what))
		} else {
			runs = append(runs, fmt.Sprintf("%v: new %s", time.Duration(r.at), what))
		}
	}
	calls := ""
	if m.owned {
		calls = "\nthe owner's latest calls:\n\t" + strings.Join(m.ownerCalls, "\n\t")
	}
	m.mu.Unlock()
	m.t.Fatalf("%s\noperations:\n\t%s\nruns recorded:\n\t%s%s", fmt.Sprintf(format, args...),
		strings.Join(m.trace, "\n\t"), strings.Join(runs, "\n\t"), calls)
}

// op reads one operation and runs it on the timer and the model.
func (m *fuzzModel) op(in *fuzzInput) {
	op := in.next()
	if op >= reuseOps {
		m.reuseOp(op, in)
		return
	}
	switch op %= 32; {
	case op < 10:
		m.schedule(in.next(), in.next(), in.next())
	case op < 15:
		m.cancel(in.next())
	case op < 19:
		m.reset(in.next(), in.next(), in.next())
	case op < 26:
		m.advance(in.next(), in.next())
	case op < 28:
		// Release a blocked task: the one blocking the worker or the
		// first on the pool if the byte says so, otherwise any.
		var blockers []*fuzzHandle
		for _, h := range m.handles {
			if h.release != nil && !h.released {
				blockers = append(blockers, h)
			}
		}
		if len(blockers) > 0 {
			x := in.next()
			h := blockers[int(x)%len(blockers)]
			if x&0x80 != 0 && m.blockedBy != nil {
				h = m.blockedBy
			}
			if x&0x80 != 0 && len(m.busy) > 0 {
				h = m.busy[0]
			}
			m.release(h)
		}
	case op < 30:
		m.stopOp()
	case op == 31:
		m.probe()
	default:
		// Only synctest.Wait and the checks.
		synctest.Wait()
		m.settle()
	}
}

// delay decodes a delay for NewTimeout or Reset: the edges of ticks, of
// turns of the wheel and of the int64 range.
func (m *fuzzModel) delay(b1, b2 byte) time.Duration {
	if m.far && b1&0x80 != 0 {
		return m.farDelay(b1, b2)
	}
	T, W := m.tick, m.wheel*m.tick
	toBoundary := T - m.now%T // in (0, T]: to the start of the next tick
	k := int64(b2%4) + 1
	var d int64
	switch b1 % 20 {
	case 0:
		d = 0
	case 1:
		d = -1
	case 2:
		d = math.MinInt64
	case 3:
		d = 1
	case 4:
		d = T - 1
	case 5:
		d = k * T
	case 6:
		d = k*T - 1
	case 7:
		d = k*T + 1
	case 8:
		d = W
	case 9:
		d = W - 1
	case 10:
		d = W + 1
	case 11:
		d = k * W
	case 12:
		d = k*W + T/2
	case 13:
		d = math.MaxInt64
	case 14:
		d = math.MaxInt64 - int64(b2)
	case 15:
		d = toBoundary + (k-1)*T
	case 16:
		d = toBoundary + (k-1)*T - 1
	case 17:
		d = toBoundary + (k-1)*T + 1
	case 18:
		d = int64(b2) * T / 16
	default:
		d = int64(time.Hour)
	}
	return time.Duration(d)
}

// period decodes a period: around the tick, a turn of the wheel, and the
// invalid ones.
func (m *fuzzModel) period(b1, b2 byte) time.Duration {
	if m.far && b1&0x80 != 0 {
		return m.farPeriod(b1, b2)
	}
	T, W := m.tick, m.wheel*m.tick
	k := int64(b2%3) + 1
	var d int64
	switch b1 % 12 {
	case 0:
		d = T
	case 1:
		d = T - 1
	case 2:
		d = T + 1
	case 3:
		d = k * T
	case 4:
		d = T / 2
	case 5:
		d = 1
	case 6:
		d = W
	case 7:
		d = W + T/3
	case 8:
		d = int64(b2)*T/16 + 1
	case 9:
		d = math.MaxInt64
	case 10:
		d = 0
	default:
		d = -T
	}
	return time.Duration(d)
}

// advanceBy decodes how far to move the fake clock. While a periodic timeout
// is pending, or a task blocks or may block the worker (which then walks
// every tick it missed), it moves at most 64 ticks, so that one execution
// stays short.
func (m *fuzzModel) advanceBy(b1, b2 byte) time.Duration {
	if m.far && b1&0x80 != 0 {
		return m.farAdvanceBy(b1, b2)
	}
	T, W := m.tick, m.wheel*m.tick
	toBoundary := T - m.now%T
	k := int64(b2%4) + 1
	var d int64
	switch b1 % 14 {
	case 0:
		d = 1
	case 1:
		d = T - 1
	case 2:
		d = T
	case 3:
		d = T + 1
	case 4:
		d = toBoundary
	case 5:
		d = toBoundary - 1
	case 6:
		d = toBoundary + 1
	case 7:
		d = k * T
	case 8:
		d = W
	case 9:
		d = W + toBoundary
	case 10:
		d = k * W
	case 11:
		d = k*W + toBoundary - 1
	case 12:
		d = int64(b2) * T / 16
	default:
		d = int64(time.Hour)
	}
	for _, h := range m.handles {
		periodic := h.period != 0 && h.state == statePending
		blocking := h.release != nil && !h.released && (h.state == statePending || h.running)
		if periodic || blocking && !m.pool || h == m.blockedBy {
			d = min(d, 64*T)
			break
		}
	}
	if m.poll > 0 {
		d = min(d, 64*m.poll) // the polling owner wakes at every poll
	}
	return time.Duration(d)
}

func (m *fuzzModel) schedule(kindByte, b1, b2 byte) {
	h := &fuzzHandle{id: len(m.handles), kind: int(kindByte&15) % numKinds, cb: kindByte&16 != 0}
	if m.pool && h.kind >= kindEvery {
		h.kind = kindPlain
	}
	if h.kind == kindFunc || h.kind == kindEvery {
		h.cb = false // their task is a function
	}
	var delay time.Duration
	switch h.kind {
	case kindEvery, kindPeriod, kindSlow:
		delay = m.period(b1, b2)
		if h.kind == kindPeriod {
			h.selfCancel = int32(kindByte>>5) % 4
			h.selfReset = kindByte&0x80 != 0
		}
		if h.kind == kindSlow {
			h.release = make(chan struct{})
		}
	default:
		delay = m.delay(b1, b2)
	}
	switch h.kind {
	case kindBlock:
		h.release = make(chan struct{})
	case kindChain:
		h.chainDelay = m.delay(b2, b1)
	}
	periodic := h.kind == kindEvery || h.kind == kindPeriod || h.kind == kindSlow
	var wantErr error
	switch {
	case periodic && delay <= 0:
		wantErr = hashedwheel.ErrInvalidPeriod
	case m.stop != stopNone:
		wantErr = hashedwheel.ErrTimerStopped
	case m.limit > 0 && m.pending() >= m.limit:
		wantErr = hashedwheel.ErrTooManyPendingTimeouts
	}
	cb := ""
	if h.cb {
		cb = " (CancelledTask)"
	}
	m.tracef("schedule %s%s #%d, %v", kindNames[h.kind], cb, h.id, delay)
	var to *hashedwheel.Timeout
	var err error
	var task hashedwheel.TimerTask
	switch h.kind {
	case kindFunc:
		id := h.id
		to, err = m.tm.AfterFunc(delay, func() { m.record(runRecord{id: id, at: m.since()}) })
	case kindEvery:
		id := h.id
		to, err = m.tm.Every(delay, func() { m.record(runRecord{id: id, at: m.since()}) })
	case kindPeriod, kindSlow:
		task = m.task(h)
		to, err = m.tm.NewPeriodicTimeout(task, delay)
	default:
		task = m.task(h)
		to, err = m.tm.NewTimeout(task, delay)
	}
	if !errors.Is(err, wantErr) || (wantErr == nil && err != nil) {
		m.fatalf("schedule(%v) = %v, want %v", delay, err, wantErr)
	}
	if err != nil {
		m.tracef("  rejected: %v", err)
		if to != nil {
			m.fatalf("a timeout returned with error %v", err)
		}
		if h.release != nil {
			close(h.release)
		}
		return
	}
	h.to = to
	h.deadline = addSat(m.now, int64(max(delay, 0)))
	h.dueTick = h.deadline / m.tick
	if periodic {
		h.period = int64(delay)
	}
	if task != nil {
		h.task, h.ft = task, taskOf(task)
	}
	m.checkDeadline(h)
	m.checkTask(h)
	if h.to.Timer() != m.tm {
		m.fatalf("#%d: Timer() is not the timer that made it", h.id)
	}
	m.add(h)
	m.poke()
	synctest.Wait()
	m.settle()
}

func (m *fuzzModel) add(h *fuzzHandle) {
	h.id = len(m.handles)
	m.handles = append(m.handles, h)
	if m.byTO[h.to] == nil {
		m.byTO[h.to] = h
	}
	m.latest[h.to] = h
	if h.ft != nil {
		m.byTask[h.ft] = h
	}
}

func (m *fuzzModel) since() int64 { return int64(time.Since(m.start)) }

// checkTask checks that Task reports the task of arm h, just armed, on the
// goroutine that armed it. Not for a kindRearm arm: a Task call races with a
// Schedule of the same Timeout on another goroutine, and its task, run on
// the worker, schedules its Timeout again.
func (m *fuzzModel) checkTask(h *fuzzHandle) {
	if h.task != nil && h.kind != kindRearm && h.to.Task() != h.task {
		m.fatalf("#%d: Task() is not the task it was armed with", h.id)
	}
}

func (m *fuzzModel) checkDeadline(h *fuzzHandle) {
	if want := m.start.Add(time.Duration(h.deadline)); !h.to.Deadline().Equal(want) {
		m.fatalf("#%d: Deadline() = %v, want %v (start + %v)", h.id, h.to.Deadline(), want, time.Duration(h.deadline))
	}
}

func (m *fuzzModel) task(h *fuzzHandle) hashedwheel.TimerTask {
	ft := &fuzzTask{m: m, id: h.id, kind: h.kind, cb: h.cb, release: h.release, chainDelay: h.chainDelay,
		selfCancel: h.selfCancel, selfReset: h.selfReset}
	return ft.task()
}

// taskOf returns the fuzzTask of a task that task made.
func taskOf(task hashedwheel.TimerTask) *fuzzTask {
	switch ft := task.(type) {
	case *fuzzTask:
		return ft
	case fuzzCallbackTask:
		return ft.fuzzTask
	}
	return nil
}

// childTask is the task of a timeout that a kindChain task schedules.
func (m *fuzzModel) childTask() hashedwheel.TimerTask {
	return hashedwheel.TimerFunc(func(to *hashedwheel.Timeout) {
		m.record(runRecord{id: -1, to: to, at: m.since()})
	})
}

func (m *fuzzModel) record(r runRecord) {
	if m.owner != nil && !r.other {
		r.call = m.owner.in.Load()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.records = append(m.records, r)
	if m.owner == nil || r.other {
		return
	}
	// Tasks run inside Advance, on the goroutine that calls it (18).
	// Cancelled calls come inside the owner's Advance or NextDeadline, or
	// inside a Stop that finds them not yet taken in, as Stop's doc says
	// (see TestGuarantee20CancelledCallsComeInsideAdvanceOrStop).
	switch {
	case !r.cancelled && r.call > 0:
		m.callRuns[r.call]++
	case !r.cancelled:
		m.ownerErrs = append(m.ownerErrs, fmt.Sprintf("a task ran at %v outside the owner's Advance (in %d)",
			time.Duration(r.at), r.call))
	case r.call == inNothing:
		m.ownerErrs = append(m.ownerErrs, fmt.Sprintf("Cancelled was called at %v outside Advance, "+
			"NextDeadline and Stop", time.Duration(r.at)))
	}
}

// pick returns the latest arm of the Timeout of one of the handles: what a
// call on that Timeout acts on.
func (m *fuzzModel) pick(b byte) *fuzzHandle {
	if len(m.handles) == 0 {
		return nil
	}
	return m.latest[m.handles[int(b)%len(m.handles)].to]
}

// cancelled records that Cancel cancelled h at the current time, and when
// its Cancelled call is due: at the next tick the worker processes.
func (m *fuzzModel) cancelled(h *fuzzHandle) {
	h.state = stateCancelled
	h.cancelAt = m.now
	if !h.cb {
		return
	}
	h.cbWant = true
	switch {
	case h.elsewhere:
		h.cbBound = otherBound
	case h.waitRun != nil:
		h.cbBound = unknownBound // once the run it waits for returns
	case m.owned && m.workerFree() && !m.inCall:
		h.cbBound = m.nextOwnerCall()
	case m.workerFree() && !m.owned:
		h.cbBound = tickEnd(m.now/m.tick, m.tick)
	default:
		h.cbBound = unknownBound // set when the worker is released, or exits
	}
}

func (m *fuzzModel) cancel(b byte) {
	if h := m.pick(b); h != nil {
		m.cancelArm(h)
	}
}

// cancelArm calls Cancel on the Timeout whose latest arm is h.
func (m *fuzzModel) cancelArm(h *fuzzHandle) {
	m.tracef("Cancel(#%d)", h.id)
	got := h.to.Cancel()
	switch {
	case m.stopOpen(h):
		// A stopped worker waiting for a blocked task may already have
		// cancelled it; then Cancel must say false.
		if got {
			m.cancelled(h)
			h.byStop, h.uncertain = false, false
		} else {
			if !h.to.IsCancelled() && !h.uncertain {
				m.fatalf("Cancel(#%d) = false while Stop waits, but it is not cancelled", h.id)
			}
			if !h.uncertain {
				h.state, h.byStop = stateCancelled, true
			}
		}
	case h.state != statePending:
		if got {
			m.fatalf("Cancel(#%d) = true on a timeout that is %s", h.id, stateName(h.state))
		}
	default:
		if !got {
			m.fatalf("Cancel(#%d) = false on a pending timeout", h.id)
		}
		m.cancelled(h)
		if h.running && !h.returned {
			h.cancelledInRun = true
		}
		m.inTick = slices.DeleteFunc(m.inTick, func(x *fuzzHandle) bool { return x == h })
	}
	m.poke()
	synctest.Wait()
	m.settle()
}

func (m *fuzzModel) reset(b, b1, b2 byte) {
	if h := m.pick(b); h != nil {
		m.resetArm(h, m.delay(b1, b2))
	}
}

// resetArm calls Reset(d) on the Timeout whose latest arm is h.
func (m *fuzzModel) resetArm(h *fuzzHandle, d time.Duration) {
	m.tracef("Reset(#%d, %v)", h.id, d)
	got := h.to.Reset(d)
	switch {
	case m.stopOpen(h) && (!h.running || h.returned):
		// Pending until the stopped worker cancels it; Reset may move it.
		if got {
			h.deadline = addSat(m.now, int64(max(d, 0)))
		}
	case h.state != statePending || h.running && !h.returned:
		if got {
			m.fatalf("Reset(#%d) = true on a timeout that is %s (running %v)", h.id, stateName(h.state), h.running)
		}
	default:
		if !got {
			m.fatalf("Reset(#%d) = false on a pending timeout", h.id)
		}
		h.deadline = addSat(m.now, int64(max(d, 0)))
		h.dueTick = h.deadline / m.tick
		m.inTick = slices.DeleteFunc(m.inTick, func(x *fuzzHandle) bool { return x == h })
	}
	if got {
		m.checkDeadline(h)
	}
	m.poke()
	synctest.Wait()
	m.settle()
}

func (m *fuzzModel) advance(b1, b2 byte) {
	d := m.advanceBy(b1, b2)
	m.tracef("Sleep(%v)", d)
	time.Sleep(d)
	synctest.Wait()
	m.now += int64(d)
	if got := m.since(); got != m.now {
		m.fatalf("the fake clock reads %v, want %v", time.Duration(got), time.Duration(m.now))
	}
	m.settle()
}

func (m *fuzzModel) release(h *fuzzHandle) {
	m.tracef("release(#%d)", h.id)
	close(h.release)
	h.released = true
	synctest.Wait()
	if h.running && !h.returned {
		m.returned(h, m.now)
	}
	if i := slices.Index(m.busy, h); i >= 0 {
		m.busy = slices.Delete(m.busy, i, i+1)
		m.runReturned(h, m.now)
		m.startPooled(m.now)
		m.maybeFinishStop()
		m.settle()
		return
	}
	if m.blockedBy != h {
		m.settle()
		return
	}
	m.blockedBy = nil
	m.freeAt = m.now
	m.curAt = m.now
	if m.stop == stopWaiting {
		m.rearm(m.now) // the run returns to a stopped worker, which keeps it pending
		m.finishStop()
		return
	}
	m.settle()
}

// deferCallbacks makes the Cancelled calls not yet made due when the worker
// exits, which is later than a tick once it is stopped and waits.
func (m *fuzzModel) deferCallbacks() {
	for _, x := range m.handles {
		if x.cbWant && x.cbGot == 0 && !x.elsewhere {
			x.cbBound = unknownBound
		}
	}
}

// exited is the worker's exit: the Cancelled calls deferred are due now.
func (m *fuzzModel) exited() {
	for _, x := range m.handles {
		if x.cbWant && x.cbBound == unknownBound {
			x.cbBound = m.now
		}
	}
	m.consumeCallbacks()
	m.checkCallbacksBy(m.now)
}

// finishStop is the worker's exit after a Stop: every pending timeout is
// cancelled, the first Stop returns exactly those, later ones none; every
// Cancelled call due has been made.
func (m *fuzzModel) finishStop() {
	want := make(map[*hashedwheel.Timeout]bool)
	for _, h := range m.handles {
		if (h.state == statePending || h.byStop) && !h.elsewhere {
			h.state, h.byStop = stateCancelled, true
			want[h.to] = true
		}
	}
	m.inTick = nil
	m.stop = stopDone
	m.exited()
	for i, c := range m.stopCalls {
		var got []*hashedwheel.Timeout
		select {
		case got = <-c:
		default:
			m.fatalf("Stop did not return once the worker was free")
		}
		if i > 0 {
			if len(got) != 0 {
				m.fatalf("a later Stop returned %d timeouts, want none", len(got))
			}
			continue
		}
		seen := make(map[*hashedwheel.Timeout]bool)
		for _, to := range got {
			h := m.latest[to]
			switch {
			case h == nil:
				m.fatalf("Stop returned a timeout that was never scheduled: %v", to)
			case seen[to]:
				m.fatalf("Stop returned #%d twice", h.id)
			case !want[to]:
				m.fatalf("Stop returned #%d, which is %s", h.id, stateName(h.state))
			}
			seen[to] = true
		}
		for to := range want {
			if !seen[to] {
				m.fatalf("Stop did not return pending #%d", m.latest[to].id)
			}
		}
	}
	m.stopCalls = nil
}

// pending returns the model's count of pending timeouts.
func (m *fuzzModel) pending() int64 {
	var n int64
	for _, h := range m.handles {
		if h.state == statePending && !h.elsewhere {
			n++
		}
	}
	return n
}

// nextRun returns the next recorded run, handling Cancelled calls on the way.
func (m *fuzzModel) nextRun() (runRecord, bool) {
	for {
		m.mu.Lock()
		if m.consumed == len(m.records) {
			m.mu.Unlock()
			return runRecord{}, false
		}
		r := m.records[m.consumed]
		m.consumed++
		m.mu.Unlock()
		if !r.cancelled {
			return r, true
		}
		m.callback(r)
	}
}

// consumeCallbacks handles the Cancelled calls recorded after the last run.
func (m *fuzzModel) consumeCallbacks() {
	for {
		m.mu.Lock()
		if m.consumed == len(m.records) || !m.records[m.consumed].cancelled {
			m.mu.Unlock()
			return
		}
		r := m.records[m.consumed]
		m.consumed++
		m.mu.Unlock()
		m.callback(r)
	}
}

// callback checks a Cancelled call: one, for a timeout that Cancel
// cancelled, after the Cancel and no later than the next tick.
func (m *fuzzModel) callback(r runRecord) {
	h := m.handleOf(r)
	switch {
	case h == nil:
		m.fatalf("Cancelled called for %s", m.describe(r))
	case !h.cbWant:
		m.fatalf("Cancelled called at %v for #%d, which Cancel did not cancel (%s)", time.Duration(r.at), h.id,
			stateName(h.state))
	case h.cbGot > 0:
		m.fatalf("Cancelled called twice for #%d", h.id)
	case r.at < h.cancelAt || r.at > h.cbBound:
		m.fatalf("Cancelled for #%d called at %v, want in [%v, %v]", h.id, time.Duration(r.at),
			time.Duration(h.cancelAt), time.Duration(h.cbBound))
	case r.to != h.to:
		m.fatalf("Cancelled for #%d called with another timeout", h.id)
	}
	h.cbGot++
	m.rearmed(h, r, false)
}

// checkCallbacksBy fails if a Cancelled call due by now has not come.
func (m *fuzzModel) checkCallbacksBy(now int64) {
	for _, h := range m.handles {
		if h.cbWant && h.cbGot == 0 && (h.cbBound <= now || m.stop == stopDone && !h.elsewhere) {
			m.fatalf("Cancelled for #%d, cancelled at %v, not called by %v", h.id, time.Duration(h.cancelAt),
				time.Duration(now))
		}
	}
}

func (m *fuzzModel) handleOf(r runRecord) *fuzzHandle {
	if r.task != nil {
		return m.byTask[r.task]
	}
	if r.to == nil && r.id >= 0 {
		return m.handles[r.id] // AfterFunc's and Every's tasks get no timeout
	}
	return m.byTO[r.to]
}

func (m *fuzzModel) describe(r runRecord) string {
	if h := m.handleOf(r); h != nil {
		return fmt.Sprintf("#%d (%s, deadline %v)", h.id, stateName(h.state), time.Duration(h.deadline))
	}
	return fmt.Sprintf("unknown timeout %v", r.to)
}

// runInTick matches the recorded runs with the timeouts due in the current
// tick, in the order the worker ran them, until they are all run or one
// blocks or stops the worker.
func (m *fuzzModel) runInTick() {
	for len(m.inTick) > 0 {
		r, ok := m.nextRun()
		if !ok {
			var ids []int
			for _, h := range m.inTick {
				ids = append(ids, h.id)
			}
			m.fatalf("timeouts %v, due in tick %d, did not run by %v", ids, m.curTick, time.Duration(m.curAt))
		}
		h := m.handleOf(r)
		i := slices.Index(m.inTick, h)
		switch {
		case h == nil || i < 0:
			m.fatalf("unexpected run at %v of %s; due now: %d timeouts", time.Duration(r.at), m.describe(r), len(m.inTick))
		case r.at != m.curAt:
			m.fatalf("#%d (deadline %v) ran at %v, want %v", h.id, time.Duration(h.deadline),
				time.Duration(r.at), time.Duration(m.curAt))
		}
		m.inTick = slices.Delete(m.inTick, i, i+1)
		m.runs++
		if h.period == 0 {
			h.state = stateExpired
		}
		m.ran(h, r)
		switch {
		case h.kind == kindBlock && !h.released, h.kind == kindSlow && h.runs == 1 && !h.released:
			m.blockedBy = h
			m.blockTick = m.curTick
			return
		case h.kind == kindStop:
			return
		case h.kind == kindGoexit:
			// The worker goes on in a new goroutine, which processes this
			// tick again from its start: it takes back the periodic runs
			// that have returned, still in this tick, and may find them due
			// in the bucket it is about to visit again. The owner's
			// successor does the same in a new call, at once: it takes in
			// what was pushed during the call cut short (the periodic runs
			// of its earlier ticks too, and the cancels), and processes the
			// rest of this tick and every tick that has ended by now.
			m.rearmAt(m.curAt, m.curTick)
			for _, x := range m.handles {
				if x.period != 0 && x.state == statePending && !x.running && x.dueTick <= m.curTick &&
					!slices.Contains(m.inTick, x) {
					m.inTick = append(m.inTick, x)
				}
			}
			if m.owned {
				m.takeInCallbacks(m.curAt)
				m.callAt, m.callEnd = m.curAt, m.curAt/m.tick
			}
		}
	}
}

// ran checks a run against the handle and applies what the task did.
func (m *fuzzModel) ran(h *fuzzHandle, r runRecord) {
	if r.id >= 0 && r.id != h.id {
		m.fatalf("the task of #%d ran with the timeout of #%d", r.id, h.id)
	}
	if r.at < h.deadline && h.period == 0 {
		m.fatalf("#%d ran early", h.id) // the model would be wrong
	}
	if r.timer != nil && r.timer != m.tm && !(m.pool && m.latest[h.to] != h) {
		m.fatalf("#%d: Timer() in its run is not the Timer it runs on", h.id)
	}
	h.runs++
	if h.period != 0 {
		// Deadline reports this run's due time until it returns. A run
		// handed out late is the latest one due: those more than a period
		// behind are skipped.
		h.running, h.returned = true, false
		h.ranTick = m.curTick
		h.deadline = latestDue(h.deadline, h.period, r.at)
		if r.selfReset {
			m.fatalf("Reset from inside the run of periodic #%d returned true", h.id)
		}
		if h.selfCancel == int32(h.runs) {
			if !r.selfCancelled {
				m.fatalf("Cancel from inside the run of periodic #%d returned false", h.id)
			}
			m.cancelled(h)
			h.cancelledInRun = true
			h.cancelAt = r.at
			if h.cb {
				h.cbBound = unknownBound // when the run comes back
			}
		}
		if h.kind != kindSlow || h.runs > 1 || h.released {
			m.returned(h, r.at) // the task does not block
		}
	}
	switch h.kind {
	case kindStop:
		if len(r.stopped) != 0 {
			m.fatalf("Stop from a task returned %d timeouts, want none", len(r.stopped))
		}
		if m.stop == stopNone {
			m.stoppedFromTask()
		}
		// Otherwise a task handed to the pool before a Stop runs after it.
	case kindChain:
		m.chained(h, r)
	case kindRearm:
		m.rearmed(h, r, true)
	}
}

// stoppedFromTask applies a Stop from a task: the timeouts still pending are
// cancelled by the worker, and nobody gets them. On the pool, the worker may
// have handed out some of the rest of the tick before it saw the stop.
func (m *fuzzModel) stoppedFromTask() {
	m.stop = stopFromTask
	if m.pool && len(m.queue) > 0 {
		for _, x := range m.queue[len(m.queue)-1] {
			x.uncertain = true
		}
	}
	for _, x := range m.handles {
		if x.state == statePending && !x.elsewhere {
			x.state, x.byStop = stateCancelled, true
		}
	}
	m.inTick = nil
	if m.pool {
		m.deferCallbacks() // the worker exits once the pool is done
		return
	}
	for _, x := range m.handles {
		if x.cbWant && x.cbGot == 0 && !x.elsewhere {
			x.cbBound = min(x.cbBound, m.now) // before the worker exits
		}
	}
}

// returned is the return of periodic h's run at time at: Deadline reports
// the next run, due a period after this one was, skipping those due more
// than a period before at; Reset may move it from now on.
func (m *fuzzModel) returned(h *fuzzHandle, at int64) {
	h.returned = true
	h.deadline = latestDue(addSat(h.deadline, h.period), h.period, at)
}

// rearm takes back the periodic timeouts whose runs have returned, at time
// at: the next run is due when returned (or a Reset since) says; it runs in
// a later tick than the last. One cancelled during its run gets its
// Cancelled call now.
func (m *fuzzModel) rearm(at int64) { m.rearmAt(at, -1) }

// rearmAt is rearm by a worker standing at tick, or, if tick is -1, at the
// tick after the one each timeout ran in.
func (m *fuzzModel) rearmAt(at, tick int64) {
	for _, h := range m.handles {
		if !h.running || !h.returned {
			continue
		}
		h.running, h.returned = false, false
		h.takenBackAt = at
		if h.state == stateCancelled {
			if h.cbWant && h.cbBound == unknownBound {
				h.cbBound = at
			}
			continue
		}
		next := h.deadline
		floor := tick
		if floor < 0 {
			floor = h.ranTick + 1
		}
		h.dueTick = max(next/m.tick, floor)
	}
}

// chained checks the NewTimeout that a kindChain task made, and adds its
// timeout to the model.
func (m *fuzzModel) chained(parent *fuzzHandle, r runRecord) {
	var wantErr error
	if m.limit > 0 && m.pending() >= m.limit {
		wantErr = hashedwheel.ErrTooManyPendingTimeouts
	}
	if m.stop != stopNone {
		wantErr = hashedwheel.ErrTimerStopped
	}
	if m.poolMay(r.childErr) {
		wantErr = r.childErr
	}
	if !errors.Is(r.childErr, wantErr) || (wantErr == nil && r.childErr != nil) {
		m.fatalf("NewTimeout from task #%d = %v, want %v", parent.id, r.childErr, wantErr)
	}
	if r.childErr != nil {
		return
	}
	h := &fuzzHandle{to: r.child, kind: kindPlain, deadline: addSat(r.at, int64(max(parent.chainDelay, 0)))}
	h.dueTick = h.deadline / m.tick
	if m.stop != stopNone {
		// Made on the pool just before a Stop on another pool goroutine.
		h.state, h.byStop, h.uncertain = stateCancelled, true, true
	}
	m.add(h)
	m.tracef("  task #%d: NewTimeout(plain #%d, %v)", parent.id, h.id, parent.chainDelay)
	m.checkDeadline(h)
}

// poolMay reports whether err, returned to a task on the pool that scheduled
// a timeout, may be right whatever the model expected: the worker may expire
// more of the tick meanwhile, and a task on another pool goroutine may stop
// the timer, before or after the call, whatever the order of their records.
func (m *fuzzModel) poolMay(err error) bool {
	return m.pool && (errors.Is(err, hashedwheel.ErrTooManyPendingTimeouts) ||
		errors.Is(err, hashedwheel.ErrTimerStopped) && m.anyStopTask() ||
		err == nil && m.stop == stopFromTask)
}

func (m *fuzzModel) anyStopTask() bool {
	for _, h := range m.handles {
		if h.kind == kindStop {
			return true
		}
	}
	return false
}

// check compares the timer's view of every timeout with the model's.
func (m *fuzzModel) check() {
	wantPending := m.pending()
	if m.stop != stopNone {
		wantPending = 0
	}
	if got := m.tm.PendingTimeouts(); got != wantPending {
		m.fatalf("PendingTimeouts() = %d, want %d", got, wantPending)
	}
	if m.other != nil {
		if got, want := m.other.PendingTimeouts(), m.pendingOther(); got != want {
			m.fatalf("PendingTimeouts() of the second Timer = %d, want %d", got, want)
		}
	}
	m.checkSessions()
	for _, h := range m.handles {
		if m.latest[h.to] != h {
			continue // the Timeout reports a later arm
		}
		expired, cancelled := h.to.IsExpired(), h.to.IsCancelled()
		want := h.state
		switch {
		case h.uncertain:
			if expired && cancelled {
				m.fatalf("#%d: both expired and cancelled", h.id)
			}
			continue
		case m.stop == stopWaiting && h.state == statePending && cancelled && !h.elsewhere:
			// Stop may cancel the pending timeouts before it returns.
			want = stateCancelled
		case m.stop == stopFromTask && m.pool && !m.poolExited && h.byStop && !expired && !cancelled:
			continue // cancelled when the worker exits
		}
		if expired != (want == stateExpired) || cancelled != (want == stateCancelled) {
			m.fatalf("#%d: IsExpired() = %v, IsCancelled() = %v, want %s", h.id, expired, cancelled, stateName(want))
		}
		if h.state == statePending && (m.stop == stopNone || h.elsewhere) {
			m.checkDeadline(h)
		}
		if h.to.Timer() != m.timerOf(h) {
			m.fatalf("#%d: Timer() is not the timer it was armed on", h.id)
		}
	}
}

// final checks that every timeout ended in exactly one way.
func (m *fuzzModel) final() {
	if m.stop == stopWaiting || len(m.stopCalls) > 0 {
		m.fatalf("a Stop never returned")
	}
	m.stopOther()
	for _, h := range m.handles {
		expired, cancelled := h.to.IsExpired(), h.to.IsCancelled()
		switch {
		case h.uncertain && m.latest[h.to] == h:
			if expired == cancelled {
				m.fatalf("#%d, left by a Stop from a task, is expired %v and cancelled %v", h.id, expired, cancelled)
			}
			if expired {
				m.fatalf("#%d was handed to the pool after a Stop from a task but never ran", h.id)
			}
		case h.state == statePending:
			m.fatalf("#%d still pending after Stop", h.id)
		case h.state == stateExpired && h.period == 0 && h.runs != 1:
			m.fatalf("#%d expired and ran %d times", h.id, h.runs)
		}
		if h.cbWant && h.cbGot != 1 {
			m.fatalf("#%d got %d Cancelled calls, want 1", h.id, h.cbGot)
		}
	}
	if m.hasExec {
		if got := m.execCalls.Load(); got != int64(m.runs) {
			m.fatalf("executor called %d times for %d runs", got, m.runs)
		}
	}
	if m.owned {
		m.finalOwned()
	}
	m.checkStats()
}

// checkStats checks, once the Timer is stopped and every task has returned,
// that Stats agrees with the model: every run counted in Expired, every arm
// cancelled (by Cancel, by Stop, or by Cancel and then armed again in place
// before the worker saw it) in Cancelled, none pending.
func (m *fuzzModel) checkStats() {
	var cancelled uint64
	for _, h := range m.handles {
		// An uncertain one has ended cancelled: final checked it.
		if (h.state == stateCancelled || h.uncertain) && !h.elsewhere {
			cancelled++
		}
	}
	s := m.tm.Stats()
	if s.Expired != uint64(m.runs) || s.Cancelled != cancelled || s.Pending != 0 {
		m.fatalf("Stats() = %+v; want Expired %d, Cancelled %d, Pending 0", s, m.runs, cancelled)
	}
}

// addSat returns a+b, for a, b >= 0, saturated at math.MaxInt64.
func addSat(a, b int64) int64 {
	if b > math.MaxInt64-a {
		return math.MaxInt64
	}
	return a + b
}

// fuzzTask is the task of a fuzzed timeout. It runs on the worker (or the
// pool), records the run and then does what its kind says. Its fields are
// copies: the model changes the handle on the test goroutine.
type fuzzTask struct {
	m          *fuzzModel
	id, kind   int
	cb         bool // it is a CancelledTask: task returns a fuzzCallbackTask
	release    chan struct{}
	chainDelay time.Duration
	selfCancel int32
	selfReset  bool
	runs       atomic.Int32

	// kindRearm: see rearm.
	rearms     int           // arms of its own Timeout left to make, itself included
	rearmMode  int           // what it does once it has armed it
	rearmDelay time.Duration // the delay of each arm it makes
	resetDelay time.Duration // rearmMode 1: the delay Reset moves the new arm to
	rearmAt    bool          // it arms with ScheduleAt, at its last deadline plus rearmDelay
}

// task returns ft as the task to schedule.
func (ft *fuzzTask) task() hashedwheel.TimerTask {
	if ft.cb {
		return fuzzCallbackTask{ft}
	}
	return ft
}

func (ft *fuzzTask) Run(to *hashedwheel.Timeout) {
	m := ft.m
	// The timeout's Timer is the one it runs on, unless, its run handed to
	// the pool, it was scheduled on the second Timer meanwhile.
	r := runRecord{id: ft.id, task: ft, to: to, at: m.since(), timer: to.Timer()}
	run := ft.runs.Add(1)
	switch ft.kind {
	case kindRearm:
		ft.rearm(to, &r, true)
	case kindChain:
		r.child, r.childErr = m.tm.NewTimeout(m.childTask(), ft.chainDelay)
	case kindStop:
		r.stopped = m.tm.Stop()
	case kindPeriod:
		if ft.selfReset {
			r.selfReset = to.Reset(0)
		}
		if run == ft.selfCancel {
			r.selfCancelled = to.Cancel()
		}
	}
	m.record(r)
	switch ft.kind {
	case kindBlock:
		<-ft.release
	case kindSlow:
		if run == 1 {
			<-ft.release
		}
	case kindPanic:
		panic("fuzz: a task panics")
	case kindGoexit:
		runtime.Goexit()
	}
}

// fuzzCallbackTask is a fuzzTask that is a CancelledTask.
type fuzzCallbackTask struct{ *fuzzTask }

func (ft fuzzCallbackTask) Cancelled(to *hashedwheel.Timeout) {
	r := runRecord{id: ft.id, task: ft.fuzzTask, to: to, at: ft.m.since(), cancelled: true}
	r.other = ft.m.other != nil && to.Timer() == ft.m.other
	ft.rearm(to, &r, false)
	ft.m.record(r)
}

func tickEnd(tick, T int64) int64 {
	if tick >= math.MaxInt64/T {
		return math.MaxInt64 // never
	}
	return (tick + 1) * T
}

// latestDue returns the first of due, due+period, due+2*period, ... that is
// at most one period behind now: a run exactly one period behind is on time,
// one more than a period behind is skipped.
func latestDue(due, period, now int64) int64 {
	for now-due > period {
		// Whole periods at once, then the last few one by one.
		if k := (now - due) / period; k > 1 {
			due += (k - 1) * period
			continue
		}
		due += period
	}
	return due
}

func stateName(s int) string {
	return [...]string{"pending", "expired", "cancelled"}[s]
}
