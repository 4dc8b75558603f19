package hashedwheel_test

import (
	"errors"
	"fmt"
	"log/slog"
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

// FuzzTimer decodes its input into a sequence of operations on one Timer,
// runs them on the fake clock of a synctest bubble, and checks every result
// against a reference model: every run time, exactly; every return value of
// NewTimeout, Cancel and Stop; IsExpired, IsCancelled, Deadline and
// PendingTimeouts after every operation; and at the end that every timeout
// ran exactly once or was cancelled exactly once.
//
// The model does not share the worker's code. It knows only the contract: a
// timeout with deadline d (nanoseconds since Start) belongs to tick d/tick,
// which is processed when it ends, at (d/tick+1)*tick; ticks are processed in
// order, and while a task blocks the worker none is, so the ticks missed are
// processed back to back once it returns. Within one tick the order is not
// promised, so the model takes the order from the runs it observes and checks
// only that each run is one that is due, at the time it is due.
//
// The input's first byte picks the configuration (tick, wheel size, pending
// limit, executor); the rest is read by op. The seeds in testdata/fuzz/FuzzTimer
// start from hand-made sequences: edge delays, a blocked worker that catches
// up or that Stop waits for, Stop from a task, the pending limit, panicking
// tasks and runtime.Goexit.
func FuzzTimer(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		synctest.Test(t, func(t *testing.T) {
			runFuzzTimer(t, data)
		})
	})
}

// maxFuzzOps bounds the operations one input runs, so that every execution
// is quick.
const maxFuzzOps = 64

// Task kinds: what a fuzzed timeout's task does when it runs.
const (
	kindPlain  = iota
	kindBlock  // waits until a later operation releases it
	kindStop   // calls Stop on its own timer, from the worker
	kindPanic  // panics; the timer recovers and logs
	kindGoexit // calls runtime.Goexit; the worker goes on in a new goroutine
	kindChain  // schedules another timeout, from the worker
	kindFunc   // plain, scheduled with AfterFunc
	numKinds
)

var kindNames = [numKinds]string{"plain", "block", "stop", "panic", "goexit", "chain", "func"}

// Model states of a timeout.
const (
	statePending = iota
	stateExpired
	stateCancelled
)

// Model states of the timer's Stop.
const (
	stopNone     = iota
	stopWaiting  // Stop called while a task blocks the worker; not returned yet
	stopDone     // a Stop has returned the pending timeouts
	stopFromTask // a task stopped the timer; nobody gets the pending timeouts
)

// fuzzHandle is the model of one timeout.
type fuzzHandle struct {
	id       int
	to       *hashedwheel.Timeout
	kind     int
	deadline int64 // nanoseconds since Start, saturated
	state    int
	byStop   bool // cancelled by Stop rather than by Cancel

	release    chan struct{} // kindBlock: closed to let the task return
	released   bool
	chainDelay time.Duration // kindChain: the delay of the timeout it schedules
}

// runRecord is what a task records when it runs, on the worker.
type runRecord struct {
	id       int                  // the handle's id; -1 for a timeout a task scheduled
	to       *hashedwheel.Timeout // what Run received
	at       int64                // time.Since(start) when it ran
	child    *hashedwheel.Timeout // kindChain: what NewTimeout returned
	childErr error
	stopped  []*hashedwheel.Timeout // kindStop: what Stop returned
}

type fuzzModel struct {
	t     *testing.T
	tm    *hashedwheel.Timer
	start time.Time
	tick  int64 // nanoseconds
	wheel int64 // buckets
	limit int64 // 0: unlimited
	now   int64 // the fake clock, nanoseconds since Start

	handles []*fuzzHandle
	byTO    map[*hashedwheel.Timeout]*fuzzHandle

	// The worker, as the model sees it. Ticks are processed in order; while
	// inTick is not empty the worker is in the middle of tick curTick, whose
	// runs happen at curAt. blockedBy is the task that holds the worker.
	inTick    []*fuzzHandle
	curTick   int64
	curAt     int64
	freeAt    int64 // when the worker last came back from a blocking task
	blockedBy *fuzzHandle

	stop      int
	stopCalls []chan []*hashedwheel.Timeout // Stops called and not yet returned

	execCalls atomic.Int64 // calls of the executor, if there is one
	hasExec   bool

	mu       sync.Mutex
	records  []runRecord
	consumed int // records the model has matched
	runs     int // records matched to a due timeout

	trace []string // the operations so far, for failure messages
}

func runFuzzTimer(t *testing.T, data []byte) {
	in := &fuzzInput{data: data}
	cfg := in.next()
	ticks := [4]time.Duration{time.Millisecond, 10 * time.Millisecond, 3 * time.Millisecond, 7 * time.Millisecond}
	tick := ticks[cfg&3]
	wheelArg := int(cfg>>2&7) + 1 // rounded up to 1, 2, 4 or 8
	limits := [4]int64{0, 0, 1, 3}
	limit := limits[cfg>>5&3]
	opts := []hashedwheel.Option{
		hashedwheel.WithTickDuration(tick),
		hashedwheel.WithTicksPerWheel(wheelArg),
		hashedwheel.WithMaxPendingTimeouts(limit),
		hashedwheel.WithLogger(slog.New(slog.DiscardHandler)),
	}
	m := &fuzzModel{t: t, tick: int64(tick), limit: limit, byTO: make(map[*hashedwheel.Timeout]*fuzzHandle)}
	if cfg&0x80 != 0 {
		// An executor that runs the task at once, on the worker.
		m.hasExec = true
		opts = append(opts, hashedwheel.WithTaskExecutor(func(task func()) {
			m.execCalls.Add(1)
			task()
		}))
	}
	m.tracef("config tick=%v WithTicksPerWheel(%d) limit=%d executor=%v", tick, wheelArg, limit, m.hasExec)

	tm, err := hashedwheel.NewTimer(opts...)
	if err != nil {
		t.Fatalf("NewTimer: %v", err)
	}
	m.tm = tm
	m.wheel = int64(tm.TicksPerWheel())
	if want := int64(1) << bitsFor(wheelArg); m.wheel != want {
		t.Fatalf("TicksPerWheel() = %d for WithTicksPerWheel(%d), want %d", m.wheel, wheelArg, want)
	}
	if err := tm.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	m.start = time.Now()
	// Whatever fails, let every goroutine of the bubble end.
	t.Cleanup(func() {
		for _, h := range m.handles {
			if h.kind == kindBlock && !h.released {
				close(h.release)
				h.released = true
			}
		}
		tm.Stop()
	})

	for ops := 0; ops < maxFuzzOps && in.more(); ops++ {
		m.op(in)
		m.check()
	}

	// Let every blocked task return, stop the timer if nothing did, and
	// account for every timeout.
	for _, h := range m.handles {
		if h.kind == kindBlock && !h.released {
			m.release(h)
			m.check()
		}
	}
	if m.stop == stopNone {
		m.stopOp()
		m.check()
	}
	m.final()
}

// fuzzInput reads the fuzzer's bytes; past the end it reads zeros.
type fuzzInput struct {
	data []byte
	i    int
}

func (in *fuzzInput) more() bool { return in.i < len(in.data) }

func (in *fuzzInput) next() byte {
	if in.i >= len(in.data) {
		return 0
	}
	b := in.data[in.i]
	in.i++
	return b
}

func bitsFor(n int) int {
	b := 0
	for 1<<b < n {
		b++
	}
	return b
}

func (m *fuzzModel) tracef(format string, args ...any) {
	m.trace = append(m.trace, fmt.Sprintf("%v: ", time.Duration(m.now))+fmt.Sprintf(format, args...))
}

// fatalf fails the execution with the operations that led to the failure.
func (m *fuzzModel) fatalf(format string, args ...any) {
	m.t.Helper()
	m.t.Fatalf("%s\noperations:\n\t%s", fmt.Sprintf(format, args...), strings.Join(m.trace, "\n\t"))
}

// op reads one operation and runs it on the timer and the model.
func (m *fuzzModel) op(in *fuzzInput) {
	b := in.next()
	switch op := b % 32; {
	case op < 12:
		m.schedule(in.next(), in.next(), b>>5)
	case op < 18:
		m.cancel(in.next())
	case op < 26:
		m.advance(in.next(), in.next())
	case op < 29:
		// Release a blocked task: the one blocking the worker if the
		// byte says so, otherwise any.
		var blockers []*fuzzHandle
		for _, h := range m.handles {
			if h.kind == kindBlock && !h.released {
				blockers = append(blockers, h)
			}
		}
		if len(blockers) > 0 {
			x := in.next()
			h := blockers[int(x)%len(blockers)]
			if x&0x80 != 0 && m.blockedBy != nil {
				h = m.blockedBy
			}
			m.release(h)
		}
	case op < 31:
		m.stopOp()
	default:
		// Only synctest.Wait and the checks.
		synctest.Wait()
		m.settle()
	}
}

// delay decodes a delay for NewTimeout: the edges of ticks, of turns of the
// wheel and of the int64 range.
func (m *fuzzModel) delay(b1, b2 byte) time.Duration {
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

// advanceBy decodes how far to move the fake clock.
func (m *fuzzModel) advanceBy(b1, b2 byte) time.Duration {
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
	return time.Duration(d)
}

func (m *fuzzModel) schedule(b1, b2, kindByte byte) {
	h := &fuzzHandle{id: len(m.handles), kind: int(kindByte) % numKinds}
	if kindByte == 7 {
		h.kind = kindBlock
	}
	delay := m.delay(b1, b2)
	switch h.kind {
	case kindBlock:
		h.release = make(chan struct{})
	case kindChain:
		h.chainDelay = m.delay(b2, b1)
	}
	var wantErr error
	switch {
	case m.stop != stopNone:
		wantErr = hashedwheel.ErrTimerStopped
	case m.limit > 0 && m.pending() >= m.limit:
		wantErr = hashedwheel.ErrTooManyPendingTimeouts
	}
	m.tracef("NewTimeout(%s #%d, %v)", kindNames[h.kind], h.id, delay)
	var to *hashedwheel.Timeout
	var err error
	if h.kind == kindFunc {
		id := h.id
		to, err = m.tm.AfterFunc(delay, func() { m.record(runRecord{id: id, at: int64(time.Since(m.start))}) })
	} else {
		to, err = m.tm.NewTimeout(m.task(h), delay)
	}
	if !errors.Is(err, wantErr) || (wantErr == nil && err != nil) {
		m.fatalf("NewTimeout(%v) = %v, want %v", delay, err, wantErr)
	}
	if err != nil {
		m.tracef("  rejected: %v", err)
		if to != nil {
			m.fatalf("NewTimeout returned a timeout with error %v", err)
		}
		return
	}
	h.to = to
	h.deadline = addSat(m.now, int64(max(delay, 0)))
	m.checkDeadline(h)
	m.add(h)
	synctest.Wait()
	m.settle()
}

// addSat returns a+b, for a, b >= 0, saturated at math.MaxInt64.
func addSat(a, b int64) int64 {
	if b > math.MaxInt64-a {
		return math.MaxInt64
	}
	return a + b
}

func (m *fuzzModel) add(h *fuzzHandle) {
	h.id = len(m.handles)
	m.handles = append(m.handles, h)
	m.byTO[h.to] = h
}

func (m *fuzzModel) checkDeadline(h *fuzzHandle) {
	if want := m.start.Add(time.Duration(h.deadline)); !h.to.Deadline().Equal(want) {
		m.fatalf("#%d: Deadline() = %v, want %v (start + %v)", h.id, h.to.Deadline(), want, time.Duration(h.deadline))
	}
	if h.to.Timer() != m.tm {
		m.fatalf("#%d: Timer() is not the timer that made it", h.id)
	}
}

// task returns the task of h. It runs on the worker and records the run
// before it does what its kind says.
func (m *fuzzModel) task(h *fuzzHandle) hashedwheel.TimerTask {
	// Copy what the task needs: the model changes h on the test goroutine.
	id, kind, release, chainDelay := h.id, h.kind, h.release, h.chainDelay
	return hashedwheel.TimerFunc(func(to *hashedwheel.Timeout) {
		r := runRecord{id: id, to: to, at: int64(time.Since(m.start))}
		switch kind {
		case kindChain:
			r.child, r.childErr = to.Timer().NewTimeout(m.childTask(), chainDelay)
		case kindStop:
			r.stopped = to.Timer().Stop()
		}
		m.record(r)
		switch kind {
		case kindBlock:
			<-release
		case kindPanic:
			panic("fuzz: a task panics")
		case kindGoexit:
			runtime.Goexit()
		}
	})
}

// childTask is the task of a timeout that a kindChain task schedules.
func (m *fuzzModel) childTask() hashedwheel.TimerTask {
	return hashedwheel.TimerFunc(func(to *hashedwheel.Timeout) {
		m.record(runRecord{id: -1, to: to, at: int64(time.Since(m.start))})
	})
}

func (m *fuzzModel) record(r runRecord) {
	m.mu.Lock()
	m.records = append(m.records, r)
	m.mu.Unlock()
}

func (m *fuzzModel) pick(b byte) *fuzzHandle {
	if len(m.handles) == 0 {
		return nil
	}
	return m.handles[int(b)%len(m.handles)]
}

func (m *fuzzModel) cancel(b byte) {
	h := m.pick(b)
	if h == nil {
		return
	}
	m.tracef("Cancel(#%d)", h.id)
	got := h.to.Cancel()
	switch {
	case h.state != statePending:
		if got {
			m.fatalf("Cancel(#%d) = true on a timeout that is %s", h.id, stateName(h.state))
		}
	case m.stop == stopWaiting:
		// The Stop waiting for a blocked task may already have cancelled
		// it; then it returns it, and Cancel must say false.
		h.state = stateCancelled
		h.byStop = !got
		if !got && !h.to.IsCancelled() {
			m.fatalf("Cancel(#%d) = false while Stop waits, but it is not cancelled", h.id)
		}
	default:
		if !got {
			m.fatalf("Cancel(#%d) = false on a pending timeout", h.id)
		}
		h.state = stateCancelled
		m.inTick = slices.DeleteFunc(m.inTick, func(x *fuzzHandle) bool { return x == h })
	}
	synctest.Wait()
	m.settle()
}

func (m *fuzzModel) advance(b1, b2 byte) {
	d := m.advanceBy(b1, b2)
	m.tracef("Sleep(%v)", d)
	time.Sleep(d)
	synctest.Wait()
	m.now += int64(d)
	if got := int64(time.Since(m.start)); got != m.now {
		m.fatalf("the fake clock reads %v, want %v", time.Duration(got), time.Duration(m.now))
	}
	m.settle()
}

func (m *fuzzModel) release(h *fuzzHandle) {
	m.tracef("release(#%d)", h.id)
	close(h.release)
	h.released = true
	synctest.Wait()
	if m.blockedBy != h {
		m.settle()
		return
	}
	m.blockedBy = nil
	m.freeAt = m.now
	m.curAt = m.now
	if m.stop == stopWaiting {
		m.finishStop()
		return
	}
	m.settle()
}

// stopOp calls Stop on a goroutine of its own, since it waits for a blocked
// task, and checks whether it returned and what.
func (m *fuzzModel) stopOp() {
	m.tracef("Stop()")
	c := make(chan []*hashedwheel.Timeout, 1)
	go func() { c <- m.tm.Stop() }()
	synctest.Wait()
	switch m.stop {
	case stopNone:
		m.stopCalls = append(m.stopCalls, c)
		if m.blockedBy != nil {
			m.stop = stopWaiting
			if len(c) != 0 {
				m.fatalf("Stop returned while task #%d blocks the worker", m.blockedBy.id)
			}
			return
		}
		m.finishStop()
	case stopWaiting:
		m.stopCalls = append(m.stopCalls, c)
		if len(c) != 0 {
			m.fatalf("a second Stop returned while task #%d blocks the worker", m.blockedBy.id)
		}
	default:
		select {
		case got := <-c:
			if len(got) != 0 {
				m.fatalf("a later Stop returned %d timeouts, want none", len(got))
			}
		default:
			m.fatalf("a later Stop did not return at once")
		}
	}
	m.settle()
}

// finishStop is the worker's exit after a Stop: every pending timeout is
// cancelled, the first Stop returns exactly those, later ones none.
func (m *fuzzModel) finishStop() {
	want := make(map[*hashedwheel.Timeout]bool)
	for _, h := range m.handles {
		if h.state == statePending || h.byStop {
			h.state, h.byStop = stateCancelled, true
			want[h.to] = true
		}
	}
	m.inTick = nil
	m.stop = stopDone
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
			h := m.byTO[to]
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
				m.fatalf("Stop did not return pending #%d", m.byTO[to].id)
			}
		}
	}
	m.stopCalls = nil
}

// pending returns the model's count of pending timeouts.
func (m *fuzzModel) pending() int64 {
	var n int64
	for _, h := range m.handles {
		if h.state == statePending {
			n++
		}
	}
	return n
}

func tickEnd(tick, T int64) int64 {
	if tick >= math.MaxInt64/T {
		return math.MaxInt64 // never
	}
	return (tick + 1) * T
}

// settle brings the model's worker up to now, matching each run the timer
// recorded with a timeout that is due, and fails on any run left over.
func (m *fuzzModel) settle() {
	for m.stop == stopNone && m.blockedBy == nil {
		if len(m.inTick) == 0 {
			// The next tick with something due, if it has ended.
			next := int64(math.MaxInt64)
			for _, h := range m.handles {
				if h.state == statePending {
					next = min(next, h.deadline/m.tick)
				}
			}
			if next == math.MaxInt64 || tickEnd(next, m.tick) > m.now {
				break
			}
			m.curTick = next
			m.curAt = max(tickEnd(next, m.tick), m.freeAt)
			for _, h := range m.handles {
				if h.state == statePending && h.deadline/m.tick <= next {
					m.inTick = append(m.inTick, h)
				}
			}
		}
		m.runInTick()
	}
	m.mu.Lock()
	extra := m.records[m.consumed:]
	m.mu.Unlock()
	if len(extra) > 0 {
		r := extra[0]
		m.fatalf("unexpected run at %v of %s (%d unexpected runs)", time.Duration(r.at), m.describe(r), len(extra))
	}
}

func (m *fuzzModel) describe(r runRecord) string {
	h := m.byTO[r.to]
	if r.to == nil && r.id >= 0 {
		h = m.handles[r.id]
	}
	if h != nil {
		return fmt.Sprintf("#%d (%s, deadline %v)", h.id, stateName(h.state), time.Duration(h.deadline))
	}
	return fmt.Sprintf("unknown timeout %v", r.to)
}

// runInTick matches the recorded runs with the timeouts due in the current
// tick, in the order the worker ran them, until they are all run or one
// stops the worker.
func (m *fuzzModel) runInTick() {
	for len(m.inTick) > 0 {
		m.mu.Lock()
		if m.consumed == len(m.records) {
			m.mu.Unlock()
			var ids []int
			for _, h := range m.inTick {
				ids = append(ids, h.id)
			}
			m.fatalf("timeouts %v, due in tick %d, did not run by %v", ids, m.curTick, time.Duration(m.curAt))
		}
		r := m.records[m.consumed]
		m.consumed++
		m.mu.Unlock()

		h := m.byTO[r.to]
		if r.to == nil && r.id >= 0 {
			h = m.handles[r.id] // AfterFunc's task gets no timeout
		}
		i := slices.Index(m.inTick, h)
		switch {
		case h == nil || i < 0:
			m.fatalf("unexpected run at %v of %s; due now: %d timeouts", time.Duration(r.at), m.describe(r), len(m.inTick))
		case r.id >= 0 && r.id != h.id:
			m.fatalf("the task of #%d ran with the timeout of #%d", r.id, h.id)
		case r.at != m.curAt:
			m.fatalf("#%d (deadline %v) ran at %v, want %v", h.id, time.Duration(h.deadline),
				time.Duration(r.at), time.Duration(m.curAt))
		case r.at < h.deadline:
			m.fatalf("#%d ran early", h.id) // the model would be wrong
		}
		m.inTick = slices.Delete(m.inTick, i, i+1)
		h.state = stateExpired
		m.runs++
		switch h.kind {
		case kindBlock:
			if !h.released {
				m.blockedBy = h
				return
			}
		case kindStop:
			if len(r.stopped) != 0 {
				m.fatalf("Stop from a task returned %d timeouts, want none", len(r.stopped))
			}
			// Nobody gets the timeouts still pending; they are cancelled.
			for _, x := range m.handles {
				if x.state == statePending {
					x.state, x.byStop = stateCancelled, true
				}
			}
			m.inTick = nil
			m.stop = stopFromTask
			return
		case kindChain:
			m.chained(h, r)
		}
	}
}

// chained checks the NewTimeout that a kindChain task made, and adds its
// timeout to the model.
func (m *fuzzModel) chained(parent *fuzzHandle, r runRecord) {
	var wantErr error
	if m.limit > 0 && m.pending() >= m.limit {
		wantErr = hashedwheel.ErrTooManyPendingTimeouts
	}
	if !errors.Is(r.childErr, wantErr) || (wantErr == nil && r.childErr != nil) {
		m.fatalf("NewTimeout from task #%d = %v, want %v", parent.id, r.childErr, wantErr)
	}
	if r.childErr != nil {
		return
	}
	h := &fuzzHandle{to: r.child, kind: kindPlain, deadline: addSat(r.at, int64(max(parent.chainDelay, 0)))}
	m.add(h)
	m.tracef("  task #%d: NewTimeout(plain #%d, %v)", parent.id, h.id, parent.chainDelay)
	m.checkDeadline(h)
}

func stateName(s int) string {
	return [...]string{"pending", "expired", "cancelled"}[s]
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
	for _, h := range m.handles {
		expired, cancelled := h.to.IsExpired(), h.to.IsCancelled()
		want := h.state
		if m.stop == stopWaiting && h.state == statePending && cancelled {
			// Stop may cancel the pending timeouts before it returns.
			want = stateCancelled
		}
		if expired != (want == stateExpired) || cancelled != (want == stateCancelled) {
			m.fatalf("#%d: IsExpired() = %v, IsCancelled() = %v, want %s", h.id, expired, cancelled, stateName(want))
		}
	}
}

// final checks that every timeout ended in exactly one way.
func (m *fuzzModel) final() {
	if m.stop == stopWaiting || len(m.stopCalls) > 0 {
		m.fatalf("a Stop never returned")
	}
	for _, h := range m.handles {
		if h.state == statePending {
			m.fatalf("#%d still pending after Stop", h.id)
		}
	}
	if m.hasExec {
		if got := m.execCalls.Load(); got != int64(m.runs) {
			m.fatalf("executor called %d times for %d runs", got, m.runs)
		}
	}
}
