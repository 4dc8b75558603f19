package hashedwheel

import (
	"fmt"
	"os"
	"runtime/debug"
	"sync"
)

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
	switch h.where {
	case runsOnPool:
		t.conf.pool.submit(h.to, h.task)
		return handedOff
	case runsOnExecutor:
		if t.conf.owned {
			t.own.runsOut.Add(1) // see NextDeadline
		}
		t.execute(h.to, h.task)
		return ranHere
	}
	if p, ok := h.task.(*periodicTask); ok {
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

// runTimeout runs task, the task of the expired timeout to, on the calling
// goroutine: a pool goroutine or the executor's.
func (t *Timer) runTimeout(to *Timeout, task TimerTask) {
	if p, ok := task.(*periodicTask); ok {
		t.runPeriodic(to, p, false)
		return
	}
	t.runOneShot(to, task)
}

// runOneShot runs task, the task of the expired one-shot arm of to, and
// then ends the run, even if the task panicked or called runtime.Goexit
// (see endRun).
func (t *Timer) runOneShot(to *Timeout, task TimerTask) {
	defer t.endRun(to)
	t.callTask(to, task)
}

// endRun ends a one-shot run (heldRun): from now on the Timeout may be
// armed on any Timer, and a new arm may be handed out. A Timeout nobody
// armed again meanwhile, the common case, is let go in one step.
// An arm made while the run was out (on this run's Timer) goes to that
// Timer's queue of new timeouts now, cancelled or not. If the Timer has
// stopped and closed its queues meanwhile, which happens only to a run that
// Stop does not wait for (on a WithTaskExecutor executor's goroutine), the
// arm ends here, out of Stop's reach (see endAside).
func (t *Timer) endRun(to *Timeout) {
	if s := to.load(); s&(phaseMask|heldMask) == stExpired|heldRun && to.swap(s, s.withHeld(heldNowhere)) {
		return
	}
	s := to.lock()
	if assertInvariants {
		assertFoundIn(to, s, "a one-shot run", heldRun)
	}
	if s.phase() == stExpired {
		to.unlock(s.withHeld(heldNowhere))
		return
	}
	nt := to.timer.Load() // the new arm's: Schedule arms it on this Timer only
	if nt.shardFor(to).timeouts.push(to) {
		to.unlock(s.withHeld(heldNew))
		nt.wakeWorker()
		return
	}
	nt.endAside(to, s)
}

// endAside ends, in the critical section of to (state s, still held by
// its run), an arm that its run hands back to a Timer that has stopped and
// closed its queues: the arm ends cancelled, let go of here, out of the
// reach of Stop, which has returned. Its cancel is counted among those the
// worker never saw. If the arm was pending (armed as Stop came), or
// cancelled by Cancel with its call owed, and its task is a CancelledTask,
// the call is made here, on the run's goroutine: Stop does not return the
// arm, and the call is how its owner learns that it ended.
func (t *Timer) endAside(to *Timeout, s state) {
	t.shardFor(to).cancelledAside.Add(1)
	if s.phase() == stPending {
		t.pendingFor(to).Add(-1)
		s = cancelledState(s) // its call is owed, if it wants one
	}
	t.letGo(to, s, false)
}

// callTask runs task on to; a panic in it is logged with the timeout.
func (t *Timer) callTask(to *Timeout, task TimerTask) {
	defer t.recoverPanic(to, "task")
	task.Run(to)
}

// execute hands the task of an expired timeout to the WithTaskExecutor
// executor. A panic in the executor is logged with the timeout and does not
// reach the worker; a periodic run the executor did not start goes back to
// the worker, so the timeout is not stranded. A one-shot run the executor
// drops is never ended: see WithTaskExecutor.
func (t *Timer) execute(to *Timeout, task TimerTask) {
	p, periodic := task.(*periodicTask)
	if !periodic {
		r := execRuns.Get().(*execRun)
		r.t, r.to, r.task = t, to, task
		defer t.recoverPanic(to, "task executor")
		t.conf.taskExecutor(r.fn)
		return
	}
	p.exec.handedOut.Store(true)
	defer func() {
		if r := recover(); r != nil {
			if p.exec.handedOut.CompareAndSwap(true, false) {
				t.handBack(to, p) // the run never started
				t.executorRunReturned()
			}
			t.logError("hashedwheel: task executor panicked",
				"timeout", to, "panic", r, "stack", string(debug.Stack()))
		}
	}()
	t.conf.taskExecutor(p.exec.run)
}

// execRun is a one-shot run handed to a WithTaskExecutor executor: the
// timeout, its task, and the func the executor calls, made once. Runs are
// kept in a pool, so that handing one out allocates nothing once the pool is
// warm (a Timeout whose task schedules it again runs for nothing).
type execRun struct {
	t    *Timer
	to   *Timeout
	task TimerTask
	fn   func() // run, bound to this execRun
}

var execRuns sync.Pool

func init() {
	// Set here: New refers to run, which refers to execRuns.
	execRuns.New = func() any {
		r := &execRun{}
		r.fn = r.run
		return r
	}
}

// run runs the task, having put the execRun back in the pool: the executor
// calls fn once.
func (r *execRun) run() {
	t, to, task := r.t, r.to, r.task
	r.t, r.to, r.task = nil, nil, nil
	execRuns.Put(r)
	defer t.executorRunReturned()
	t.runOneShot(to, task)
}

// executorRunReturned notes that a run handed to the executor has returned,
// after it has handed its Timeout back: an owned Timer's NextDeadline stops
// counting it.
func (t *Timer) executorRunReturned() {
	if t.conf.owned {
		t.own.runsOut.Add(-1)
	}
}

func (t *Timer) recoverPanic(to *Timeout, what string) {
	if r := recover(); r != nil {
		t.logError("hashedwheel: "+what+" panicked",
			"timeout", to, "panic", r, "stack", string(debug.Stack()))
	}
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

// callCancelled makes the Cancelled call of a timeout that Cancel
// cancelled, with task, the arm's task, read in the critical section that
// let go of it (which cleared stOwesCancelled: from then on a Schedule may
// arm the timeout again, from inside Cancelled say).
func (t *Timer) callCancelled(to *Timeout, task TimerTask) {
	defer t.recoverPanic(to, "Cancelled")
	userTask(task).(CancelledTask).Cancelled(to)
}
