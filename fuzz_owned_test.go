package hashedwheel_test

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashedwheel/hashedwheel"
)

// This file holds what FuzzTimerOwned's driver adds to the model: a Timer
// made WithoutWorker, whose owner processes the ticks in calls of Advance,
// and the owner's goroutine, fuzzOwner.

// ownerModel is the owner (FuzzTimerOwned), as the model sees it. It
// processes the ticks in order, in calls of Advance: while inCall, the call
// that began at callAt processes the ticks before callEnd (callAt/tick).
// poll is the polling owner's interval, 0 for the owner that sleeps until
// NextDeadline; nextPoll is the polling owner's next call at the earliest.
type ownerModel struct {
	owned    bool
	owner    *fuzzOwner
	poll     int64
	inCall   bool
	callAt   int64
	callEnd  int64
	nextPoll int64

	// Written under fuzzModel.mu by the owner's goroutine and the tasks:
	// the runs inside each Advance not yet returned, what the owner's
	// goroutine saw wrong, and its latest calls, for failure messages.
	callRuns   map[int64]int
	ownerErrs  []string
	ownerCalls []string
}

// poke wakes the owner that sleeps until NextDeadline after an operation
// that schedules, resets or cancels, as the goroutine that does so would
// wake an event loop. The polling owner is left to its next poll.
func (m *fuzzModel) poke() {
	if m.owner != nil && m.poll == 0 {
		m.owner.poke()
	}
}

// settleOwned brings the owner's model up to now: the calls of Advance
// that the owner has made, each processing the ticks that ended by its now,
// in order, at the time of the call (or, once a task that blocked it
// returns, at that time), matching each run recorded with a timeout due.
//
// What differs from the worker is what the contract says of Advance (18):
// the owner calls it at the first moment a run is due (the owner that sleeps
// until NextDeadline, which is never later than that) or at its first poll
// after that; and what a task schedules or re-arms during a call runs at a
// later call. Timeouts scheduled during a call have deadlines at or after
// its now, in ticks the call does not process anyway; a periodic run that
// returns during a call is taken back as the owner next takes in (at once,
// with NextDeadline, or at the next poll), standing at the tick its call
// ended at: so it is next due no earlier than at the end of that tick,
// rather than at the tick after the one it ran in. After a block, the call
// that was blocked processes only the ticks that had ended by its now; the
// next call, at once, those that ended meanwhile.
func (m *fuzzModel) settleOwned() {
	for m.workerFree() {
		if len(m.inTick) > 0 {
			m.runInTick()
			continue
		}
		m.consumeCallbacks() // a Cancelled call may have armed its Timeout again
		next := m.firstDueTick()
		if m.inCall {
			if next < m.callEnd {
				m.startTick(next, max(m.callAt, m.freeAt))
				continue
			}
			m.endCall()
			continue
		}
		at := m.callTime(tickEnd(next, m.tick))
		if at > m.now {
			break
		}
		m.inCall, m.callAt, m.callEnd = true, at, at/m.tick
	}
}

// firstDueTick returns the first tick in which a pending timeout that is
// not out on a run is due, or math.MaxInt64.
func (m *fuzzModel) firstDueTick() int64 {
	next := int64(math.MaxInt64)
	for _, h := range m.handles {
		if h.ready() {
			next = min(next, h.dueTick)
		}
	}
	return next
}

// startTick makes tick the one being processed, its runs happening at time
// at.
func (m *fuzzModel) startTick(tick, at int64) {
	m.curTick, m.curAt = tick, at
	for _, h := range m.handles {
		if h.ready() && h.dueTick <= tick {
			m.inTick = append(m.inTick, h)
		}
	}
}

// callTime returns when the owner, free, makes its first Advance at or
// after x: at x for the owner that sleeps until NextDeadline (it may wake
// earlier, and then that call runs nothing), but not before a call held up
// by a task has returned; at the first poll at or after x for the polling
// one.
func (m *fuzzModel) callTime(x int64) int64 {
	if x == math.MaxInt64 {
		return x
	}
	if m.poll == 0 {
		return max(x, m.freeAt)
	}
	c := x / m.poll * m.poll
	if c < x {
		if c > math.MaxInt64-m.poll {
			return math.MaxInt64
		}
		c += m.poll
	}
	return max(c, m.nextPoll)
}

// nextOwnerCall returns when the owner, free, next takes in what another
// goroutine has pushed: at once for the owner that sleeps until NextDeadline,
// as the harness wakes it; at its next poll for the polling one (which has
// made the poll at now, if now is one).
func (m *fuzzModel) nextOwnerCall() int64 {
	if m.poll == 0 {
		return m.now
	}
	return max(m.nextPoll, (m.now/m.poll+1)*m.poll)
}

// endCall is the return of the owner's Advance. The owner next takes in what
// was pushed during it: the periodic runs that returned, which it places no
// earlier than the tick the call ended at, and the cancels, whose Cancelled
// calls come then.
func (m *fuzzModel) endCall() {
	m.inCall = false
	end := max(m.callAt, m.freeAt)
	takeIn := end
	if m.poll > 0 {
		m.nextPoll = (end/m.poll + 1) * m.poll
		takeIn = m.nextPoll
	}
	m.rearmAt(takeIn, m.callEnd)
	m.takeInCallbacks(takeIn)
}

// takeInCallbacks sets when the Cancelled calls of the timeouts cancelled
// during an owner's call come: when the owner takes them in, at time at.
func (m *fuzzModel) takeInCallbacks(at int64) {
	for _, x := range m.handles {
		if x.cbWant && x.cbBound == unknownBound {
			x.cbBound = at
		}
	}
}

// stopOwned calls Stop on a Timer made WithoutWorker, which waits for
// nothing (20). With the owner asleep, the first call cancels every pending
// timeout and returns exactly those (7). While a task blocks the owner inside
// Advance, Stop cannot touch the wheel: it returns nil, and that Advance
// hands out nothing more and cancels what is pending as it returns (the
// godoc of Advance says so of a Stop from a task). Later calls return nil.
// Then the owner, poked, gets ErrTimerStopped and ends.
func (m *fuzzModel) stopOwned() {
	m.tracef("Stop()")
	c := make(chan []*hashedwheel.Timeout, 1)
	asleep := m.blockedBy == nil
	go func() {
		if asleep {
			m.owner.in.Store(inStop)
			defer m.owner.in.Store(inNothing)
		}
		c <- m.tm.Stop()
	}()
	synctest.Wait()
	var got []*hashedwheel.Timeout
	select {
	case got = <-c:
	default:
		m.fatalf("Stop on a Timer made WithoutWorker did not return at once")
	}
	switch {
	case m.stop == stopNone && m.blockedBy != nil:
		if got != nil {
			m.fatalf("Stop while a task blocks the owner returned %d timeouts, want nil: the Advance "+
				"cancels them as it returns", len(got))
		}
		m.stop = stopWaiting
		m.deferCallbacks()
	case m.stop == stopNone:
		c <- got
		m.stopCalls = append(m.stopCalls, c)
		m.finishStop()
	default:
		if len(got) != 0 {
			m.fatalf("a later Stop returned %d timeouts, want none", len(got))
		}
	}
	m.owner.poke()
	synctest.Wait()
	if m.blockedBy == nil {
		select {
		case <-m.owner.exited:
		default:
			m.fatalf("the owner's Advance did not return ErrTimerStopped after Stop")
		}
	}
	m.settle()
}

// probe calls Advance and NextDeadline from the test goroutine (19). On a
// Timer with a worker, Advance returns ErrHasWorker and NextDeadline false;
// after Stop, ErrTimerStopped and false; while a task blocks the owner
// inside Advance, the calls overlap: ErrConcurrentAdvance and false, and
// they change nothing. While the owner sleeps, they do not overlap:
// NextDeadline is false exactly when nothing is pending, and otherwise never
// later than the end of the first tick with a run due; Advance with a now
// earlier than the owner's last counts as that one, by which nothing new is
// due: it runs nothing.
func (m *fuzzModel) probe() {
	m.tracef("probe Advance, NextDeadline")
	var wantErr error
	switch {
	case !m.owned:
		wantErr = hashedwheel.ErrHasWorker
	case m.stop != stopNone:
		wantErr = hashedwheel.ErrTimerStopped
	case m.blockedBy != nil:
		wantErr = hashedwheel.ErrConcurrentAdvance
	}
	if wantErr != nil {
		n, err := m.tm.Advance(time.Now())
		if n != 0 || !errors.Is(err, wantErr) {
			m.fatalf("Advance from the test goroutine = %d, %v; want 0, %v", n, err, wantErr)
		}
		if at, ok := m.tm.NextDeadline(); ok {
			m.fatalf("NextDeadline from the test goroutine = %v, true; want false (Advance: %v)", at, wantErr)
		}
	} else {
		m.owner.in.Store(inProbe)
		at, ok := m.tm.NextDeadline()
		n, err := m.tm.Advance(m.start)
		m.owner.in.Store(inNothing)
		// The Cancelled calls these made, which may have armed their
		// Timeouts again: this goroutine scheduled them, and pokes the
		// owner as any other would.
		m.consumeCallbacks()
		m.poke()
		first := tickEnd(m.firstDueTick(), m.tick)
		switch pending := m.pending(); {
		case ok != (pending > 0):
			m.fatalf("NextDeadline() = %v, %v with %d timeouts pending", at.Sub(m.start), ok, pending)
		case ok && at.Sub(m.start) > time.Duration(first):
			m.fatalf("NextDeadline() = start + %v, later than the first run due, at the end of its tick: "+
				"start + %v", at.Sub(m.start), time.Duration(first))
		case n != 0 || err != nil:
			m.fatalf("Advance(start), earlier than the owner's last now, = %d, %v; want 0, nil", n, err)
		}
	}
	synctest.Wait()
	m.settle()
}

// finalOwned checks, once the Timer is stopped and every task has returned,
// that the owner has ended (fuzzModel.final then checks Stats).
func (m *fuzzModel) finalOwned() {
	m.owner.poke()
	synctest.Wait()
	select {
	case <-m.owner.exited:
	default:
		m.fatalf("the owner did not end after Stop")
	}
}

// checkOwnedRefusesPool checks that NewTimer refuses WithTaskWorkers with
// WithoutWorker, with an error naming both (guarantee 18).
func checkOwnedRefusesPool(t *testing.T, n int) {
	tm, err := hashedwheel.NewTimer(hashedwheel.WithoutWorker(), hashedwheel.WithTaskWorkers(n),
		hashedwheel.WithLogger(slog.New(slog.DiscardHandler)))
	if tm != nil || err == nil || !strings.Contains(err.Error(), "WithTaskWorkers") ||
		!strings.Contains(err.Error(), "WithoutWorker") {
		t.Fatalf("NewTimer(WithoutWorker(), WithTaskWorkers(%d)) = %v, %v; want a nil Timer and an error "+
			"naming both options", n, tm, err)
	}
	tm, err = hashedwheel.NewTimer(hashedwheel.WithoutWorker(), hashedwheel.WithTaskExecutor(func(f func()) { f() }))
	if tm != nil || err == nil || !strings.Contains(err.Error(), "WithTaskExecutor") ||
		!strings.Contains(err.Error(), "WithoutWorker") {
		t.Fatalf("NewTimer(WithoutWorker(), WithTaskExecutor) = %v, %v; want a nil Timer and an error "+
			"naming both options", tm, err)
	}
}

// Values of fuzzOwner.in other than the number of an Advance in progress.
const (
	inNothing      = 0  // no call of the owner's in progress
	inNextDeadline = -1 // the owner's NextDeadline
	inProbe        = -2 // an Advance or NextDeadline of the test goroutine, while the owner sleeps
	inStop         = -3 // a Stop of the test goroutine, while the owner sleeps
)

// fuzzOwner is the goroutine that drives a Timer made WithoutWorker in
// FuzzTimerOwned. With poll 0 it loops NextDeadline, sleeps until that time
// or until poke wakes it, then Advance(time.Now()); the harness pokes it after
// each operation that schedules, resets, cancels or stops. With poll > 0 it
// calls Advance(time.Now()) at every multiple of poll since the timer was
// made, and sleeps in between whatever NextDeadline would say; Stop pokes
// it too, so that it ends at once. Either ends when Advance returns
// ErrTimerStopped.
type fuzzOwner struct {
	m    *fuzzModel
	poll time.Duration
	wake chan struct{} // buffer of one: a poke is never lost, and never blocks

	// in is the number of the Advance in progress, or one of the in...
	// values, so that a task or a Cancelled call knows inside which call
	// it runs. Set by the owner, or by the test goroutine while the owner
	// sleeps.
	in atomic.Int64

	// calls counts the Advance calls made. Owner goroutine only: a
	// successor starts after its predecessor has ended.
	calls int64

	exited chan struct{} // closed when Advance has returned ErrTimerStopped
}

// poke wakes the owner, if it sleeps.
func (o *fuzzOwner) poke() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// run is the owner's loop. advanceFirst makes it call Advance before it
// first sleeps.
func (o *fuzzOwner) run(advanceFirst bool) {
	m := o.m
	finished := false
	defer func() {
		o.in.Store(inNothing)
		if !finished {
			// A task called runtime.Goexit, which ends the goroutine that
			// called Advance: go on in a new one. The polling owner calls
			// Advance at once; the other asks NextDeadline first.
			go o.run(o.poll > 0)
		}
	}()
	sleep := time.NewTimer(time.Hour) // made here, so that it runs on the bubble's clock
	sleep.Stop()
	spins := 0 // Advance calls in a row made without sleeping that ran nothing
	for {
		slept := true
		if !advanceFirst {
			slept = o.wait(sleep, spins >= maxOwnerSpins)
		}
		advanceFirst = false
		now := time.Now()
		o.calls++
		call := o.calls
		o.in.Store(call)
		n, err := m.tm.Advance(now)
		o.in.Store(inNothing)
		if errors.Is(err, hashedwheel.ErrTimerStopped) {
			finished = true
			close(o.exited)
			return
		}
		m.advanced(call, now, n, err)
		if slept || n > 0 {
			spins = 0
			continue
		}
		if spins++; spins == maxOwnerSpins {
			m.ownerFailed("NextDeadline keeps returning a time already past, and Advance(%v) runs nothing: "+
				"an owner that sleeps until NextDeadline spins", now.Sub(m.start))
		}
	}
}

// maxOwnerSpins is how many Advance calls in a row, made at once because
// NextDeadline returned a time already past, may run nothing. One is normal:
// after a runtime.Goexit, NextDeadline points at the tick it cut short, which
// may hold nothing more.
const maxOwnerSpins = 3

// wait blocks until the owner's next Advance is due and reports whether it
// blocked. stuck makes the owner that sleeps until NextDeadline wait for a
// poke, rather than spin on a NextDeadline already past.
func (o *fuzzOwner) wait(sleep *time.Timer, stuck bool) bool {
	if o.poll > 0 {
		elapsed := time.Since(o.m.start)
		sleep.Reset((elapsed/o.poll+1)*o.poll - elapsed)
		select {
		case <-sleep.C:
		case <-o.wake:
			sleep.Stop()
		}
		return true
	}
	o.in.Store(inNextDeadline)
	at, ok := o.m.tm.NextDeadline()
	o.in.Store(inNothing)
	d := time.Until(at)
	switch {
	case ok && d <= 0 && !stuck:
		return false
	case ok && d > 0:
		sleep.Reset(d)
		select {
		case <-sleep.C:
		case <-o.wake:
			sleep.Stop()
		}
	default:
		<-o.wake
	}
	return true
}

// advanced checks what the owner's Advance number call returned: no error
// before Stop, and as many runs as the tasks that ran inside it.
func (m *fuzzModel) advanced(call int64, now time.Time, n int, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ran := m.callRuns[call]
	delete(m.callRuns, call)
	at := now.Sub(m.start)
	m.ownerCalls = append(m.ownerCalls, fmt.Sprintf("%v: Advance #%d = %d, %v", at, call, n, err))
	if len(m.ownerCalls) > 32 {
		m.ownerCalls = m.ownerCalls[len(m.ownerCalls)-32:]
	}
	switch {
	case err != nil:
		m.ownerErrs = append(m.ownerErrs, fmt.Sprintf("Advance(%v) = %d, %v; want no error before Stop", at, n, err))
	case n != ran:
		m.ownerErrs = append(m.ownerErrs, fmt.Sprintf("Advance(%v) returned %d, but %d runs happened inside it", at,
			n, ran))
	}
}

// ownerFailed records a failure seen on the owner's goroutine; the test
// goroutine reports it.
func (m *fuzzModel) ownerFailed(format string, args ...any) {
	m.mu.Lock()
	m.ownerErrs = append(m.ownerErrs, fmt.Sprintf(format, args...))
	m.mu.Unlock()
}
