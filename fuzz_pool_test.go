package hashedwheel_test

import (
	"slices"
	"time"
)

// This file holds what FuzzTimerPool's driver adds to the model: the pool of
// WithTaskWorkers goroutines that the worker hands each tick's timeouts to.

// poolModel is the pool, as the model sees it (FuzzTimerPool). busy holds the
// blocked tasks that hold its goroutines; queue the tasks handed out and not
// started, a group per tick: FIFO across groups, any order within one.
type poolModel struct {
	pool  bool
	poolN int
	busy  []*fuzzHandle
	queue [][]*fuzzHandle

	// poolExited says the worker has exited after a Stop from a pooled
	// task: it exits once the pool has run what it was handed, and only
	// then cancels the timeouts still pending.
	poolExited bool
}

// poolExit is the worker's exit after a Stop from a pooled task, once the
// pool is free.
func (m *fuzzModel) poolExit() {
	if !m.poolExited {
		m.poolExited = true
		m.exited()
	}
}

// maybeFinishStop finishes a Stop that waits for the pool, once nothing holds
// it up.
func (m *fuzzModel) maybeFinishStop() {
	if len(m.busy) > 0 || len(m.stopCalls) == 0 {
		return
	}
	switch m.stop {
	case stopWaiting:
		m.finishStop()
	case stopFromTask:
		// The Stop from the task returned nil; these return nil too.
		m.poolExit()
		for _, c := range m.stopCalls {
			select {
			case got := <-c:
				if len(got) != 0 {
					m.fatalf("a Stop after a Stop from a task returned %d timeouts, want none", len(got))
				}
			default:
				m.fatalf("Stop did not return once the pool was free")
			}
		}
		m.stopCalls = nil
	}
}

// handOut hands the current tick's timeouts to the pool, which starts as
// many as it has goroutines free.
func (m *fuzzModel) handOut() {
	for _, h := range m.inTick {
		h.state = stateExpired
		h.out = h.period == 0
	}
	m.queue = append(m.queue, m.inTick)
	m.inTick = nil
	m.startPooled(m.curAt)
}

// startPooled matches the recorded runs with the tasks the pool starts at
// time at: from the oldest group handed out, while a goroutine is free.
func (m *fuzzModel) startPooled(at int64) {
	for len(m.queue) > 0 && len(m.busy) < m.poolN {
		if len(m.queue[0]) == 0 {
			m.queue = m.queue[1:]
			continue
		}
		r, ok := m.nextRun()
		if !ok {
			if m.stop == stopFromTask {
				return // not handed out after all: cancelled
			}
			var ids []int
			for _, h := range m.queue[0] {
				ids = append(ids, h.id)
			}
			m.fatalf("tasks %v, handed to the pool, did not start by %v", ids, time.Duration(at))
		}
		h := m.handleOf(r)
		i := slices.Index(m.queue[0], h)
		switch {
		case h == nil || i < 0:
			m.fatalf("unexpected run at %v of %s; next to start: %d tasks", time.Duration(r.at), m.describe(r), len(m.queue[0]))
		case r.at != at && !h.uncertain:
			m.fatalf("#%d (deadline %v) started on the pool at %v, want %v", h.id, time.Duration(h.deadline),
				time.Duration(r.at), time.Duration(at))
		}
		m.queue[0] = slices.Delete(m.queue[0], i, i+1)
		h.state, h.uncertain = stateExpired, false
		m.runs++
		m.ran(h, r)
		if h.kind == kindBlock && !h.released {
			m.busy = append(m.busy, h)
		} else {
			m.runReturned(h, at)
		}
	}
}

// runReturned is the return of the pooled run of one-shot arm h at time at.
// An arm of the same Timeout made while it was out (see scheduleOn) reaches
// the worker now: it runs at the first tick the worker processes that ends
// after its deadline and after at, and, if it was cancelled meanwhile, its
// Cancelled call comes by the end of the tick that at is in.
func (m *fuzzModel) runReturned(h *fuzzHandle, at int64) {
	h.out = false
	for _, w := range m.handles {
		if w.waitRun != h {
			continue
		}
		w.waitRun = nil
		w.dueTick = max(w.deadline/m.tick, at/m.tick)
		if w.cbWant && w.cbBound == unknownBound && m.stop == stopNone {
			w.cbBound = tickEnd(at/m.tick, m.tick)
		}
	}
}
