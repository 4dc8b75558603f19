package hashedwheel

import (
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"time"
)

// The state word. A Timeout's life is its state word: a phase and flags.
// Every change to it is made by one of the functions named in the table
// below, all at the end of this file, by CompareAndSwap (or an atomic And of
// flags only their owner clears), so that exactly one of Cancel, expiry and
// Stop wins, no Reset is lost and a Timeout is armed by one Schedule at a
// time.
//
// The phase: stUnarmed (the zero Timeout, never scheduled), stPending,
// stCancelled or stExpired. An arm moves it once from pending to cancelled or
// to expired; Schedule arms an ended (or unarmed) timeout again, which moves
// it back to pending and counts one more arm in the generation, the bits
// above the flags. A periodic timeout stays pending until it is cancelled.
//
// The flags that say a Timer still refers to the timeout (held):
//   - stLinked: in a bucket of the wheel. The worker sets it as it links the
//     timeout and clears it as it unlinks it, before letting go of it. A
//     Cancel (or a Reset to a deadline before its check tick) of a pending,
//     linked timeout must tell the worker through the changes queue.
//   - stQueued: in the changes queue, or about to be pushed there by the
//     Cancel or Reset that set the flag. Only that call pushes it, so the
//     timeout is in the queue at most once.
//   - stNew: in a queue of new timeouts (a shard's), or about to be pushed
//     there by whoever set it.
//   - stRunning: a periodic run has been handed out and has not returned.
//     Reset returns false meanwhile, and the goroutine that runs it (or the
//     worker) alone writes the deadline.
//   - stReturning: a periodic run has returned, and the timeout waits in a
//     queue of new timeouts for the worker to take it off its list of runs
//     and link it for the next run. It is pending and idle: Reset moves it.
//   - stOut: the run of an expired one-shot arm has been handed out and has
//     not returned. A Schedule meanwhile arms the timeout without giving it
//     to the worker; the goroutine that ran the run does that as it returns
//     (see endRun), so that runs of one Timeout never overlap.
//
// The others:
//   - stBusy: someone writes or reads fields that the holder of stBusy alone
//     may touch: a Reset writing the deadline; the worker deciding whether a
//     pending timeout is due and reading its task; Stop reading the task of
//     a timeout it cancels; Schedule writing the timer, task and deadline of
//     the timeout it arms. Whoever finds it set waits for the other (Cancel
//     alone goes ahead, and leaves it for its holder to clear).
//   - stNotifies: the arm's task is a CancelledTask. Set with the arm, so
//     that Cancel decides stNotify without reading the task.
//   - stNotify: Cancel cancelled an arm whose task is a CancelledTask, and
//     the worker has not called Cancelled yet. No Schedule arms the timeout
//     meanwhile: the call needs the task.
//
// Who may arm an ended timeout: on any Timer, once no Timer holds it and no
// Cancelled call is owed (stOut alone allowed: the run's goroutine hands the
// new arm over); on its own Timer, a cancelled one still held in a bucket, a
// queue of new timeouts or by its run's goroutine, which stays where it is
// and comes back to life (revive): the holder takes it as pending, as it
// would a Reset. Letting go of a cancelled timeout is therefore a
// CompareAndSwap that clears the holding flag and fails if a Schedule
// revived it first; the worker unlinks it from its bucket before, as another
// Timer may link it the moment it is let go.
//
// The transitions, one row each. "worker" is the goroutine that turns the
// wheel: the worker goroutine, or the holder of an owned Timer's
// own.advancing; "stopping" is that goroutine cancelling what is pending for
// Stop. From: the phase and the flags that must be set (+) or clear (!). To:
// the new phase, if it changes, and the flags set (+) or cleared (-); a flag
// in parentheses is set only on the condition below the table. Flags not
// named are kept. state_internal_test.go walks the table.
//
//	from                           to                                  by                        function
//	unarmed                        pending +new (+notifies)            NewTimeout, unpublished   initArm
//	pending +new                   unarmed -new -notifies              NewTimeout, push failed   undoInit
//	pending                        cancelled (+queued) (+notify)       Cancel, any goroutine     cancel
//	pending !busy                  cancelled +busy -linked -new        worker, stopping          markCancelled
//	pending !busy !running         +busy                               Reset                     beginReset
//	+busy                          -busy (+queued)                     Reset                     endReset
//	+queued                        -queued                             worker, changes queue     takeChange
//	pending +new                   -new +linked                        worker, new timeout       markLinked
//	pending +returning             -returning +linked                  worker, run returned      endReturn
//	cancelled +returning           -returning                          worker, run returned      endReturn
//	+returning                     -returning                          worker, stopping          clearReturning
//	pending !busy                  +busy                               worker, due               claim
//	+busy                          -busy                               worker, Stop, Schedule    release
//	pending +busy                  expired -busy -linked +out          worker, due one-shot      markExpired
//	pending +busy +linked          -linked -busy +running              worker, due periodic      markExpired
//	+running                       -running +returning                 goroutine that ran it     markReturning
//	+running                       -running                            worker, stopping          recallRun
//	cancelled !busy                -linked -queued -new                worker, letting go        letGo
//	cancelled +new !busy !notify !returning  -new                      worker, taking new ones   dropCancelled
//	+notify                        -notify                             worker, before the call   takeNotify
//	expired +out                   -out                                goroutine that ran it     endRun
//	pending +out                   -out +new                           goroutine that ran it     endRun
//	cancelled +out                 -out +new                           goroutine that ran it     endRun
//	unarmed !busy                  +busy +new                          Schedule                  beginArm
//	expired !busy                  +busy (+new)                        Schedule                  beginArm
//	cancelled !busy !notify        +busy (+new)                        Schedule                  beginArm
//	+busy                          pending -busy (+notifies)           Schedule                  endArm
//	+busy +new                     -busy -new                          Schedule that failed      abortArm
//	+busy                          -busy                               Schedule that failed      abortArm
//
// (+queued): cancel sets stQueued when the timeout is linked and not queued
// yet; endReset when, besides, the timeout is still pending and the new
// deadline is before its check tick (or an owned Timer's Advance is in
// progress). The caller then pushes the timeout onto the changes queue.
// (+notify): cancel sets stNotify when the arm has stNotifies. endRun sets
// stNew when the timeout was armed again while its run was out, and the
// caller pushes it.
// (+notifies): set when the arm's task is a CancelledTask. beginArm's (+new):
// unless the timeout is out on its run (then the run's goroutine pushes it),
// or is cancelled and still held by the Timer it is armed on (it is revived
// where it is).
//
// abortArm clears stNew only if beginArm set it (an arm afresh, not a
// revive). markCancelled and letGo clear only the holding flags their caller names
// (the bucket, or the queue, it took the timeout from); endArm also clears
// stNotifies unless it sets it, and adds one to the generation. release
// clears the stBusy that claim, markCancelled or beginArm took when its
// holder is done: the worker not expiring a timeout after all (not due,
// the timer stopped, or markExpired's compare-and-swap lost to a Cancel).
// markReturning runs on the goroutine that ran the periodic run, or on the
// worker when an executor panicked before starting it; a Cancel during the
// run leaves the phase cancelled, and the worker then takes the timeout back
// (endReturn, or clearReturning and recallRun as it stops) and counts it as
// cancelled.
const (
	stUnarmed   int32 = 0
	stPending   int32 = 1
	stCancelled int32 = 2
	stExpired   int32 = 3
	phaseMask   int32 = 3

	stLinked    int32 = 1 << 2
	stQueued    int32 = 1 << 3
	stNew       int32 = 1 << 4
	stBusy      int32 = 1 << 5
	stRunning   int32 = 1 << 6
	stReturning int32 = 1 << 7
	stOut       int32 = 1 << 8
	stNotifies  int32 = 1 << 9
	stNotify    int32 = 1 << 10

	// stHeld are the flags that say a Timer (or a run's goroutine) still
	// refers to the timeout.
	stHeld = stLinked | stQueued | stNew | stRunning | stReturning | stOut

	// genOne is one arm in the generation, the bits above the flags. It
	// changes the state word with every Schedule, so that a Cancel or Reset
	// that read the timer of one arm cannot act on a later one.
	genOne int32 = 1 << 11
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
// for concurrent use. A Timeout is 64 bytes and holds no other memory: it is
// the wheel's list node too. [Timer.NewTimeout] allocates one;
// [Timer.Schedule] arms one that the caller owns, a field of its own struct
// say, and allocates nothing.
//
// The zero Timeout has never been armed: Cancel and Reset return false,
// IsExpired and IsCancelled false, Deadline the zero time, Timer and Task
// nil. Once it has ended (expired or cancelled) it may be armed again with
// Schedule; its methods then act on, and report, its latest arm. A Timeout
// must not be copied once armed (go vet reports a copy): the wheel links the
// Timeout itself.
//
// See the examples of [Timeout.Cancel], [Timeout.Reset] and [Timer.Schedule].
type Timeout struct {
	// Its queue link and bucket links live inside it. The pointer fields
	// come first, so the garbage collector stops scanning a Timeout after
	// six of its eight words.

	// timer is the Timer of the latest arm. Written by Schedule while it
	// holds stBusy on a timeout no Timer holds (and before publication by
	// NewTimeout); read by any goroutine. A reader that acts on the arm
	// reads it after the state word and acts by a CompareAndSwap of that
	// state, whose generation changes with every arm.
	timer atomic.Pointer[Timer]

	// task is the latest arm's task; a *periodicTask for a periodic
	// timeout. Written by Schedule under stBusy (and before publication by
	// NewTimeout). The worker reads it while it holds stBusy on a due
	// timeout, or while a Cancelled call is owed (stNotify), which keeps
	// Schedule out; Task and String read it as they are.
	task TimerTask

	// next links the timeout into its shard's queue of new timeouts
	// (stNew, or stReturning for a periodic run coming back), or into the
	// timer's changes queue (stQueued). It is never in both at once: the
	// changes queue takes only linked timeouts, which have left the
	// new-timeouts queue; a Schedule pushes only a timeout no Timer holds;
	// and the worker hands out a periodic run, which goes back to that
	// queue when it returns, only once the timeout is out of the changes
	// queue. Written by the goroutine that pushes the timeout, before it
	// publishes it, and by the worker after it has taken it; see mpscQueue.
	next *Timeout

	// bucketNext and bucketPrev link the timeout into its bucket, or into
	// the timer's list of periodic runs in flight. Worker only: the worker
	// unlinks the timeout before it lets go of it (clears stLinked), after
	// which another Timer's worker may link it.
	bucketNext, bucketPrev *Timeout

	// deadline is when the task is due, in nanoseconds since the timer
	// started. Written before the timeout is published; later by Reset
	// and Schedule while they hold stBusy, and, for a periodic timeout while
	// stRunning keeps Reset out, by the worker and by the goroutine that
	// runs it. Read with atomic.LoadInt64 by any goroutine.
	deadline int64

	// state holds the phase, the flags and the generation. Any goroutine
	// may read it; it changes as the table above says.
	state atomic.Int32

	// checkTick holds the low 32 bits of the linked timeout's check tick,
	// the tick at which the worker looks at it next (see checktick.go); its
	// bucket is checkTick & mask. Written by the worker each time it places
	// the timeout, atomically because Reset reads it; meaningful while
	// stLinked is set.
	checkTick atomic.Uint32
}

// Timer returns the Timer of the timeout's latest arm, or nil for a Timeout
// never armed.
//
// See the example of [Timer.NewTimeout].
func (to *Timeout) Timer() *Timer { return to.timer.Load() }

// Task returns the task the timeout runs. For a timeout made by
// [Timer.AfterFunc] or [Timer.Every] it is a [TimerTask] that calls the
// function. A Schedule of the same Timeout (by any goroutine, its own task
// included) writes the task: Task called while one may run is a data race.
// Call it where no Schedule of that Timeout can happen meanwhile, such as
// from its task before the task arms it again.
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
// represent saturates, and the timeout never comes due. It is the zero time
// for a Timeout never armed.
//
// See the example of [Timer.AfterFunc].
func (to *Timeout) Deadline() time.Time {
	t := to.timer.Load()
	if t == nil {
		return time.Time{}
	}
	return t.life.startTime.Add(time.Duration(atomic.LoadInt64(&to.deadline)))
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
// calls Cancelled if the task is a [CancelledTask]. Scheduled again on the
// same Timer before that (see [Timer.Schedule]), it stays where it is.
func (to *Timeout) Cancel() bool { return to.cancel() }

// Reset moves a pending timeout's deadline to delay from now and reports
// true; the task then runs once at the new deadline (never before it, at
// about one tick after it at most) and not at the old one. As with
// NewTimeout, a delay of zero or less means the next tick and a huge delay
// saturates. On a periodic timeout Reset moves the next run, and the runs
// after it follow every period from there.
//
// Reset returns false and changes nothing if the timeout has expired, is
// cancelled, is being run or was never armed: for a one-shot timeout, arm it
// again with [Timer.Schedule] if the task should run again. A periodic
// timeout is being run from when its run is handed out until the run returns
// (so Reset from inside its own task returns false); it is pending all
// along, and once the run has returned Reset moves its next run. Reset also
// returns false on a Timer used with another clock than it started on (see
// [NewTimer]).
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
	t := to.beginReset()
	if t == nil {
		return false
	}
	now := t.elapsed()
	if now < 0 {
		to.endReset(false)
		return false // wrong clock: see ErrClockMismatch
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
		t.pushChange(to)
	}
	return true
}

// String describes the timeout: how far its deadline is, whether it was
// cancelled, and its task, in the form of Netty's HashedWheelTimeout.
// Called while a [Timer.Schedule] of the same Timeout may run, it races with
// that Schedule, as [Timeout.Task] does.
//
// No example shows it: it is what fmt prints for a Timeout.
func (to *Timeout) String() string {
	t := to.timer.Load()
	if t == nil {
		return "hashedwheel.Timeout(not scheduled)"
	}
	var b strings.Builder
	b.WriteString("hashedwheel.Timeout(deadline: ")
	switch remaining := time.Duration(atomic.LoadInt64(&to.deadline) - t.elapsed()); {
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

// notifiesFor returns stNotifies if task is a CancelledTask (the user's task,
// for a periodic one), else 0.
func notifiesFor(task TimerTask) int32 {
	switch t := task.(type) {
	case TimerFunc, funcTask:
		return 0 // the common cases, without the interface assertion below
	case *periodicTask:
		task = t.task
	}
	if _, ok := task.(CancelledTask); ok {
		return stNotifies
	}
	return 0
}

// The transitions of the state word, one function each; see the table at the
// top of this file.

// initArm sets the state of a timeout that NewTimeout (or NewPeriodicTimeout,
// or a deadline context) has made and not yet published: pending and about
// to be pushed onto a queue of new timeouts.
func (to *Timeout) initArm(notifies int32) {
	to.state.Store(stPending | stNew | notifies)
}

// undoInit takes back initArm when the push failed: nobody has seen the
// timeout.
func (to *Timeout) undoInit() {
	to.state.Store(stUnarmed)
}

// cancel is Cancel.
func (to *Timeout) cancel() bool {
	for {
		s := to.state.Load()
		if s&phaseMask != stPending {
			return false
		}
		// The timer of the arm s belongs to: the generation in s changes
		// before the timer of another arm is written.
		t := to.timer.Load()
		// A timeout still in the new-timeouts queue, out on a run, or
		// armed while its run is out comes back to the worker by itself.
		// One in a bucket must be pointed out, unless it is in the changes
		// queue already.
		push := s&stLinked != 0 && s&stQueued == 0
		ns := s&^phaseMask | stCancelled
		if push {
			ns |= stQueued
		}
		if s&stNotifies != 0 {
			ns |= stNotify
		}
		if to.state.CompareAndSwap(s, ns) {
			t.pendingFor(to).Add(-1)
			if push {
				t.pushChange(to)
			}
			return true
		}
	}
}

// markCancelled moves the timeout from pending to cancelled for Stop, takes
// stBusy so that the caller may read its task, lets go of the holding flags
// in drop, and counts it out of the timer's pending timeouts. It reports
// whether it did; the caller then releases stBusy. It waits while a Reset
// holds stBusy.
func (to *Timeout) markCancelled(drop int32) bool {
	for {
		s := to.state.Load()
		if s&phaseMask != stPending {
			return false
		}
		if s&stBusy != 0 {
			runtime.Gosched() // a Reset holds it for two stores
			continue
		}
		if to.state.CompareAndSwap(s, s&^(phaseMask|drop)|stCancelled|stBusy) {
			to.timer.Load().pendingFor(to).Add(-1)
			return true
		}
	}
}

// beginReset takes stBusy for a Reset of a pending timeout that is not out on
// a periodic run, so that the worker cannot expire it on the old deadline
// once the new one is written, and returns the timer of that arm. It waits
// while another Reset, or the worker, holds stBusy. It returns nil, having
// changed nothing, if the timeout is not pending or is out on a run.
func (to *Timeout) beginReset() *Timer {
	for {
		s := to.state.Load()
		if s&phaseMask != stPending || s&stRunning != 0 {
			return nil
		}
		if s&stBusy != 0 {
			runtime.Gosched() // another Reset, or the worker, holds it
			continue
		}
		t := to.timer.Load() // of the arm s belongs to, as in cancel
		if to.state.CompareAndSwap(s, s|stBusy) {
			return t
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
		push = early && s&phaseMask == stPending && s&stLinked != 0 && s&stQueued == 0
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
// queue (or as a push onto a closed one fails): a change made later is
// pushed again rather than lost.
func (to *Timeout) takeChange() {
	to.state.And(^stQueued)
}

// markLinked clears stNew and sets stLinked on a timeout that the worker took
// from a queue of new timeouts and is about to place, if its state is still
// s. It reports whether it did.
func (to *Timeout) markLinked(s int32) bool {
	return to.state.CompareAndSwap(s, s&^stNew|stLinked)
}

// endReturn takes back a periodic timeout whose run has returned
// (stReturning): it clears stReturning and, if the timeout is still pending,
// sets stLinked and reports linked. Otherwise s is the state it found, with
// the phase Cancel gave it.
func (to *Timeout) endReturn() (s int32, linked bool) {
	for {
		s = to.state.Load()
		if s&phaseMask != stPending {
			to.state.And(^stReturning)
			return s, false
		}
		if to.state.CompareAndSwap(s, s&^stReturning|stLinked) {
			return s, true
		}
	}
}

// clearReturning clears stReturning as a stopping worker takes the timeout
// from a queue of new timeouts (or as the push that hands a periodic run
// back fails), and reports whether it was set: a periodic run had returned.
func (to *Timeout) clearReturning() bool {
	return to.state.And(^stReturning)&stReturning != 0
}

// claim takes stBusy on a pending timeout that the worker found due, if its
// state is still s, so that no Reset moves the deadline, and no Schedule
// rewrites the task, before the worker hands the timeout out or releases it.
// It reports whether it did.
func (to *Timeout) claim(s int32) bool {
	return to.state.CompareAndSwap(s, s|stBusy)
}

// release clears the stBusy that claim, markCancelled or beginArm took.
func (to *Timeout) release() {
	to.state.And(^stBusy)
}

// markExpired moves a due timeout that the worker has claimed, and whose
// state is still s, from pending to expired with its run out (stOut) or, if
// it is periodic, out on a run (stRunning), no longer linked, and clears
// stBusy. It reports false, having released stBusy, if a Cancel came since
// the claim.
func (to *Timeout) markExpired(s int32, periodic bool) bool {
	ns := s&^(phaseMask|stBusy|stLinked) | stExpired | stOut
	if periodic {
		ns = s&^(stBusy|stLinked) | stRunning
	}
	if !to.state.CompareAndSwap(s, ns) {
		to.release()
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

// letGo clears the holding flags in drop of a cancelled timeout that the
// worker is done with (unlinked from its bucket, or taken from a queue of new
// timeouts), and returns the state it had, with stNotify telling whether a
// Cancelled call is owed. It waits while a Schedule holds stBusy, and
// reports false, changing nothing, if the timeout is pending: a Schedule
// revived it, and the caller takes it as pending.
func (to *Timeout) letGo(drop int32) (s int32, ok bool) {
	for {
		s = to.state.Load()
		if s&phaseMask == stPending {
			return s, false
		}
		if s&stBusy != 0 {
			runtime.Gosched() // a Schedule is reviving it, or Stop reads it
			continue
		}
		if to.state.CompareAndSwap(s, s&^drop) {
			return s, true
		}
	}
}

// dropCancelled lets go of a timeout that the worker takes from a queue of
// new timeouts and that needs nothing more from it: Cancel cancelled it while
// it was queued, no Cancelled call is owed, and it is not a periodic run
// coming back (which the worker takes off its list of runs). It reports
// whether it did; it does not if a Schedule holds or has revived it.
func (to *Timeout) dropCancelled() bool {
	s := to.state.Load()
	return s&(phaseMask|stNew|stBusy|stNotify|stReturning) == stCancelled|stNew &&
		to.state.CompareAndSwap(s, s&^stNew)
}

// takeNotify clears stNotify as the worker is about to call Cancelled, having
// read the task: from then on a Schedule may arm the timeout again (from
// inside Cancelled, say).
func (to *Timeout) takeNotify() {
	to.state.And(^stNotify)
}

// endRun clears stOut once the run of an expired one-shot arm has returned
// (or, if the executor failed, never started). If the timeout was armed
// again meanwhile, its phase is no longer expired: endRun then sets stNew
// and reports push, and the caller hands the new arm to its timer. It waits
// while a Schedule holds stBusy, and does nothing if stOut is clear.
func (to *Timeout) endRun() (push bool) {
	for {
		s := to.state.Load()
		if s&stOut == 0 {
			return false
		}
		if s&stBusy != 0 {
			runtime.Gosched() // a Schedule is arming it
			continue
		}
		push = s&phaseMask != stExpired
		ns := s &^ stOut
		if push {
			ns |= stNew
		}
		if to.state.CompareAndSwap(s, ns) {
			return push
		}
	}
}

// beginArm takes stBusy on a timeout that Schedule may arm on t, and returns
// the state it found (stBusy clear) and whether the arm revives it in place.
// A timeout no Timer holds is armed afresh, and beginArm also sets stNew for
// the caller's push; so is an expired one whose run is out (stOut), on the
// Timer it ran on, without stNew: the run's goroutine pushes it. A cancelled
// one still held by t (linked, queued as new, or out on its run) is revived.
// It waits while someone else holds stBusy, and returns an error wrapping
// ErrTimeoutPending, having changed nothing, for a pending timeout, one that
// another Timer still holds (or runs), and one whose Cancelled call is owed.
func (to *Timeout) beginArm(t *Timer) (s int32, revive bool, err error) {
	for {
		s = to.state.Load()
		if s&stBusy != 0 {
			runtime.Gosched() // another Schedule, the worker or a Reset holds it
			continue
		}
		phase := s & phaseMask
		held := s & stHeld
		switch {
		case phase == stPending:
			return s, false, fmt.Errorf("%w: it is pending; Reset moves its deadline", ErrTimeoutPending)
		case s&stNotify != 0:
			return s, false, fmt.Errorf("%w: its Cancelled call has not been made yet", ErrTimeoutPending)
		case held&^stOut == 0 && (held == 0 || phase == stExpired):
			if held != 0 && to.timer.Load() != t {
				// Its run's goroutine would hand the arm to another Timer
				// than the one it ran on, whose Stop could not see it.
				return s, false, fmt.Errorf("%w: its run on another Timer has not returned yet", ErrTimeoutPending)
			}
			revive = false
		case phase == stCancelled && held&(stRunning|stReturning) == 0 && held&(stLinked|stNew|stOut) != 0 &&
			to.timer.Load() == t:
			revive = true
		default:
			return s, false, fmt.Errorf("%w: its Timer has not taken in its end yet", ErrTimeoutPending)
		}
		ns := s | stBusy
		if !revive && s&stOut == 0 {
			ns |= stNew
		}
		if to.state.CompareAndSwap(s, ns) {
			return s, revive, nil
		}
	}
}

// endArm ends a Schedule: it moves the timeout that beginArm took (and left
// in state s) to pending,
// with notifies (stNotifies or 0), clears stBusy and counts one more arm in
// the generation. It keeps the holding flags, which the worker or the run's
// goroutine may have changed meanwhile.
func (to *Timeout) endArm(s int32, notifies int32) {
	// s is the state beginArm left, which is most often still the state.
	for {
		ns := s&^(phaseMask|stBusy|stNotifies) | stPending | notifies
		if to.state.CompareAndSwap(s, ns+genOne) {
			return
		}
		s = to.state.Load()
	}
}

// abortArm takes back a beginArm whose arm failed before it was published
// (at the pending limit, or its push found the timer stopped), leaving the
// state as beginArm found it: it clears stNew too if beginArm set it, which
// it did for a timeout that no Timer holds and that is not out on its run
// (not for one it revives, which may be in a queue of new timeouts).
func (to *Timeout) abortArm(setNew bool) {
	clear := stBusy
	if setNew {
		clear |= stNew
	}
	to.state.And(^clear)
}
