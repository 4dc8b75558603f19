package hashedwheel

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"
)

// TimerTask is a task that a Timer runs once its Timeout is due.
type TimerTask interface {
	// Run is called once, on the timer's worker goroutine or through its
	// WithTaskExecutor, with the Timeout that became due.
	Run(timeout *Timeout)
}

// TimerFunc adapts an ordinary function to a TimerTask.
type TimerFunc func(timeout *Timeout)

// Run calls f(timeout).
func (f TimerFunc) Run(timeout *Timeout) { f(timeout) }

// funcTask is the TimerTask behind Timer.AfterFunc. A func value fits in an
// interface without an allocation, so AfterFunc costs what NewTimeout does.
type funcTask func()

func (f funcTask) Run(*Timeout) { f() }

// Timeout states. The phase moves once, from stInit to stCancelled or to
// stExpired, and only by CompareAndSwap, so exactly one of Cancel, expiry and
// Stop wins. stLinked is set, also by CompareAndSwap, by the worker when the
// timeout enters a bucket; it tells Cancel whether the worker must be asked to
// unlink the timeout.
const (
	stInit      int32 = 0
	stCancelled int32 = 1
	stExpired   int32 = 2
	phaseMask   int32 = 3
	stLinked    int32 = 4
)

// Timeout is the handle of a task scheduled on a Timer. Its methods are safe
// for concurrent use.
//
// A Timeout is one 64-byte allocation: its queue link and bucket links live
// inside it. The pointer fields come first, so the garbage collector stops
// scanning a Timeout after six of its eight words.
type Timeout struct {
	timer *Timer    // immutable
	task  TimerTask // immutable

	// next links the timeout into its shard's queue of new timeouts, and
	// later, if it is cancelled in a bucket, into the timer's queue of cancelled
	// timeouts. It is never in both at once. See mpscQueue.
	next atomic.Pointer[Timeout]

	// bucketNext and bucketPrev link the timeout into its bucket. Worker only.
	bucketNext, bucketPrev *Timeout

	// deadline is when the task is due, in nanoseconds since the timer
	// started. Immutable.
	deadline int64

	// state holds the phase and stLinked. Any goroutine may read it; it
	// changes only by CompareAndSwap.
	state atomic.Int32

	// bucketIndex is the index of the timeout's bucket in the wheel. Worker
	// only; valid while stLinked is set and the timeout is still linked.
	bucketIndex int32
}

// Timer returns the Timer that created the timeout.
func (to *Timeout) Timer() *Timer { return to.timer }

// Task returns the task the timeout runs. For a timeout made by
// Timer.AfterFunc it is a TimerTask that calls the function.
func (to *Timeout) Task() TimerTask { return to.task }

// Deadline returns when the timeout is due, on the timer's clock. The task
// never runs before it. Delays of zero or less are due when scheduled; a delay
// too large to represent saturates, and the timeout never comes due.
func (to *Timeout) Deadline() time.Time {
	return to.timer.startTime.Add(time.Duration(to.deadline))
}

// IsExpired reports whether the timeout came due and its task was handed to be
// run. It becomes true just before the task runs.
func (to *Timeout) IsExpired() bool { return to.state.Load()&phaseMask == stExpired }

// IsCancelled reports whether the timeout was cancelled, by Cancel or by
// Timer.Stop. A cancelled timeout's task never runs.
func (to *Timeout) IsCancelled() bool { return to.state.Load()&phaseMask == stCancelled }

// Cancel stops the timeout's task from running. It reports whether this call
// moved the timeout from pending to cancelled; it returns false if the task
// already ran or was handed to run, or the timeout was already cancelled.
// Cancel does not wait for a running task.
//
// The timeout leaves Timer.PendingTimeouts at once; the worker unlinks it from
// its bucket within one tick, so that it holds no memory there.
func (to *Timeout) Cancel() bool {
	from, ok := to.markCancelled()
	if ok && from&stLinked != 0 {
		// A timeout still in the new-timeouts queue needs nothing more: the
		// worker drops it when it comes out. One in a bucket must be unlinked.
		to.timer.cancelledTimeouts.push(to)
		to.timer.wakeWorker()
	}
	return ok
}

// markCancelled moves the timeout from stInit to stCancelled and counts it
// out of the timer's pending timeouts. It reports the state it moved from and
// whether it did.
func (to *Timeout) markCancelled() (from int32, ok bool) {
	for {
		s := to.state.Load()
		if s&phaseMask != stInit {
			return s, false
		}
		if to.state.CompareAndSwap(s, s|stCancelled) {
			to.timer.pendingFor(to).Add(-1)
			return s, true
		}
	}
}

// markExpired moves a linked timeout from stInit to stExpired and counts it
// out of the timer's pending timeouts. Worker only.
func (to *Timeout) markExpired() bool {
	if !to.state.CompareAndSwap(stLinked, stLinked|stExpired) {
		return false
	}
	to.timer.pendingFor(to).Add(-1)
	return true
}

// String describes the timeout: how far its deadline is, whether it was
// cancelled, and its task, in the form of Netty's HashedWheelTimeout.
func (to *Timeout) String() string {
	var b strings.Builder
	b.WriteString("hashedwheel.Timeout(deadline: ")
	switch remaining := time.Duration(to.deadline - to.timer.elapsed()); {
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
	fmt.Fprintf(&b, ", task: %v)", to.task)
	return b.String()
}
