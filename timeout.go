package hashedwheel

import (
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"time"
)

// The state word. A Timeout's life is its state word: a phase, which moves
// once, and flags, which come and go. Every change to it is made by one of
// the functions named in the table below, all at the end of this file, by
// CompareAndSwap (or an atomic And of flags only their owner clears), so
// that exactly one of Cancel, expiry and Stop wins and no Reset is lost.
//
// The phase moves once, from stInit (pending) to stCancelled or to
// stExpired. A periodic timeout stays stInit until it is cancelled.
//
// The flags:
//   - stLinked: the worker has linked the timeout into a bucket of the
//     wheel, so a Cancel (or a Reset to a deadline before its check tick) of
//     the pending timeout must tell the worker through the changes queue. It
//     stays set once the timeout has ended (expired, or cancelled and
//     unlinked); a periodic run clears it.
//   - stQueued: the timeout is in the changes queue, or is about to be
//     pushed there by the Cancel or Reset that set the flag. Only that call
//     pushes it, so the timeout is in the queue at most once.
//   - stBusy: a Reset is writing the deadline, or the worker is deciding
//     whether a timeout that was reset is due. Whoever finds it set waits
//     for the other; a Cancel goes ahead and leaves it for its owner to
//     clear.
//   - stReset: a Reset has set the deadline at least once. Until then only
//     the worker writes the deadline, so it expires the timeout with one
//     CompareAndSwap of the state it read with the deadline; after, it takes
//     stBusy first, so that no Reset can write between its read of the
//     deadline and the expiry. (A generation count in the state word would
//     do the same with one CompareAndSwap, but could come round again.)
//   - stRunning: a periodic run has been handed out and has not returned.
//     Reset returns false meanwhile, and the goroutine that runs it (or the
//     worker) alone writes the deadline.
//   - stReturning: a periodic run has returned, and the timeout waits in a
//     queue of new timeouts for the worker to take it off its list of runs
//     and link it for the next run. It is pending and idle: Reset moves it.
//   - stWithdrawn: set with stCancelled by a NewTimeout that lost a race
//     with Stop and took its timeout back (see scheduleTimeout). Its caller
//     got an error, never the timeout, so the worker neither counts it as
//     cancelled nor calls Cancelled.
//
// The transitions, one row each. "worker" is the goroutine that turns the
// wheel: the worker goroutine, or the holder of an owned Timer's
// own.advancing. From: the phase and the flags that must be set (+) or clear
// (!). To: the new phase, if it changes, and the flags set (+) or cleared
// (-); a flag in parentheses is set only on the condition below the table.
// Flags not named are kept. state_internal_test.go walks the table.
//
//	from                      to                                by                       function
//	pending                   cancelled (+queued)               Cancel, any goroutine    cancel
//	pending                   cancelled +withdrawn (+queued)    NewTimeout losing Stop   cancel
//	pending                   cancelled                         worker, stopping         markCancelled
//	pending !busy !running    +busy +reset                      Reset                    beginReset
//	+busy                     -busy (+queued)                   Reset                    endReset
//	+queued                   -queued                           worker, changes queue    takeChange
//	pending                   +linked                           worker, new timeout      markLinked
//	pending +returning        -returning +linked                worker, run returned     endReturn
//	cancelled +returning      -returning                        worker, run returned     endReturn
//	+returning                -returning                        worker, stopping         clearReturning
//	pending +reset !busy      +busy                             worker, due              claim
//	+busy                     -busy                             worker                   release
//	pending                   expired -busy                     worker, due one-shot     markExpired
//	pending +linked           -linked -busy +running            worker, due periodic     markExpired
//	+running                  -running +returning               goroutine that ran it    markReturning
//	+running                  -running                          worker, stopping         recallRun
//
// (+queued): cancel sets stQueued when the timeout is linked and not queued
// yet; endReset when, besides, the timeout is still pending and the new
// deadline is before its check tick (or an owned Timer's Advance is in
// progress). The caller then pushes the timeout onto the changes queue.
// release clears the stBusy that claim took when the worker does not expire
// the timeout after all: not due, due but queued, the timer stopped, or
// markExpired's compare-and-swap lost. markReturning runs on the goroutine
// that ran the periodic run, or on the worker when an executor panicked
// before starting it; a Cancel during the run leaves the phase cancelled,
// and the worker then takes the timeout back (endReturn, or clearReturning
// and recallRun as it stops) and counts it as cancelled.
const (
	stInit      int32 = 0
	stCancelled int32 = 1
	stExpired   int32 = 2
	phaseMask   int32 = 3

	stLinked    int32 = 1 << 2
	stQueued    int32 = 1 << 3
	stBusy      int32 = 1 << 4
	stReset     int32 = 1 << 5
	stRunning   int32 = 1 << 6
	stReturning int32 = 1 << 7
	stWithdrawn int32 = 1 << 8
)

// TimerTask is a task that a Timer runs once its Timeout is due.
//
// See the examples of [Timer.NewTimeout] and [CancelledTask].
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
// The worker calls Cancelled exactly once for each timeout of the task that
// Cancel cancelled, on the worker goroutine, after it has unlinked the
// timeout from the wheel: within about one tick of the Cancel call, and
// before the worker exits even if [Timer.Stop] comes first. Timeouts that Stop
// cancels are returned by Stop instead, and get no call. A panic in Cancelled
// is recovered and logged, as one in Run is. Like Run, Cancelled should
// return quickly: expiry waits for it.
type CancelledTask interface {
	TimerTask
	Cancelled(timeout *Timeout)
}

// TimerFunc adapts an ordinary function to a [TimerTask].
//
// See the example of [Timer.NewTimeout].
type TimerFunc func(timeout *Timeout)

// Run calls f(timeout).
func (f TimerFunc) Run(timeout *Timeout) { f(timeout) }

// funcTask is the TimerTask behind Timer.AfterFunc and Timer.Every. A func
// value fits in an interface without an allocation, so AfterFunc costs what
// NewTimeout does.
type funcTask func()

func (f funcTask) Run(*Timeout) { f() }

// Timeout is the handle of a task scheduled on a [Timer]. Its methods are safe
// for concurrent use. A one-shot Timeout is one 64-byte allocation, and holds
// no other memory: it is the wheel's list node too.
//
// See the examples of [Timeout.Cancel] and [Timeout.Reset].
type Timeout struct {
	// Its queue link and bucket links live inside it. The pointer fields
	// come first, so the garbage collector stops scanning a Timeout after
	// six of its eight words.

	timer *Timer    // immutable
	task  TimerTask // immutable; a *periodicTask for a periodic timeout

	// next links the timeout into its shard's queue of new timeouts
	// (when it is scheduled, and when a periodic run comes back), or into
	// the timer's changes queue. It is never in both at once: the changes
	// queue takes only linked timeouts, which have left the new-timeouts
	// queue; and the worker hands out a periodic run, which goes back to
	// that queue when it returns, only once the timeout is out of the
	// changes queue (stQueued clear). Written by the goroutine that pushes
	// the timeout, before it publishes it, and by the worker after it has
	// taken it; see mpscQueue.
	next *Timeout

	// bucketNext and bucketPrev link the timeout into its bucket, or into
	// the timer's list of periodic runs in flight. Worker only.
	bucketNext, bucketPrev *Timeout

	// deadline is when the task is due, in nanoseconds since the timer
	// started. Written before the timeout is published; later by Reset
	// while it holds stBusy, and, for a periodic timeout while stRunning
	// keeps Reset out, by the worker and by the goroutine that runs it.
	// Read with atomic.LoadInt64 by any goroutine.
	deadline int64

	// state holds the phase and the flags. Any goroutine may read it; it
	// changes as the constants above say.
	state atomic.Int32

	// checkTick holds the low 32 bits of the linked timeout's check tick,
	// the tick at which the worker looks at it next (see checktick.go); its
	// bucket is checkTick & mask. Written by the worker each time it places
	// the timeout, atomically because Reset reads it; meaningful while
	// stLinked is set.
	checkTick atomic.Uint32
}

// Timer returns the Timer that created the timeout.
//
// See the example of [Timer.NewTimeout].
func (to *Timeout) Timer() *Timer { return to.timer }

// Task returns the task the timeout runs. For a timeout made by
// [Timer.AfterFunc] or [Timer.Every] it is a [TimerTask] that calls the
// function.
//
// See the example of [Timer.NewTimeout].
func (to *Timeout) Task() TimerTask {
	if p, ok := to.task.(*periodicTask); ok {
		return p.task
	}
	return to.task
}

// Deadline returns when the timeout is due, on the timer's clock. The task
// never runs before it. For a periodic timeout it is when the run in progress
// was due while a run is handed out or running (so a task may measure its own
// lateness with time.Since(timeout.Deadline())), and when the next run is due
// otherwise.
// Delays of zero or less are due when scheduled; a delay too large to
// represent saturates, and the timeout never comes due.
//
// See the example of [Timer.AfterFunc].
func (to *Timeout) Deadline() time.Time {
	if to.timer == nil {
		return time.Time{}
	}
	return to.timer.life.startTime.Add(time.Duration(atomic.LoadInt64(&to.deadline)))
}

// IsExpired reports whether the timeout came due and its task was handed to be
// run. It becomes true just before the task runs. It stays false for a
// periodic timeout, which is pending until it is cancelled.
//
// See the example of [Timer.NewTimeout].
func (to *Timeout) IsExpired() bool { return to.state.Load()&phaseMask == stExpired }

// IsCancelled reports whether the timeout was cancelled, by [Timeout.Cancel]
// or by [Timer.Stop]. A cancelled timeout's task never runs again.
//
// See the example of [Timer.Stop].
func (to *Timeout) IsCancelled() bool { return to.state.Load()&phaseMask == stCancelled }

// Cancel stops the timeout's task from running. It reports whether this call
// moved the timeout from pending to cancelled; it returns false if the task
// already ran or was handed to run, or the timeout was already cancelled.
// Cancel does not wait for a running task. On a periodic timeout it stops the
// runs after the one in progress, if any (a run handed to a [WithTaskWorkers]
// pool and not yet started does not start); it may be called from inside
// the timeout's own task.
//
// The timeout leaves [Timer.PendingTimeouts] at once; the worker unlinks it
// from its bucket within one tick, so that it holds no memory there, and then
// calls Cancelled if the task is a [CancelledTask].
func (to *Timeout) Cancel() bool { return to.cancel(0) }

// Reset moves a pending timeout's deadline to delay from now and reports
// true; the task then runs once at the new deadline (never before it, at
// about one tick after it at most) and not at the old one. As with
// NewTimeout, a delay of zero or less means the next tick and a huge delay
// saturates. On a periodic timeout Reset moves the next run, and the runs
// after it follow every period from there.
//
// Reset returns false and changes nothing if the timeout has expired, is
// cancelled, or is being run: for a one-shot timeout, schedule a new one if
// the task should run again. A periodic timeout is being run from when its
// run is handed out until the run returns (so Reset from inside its own task
// returns false); it is pending all along, and once the run has returned
// Reset moves its next run. Reset also returns false on a Timer used with
// another clock than it started on (see [NewTimer]).
//
// Reset allocates nothing and costs a clock read and two compare-and-swaps.
// A later deadline needs nothing more: the worker moves the timeout when it
// next looks at it. An earlier deadline may need the worker: if it comes
// before the worker would look at the timeout, Reset also hands the timeout
// to the worker, waking it if it sleeps. The worker looks at a timeout due
// within a turn of the wheel (ticks per wheel times the tick) when it is due,
// so any earlier deadline needs it; it looks at one due later a few times
// before that, first about an eighth of the time left before the deadline,
// so a Reset that moves a far deadline earlier by less than that needs
// nothing either.
func (to *Timeout) Reset(delay time.Duration) bool {
	t := to.timer
	if t == nil {
		return false
	}
	now := t.elapsed()
	if now < 0 {
		return false // wrong clock: see ErrClockMismatch
	}
	if !to.beginReset() {
		return false
	}
	old := atomic.LoadInt64(&to.deadline)
	deadline := addDelay(now, delay)
	atomic.StoreInt64(&to.deadline, deadline)
	// Read checkTick after the deadline is written, as the worker writes
	// checkTick before it reads the deadline again (see Timer.place):
	// either it sees the new deadline, or this sees its checkTick.
	early := deadline < old && t.beforeCheck(to, old, deadline)
	if t.conf.owned && t.own.advancing.Load() {
		// During Advance (from one of its tasks, say): what is re-armed
		// now runs at the next call, so the owner takes it in then.
		early = true
	}
	if to.endReset(early) {
		t.changes.push(to)
		t.wakeWorker()
	}
	return true
}

// String describes the timeout: how far its deadline is, whether it was
// cancelled, and its task, in the form of Netty's HashedWheelTimeout.
//
// No example shows it: it is what fmt prints for a Timeout.
func (to *Timeout) String() string {
	if to.timer == nil {
		return "hashedwheel.Timeout(not scheduled)"
	}
	var b strings.Builder
	b.WriteString("hashedwheel.Timeout(deadline: ")
	switch remaining := time.Duration(atomic.LoadInt64(&to.deadline) - to.timer.elapsed()); {
	case remaining > 0:
		fmt.Fprintf(&b, "%v later", remaining)
	case remaining < 0:
		fmt.Fprintf(&b, "%v ago", -remaining)
	default:
		b.WriteString("now")
	}
	if to.IsCancelled() {
		b.WriteString(", cancelled")
	}
	fmt.Fprintf(&b, ", task: %v)", to.Task())
	return b.String()
}

// The transitions of the state word, one function each; see the table at the
// top of this file.

// cancel is Cancel, setting flags (0 or stWithdrawn) with stCancelled.
func (to *Timeout) cancel(flags int32) bool {
	t := to.timer
	if t == nil {
		return false
	}
	for {
		s := to.state.Load()
		if s&phaseMask != stInit {
			return false
		}
		// A timeout still in the new-timeouts queue, or out on a periodic
		// run, comes back to the worker by itself. One in a bucket must be
		// pointed out, unless it is in the changes queue already.
		push := s&stLinked != 0 && s&stQueued == 0
		ns := s | stCancelled | flags
		if push {
			ns |= stQueued
		}
		if to.state.CompareAndSwap(s, ns) {
			t.pendingFor(to).Add(-1)
			if push {
				t.changes.push(to)
				t.wakeWorker()
			}
			return true
		}
	}
}

// markCancelled moves the timeout from pending to cancelled for Stop and
// counts it out of the timer's pending timeouts. It reports whether it did.
func (to *Timeout) markCancelled() bool {
	for {
		s := to.state.Load()
		if s&phaseMask != stInit {
			return false
		}
		if to.state.CompareAndSwap(s, s|stCancelled) {
			to.timer.pendingFor(to).Add(-1)
			return true
		}
	}
}

// beginReset takes stBusy, and sets stReset, for a Reset of a pending timeout
// that is not out on a periodic run, so that the worker cannot expire it on
// the old deadline once the new one is written. It waits while another Reset,
// or the worker, holds stBusy. It reports false, having changed nothing, if
// the timeout is not pending or is out on a run.
func (to *Timeout) beginReset() bool {
	for {
		s := to.state.Load()
		if s&phaseMask != stInit || s&stRunning != 0 {
			return false
		}
		if s&stBusy != 0 {
			runtime.Gosched() // another Reset, or the worker, holds it
			continue
		}
		if to.state.CompareAndSwap(s, s|stBusy|stReset) {
			return true
		}
	}
}

// endReset clears the stBusy that beginReset took. If early (the new deadline
// needs the worker before it would look at the timeout) and the timeout is
// still pending, linked and not queued yet, it also sets stQueued and
// reports true: the caller then pushes the timeout onto the changes queue. A
// Cancel may have come meanwhile; it leaves stBusy for Reset to clear.
func (to *Timeout) endReset(early bool) (push bool) {
	for {
		s := to.state.Load()
		push = early && s&phaseMask == stInit && s&stLinked != 0 && s&stQueued == 0
		ns := s &^ stBusy
		if push {
			ns |= stQueued
		}
		if to.state.CompareAndSwap(s, ns) {
			return push
		}
	}
}

// takeChange clears stQueued as the worker pops the timeout from the changes
// queue, and returns the state after: a change made later is pushed again
// rather than lost.
func (to *Timeout) takeChange() int32 {
	return to.state.And(^stQueued) &^ stQueued
}

// markLinked sets stLinked on a timeout that the worker took from a queue of
// new timeouts and is about to place, if its state is still s. It reports
// whether it did.
func (to *Timeout) markLinked(s int32) bool {
	return to.state.CompareAndSwap(s, s|stLinked)
}

// endReturn takes back a periodic timeout whose run has returned
// (stReturning): it clears stReturning and, if the timeout is still pending,
// sets stLinked and reports linked. Otherwise s is the state it found, with
// the phase Cancel gave it.
func (to *Timeout) endReturn() (s int32, linked bool) {
	for {
		s = to.state.Load()
		if s&phaseMask != stInit {
			to.state.And(^stReturning)
			return s, false
		}
		if to.state.CompareAndSwap(s, s&^stReturning|stLinked) {
			return s, true
		}
	}
}

// clearReturning clears stReturning as a stopping worker takes the timeout
// from a queue of new timeouts, and reports whether it was set: a periodic
// run had returned.
func (to *Timeout) clearReturning() bool {
	return to.state.And(^stReturning)&stReturning != 0
}

// claim takes stBusy on a pending, reset timeout that the worker found due,
// if its state is still s, so that no Reset moves the deadline before the
// worker hands it out or releases it. It reports whether it did.
func (to *Timeout) claim(s int32) bool {
	return to.state.CompareAndSwap(s, s|stBusy)
}

// release clears the stBusy that claim took, if s says it did.
func (to *Timeout) release(s int32) {
	if s&stBusy != 0 {
		to.state.And(^stBusy)
	}
}

// markExpired moves a due timeout whose state is still s from pending to
// expired or, if it is periodic, out on a run (stRunning, no longer linked),
// clearing the stBusy that claim may have taken. It reports false, having
// released that stBusy, if the state changed since s was read.
func (to *Timeout) markExpired(s int32, periodic bool) bool {
	ns := s&^stBusy | stExpired
	if periodic {
		ns = s&^(stBusy|stLinked) | stRunning
	}
	if !to.state.CompareAndSwap(s, ns) {
		to.release(s)
		return false
	}
	return true
}

// markReturning moves a periodic timeout whose run has returned from stRunning
// to stReturning, before it goes back to the worker. It reports false if a
// stopping worker has taken it off its list of runs (see recallRun).
func (to *Timeout) markReturning() bool {
	for {
		s := to.state.Load()
		if s&stRunning == 0 {
			return false
		}
		if to.state.CompareAndSwap(s, s&^stRunning|stReturning) {
			return true
		}
	}
}

// recallRun clears stRunning as a stopping worker takes a periodic timeout off
// its list of runs, which tells the goroutine running it not to hand it back.
func (to *Timeout) recallRun() {
	to.state.And(^stRunning)
}
