package hashedwheel_test

import (
	"math"
	"strings"
	"testing/synctest"
	"time"

	"github.com/hashedwheel/hashedwheel"
)

// This file holds the worker's side of the model, for FuzzTimer and
// FuzzTimerPool, whose Timers have a worker: settle, the worker's tick loop,
// and stopOp, Stop on a Timer with a worker. Both hand over to
// FuzzTimerOwned's counterparts (fuzz_owned_test.go), and both step the pool
// that the worker feeds in FuzzTimerPool (fuzz_pool_test.go).

// stopOpen reports whether h is among the timeouts that a stopped worker
// will cancel once a blocked task lets it exit: pending until then.
func (m *fuzzModel) stopOpen(h *fuzzHandle) bool {
	switch {
	case h.elsewhere:
		return false
	case h.uncertain:
		return true
	case m.stop == stopWaiting:
		return h.state == statePending
	case m.stop == stopFromTask && m.pool && !m.poolExited:
		return h.state == stateCancelled && h.byStop
	}
	return false
}

// workerFree reports whether the worker is free to process ticks as they
// end: not blocked in a task and not stopped.
func (m *fuzzModel) workerFree() bool { return m.blockedBy == nil && m.stop == stopNone }

// stopOp calls Stop on a goroutine of its own, since it waits for a blocked
// task, and checks whether it returned and what.
func (m *fuzzModel) stopOp() {
	if m.owned {
		m.stopOwned()
		return
	}
	m.tracef("Stop()")
	c := make(chan []*hashedwheel.Timeout, 1)
	go func() { c <- m.tm.Stop() }()
	synctest.Wait()
	switch m.stop {
	case stopNone:
		m.stopCalls = append(m.stopCalls, c)
		if m.blockedBy != nil || len(m.busy) > 0 {
			m.stop = stopWaiting
			if len(c) != 0 {
				m.fatalf("Stop returned while a task blocks")
			}
			// Cancelled calls still due come before the worker exits.
			m.deferCallbacks()
			return
		}
		m.finishStop()
	case stopWaiting:
		m.stopCalls = append(m.stopCalls, c)
		if len(c) != 0 {
			m.fatalf("a second Stop returned while a task blocks")
		}
	case stopFromTask:
		if m.pool {
			// The worker exits once the pool has run what it was handed,
			// which a blocked task may hold up.
			m.stopCalls = append(m.stopCalls, c)
			m.maybeFinishStop()
			break
		}
		fallthrough
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

// tickDone is the end of the tick the worker was processing, at curAt: the
// Cancelled calls of the arms that tasks cancelled during it come once it
// takes them in, at once or at the end of the tick that curAt is in.
func (m *fuzzModel) tickDone() {
	for _, x := range m.handles {
		if x.cbAfterRun && x.cbBound == unknownBound {
			x.cbBound = tickEnd(m.curAt/m.tick, m.tick)
		}
		x.cbAfterRun = false
	}
}

// settle brings the model's worker up to now, matching each run the timer
// recorded with a timeout that is due, and fails on any run left over.
func (m *fuzzModel) settle() {
	if m.owned {
		m.settleOwned()
	}
	for m.workerFree() && !m.owned {
		if len(m.inTick) == 0 {
			m.tickDone()
			// A Cancelled call may have armed its Timeout again.
			m.consumeCallbacks()
			m.rearm(m.curAt)
			// The next tick with something due, if it has ended.
			next := int64(math.MaxInt64)
			for _, h := range m.handles {
				if h.ready() {
					next = min(next, h.dueTick)
				}
			}
			if next == math.MaxInt64 || tickEnd(next, m.tick) > m.now {
				break
			}
			m.curTick = next
			m.curAt = max(tickEnd(next, m.tick), m.freeAt)
			for _, h := range m.handles {
				if h.ready() && h.dueTick <= next {
					m.inTick = append(m.inTick, h)
				}
			}
			if m.pool {
				m.handOut()
				continue
			}
		}
		m.runInTick()
	}
	if m.stop == stopFromTask && m.pool {
		m.startPooled(m.now) // what the pool was handed runs
		if len(m.busy) == 0 {
			m.poolExit()
		}
	}
	m.consumeCallbacks()
	m.mu.Lock()
	extra := m.records[m.consumed:]
	m.mu.Unlock()
	if len(extra) > 0 {
		r := extra[0]
		m.fatalf("unexpected run at %v of %s (%d unexpected runs)", time.Duration(r.at), m.describe(r), len(extra))
	}
	if m.workerFree() {
		// Cancelled calls held up by a blocked worker come with the next
		// tick it processed once free, at once if it was behind. (The
		// owner's model sets them as the call that held them up ends.)
		for _, x := range m.handles {
			if x.cbWant && x.cbBound == unknownBound && !m.owned && x.waitRun == nil && !x.cbAfterRun {
				x.cbBound = max(tickEnd(m.blockTick+1, m.tick), m.freeAt)
			}
		}
		m.checkCallbacksBy(m.now)
	}
	if m.owned {
		m.mu.Lock()
		errs := m.ownerErrs
		m.mu.Unlock()
		if len(errs) > 0 {
			m.fatalf("%s", strings.Join(errs, "\n"))
		}
	}
}
