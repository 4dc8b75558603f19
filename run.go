package hashedwheel

import (
	"fmt"
	"os"
	"runtime/debug"
)

// handOut results other than the time a periodic run returned.
const (
	ranHere   = -1 // a one-shot task ran on the worker, or went to the executor
	handedOff = -2 // the task went to the pool
)

// handOut runs an expired timeout's task: on the pool, through the executor,
// or here on the worker. It returns the time a periodic run that ran here
// returned, ranHere if a task ran here or went to the executor (which may
// have taken time), or handedOff.
func (t *Timer) handOut(to *Timeout) int64 {
	// The run counts in Stats before its task starts, wherever it runs: a
	// task that blocks must not hide it, nor the runs handed out before it.
	t.published.expired.Store(t.wheel.counters.expired)
	if t.conf.pool != nil && !isUrgent(to) {
		t.conf.pool.submit(to)
		return handedOff
	}
	if t.conf.taskExecutor != nil && !isUrgent(to) {
		t.execute(to)
		return ranHere
	}
	if p, ok := to.task.(*periodicTask); ok {
		return t.runPeriodic(to, p, true)
	}
	t.callTask(to)
	return ranHere
}

// isUrgent reports whether to's task must run on the worker even with a
// pool or an executor (see urgentTask).
func isUrgent(to *Timeout) bool {
	_, ok := to.task.(urgentTask)
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

// runTimeout runs to's task on the calling goroutine, a pool goroutine or
// the executor's.
func (t *Timer) runTimeout(to *Timeout) {
	if p, ok := to.task.(*periodicTask); ok {
		t.runPeriodic(to, p, false)
		return
	}
	t.callTask(to)
}

// callTask runs to's task; a panic in it is logged with the timeout.
func (t *Timer) callTask(to *Timeout) {
	defer t.recoverPanic(to, "task")
	to.task.Run(to)
}

// execute hands an expired timeout's task to the WithTaskExecutor executor.
// A panic in the executor is logged with the timeout and does not reach the
// worker; a periodic run the executor did not start goes back to the worker,
// so the timeout is not stranded.
func (t *Timer) execute(to *Timeout) {
	p, periodic := to.task.(*periodicTask)
	if !periodic {
		defer t.recoverPanic(to, "task executor")
		t.conf.taskExecutor(func() { t.callTask(to) })
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
// has let go of it, and calls its task's Cancelled method if it has one. A
// timeout that its NewTimeout took back (stWithdrawn) was never its
// caller's: it is neither counted nor told.
func (t *Timer) countCancelled(to *Timeout) {
	if to.state.Load()&stWithdrawn != 0 {
		return
	}
	t.wheel.counters.cancelled++
	t.notifyCancelled(to)
}

// notifyCancelled calls the task's Cancelled method, if it has one, for a
// timeout that Cancel cancelled and the worker has unlinked.
func (t *Timer) notifyCancelled(to *Timeout) {
	c, ok := to.Task().(CancelledTask)
	if !ok {
		return
	}
	defer t.recoverPanic(to, "Cancelled")
	c.Cancelled(to)
}
