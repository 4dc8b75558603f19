package hashedwheel

import (
	"fmt"
	"strings"
	"time"
)

// TimerTask is a task that a Timer runs once its Timeout is due. See the
// examples of [Timer.NewTimeout] and [CancelledTask].
type TimerTask interface {
	// Run is called once, or once per period for a periodic timeout, on
	// the timer's worker goroutine, on one of its WithTaskWorkers
	// goroutines, or through its WithTaskExecutor, with the Timeout that
	// became due.
	Run(timeout *Timeout)
}

// CancelledTask is a [TimerTask] that wants to know when [Timeout.Cancel]
// cancels one of its timeouts, for example to release what the task would
// have released (Netty 4.2's TimerTask.cancelled).
//
// The Timer calls Cancelled exactly once for each timeout of the task that
// Cancel cancelled, once the timeout is out of the wheel: within about one
// tick of the Cancel call (or, for a periodic timeout cancelled during a run,
// of that run's return), and even if [Timer.Stop] comes first. Timeouts that
// Stop cancels and returns get no call. The call comes on the worker
// goroutine, whatever runs the tasks (but on its own goroutine for a run on
// a [WithTaskExecutor] executor that returns after Stop); on a Timer made
// [WithoutWorker], inside the owner's [Timer.Advance], [Timer.NextDeadline]
// or Stop. A panic in
// Cancelled is recovered and logged, as one in Run is. Like Run, Cancelled
// should return quickly: expiry waits for it. See guarantee 13 in
// docs/guarantees.md, and the example of CancelledTask.
type CancelledTask interface {
	TimerTask
	Cancelled(timeout *Timeout)
}

// TimerFunc adapts an ordinary function to a [TimerTask]. See the example of
// [Timer.NewTimeout].
type TimerFunc func(timeout *Timeout)

// Run calls f(timeout).
func (f TimerFunc) Run(timeout *Timeout) { f(timeout) }

// funcTask is the TimerTask behind Timer.AfterFunc and Timer.Every. A func
// value fits in an interface without an allocation, so AfterFunc costs what
// NewTimeout does.
type funcTask func()

func (f funcTask) Run(*Timeout) { f() }

// Timeout is the handle of a task scheduled on a [Timer]. Its methods are safe
// for concurrent use. A Timeout is 64 bytes and holds no other memory: it is
// the wheel's list node too. [Timer.NewTimeout] allocates one;
// [Timer.Schedule] and [Timer.ScheduleAt] arm one that the caller owns, a
// field of its own struct say, and allocate nothing.
//
// The zero Timeout has never been armed: Cancel and Reset return false,
// IsPending, IsExpired and IsCancelled false, Deadline the zero time, Timer
// and Task nil. Once it has ended (expired or cancelled) it may be armed
// again; its methods then act on, and report, its latest arm.
//
// A Timeout must not be copied or moved once armed: the wheel links it by its
// address. go vet reports a copy, but not a move: append on a slice of structs
// that hold one ([]conn) moves them all when it grows the slice, and a Timeout
// armed in the old array is lost to its owner. Keep such structs by pointer
// ([]*conn, map[id]*conn), or in a slice that never grows while one is
// armed. See the package's example TimeoutByPointer.
type Timeout struct {
	// Its queue link and bucket links live inside it. The pointer fields
	// come first, so the garbage collector stops scanning a Timeout after
	// six of its eight words. Who owns each field is said beside it; the
	// lock is the Timeout's own (see state.go).

	// timer is the Timer of the latest arm. Written under the lock by
	// Schedule (and before publication by NewTimeout); loaded by anyone.
	timer atomicPointer[Timer]

	// task is the latest arm's task; a *periodicTask for a periodic
	// timeout. Written under the lock by Schedule (and before publication
	// by NewTimeout); read under the lock: by the worker as it hands a run
	// out or takes a Cancelled call, by a run's goroutine as it hands its
	// Timeout back (endRun), and by Task and String.
	task TimerTask

	// next links the timeout into a shard's queue of new timeouts
	// (heldNew, heldReturning) or into the timer's changes queue
	// (heldBucketAndChanges, heldChanges): never both, as the held value
	// says. Written by the goroutine that pushes the timeout, inside its
	// critical section and before the push publishes it, and by the
	// consumer after it has taken it; see mpscQueue.
	next *Timeout

	// bucketNext and bucketPrev link the timeout into its bucket, or into
	// the worker's list of periodic runs. The worker's, written inside
	// the Timeout's critical sections; it unlinks the timeout before a
	// section lets go of it, after which another Timer may link it.
	bucketNext, bucketPrev *Timeout

	// deadline is when the task is due, in nanoseconds since the timer
	// started. Written only by the goroutine that holds the Timeout's lock
	// (Schedule as it arms, Reset, the worker or owner as it hands out a
	// periodic run or takes one back), or by NewTimeout and Schedule
	// before the push that publishes an arm, when nobody else can reach it.
	// Read under the lock, except by Deadline (timerAndDeadline), which
	// loads it without the lock and checks the generation; atomic for
	// that reader.
	deadline atomicInt64

	// state is the state word: the lock, the phase, where the timeout is
	// held, and the generation (see state.go).
	state atomicUint32

	// checkTick holds the low 32 bits of the check tick of a timeout in a
	// bucket, the tick at which the worker looks at it next (see
	// checktick.go); its bucket is checkTick & mask. Under the lock:
	// written by the worker as it places the timeout, read by Reset.
	checkTick uint32
}

// Timer returns the Timer of the timeout's latest arm, or nil for a Timeout
// never armed. See the example of [Timer.NewTimeout].
func (to *Timeout) Timer() *Timer { return to.timer.Load() }

// Task returns the task of the timeout's latest arm, or nil for a Timeout never
// armed. For a timeout made by [Timer.AfterFunc] or [Timer.Every] it is a
// [TimerTask] that calls the function. It is safe beside a Schedule of the same
// Timeout: it takes the Timeout's lock for a moment. See the example of
// Timer.NewTimeout.
func (to *Timeout) Task() TimerTask {
	s := to.lock()
	task := to.task
	to.unlock(s)
	return userTask(task)
}

// userTask returns the user's task of an arm whose task is task: the task
// itself, or a periodic timeout's.
func userTask(task TimerTask) TimerTask {
	if p, ok := task.(*periodicTask); ok {
		return p.task
	}
	return task
}

// Deadline returns when the timeout is due, on the timer's clock; the task
// never runs before it. For a periodic timeout it is when the run in progress
// was due while a run is out (so a task may measure its lateness with
// time.Since(timeout.Deadline())), and when the next run is due otherwise. A
// deadline given to [Timer.ScheduleAt] is reported as given; one too large to
// represent saturates, and never comes due. It is the zero time for a Timeout
// never armed. See the example of Timer.AfterFunc.
func (to *Timeout) Deadline() time.Time {
	t, deadline := to.timerAndDeadline()
	if t == nil {
		return time.Time{}
	}
	return t.life.startTime.Add(time.Duration(deadline))
}

// timerAndDeadline returns the Timer and the deadline of one arm, without
// the lock unless an arm is being made: the deadline counts from that
// Timer's start, and Schedule writes both, under the lock, as it arms the
// Timeout on another Timer. Every arm changes the state word (one more in
// the generation), so a word unlocked and the same before and after the
// reads says no arm came between them. (A Reset between them moves the
// deadline of the same arm: either one is the arm's.)
func (to *Timeout) timerAndDeadline() (*Timer, int64) {
	s := to.load()
	t, deadline := to.timer.Load(), to.deadline.Load()
	if s&stLocked == 0 && to.load() == s {
		return t, deadline
	}
	s = to.lock()
	t, deadline = to.timer.Load(), to.deadline.Load()
	to.unlock(s)
	return t, deadline
}

// IsExpired reports whether the timeout came due and its task was handed to be
// run. It becomes true just before the task runs. It stays false for a periodic
// timeout, which is pending until it is cancelled. See the example of
// [Timer.NewTimeout].
func (to *Timeout) IsExpired() bool { return to.load().phase() == stExpired }

// IsCancelled reports whether the timeout was cancelled, by [Timeout.Cancel] or
// by [Timer.Stop]. A cancelled timeout's task never runs again. See the example
// of [Timer.Stop].
func (to *Timeout) IsCancelled() bool { return to.load().phase() == stCancelled }

// IsPending reports whether the timeout's latest arm is pending: armed, and
// neither handed to run nor cancelled; a periodic timeout stays pending until
// it is cancelled. It is false for a Timeout never armed, and once
// [Timer.Stop] has cancelled it. IsPending takes no lock and allocates
// nothing; what it reports may change as soon as it returns while other
// goroutines arm, cancel or run the Timeout. See guarantee 23 in
// docs/guarantees.md, and the example of Timeout.IsPending.
func (to *Timeout) IsPending() bool { return to.load().phase() == stPending }

// Cancel stops the timeout's task from running. It reports whether this call
// moved the timeout from pending to cancelled; it returns false if the task
// already ran or was handed to run, or the timeout was already cancelled.
// Cancel does not wait for a running task, and never blocks: it costs a
// compare-and-swap or the timeout's lock for a moment. On a periodic timeout
// it stops the runs after the one in progress, if any; it may be called from
// inside the timeout's own task.
//
// The timeout leaves [Timer.PendingTimeouts] at once. Within about a tick
// the Timer removes it from the wheel, so that it holds no memory there, and
// then calls Cancelled if the task is a [CancelledTask]; for a periodic
// timeout whose run is in progress, after that run returns. See guarantee 3
// in docs/guarantees.md, and the example of Timeout.Cancel.
func (to *Timeout) Cancel() bool {
	s := to.load()
	if s.phase() != stPending {
		return false // an arm that has ended: looking is enough
	}
	// One that no bucket holds needs a single step: the Timer finds it
	// cancelled where it is (a queue of new timeouts, out on a run).
	// The timer read between the load and the swap is the arm's: only
	// Schedule writes it, inside a critical section that ends with one more
	// in the generation (genOne), so the word changes with every arm. A
	// swap from s, unlocked, succeeds only if no arm began or ended since s
	// was loaded, so t is the Timer of the arm it cancels.
	if t := to.timer.Load(); s.held() != heldBucket && to.swap(s, cancelledState(s)) {
		t.pendingFor(to).Add(-1)
		return true
	}
	s = to.lock()
	if s.phase() != stPending {
		to.unlock(s)
		return false
	}
	t := to.timer.Load()
	ns := cancelledState(s)
	pushed := false
	if s.held() == heldBucket {
		// The worker must unlink it: point it out through the changes
		// queue. A bucket holds nothing once a stopping worker has closed
		// that queue, so the push succeeds.
		ns = ns.withHeld(heldBucketAndChanges)
		pushed = t.changes.push(to)
	}
	t.pendingFor(to).Add(-1)
	to.unlock(ns)
	if pushed {
		t.wakeWorker()
	}
	return true
}

// cancelledState returns s, pending, cancelled by Cancel: with its
// Cancelled call owed if the arm wants one.
func cancelledState(s state) state {
	ns := s.withPhase(stCancelled)
	if s&stWantsCancelled != 0 {
		ns |= stOwesCancelled
	}
	return ns
}

// Reset moves a pending timeout's deadline to delay from now and reports
// true; the task then runs once at the new deadline (never before it, at
// about one tick after it at most) and not at the old one. As with
// NewTimeout, a delay of zero or less means the next tick and a huge delay
// saturates. On a periodic timeout Reset moves the next run, and the runs
// after it follow every period from there.
//
// Reset returns false and changes nothing if the timeout has expired, is
// cancelled, is being run or was never armed: arm a one-shot timeout again
// with [Timer.Schedule] or [Timer.ScheduleAt]. A periodic timeout is being run
// from just before its task starts until it returns, so Reset from inside its
// own task returns false. Reset also returns false on a Timer used with
// another clock than it started on (see [NewTimer]).
//
// Reset allocates nothing and never waits for a task: it reads the clock and
// takes the timeout's lock for a moment; a deadline moved earlier may also
// wake the worker. See guarantee 11 in docs/guarantees.md, and the example of
// Timeout.Reset.
func (to *Timeout) Reset(delay time.Duration) bool {
	for {
		t := to.timer.Load()
		if t == nil {
			return false // never armed
		}
		now := t.elapsed() // read before the lock: the section is short
		if now < 0 {
			return false // wrong clock: see ErrClockMismatch
		}
		s := to.lock()
		if s.phase() != stPending || s.held() == heldPeriodicRun {
			to.unlock(s)
			return false
		}
		if to.timer.Load() != t {
			to.unlock(s) // armed on another Timer since: read its clock
			continue
		}
		old := to.deadline.Load()
		deadline := addDelay(now, delay)
		to.deadline.Store(deadline)
		ns, pushed := s, false
		// A Timeout in a bucket keeps a later deadline by itself (see
		// checktick.go); one before its check tick needs the worker. So
		// does anything re-armed during an owned Timer's Advance (from one
		// of its tasks, say), which runs at the next call.
		if s.held() == heldBucket &&
			(deadline < old && t.beforeCheck(to, s.level(), old, deadline) || t.conf.owned && t.own.advancing.Load()) {
			ns = s.withHeld(heldBucketAndChanges)
			pushed = t.changes.push(to)
		}
		to.unlock(ns)
		if pushed {
			t.wakeWorker()
		}
		return true
	}
}

// String describes the timeout's latest arm: how far its deadline is, whether
// it was cancelled, and its task, in the form of Netty's HashedWheelTimeout. It
// is safe beside anything done to the Timeout, a Schedule of it included. No
// example shows it: it is what fmt prints for a Timeout.
func (to *Timeout) String() string {
	s := to.lock()
	t, deadline, task := to.timer.Load(), to.deadline.Load(), to.task
	to.unlock(s)
	if t == nil {
		return "hashedwheel.Timeout(not scheduled)"
	}
	var b strings.Builder
	b.WriteString("hashedwheel.Timeout(deadline: ")
	switch remaining := time.Duration(deadline - t.elapsed()); {
	case remaining > 0:
		fmt.Fprintf(&b, "%v later", remaining)
	case remaining < 0:
		fmt.Fprintf(&b, "%v ago", -remaining)
	default:
		b.WriteString("now")
	}
	if s.phase() == stCancelled {
		b.WriteString(", cancelled")
	}
	fmt.Fprintf(&b, ", task: %v)", userTask(task))
	return b.String()
}

// wantsCancelled returns stWantsCancelled if task is a CancelledTask (the
// user's task, for a periodic one), else 0.
func wantsCancelled(task TimerTask) state {
	switch t := task.(type) {
	case TimerFunc, funcTask:
		return 0 // the common cases, without the interface assertion below
	case *periodicTask:
		task = t.task
	}
	if _, ok := task.(CancelledTask); ok {
		return stWantsCancelled
	}
	return 0
}
