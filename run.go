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

// handOut runs the task of an expired timeout, read while the worker held
// it: on the pool, through the executor, or here on the worker. It returns
// the time a periodic run that ran here returned, ranHere if a task ran here
// or went to the executor (which may have taken time), or handedOff.
func (t *Timer) handOut(to *Timeout, task TimerTask) int64 {
	// The run counts in Stats before its task starts, wherever it runs: a
	// task that blocks must not hide it, nor the runs handed out before it.
	t.published.expired.Store(t.wheel.counters.expired)
	if t.conf.pool != nil && !isUrgent(task) {
		t.conf.pool.submit(to, task)
		return handedOff
	}
	if t.conf.taskExecutor != nil && !isUrgent(task) {
		t.execute(to, task)
		return ranHere
	}
	if p, ok := task.(*periodicTask); ok {
		return t.runPeriodic(to, p, true)
	}
	t.runOneShot(to, task)
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

// runOneShot runs task, the task of the expired one-shot arm of to, and then
// ends the run, even if the task panicked or called runtime.Goexit (see
// runReturned).
func (t *Timer) runOneShot(to *Timeout, task TimerTask) {
	defer t.runReturned(to)
	t.callTask(to, task)
}

// runReturned ends the run of an expired one-shot arm of to: from now on a
// new arm may be handed out. If to was armed again (on the same Timer) while
// the run was out, it gives it to the Timer. If the Timer has stopped and let
// go of its queues meanwhile, which happens only to a run that Stop does not
// wait for (on a WithTaskExecutor executor's goroutine), the new arm ends
// cancelled, out of Stop's reach, and a Cancelled call owed is made here.
func (t *Timer) runReturned(to *Timeout) {
	if !to.endRun() {
		return
	}
	nt := to.timer.Load() // the new arm's, stable while stNew is set
	if nt.shardFor(to).timeouts.push(to) {
		nt.wakeWorker()
		return
	}
	nt.shardFor(to).cancelledAside.Add(1)
	if to.markCancelled(stNew) {
		to.release()
		return
	}
	// Cancelled before the Timer stopped: its worker is gone, so the
	// Cancelled call owed is made here, late rather than never.
	if s, _ := to.letGo(stNew); s&stNotify != 0 {
		nt.notifyCancelled(to)
	}
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
	t.runOneShot(to, task)
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

// countCancelled counts a timeout that Cancel cancelled, now that the worker
// has let go of it, and, if s (its state as the worker let go) says a
// Cancelled call is owed, makes it.
func (t *Timer) countCancelled(to *Timeout, s int32) {
	t.wheel.counters.cancelled++
	if s&stNotify != 0 {
		t.notifyCancelled(to)
	}
}

// notifyCancelled calls the task's Cancelled method for a timeout that Cancel
// cancelled and the worker has let go of. stNotify keeps Schedule from
// rewriting the task until it is cleared, just before the call.
func (t *Timer) notifyCancelled(to *Timeout) {
	c := to.Task().(CancelledTask)
	to.takeNotify()
	defer t.recoverPanic(to, "Cancelled")
	c.Cancelled(to)
}
