package hashedwheel

import (
	"fmt"
	"os"
	"runtime/debug"
)

// A run's way out and back. The worker (or an owner's Advance) hands each
// run out once (expireDue, then handOut); the run goes to the pool, to the
// executor, or runs on the worker; and it ends in one place, endRun, which
// gives the Timeout back to its Timer: let go of, in a queue for its next
// run or for a new arm made while it was out, or, once the Timer has closed
// its queues, ended aside. A run that may not start (on the pool or an
// executor) carries a token, given by the worker as it hands the run out
// and taken by whoever ends it: the run as it starts, the recovery of an
// executor that panicked (which then ends the run as if it had returned),
// or Stop, for a periodic run that has not started. A token taken once is
// never taken again, so a run is never ended twice, and a run whose token
// is gone does nothing, however often its executor calls it.

// handOut results other than the time a periodic run returned.
const (
	ranHere   = -1 // a one-shot task ran on the worker, or went to the executor
	handedOff = -2 // the task went to the pool
)

// runPlace is where a run is handed out to.
type runPlace uint8

const (
	runsOnWorker runPlace = iota
	runsOnPool
	runsOnExecutor
)

// hand is a run that the worker hands out: the timeout, the task read
// under its lock as it expired (a Schedule may arm the timeout again with
// another task before the run starts), and where the run goes.
type hand struct {
	to    *Timeout
	task  TimerTask
	where runPlace
}

// runToken is the token of a run handed out that may not start: the
// worker gives it as it hands the run out, and whoever ends the run takes
// it first (see the top of this file).
type runToken struct {
	// out is set by the worker as it hands the run out, before the run can
	// be reached; cleared by the one CompareAndSwap that takes it.
	out atomicBool
}

// give makes the token takeable: the worker, as it hands a run out.
func (k *runToken) give() { k.out.Store(true) }

// take reports whether the caller took the token: true for one caller per
// give.
func (k *runToken) take() bool { return k.out.Load() && k.out.CompareAndSwap(true, false) }

// runsWhere returns where a run of task goes.
func (t *Timer) runsWhere(task TimerTask) runPlace {
	switch {
	case t.conf.pool != nil && !isUrgent(task):
		return runsOnPool
	case t.conf.taskExecutor != nil && !isUrgent(task):
		return runsOnExecutor
	}
	return runsOnWorker
}

// handOut runs a run the worker has expired: on the pool, through the
// executor, or here on the worker. It returns the time a periodic run that
// ran here returned, ranHere if a task ran here or went to the executor
// (which may have taken time), or handedOff.
func (t *Timer) handOut(h hand) int64 {
	// The run counts in Stats before its task starts, wherever it runs: a
	// task that blocks must not hide it, nor the runs handed out before it.
	t.published.expired.Store(t.wheel.counters.expired)
	// On the worker, the run starts now: nothing can come between, so it
	// needs no token.
	p, periodic := h.task.(*periodicTask)
	if periodic && h.where != runsOnWorker {
		p.token.give()
	}
	switch h.where {
	case runsOnPool:
		t.conf.pool.submit(h.to, h.task)
		return handedOff
	case runsOnExecutor:
		t.execute(h.to, h.task, p)
		return ranHere
	}
	if periodic {
		return t.runPeriodic(h.to, p, true)
	}
	t.runOneShot(h.to, h.task)
	return ranHere
}

// isUrgent reports whether task must run on the worker even with a
// pool or an executor (see urgentTask).
func isUrgent(task TimerTask) bool {
	_, ok := task.(urgentTask)
	return ok
}

// urgentTask is a task of this package's own that runs on the worker even
// with a pool or an executor, because user tasks queued there may wait for
// it: a context's deadline, which closes a channel and cancels the contexts
// derived from it.
type urgentTask interface {
	TimerTask
	urgent()
}

// runTimeout runs task, the task of the expired timeout to, on a pool
// goroutine. A periodic run whose token Stop took does nothing.
func (t *Timer) runTimeout(to *Timeout, task TimerTask) {
	if p, ok := task.(*periodicTask); ok {
		if p.token.take() {
			t.runPeriodic(to, p, false)
		}
		return
	}
	t.runOneShot(to, task)
}

// runOneShot runs task, the task of the expired one-shot arm of to, and
// then ends the run, even if the task panicked or called runtime.Goexit.
func (t *Timer) runOneShot(to *Timeout, task TimerTask) {
	defer t.endRun(to, nil)
	t.callUser(to, task, false)
}

// endRun ends the run of to, of p if it is periodic (nil for a one-shot
// run): the run returned, or its executor panicked before starting it. It
// is the one place where a run gives its Timeout back, and returns the time
// it read to do so (0 for a one-shot run).
//
//   - A one-shot arm that nobody armed again, the common case, is let go
//     of in one step: from now on the Timeout may be armed on any Timer.
//   - A one-shot Timeout armed again while its run was out (on this Timer:
//     Schedule refuses another) goes to this Timer's queue of new
//     timeouts now, cancelled or not.
//   - A periodic Timeout still on the list of runs goes back through its
//     queue of new timeouts for its next run, due a period after this one
//     (skipping those more than a period behind now); from then on Reset
//     may move it.
//   - A periodic Timeout that Stop took off the list of runs as it stopped
//     (heldRun: cancelled, its cancel counted) goes to the stopping worker
//     through the changes queue, which lets go of it and makes its
//     Cancelled call, if one is owed.
//
// If the Timer has stopped and closed its queues (only a run on an
// executor's goroutine, which Stop does not wait for, returns so late), the
// arm ends here, out of Stop's reach: cancelled if it was pending, counted
// aside, its Cancelled call made here if it wants one, as nobody else will
// tell its owner that it ended.
func (t *Timer) endRun(to *Timeout, p *periodicTask) (now int64) {
	if p == nil {
		if s := to.load(); s&(phaseMask|heldMask) == stExpired|heldRun && to.swap(s, s.withHeld(heldNowhere)) {
			return 0
		}
	} else {
		now = t.elapsed()
	}
	s := to.lock()
	if assertInvariants {
		assertFoundIn(to, s, "a run", heldRun, heldPeriodicRun)
	}
	var q *mpscQueue
	var ns state
	switch {
	case s.held() == heldPeriodicRun:
		to.deadline.Store(skipBehind(nextPeriod(to.deadline.Load(), p.period), p.period, now))
		q, ns = &t.shardFor(to).timeouts, s.withHeld(heldReturning)
	case p != nil:
		q, ns = &t.changes, s.withHeld(heldChanges)
	case s.phase() == stExpired:
		to.unlock(s.withHeld(heldNowhere))
		return 0
	default:
		q, ns = &t.shardFor(to).timeouts, s.withHeld(heldNew)
	}
	if q.push(to) {
		to.unlock(ns)
		t.wakeWorker()
		return now
	}
	if assertInvariants && s.held() == heldPeriodicRun {
		panic("hashedwheel: invariant broken: a periodic run came back to a closed queue, still on the list of runs")
	}
	if s.held() != heldRun || p == nil {
		t.shardFor(to).cancelledAside.Add(1) // Stop counted a periodic run's cancel
	}
	if s.phase() == stPending {
		t.pendingFor(to).Add(-1)
		s = cancelledState(s) // its call is owed, if it wants one
	}
	t.makeCall(t.letGo(to, s, false))
	return now
}

// execute hands the run of to, with task, to the WithTaskExecutor executor
// (p is task if the run is periodic). A panic in the executor is logged with
// the timeout and does not reach the worker; the executor is then taken to
// have dropped the run, which ends at once unless it has started. So is
// one that calls runtime.Goexit, which goes on after.
func (t *Timer) execute(to *Timeout, task TimerTask, p *periodicTask) {
	var token *runToken
	var fn func()
	if p != nil {
		token, fn = &p.token, p.exec
	} else {
		r := &execRun{t: t, to: to, task: task}
		r.token.give()
		token, fn = &r.token, r.run
	}
	normalReturn := false
	defer func() {
		if normalReturn {
			return
		}
		// A panic, or a runtime.Goexit, for which recover returns nil and
		// which goes on after this.
		if r := recover(); r != nil {
			t.logError("hashedwheel: task executor panicked",
				"timeout", to, "panic", r, "stack", string(debug.Stack()))
		} else {
			t.logError("hashedwheel: task executor called runtime.Goexit", "timeout", to)
		}
		if token.take() {
			t.endRun(to, p) // it never started
		}
	}()
	t.conf.taskExecutor(fn)
	normalReturn = true
}

// execRun is a one-shot run handed to a WithTaskExecutor executor: made for
// each hand-out, so that a func the executor calls late, or twice, finds
// its own token taken and does nothing.
type execRun struct {
	t     *Timer
	to    *Timeout
	task  TimerTask
	token runToken
}

// run is the func the executor calls.
func (r *execRun) run() {
	if r.token.take() {
		r.t.runOneShot(r.to, r.task)
	}
}

// callUser calls the user's code for to: task's Run, or, if cancelled, the
// Cancelled method of the arm's task (a periodic timeout's user task). A
// panic is recovered and logged with the timeout, and callUser returns. A
// runtime.Goexit (t.FailNow in a test does one) cannot be stopped: callUser
// logs it and lets it go on, through the deferred ends of its callers (the
// run's end, the rest of Stop's Cancelled calls, the replacement of a
// worker or pool goroutine). It tells the two apart as
// golang.org/x/sync/singleflight does: only a return sets normalReturn, and
// recover returns nil in a Goexit (since Go 1.21, panic(nil) panics with a
// *runtime.PanicNilError, which recover returns).
func (t *Timer) callUser(to *Timeout, task TimerTask, cancelled bool) {
	normalReturn := false
	defer func() {
		if normalReturn {
			return
		}
		what := "task"
		if cancelled {
			what = "Cancelled"
		}
		if r := recover(); r != nil {
			t.logError("hashedwheel: "+what+" panicked",
				"timeout", to, "panic", r, "stack", string(debug.Stack()))
		} else {
			t.logError("hashedwheel: a " + what + " called runtime.Goexit")
		}
	}()
	if cancelled {
		userTask(task).(CancelledTask).Cancelled(to)
	} else {
		task.Run(to)
	}
	normalReturn = true
}

// logError logs through the timer's logger. A logger that panics must not
// take the worker down with it: its panic is written to standard error with
// the message instead.
func (t *Timer) logError(msg string, args ...any) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "%s %v (and the logger panicked: %v)\n", msg, args, r)
		}
	}()
	t.conf.logger.Error(msg, args...)
}

// owedCall is a Cancelled call owed: the Timeout and the task of the arm
// that Cancel cancelled, read in the critical section that let go of it.
// The zero owedCall owes nothing.
type owedCall struct {
	to   *Timeout
	task TimerTask
}

// makeCall makes the Cancelled call c, if any, on the calling goroutine.
func (t *Timer) makeCall(c owedCall) {
	if c.to != nil {
		t.callUser(c.to, c.task, true)
	}
}

// endCancelled is letGo by the worker (or the holder of an owned Timer's
// advancing), which makes the Cancelled call owed now, or, while it stops
// the Timer, once the clean-up's state changes are done (see shutdown): it
// lets go of the Timeout then with the call still owed (stOwesCancelled),
// so that Schedule refuses it until the call is made, as at any other time.
func (t *Timer) endCancelled(to *Timeout, s state, count bool) {
	if t.wheel.cleanUp != cleanUpNotStarted && s&stOwesCancelled != 0 {
		if count {
			t.wheel.counters.cancelled++
		}
		to.unlock(s.withHeld(heldNowhere))
		t.wheel.calls = append(t.wheel.calls, to)
		return
	}
	t.makeCall(t.letGo(to, s, count))
}

// makeCalls makes the Cancelled calls owed by the Timeouts in calls, in
// order, each after the critical section that clears its stOwesCancelled
// (from then on a Schedule may arm it, from inside the call say). One that
// calls runtime.Goexit does not keep the others from being made: they are
// made as the goroutine exits.
func (t *Timer) makeCalls(calls []*Timeout) {
	i := 0
	defer func() {
		if i < len(calls) {
			t.makeCalls(calls[i+1:]) // call i called runtime.Goexit
		}
	}()
	for ; i < len(calls); i++ {
		to := calls[i]
		s := to.lock()
		task := to.task
		to.unlock(s &^ stOwesCancelled)
		t.callUser(to, task, true)
	}
}
