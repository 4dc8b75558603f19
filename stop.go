package hashedwheel

// Stop stops the timer. The first call cancels every timeout still pending,
// periodic ones included, and returns them; a timeout cancelled earlier by
// [Timeout.Cancel] is not among them. Later calls return nil. The tasks of the
// returned timeouts never run, and they get no [CancelledTask] call.
//
// When Stop returns, the worker goroutine and the [WithTaskWorkers] pool have
// exited: Stop waits for a task running on them, and one-shot tasks already
// handed to the pool run first. What such a task schedules meanwhile fails
// with [ErrTimerStopped], or is cancelled and returned too. A periodic run in
// progress goes on to its end; no later run starts. Stop does not wait for
// tasks on a [WithTaskExecutor] executor's goroutines, nor, on a Timer made
// [WithoutWorker], for anything.
//
// A task may call Stop. Called from the worker, the pool or inside
// [Timer.Advance], Stop neither waits nor deadlocks: it marks the timer
// stopped and returns nil, and the pending timeouts are cancelled once the
// task returns. A task that an executor runs on another goroutine while the
// worker waits for it must not call Stop. After Stop, the calls that schedule
// return ErrTimerStopped, and [Timer.PendingTimeouts] returns 0. See guarantee
// 7 in docs/guarantees.md, and the example of Timer.Stop.
func (t *Timer) Stop() []*Timeout {
	if t.wheel.buckets == nil {
		return nil // not made by NewTimer: nothing to stop
	}
	if t.conf.owned {
		return t.stopOwned()
	}
	id := goroutineID()
	onWorker := id != 0 && (id == t.life.workerID.Load() || t.conf.pool.runs(id))
	for {
		switch t.life.state.Load() {
		case stateInit:
			if t.life.state.CompareAndSwap(stateInit, stateShutdown) {
				// No worker will ever run, so nothing else closes done.
				t.instance.release()
				close(t.life.stopped)
				close(t.life.done)
				return nil
			}
		case stateStarted:
			if t.life.state.CompareAndSwap(stateStarted, stateShutdown) {
				t.instance.release()
				close(t.life.stopped)
				if onWorker {
					return nil
				}
				<-t.life.done
				return t.life.unprocessed
			}
		default:
			// Already stopped. Honour "the worker has exited when Stop
			// returns" for this caller too.
			if !onWorker {
				<-t.life.done
			}
			return nil
		}
	}
}

// shutdown is the clean-up of a stopped Timer, by its worker as it exits,
// or by the goroutine that holds an owned Timer's advancing. It cancels what
// is pending first, so that deadline contexts fall back to the runtime's
// timers at once rather than when the pool is done. One-shot tasks already
// handed to the pool are expired: they run before Stop returns; periodic
// runs handed to it, or to an executor, that have not started never do
// (Stop takes their tokens); what tasks (or any goroutine) push meanwhile is
// taken as it comes. Then the queues close, and later pushes fail.
//
// It goes in phases (the collection, the wait for the pool, the closing of
// the queues), each making its state changes before any user code runs:
// the Cancelled calls each phase owes are made after it (see flushCalls),
// and those owed during the wait for the pool as they come, as a pooled task
// may wait for one. A Cancelled call that calls runtime.Goexit ends the
// worker's goroutine; its next goroutine resumes the clean-up at the phase
// after the one done (the rest of the calls are made as the goroutine
// exits, see makeCalls), so no phase runs twice.
func (t *Timer) shutdown() {
	if t.wheel.cleanUp == cleanUpNotStarted {
		t.wheel.cleanUp = cleanUpCollecting
		t.collectUnprocessed()
		t.wheel.cleanUp = cleanUpCollected
		t.flushCalls()
	}
	if t.conf.pool != nil {
		t.waitForPool()
	}
	t.closeQueues()
	t.publishStats()
	t.wheel.cleanUp = cleanUpDone
	t.flushCalls()
}

// flushCalls makes, on the worker, the Cancelled calls the clean-up owes so
// far. An owned Timer's are made by the owner once it has let go of
// advancing (see releaseOwner).
func (t *Timer) flushCalls() {
	if t.conf.owned || len(t.wheel.calls) == 0 {
		return
	}
	calls := t.wheel.calls
	t.wheel.calls = nil
	t.makeCalls(calls)
}

// collectUnprocessed cancels every timeout still pending, in the buckets,
// still queued or out on a periodic run, and keeps those it cancelled in
// t.life.unprocessed for Stop. It runs first in shutdown, before the wait
// for the pool, during which takeForStop takes what comes; closeQueues
// takes what comes after. Timeouts that Cancel cancelled and that the
// worker has not yet let go of owe their Cancelled call, which shutdown's
// caller makes. The changes queue goes first, so that a Timeout cancelled in
// its bucket is let go of before the other queues are looked at.
func (t *Timer) collectUnprocessed() {
	t.processChanges()
	t.takeNewForStop()
	for i := range t.wheel.buckets {
		b := &t.wheel.buckets[i]
		for b.head != nil {
			t.cancelForStop(b.head)
		}
	}
	t.wheel.occupied = occupancy{}
	for _, l := range t.wheel.levels {
		for i := 0; l != nil && i < len(l.slots); i++ {
			for l.slots[i].head != nil {
				t.cancelForStop(l.slots[i].head)
			}
		}
	}
	// Periodic runs still out on the pool or with an executor (see
	// cancelRunForStop). A run that has returned since the queues were
	// taken, or that Stop ended as it had not started, is in a queue of
	// new timeouts again, and is taken from there.
	for to := t.wheel.running.head; to != nil; {
		next := to.bucketNext
		t.cancelRunForStop(to)
		to = next
	}
	t.takeForStop()
}

// takeForStop takes, cancels and keeps for Stop what was pushed since
// collectUnprocessed: by a NewTimeout or Schedule whose check of the Timer's
// state came before Stop, by a run on the pool returning with its Timeout
// armed again, or handing back a periodic one that collectUnprocessed took
// off the list of runs; and the changes Cancel or Reset pushed. The worker
// calls it while it waits for the pool (see waitForPool), so that what
// tasks still running there push is not left waiting: a deadline context
// made by one falls back to the runtime's timer at once.
func (t *Timer) takeForStop() {
	t.takeNewForStop()
	t.processChanges()
}

// takeNewForStop takes and cancels for Stop what the queues of new
// timeouts hold, and counts the cancelled ones they dropped.
func (t *Timer) takeNewForStop() {
	for i := range t.shards {
		q := &t.shards[i].timeouts
		for to := q.pop(); to != nil; to = q.pop() {
			t.cancelForStop(to)
		}
		t.wheel.counters.cancelled += uint64(q.takeDropped())
	}
}

// waitForPool lets the pool goroutines finish the runs handed to them and
// waits until they have exited, taking meanwhile what is pushed to the
// queues (see takeForStop): producers wake a worker that says it sleeps.
func (t *Timer) waitForPool() {
	p := t.conf.pool
	p.close()
	for {
		explorePoint("retry load")
		t.wake.sleeping.Store(true)
		t.takeForStop()
		t.flushCalls()
		if exploring {
			// The interleaving explorer plays the pool's goroutines on
			// goroutines of its own, which it schedules only at
			// explorePoint: wait for them there.
			select {
			case <-p.done:
				t.wake.sleeping.Store(false)
				return
			default:
			}
			explorePoint("spin")
			continue
		}
		select {
		case <-p.done:
			t.wake.sleeping.Store(false)
			return
		case <-t.wake.ch:
		}
	}
}

// closeQueues takes, cancels and keeps for Stop what was pushed since
// collectUnprocessed or the last takeForStop, and closes the queues, so
// that a later push fails and its caller knows nobody will take it. The
// worker calls it after the pool has finished. Each Timeout is cancelled
// here or above, not both: Schedule refuses, under the Timeout's lock, a
// Timer already stopped, so a Timeout that Stop let go of is not armed on it
// again. It makes no Cancelled call: shutdown makes those it owes after
// it (see flushCalls). A queue closed stays closed, and closing it again
// finds nothing.
func (t *Timer) closeQueues() {
	for i := range t.shards {
		q := &t.shards[i].timeouts
		q.close(t.cancelForStop)
		t.wheel.counters.cancelled += uint64(q.takeDropped())
	}
	t.changes.close(t.takeChange)
}

// cancelRunForStop acts on to, a periodic timeout on the list of runs,
// where collectUnprocessed found it. A run that has returned (it is in a
// queue of new timeouts again) is taken from there, by takeForStop or
// closeQueues. A run that has not started never will: Stop takes its token
// and ends it at once, as if it had returned (see endRun), and takes it
// from the queue it goes to. A run in progress goes on: Stop cancels its
// Timeout if it is pending (and returns it), counts its cancel, and leaves
// it held by its run (heldRun), on no list: no Timer may arm it until the
// run returns, so runs of one Timeout never overlap, whoever cancelled it.
// The run's return ends it (see endRun), and whoever lets go of it then
// makes its Cancelled call, if Cancel cancelled it first. A run that never
// returns (its executor dropped it, and did not panic) holds it for good.
func (t *Timer) cancelRunForStop(to *Timeout) {
	s := to.lock()
	if assertInvariants {
		assertFoundIn(to, s, "the list of runs", heldPeriodicRun, heldReturning)
	}
	if s.held() == heldReturning {
		to.unlock(s)
		return
	}
	// On the list of runs, its task is its periodicTask: Schedule refuses
	// it, so nothing changes it.
	if p := to.task.(*periodicTask); p.token.take() {
		to.unlock(s)
		t.endRun(to, p)
		return
	}
	t.wheel.running.remove(to)
	if s.phase() != stPending {
		t.wheel.counters.cancelled++
		to.unlock(s.withHeld(heldRun))
		return
	}
	t.stopPending(to, s.withPhase(stCancelled).withHeld(heldRun))
}

// cancelForStop takes to off where it is held (a queue of new timeouts it
// was popped from, a bucket or a level's slot, and the list of runs for a
// periodic timeout back from its run) in one critical section, and lets go
// of it: if it is still pending, Stop cancels it and it joins
// t.life.unprocessed; if it was cancelled (by Cancel, or by Stop as its run
// was out), its cancel is counted and the Cancelled call owed made. One that
// is also in the changes queue is let go of, and its call made, when taken
// from there (see takeChange).
func (t *Timer) cancelForStop(to *Timeout) {
	s := to.lock()
	if assertInvariants {
		assertFoundIn(to, s, "what Stop collects", heldNew, heldReturning, heldBucket, heldBucketAndChanges)
	}
	switch s.held() {
	case heldBucket, heldBucketAndChanges:
		t.unlink(to, s.level())
	case heldReturning:
		t.wheel.running.remove(to)
	}
	if s.phase() != stPending {
		if s.held() == heldBucketAndChanges {
			// Still in the changes queue: counted now, let go of (and its
			// Cancelled call made) when taken from there.
			t.wheel.counters.cancelled++
			to.unlock(s.withHeld(heldChanges))
			return
		}
		t.endCancelled(to, s, true)
		return
	}
	ns := s.withPhase(stCancelled).withHeld(heldNowhere)
	if s.held() == heldBucketAndChanges {
		ns = ns.withHeld(heldChanges)
	}
	t.stopPending(to, ns)
}

// stopPending ends the section of to, pending, with ns: Stop's cancel,
// counted, and kept for Stop to return (appended after the section).
func (t *Timer) stopPending(to *Timeout, ns state) {
	t.pendingFor(to).Add(-1)
	t.wheel.counters.cancelled++
	o, observes := to.task.(stopObserver)
	to.unlock(ns)
	if observes {
		o.timerStopped(to)
	}
	t.life.unprocessed = append(t.life.unprocessed, to)
}

// stopObserver is a task that must know when Stop cancels its timeout:
// a deadline context, which then keeps its deadline on the runtime's timer.
type stopObserver interface {
	timerStopped(to *Timeout)
}

// stopOwned is Stop for a Timer made WithoutWorker: it cancels the pending
// timeouts on the calling goroutine and returns them, waiting for nothing.
// If Advance or NextDeadline is in progress (a task calls Stop, say), that
// call cancels them as it lets go of advancing, and Stop returns nil.
func (t *Timer) stopOwned() []*Timeout {
	if !t.life.state.CompareAndSwap(stateStarted, stateShutdown) {
		return nil // stopped already
	}
	t.instance.release()
	close(t.life.stopped)
	close(t.life.done)
	if !t.own.advancing.CompareAndSwap(false, true) {
		return nil
	}
	return t.releaseOwner()
}
