package hashedwheel

import (
	"fmt"
	"math"
	"time"
)

// periodicTask is a periodic timeout: its Timeout, whose task is the
// periodicTask itself, the user's task and the period, in one allocation of
// 96 bytes, so that scheduling costs one allocation and runs none.
type periodicTask struct {
	to     Timeout // first, so that &p.to and p share an address
	task   TimerTask
	period int64 // nanoseconds, > 0

	// token is the token of the run handed out (see run.go): runs of one
	// Timeout never overlap, so one token serves them all.
	token runToken

	// exec is the func a WithTaskExecutor executor is given for each run,
	// made once so that handing a run out allocates nothing; nil without
	// an executor. Immutable.
	exec func()
}

func (p *periodicTask) Run(to *Timeout) { p.task.Run(to) }

// NewPeriodicTimeout schedules task to run every period, first at period from
// now: run k is due at start + k*period, whatever the lateness of the runs
// before it, and runs at the first tick at or after that. A run never starts
// while the previous one is still running; runs that fall more than a period
// behind are skipped, as a time.Ticker drops ticks, never run back to back.
//
// The timeout stays pending until it is cancelled, by Cancel (also from inside
// its own task) or by [Timer.Stop]: IsExpired stays false,
// [Timer.PendingTimeouts] counts it once, and Run gets the same *Timeout every
// time. Deadline reports the due time of the run in progress while the task
// runs, and of the next run otherwise; Reset moves the next run once the run in
// progress has returned. Scheduling is one allocation of 96 bytes (three with
// a [WithTaskExecutor]); runs allocate nothing.
//
// NewPeriodicTimeout returns the errors [Timer.NewTimeout] does, and an error
// wrapping [ErrInvalidPeriod] if period is not positive. See guarantee 12 in
// docs/guarantees.md, and the example of Timer.Every.
func (t *Timer) NewPeriodicTimeout(task TimerTask, period time.Duration) (*Timeout, error) {
	if isNilTask(task) {
		return nil, ErrNilTask
	}
	if period <= 0 {
		return nil, fmt.Errorf("%w: %v: the period must be > 0", ErrInvalidPeriod, period)
	}
	p := &periodicTask{task: task, period: int64(period)}
	to := &p.to
	to.timer.Store(t)
	to.task = p
	if t.conf.taskExecutor != nil {
		p.exec = func() {
			if p.token.take() {
				t.runPeriodic(to, p, false)
			}
		}
	}
	if err := t.scheduleTimeout(to, period, wantsCancelled(task)); err != nil {
		return nil, err
	}
	return to, nil
}

// Every runs f every period, like [Timer.NewPeriodicTimeout]. The returned
// Timeout's Task calls f; cancel it to stop the runs.
func (t *Timer) Every(period time.Duration, f func()) (*Timeout, error) {
	if f == nil {
		return nil, ErrNilTask
	}
	return t.NewPeriodicTimeout(funcTask(f), period)
}

// skipBehind returns the first of due, due+period, due+2*period, ... that
// is at most one period behind now: the runs more than a period behind are
// skipped, as time.Ticker drops ticks.
func skipBehind(due, period, now int64) int64 {
	if behind := now - due; behind > period {
		// ceil(behind/period) - 1 periods; the sum stays below now.
		due += (behind - 1) / period * period
	}
	return due
}

// nextPeriod returns the due time of the run after one due at due: a period
// later, saturating.
func nextPeriod(due, period int64) int64 {
	if due > math.MaxInt64-period {
		return math.MaxInt64
	}
	return due + period
}

// runPeriodic runs one run of a periodic timeout that the worker handed out,
// on the calling goroutine (the worker's if onWorker), whose token the caller
// took, and returns the time it returned. Then the run ends (see endRun),
// even if the task panicked or called runtime.Goexit.
func (t *Timer) runPeriodic(to *Timeout, p *periodicTask, onWorker bool) (returned int64) {
	defer func() { returned = t.endRun(to, p) }()
	if onWorker || t.startPeriodic(to, p) {
		t.callUser(to, p, false)
	}
	return
}

// startPeriodic decides, in one critical section, whether a periodic run
// handed to the pool or the executor starts: only if its timeout is still
// pending on the list of runs, and its Timer not stopped. A run that Cancel
// or Stop came before is skipped, so that its task never runs after either
// has returned; one that starts before them is in progress, and goes on.
// (A run on the worker is in progress as it is handed out: nothing else runs
// there in between.) A run that starts more than a period after it was due
// starts as the latest run due, so that the next is not due at once.
func (t *Timer) startPeriodic(to *Timeout, p *periodicTask) bool {
	now := t.elapsed()
	s := to.lock()
	start := s.phase() == stPending && s.held() == heldPeriodicRun && !t.isStopped()
	if start {
		to.deadline.Store(skipBehind(to.deadline.Load(), p.period, now))
	}
	to.unlock(s)
	return start
}
