package hashedwheel

import (
	"fmt"
	"math"
	"time"
)

// NewTimeout schedules task to run once, after delay, at the first tick at or
// after the deadline. A delay of zero or less runs it at the next tick; a delay
// too large to represent saturates, and the task never runs. It costs one
// 64-byte allocation; [Timer.Schedule] arms a Timeout of yours without one.
//
// By default the task runs on the worker goroutine, one task at a time, so a
// task that blocks delays every timeout due after it: give such tasks
// [WithTaskWorkers]. NewTimeout returns [ErrNilTask] for a nil task,
// [ErrTimerStopped] after [Timer.Stop], an error wrapping
// [ErrTooManyPendingTimeouts] at the [WithMaxPendingTimeouts] limit, and the
// errors of [Timer.Start]. See the example of Timer.NewTimeout.
func (t *Timer) NewTimeout(task TimerTask, delay time.Duration) (*Timeout, error) {
	if isNilTask(task) {
		return nil, ErrNilTask
	}
	to := &Timeout{task: task}
	to.timer.Store(t)
	if err := t.scheduleTimeout(to, delay, wantsCancelled(task)); err != nil {
		return nil, err
	}
	return to, nil
}

// AfterFunc schedules f to run once, after delay, like [Timer.NewTimeout]. The
// returned Timeout's Task calls f.
func (t *Timer) AfterFunc(delay time.Duration, f func()) (*Timeout, error) {
	if f == nil {
		return nil, ErrNilTask
	}
	to := &Timeout{task: funcTask(f)}
	to.timer.Store(t)
	if err := t.scheduleTimeout(to, delay, 0); err != nil {
		return nil, err
	}
	return to, nil
}

// isNilTask reports whether task is nil, or a nil TimerFunc or func.
func isNilTask(task TimerTask) bool {
	switch f := task.(type) {
	case nil:
		return true
	case TimerFunc:
		return f == nil
	case funcTask:
		return f == nil
	}
	return false
}

// scheduleTimeout schedules to, whose timer and task are set, after delay;
// wants is stWantsCancelled if the task is a CancelledTask. The caller
// allocates to, possibly inside a larger object, and publishes it only if
// scheduleTimeout succeeds.
func (t *Timer) scheduleTimeout(to *Timeout, delay time.Duration, wants state) error {
	now, err := t.armable()
	if err != nil {
		return err
	}
	if n, ok := t.countPending(to); !ok {
		return t.tooManyPending(n)
	}
	// Nobody else can reach to until the push publishes it, so its first
	// state needs no lock; a push that fails leaves it unseen.
	to.deadline.Store(addDelay(now, delay))
	to.initState(stPending | heldNew | wants)
	if !t.shardFor(to).timeouts.push(to) {
		// The worker has stopped and taken what it had: the caller gets
		// an error and never sees the timeout. A push that succeeds comes
		// before that, and the stopping worker cancels the timeout (Stop
		// returns it) if it has not expired.
		to.initState(stUnarmed)
		t.pendingFor(to).Add(-1)
		return ErrTimerStopped
	}
	t.nudgeWorker(now)
	return nil
}

// armable starts the timer if it is not running yet, and returns the time on
// its clock, for a call that schedules a timeout.
func (t *Timer) armable() (now int64, err error) {
	if t.life.state.Load() != stateStarted {
		if err := t.Start(); err != nil {
			return 0, err
		}
	}
	now = t.elapsed()
	if now < 0 {
		return 0, ErrClockMismatch
	}
	return now, nil
}

// countPending counts to among the pending timeouts, or reports false
// (and the count n it found) if the timer holds its pending limit.
func (t *Timer) countPending(to *Timeout) (n int64, ok bool) {
	if t.conf.maxPendingTimeouts <= 0 {
		t.pendingFor(to).Add(1)
		return 0, true
	}
	return t.reservePending()
}

// nudgeWorker wakes the worker after a push of a new timeout at now, if it
// sleeps past the next tick or is late to take new timeouts. The checks are
// inline: at a million calls a second, most find nothing to do.
func (t *Timer) nudgeWorker(now int64) {
	if !t.wakeWorker() && now >= t.wake.kickAt.Load() {
		t.kickWorker()
	}
}

// Schedule arms to, a Timeout the caller owns (a field of its own struct, say),
// to run task once after delay, as [Timer.NewTimeout] does, and allocates
// nothing: it reads the clock once and takes to's lock for a moment, and never
// waits for a task. The task runs at the first tick at or after the deadline,
// never before it.
//
// to must be the zero Timeout or one that has ended: cancelled, or expired,
// which a one-shot Timeout is from just before its task runs, so a task may
// arm its own Timeout again from inside its run. A cancelled Timeout may be
// armed again at once on the same Timer, and on another Timer once the first
// has taken the cancel in (within about a tick). Runs of one Timeout never
// overlap: armed again while its task runs, it runs after that run returns.
//
// Schedule returns an error wrapping [ErrTimeoutPending] if to is pending
// ([Timeout.Reset] moves a pending deadline) or cannot be armed yet, and
// [ErrNilTimeout] for a nil to; otherwise the errors of NewTimeout. An error
// leaves to as it was. Calls racing on one ended Timeout arm it once.
//
// The Timer keeps to by its address until the arm ends: do not copy or move it.
// go vet reports a copy, but not append moving a slice's elements: keep structs
// that hold a Timeout by pointer. Schedule counts delay from the call, so a
// task that re-arms its Timeout every period drifts by up to a tick a period;
// [Timer.ScheduleAt] at to.Deadline().Add(period) does not. See guarantee 21 in
// docs/guarantees.md, and the example of Timer.Schedule.
func (t *Timer) Schedule(to *Timeout, task TimerTask, delay time.Duration) error {
	if to == nil {
		return ErrNilTimeout
	}
	if isNilTask(task) {
		return ErrNilTask
	}
	now, err := t.armable()
	if err != nil {
		return err
	}
	return t.arm(to, task, addDelay(now, delay), now)
}

// ScheduleAt arms to to run task once at deadline, as [Timer.Schedule] arms
// it after a delay: the same rules and the same errors, each leaving to as it
// was, and no allocation. The task runs at the first tick at or after
// deadline, never before it; a deadline that has passed runs at the next tick,
// as a delay of zero or less does. [Timeout.Deadline] reports deadline as
// given. A deadline too far ahead to represent saturates.
//
// ScheduleAt reads no clock when deadline carries a monotonic clock reading (a
// time from time.Now, Add on one, or Timeout.Deadline). So a task that re-arms
// its own Timeout a period after its last deadline,
//
//	to.Timer().ScheduleAt(to, task, to.Deadline().Add(period))
//
// keeps the period without drift, as [Timer.Every] does, but does not skip runs
// that fall behind. A deadline without a monotonic reading (from time.Date,
// time.Unix or a parse) is taken on the wall clock when ScheduleAt is called:
// it may run a little late, never early, and a later step of the wall clock
// does not move it. deadline must come from the clock the Timer runs on, or
// ScheduleAt returns [ErrClockMismatch] (see guarantee 22 in
// docs/guarantees.md). See the example of Timer.ScheduleAt.
func (t *Timer) ScheduleAt(to *Timeout, task TimerTask, deadline time.Time) error {
	if to == nil {
		return ErrNilTimeout
	}
	if isNilTask(task) {
		return ErrNilTask
	}
	at, now, err := t.sinceStart(deadline)
	if err != nil {
		return err
	}
	return t.arm(to, task, at, now)
}

// sinceStart starts the timer if it is not running yet, and returns
// deadline in nanoseconds since the timer started, for ScheduleAt, with a
// reading of the timer's clock no later than the present, for nudgeWorker.
//
// A deadline with a monotonic reading is the real clock's: its distance from
// the start is the difference of the two monotonic readings, and no clock is
// read. The reading of the present is then the latest one elapsed checked:
// a kick is a hint, and one that comes late delays only an early drain (see
// kickWorker). A deadline without one is a synctest bubble's, or a wall-clock
// time: it is taken against the wall reading of time.Now, which must be of
// the timer's clock, counted from a reading of the Timer's clock taken
// after it. Deadlines before the start count as the start.
func (t *Timer) sinceStart(deadline time.Time) (at, now int64, err error) {
	if t.life.state.Load() != stateStarted {
		if err := t.Start(); err != nil {
			return 0, 0, err
		}
	}
	if !isFakeClock(deadline) {
		if t.conf.createdOnFakeClock {
			return 0, 0, ErrClockMismatch
		}
		return max(int64(deadline.Sub(t.life.startTime)), 0), t.life.clockSeen.Load(), nil
	}
	wall := time.Now()
	if isFakeClock(wall) != t.conf.createdOnFakeClock {
		return 0, 0, ErrClockMismatch
	}
	// The distance to deadline on the wall clock, from the wall reading of
	// wall (deadline has no monotonic reading: Sub takes the wall clocks'
	// difference, saturated), counts from a reading of the Timer's clock
	// taken after it. time.Now reads the wall and the monotonic clocks one
	// after the other, and a thread descheduled between the two puts them
	// apart (by up to 3.8 ms seen on a loaded machine): through wall's own
	// monotonic reading the deadline would come early by that much where
	// the monotonic clock is read first. Read after both, it can only come
	// late by it.
	if now = t.elapsed(); now < 0 {
		return 0, 0, ErrClockMismatch
	}
	return max(addOffset(now, deadline.Sub(wall)), 0), now, nil
}

// arm is the body of Schedule and ScheduleAt once the Timer is started and
// the arguments are checked: it arms to with task, due at deadline, in
// nanoseconds since the timer started; now is a reading of the timer's
// clock no later than the present, for nudgeWorker.
func (t *Timer) arm(to *Timeout, task TimerTask, deadline, now int64) error {
	wants := wantsCancelled(task)
	s := to.lock()
	if t.isStopped() {
		// Checked under the lock: a Stop that has let go of to stopped the
		// Timer before, so to is never armed on it again (and returned by
		// Stop twice).
		to.unlock(s)
		return ErrTimerStopped
	}
	why := t.refusal(to, s)
	if why != armable {
		to.unlock(s)
		return why.err()
	}
	n, ok := t.countPending(to)
	if !ok {
		to.unlock(s)
		return t.tooManyPending(n)
	}
	ns := s.withPhase(stPending)&^stWantsCancelled | wants
	switch {
	case s.held() == heldRun && s.phase() == stExpired:
		// Out on its run: the run's goroutine hands the arm to this Timer
		// as it returns (see endRun), so that runs never overlap.
	case s.held() != heldNowhere:
		// Cancelled and still held by this Timer: armed again where it is
		// (revived), which the holder finds pending, as after a Reset. Its
		// cancel is never seen by the worker: count it here.
		t.shardFor(to).cancelledAside.Add(1)
	case !t.shardFor(to).timeouts.push(to):
		// Stopped, as in scheduleTimeout: nothing was written.
		to.unlock(s)
		t.pendingFor(to).Add(-1)
		return ErrTimerStopped
	default:
		ns = ns.withHeld(heldNew)
	}
	to.timer.Store(t)
	to.task = task
	to.deadline.Store(deadline)
	to.unlock(ns + genOne)
	if ns.held() == heldNew {
		t.nudgeWorker(now)
	}
	return nil
}

// armRefusal is why Schedule refuses to arm a Timeout, or armable.
type armRefusal uint8

const (
	armable armRefusal = iota
	refusedPending
	refusedCallOwed
	refusedRunElsewhere
	refusedPeriodicRun
	refusedHeldElsewhere
)

// refusal returns why Schedule may not arm to, whose state is s, on t
// (under to's lock), or armable. A Timeout held nowhere may be armed on any
// Timer; one out on its one-shot run, on the Timer it ran on; one cancelled
// and still held by t, where it is.
func (t *Timer) refusal(to *Timeout, s state) armRefusal {
	switch {
	case s.phase() == stPending:
		return refusedPending
	case s&stOwesCancelled != 0:
		return refusedCallOwed
	case s.held() == heldNowhere:
		return armable
	case s.held() == heldPeriodicRun:
		return refusedPeriodicRun
	case to.timer.Load() != t:
		if s.held() == heldRun {
			return refusedRunElsewhere
		}
		return refusedHeldElsewhere
	case s.held() == heldRun, s.phase() == stCancelled && s.held() != heldChanges:
		return armable
	}
	return refusedHeldElsewhere
}

// err returns the error Schedule returns for the refusal.
func (r armRefusal) err() error {
	var why string
	switch r {
	case refusedPending:
		why = "it is pending; Reset moves its deadline"
	case refusedCallOwed:
		why = "its Cancelled call has not been made yet"
	case refusedRunElsewhere:
		why = "its run on another Timer has not returned yet"
	case refusedPeriodicRun:
		why = "it is periodic, cancelled during a run that has not returned yet"
	default:
		why = "its Timer has not taken in its end yet"
	}
	return fmt.Errorf("%w: %s", ErrTimeoutPending, why)
}

// addDelay returns the deadline delay after now, both in nanoseconds since
// the timer started. Delays below zero count as zero, and a sum past
// math.MaxInt64 saturates.
func addDelay(now int64, delay time.Duration) int64 {
	if delay <= 0 {
		return now
	}
	return addOffset(now, delay)
}

// addOffset returns now plus d, which may be negative, saturating at
// math.MaxInt64; now is not negative, so the sum cannot fall below
// math.MinInt64.
func addOffset(now int64, d time.Duration) int64 {
	if d > 0 && int64(d) > math.MaxInt64-now {
		return math.MaxInt64
	}
	return now + int64(d)
}
