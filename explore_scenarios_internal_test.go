//go:build hashedwheel_explore

package hashedwheel

// The scenarios the explorer of explore_internal_test.go runs, and what it
// checks after each schedule.
//
// A scenario puts one Timeout of an owned Timer (WithoutWorker: Advance and
// NextDeadline turn the wheel on the calling goroutine, so nothing runs in
// the background) in a set-up state, then runs two or three operations on it
// at once. Tasks go to a WithTaskExecutor that keeps them, so that a run is
// out until an operation (or the end of the schedule) makes it return. Time
// is the owner's: Advance gets the Timer's start plus whole ticks of an hour,
// and every delay is whole ticks, so that the few microseconds the schedule
// takes on the real clock never move a deadline across a tick.
//
// In the pool world (exScenario.pool), the Timer's tasks go to a
// WithTaskWorkers pool instead, whose one goroutine an operation plays
// (opPool): it runs the runs queued there, one by one, until Stop closes the
// pool, and Stop waits for it as a stopping worker does.
//
// After the operations, the schedule ends the same way every time: the runs
// still out return, the owner takes in (NextDeadline), Advances far enough
// for everything pending to run, and Stops. Then it checks:
//   - every arm of the Timeout ended exactly once: its task ran once (and
//     never before its Deadline), or it was cancelled, by a Cancel that
//     returned true or by a Stop that returned it, and never ran;
//   - a Cancel that returned true was taken in by the take-in that followed
//     the operations: its Cancelled call came by then, exactly once, and no
//     arm that Stop cancelled got one;
//   - Stats (Expired, Cancelled) and PendingTimeouts agree with those ends;
//   - Stop returned no Timeout twice, and once every Timer has stopped, the
//     Timeout is free: a new Timer arms it at once;
//   - runs of the Timeout never overlap: a Schedule on one Timer never
//     succeeds while a run handed out by another is out;
//   - no deadlock, panic or livelock (the explorer's own checks).

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// exTick is the tick of the explored Timers: long enough that the real time a
// schedule takes never moves a deadline across a tick.
const exTick = time.Hour

// exArm is one arm of the explored Timeout; its task records what happened
// to it.
type exArm struct {
	w        *exWorld
	name     string
	timer    *Timer
	periodic bool
	task     TimerTask

	handedOut   int // runs handed out (to the executor or the pool)
	dropped     int // runs handed out to an executor that panicked
	runs        int // runs that ran
	calls       int // Cancelled calls
	stopCancels int // times a Stop cancelled it (see timerStopped)
	cancels     int // Cancel calls that returned true on this arm

	// mayEndAside: a run of an earlier arm returned after the arm's Timer
	// had stopped, which then cancels the arm out of Stop's reach.
	mayEndAside bool

	// periodicRun, for a periodic arm, is the closure of its periodicExec's
	// run, which the executor gets (see armOfRun).
	periodicRun unsafe.Pointer

	// onCancelled, if set, runs inside the Cancelled call; onRun inside
	// each run.
	onCancelled func(to *Timeout)
	onRun       func(to *Timeout)
}

// ran records a run of the arm. In the inline world, where no executor
// sees the hand-out, it counts as one and checks the run is not early, as
// handOut does.
func (a *exArm) ran(to *Timeout) {
	if w := a.w; w.inline {
		a.handedOut++
		now := a.timer.life.startTime.Add(time.Duration(w.now[a.timer]))
		if d := exDeadlineOf(w.to); exArmOf(exTaskOf(w.to)) == a && d.After(now) {
			w.failf("arm %s ran early: at %v, before its Deadline %v (times since the start of %s)",
				a.name, now.Sub(a.timer.life.startTime), d.Sub(a.timer.life.startTime), w.timerName(a.timer))
		}
	}
	a.runs++
	if a.onRun != nil {
		a.onRun(to)
	}
}

// exNotifyTask is the task of an arm that wants its Cancelled calls.
type exNotifyTask struct{ a *exArm }

func (k *exNotifyTask) Run(to *Timeout)       { k.a.ran(to) }
func (k *exNotifyTask) timerStopped(*Timeout) { k.a.stopCancels++ }
func (k *exNotifyTask) Cancelled(to *Timeout) {
	k.a.calls++
	// The Timeout is let go of before its call, and only a run's return
	// lets go of a Timeout out on a run.
	if out := k.a.w.runOutOf(to); out != "" {
		k.a.w.failf("the Cancelled call of arm %s came while %s had not returned", k.a.name, out)
	}
	if k.a.onCancelled != nil {
		k.a.onCancelled(to)
	}
}

// exSilentTask is the task of an arm that is no CancelledTask.
type exSilentTask struct{ a *exArm }

func (k *exSilentTask) Run(to *Timeout)       { k.a.ran(to) }
func (k *exSilentTask) timerStopped(*Timeout) { k.a.stopCancels++ }

// The tasks are stopObservers, which Stop tells of each arm it cancels (as it
// tells a deadline context's), so that the checks know which arm each
// cancel of Stop ended.
var _, _ stopObserver = (*exNotifyTask)(nil), (*exSilentTask)(nil)

// exTaskOf returns the task of to's latest arm, read without its lock: the
// explored goroutines run one at a time, and only at explorePoint does
// another go on, so a read between two points sees no write half made
// (Timeout.Task would take the lock, itself a point, and let another
// goroutine arm the Timeout again before it reads).
func exTaskOf(to *Timeout) TimerTask { return userTask(to.task) }

// exDeadlineOf is Timeout.Deadline, read as exTaskOf reads the task.
func exDeadlineOf(to *Timeout) time.Time {
	return to.timer.v.Load().life.startTime.Add(time.Duration(to.deadline.v.Load()))
}

// exArmOf returns the arm whose task is task.
func exArmOf(task TimerTask) *exArm {
	switch k := task.(type) {
	case *exNotifyTask:
		return k.a
	case *exSilentTask:
		return k.a
	}
	return nil
}

// exRun is a run handed to the executor that has not returned. token is
// a periodic run's token, or a dropped one-shot run's (nil for another
// one-shot run, whose token only the run takes): once Stop, or the
// recovery of the executor's panic, has taken it, the run never starts,
// and its func does nothing.
type exRun struct {
	arm     *exArm
	fn      func()
	token   *runToken
	dropped bool // the executor panicked on it: its run ended then
}

// live reports whether the run may still start: its token is not gone.
func (r exRun) live() bool { return r.token == nil || r.token.out.v.Load() }

// exWorld is everything one schedule acts on and records. The operations
// run one at a time (the explorer resumes one goroutine at a time, through
// channels), so they share it without locks.
type exWorld struct {
	tm, tm2 *Timer
	to      *Timeout

	// pool: tm's runs go to its pool, which opPool plays (see newPooledTimer);
	// poolRunning counts the pool runs in progress: started, and not yet
	// handed their Timeout back (see afterStep); a run goes on through a
	// few more points after that.
	pool           bool
	poolRunning    int
	poolHandedBack bool // the run in progress on the pool has handed its Timeout back

	// execPanics is how many hand-outs still to come the executor panics
	// on, having kept the run (see handOut): it drops them, and calls them
	// late, as an operation (opRunReturns), which must run nothing.
	execPanics int

	// inline: the Timers have no executor, and their tasks run on the
	// goroutine that calls Advance (or NextDeadline), as an owned Timer's
	// do by default.
	inline bool

	now     map[*Timer]int64 // the owner's latest now given to Advance, since the Timer's start
	arms    []*exArm
	out     []exRun // runs handed out that have not returned
	results []string

	cancelTrue int          // Cancel calls that returned true
	stops      [][]*Timeout // what each Stop returned
	failures   []string     // found as it went: a run before its deadline, say
	stopOps    map[int]bool // the operations that are a Stop
	cancelOps  map[int]bool // the operations that are a Cancel

	// cancelledBy is the arm each Cancel operation cancelled, and
	// lastPhase the Timeout's phase after the latest step (see afterStep).
	cancelledBy map[int]*exArm
	lastPhase   state

	// cancelledTrue are the Cancel operations that returned true.
	cancelledTrue []int
	schedErrs     map[int]error // what each Schedule operation returned
}

var exDiscard = slog.New(slog.DiscardHandler)

func newExWorld(ops int, pool, inline bool) *exWorld {
	w := &exWorld{to: &Timeout{}, now: map[*Timer]int64{}, results: make([]string, ops),
		stopOps: map[int]bool{}, schedErrs: map[int]error{}, pool: pool, inline: inline,
		cancelOps: map[int]bool{}, cancelledBy: map[int]*exArm{}}
	w.tm = w.newTimer()
	if pool {
		w.tm = w.newPooledTimer()
	}
	w.tm2 = w.newTimer()
	return w
}

// afterStep runs after each step of a schedule (see runSchedule). It
// records which arm a Cancel operation cancelled (the Timeout's arm when a
// step of that operation moved it to cancelled, unlocked), and when the
// run in progress on the pool handed its Timeout back.
func (w *exWorld) afterStep(c int) {
	s := state(w.to.state.v.Load())
	phase := s.phase()
	if s&stLocked != 0 {
		return // mid-section: its end decides
	}
	if w.poolRunning > 0 && !w.poolHandedBack && s.held() != heldRun && s.held() != heldPeriodicRun {
		// The pool's run handed its Timeout back: it is no longer out.
		w.poolRunning--
		w.poolHandedBack = true
	}
	if phase == stCancelled && w.lastPhase != stCancelled && w.cancelOps[c] {
		w.cancelledBy[c] = exArmOf(exTaskOf(w.to))
	}
	w.lastPhase = phase
}

// exIsStopped is Timer.isStopped without a point: a check, not a step.
func exIsStopped(tm *Timer) bool { return tm.life.state.v.Load() == stateShutdown }

// newPooledTimer returns an owned Timer whose tasks go to a WithTaskWorkers
// pool of one goroutine that opPool plays: the pool is made as NewTimer
// makes one, and never started. (NewTimer refuses a pool on an owned
// Timer, which has no worker to hand runs to it; an owner does here, as
// it does for an executor, and its Stop waits for the pool as a stopping
// worker does: see Timer.shutdown.)
func (w *exWorld) newPooledTimer() *Timer {
	tm, err := NewTimer(WithoutWorker(), WithTickDuration(exTick), WithTicksPerWheel(8), WithLogger(exDiscard))
	if err != nil {
		panic(err)
	}
	tm.conf.pool = newTaskPool(tm, 1)
	tm.conf.pool.live = 1 // the goroutine opPool plays
	return tm
}

// poolRun runs the oldest run queued on tm's pool, as a pool goroutine
// does, and reports whether there was one.
func (w *exWorld) poolRun() bool {
	p := w.tm.conf.pool
	p.mu.Lock()
	if p.n == 0 {
		p.mu.Unlock()
		return false
	}
	r := p.dequeue()
	p.mu.Unlock()
	// Counted as the executor's hand-outs are: every run queued is run
	// here before the checks.
	if a := exArmOf(userTask(r.task)); a != nil {
		a.handedOut++
	}
	w.poolRunning++
	w.poolHandedBack = false
	w.tm.runTimeout(r.to, r.task)
	if !w.poolHandedBack {
		w.poolRunning--
	}
	return true
}

// poolQueued returns how many runs wait in tm's pool.
func (w *exWorld) poolQueued() int {
	if !w.pool {
		return 0
	}
	// Read without the lock: a check, not a step, so no point, and the
	// pool's goroutine (opPool) may be parked holding it. The explored
	// goroutines run one at a time, handed over through channels, so no
	// write is half made.
	return w.tm.conf.pool.n
}

// poolQueuedLive returns how many runs wait in the pool's queue that may
// still start: not a periodic run whose token Stop took. Read without the
// pool's lock or a point, as poolQueued reads.
func (w *exWorld) poolQueuedLive() int {
	if !w.pool {
		return 0
	}
	p := w.tm.conf.pool
	live := 0
	for i := range p.n {
		r := p.ring[(p.head+i)&(len(p.ring)-1)]
		if pt, ok := r.task.(*periodicTask); !ok || pt.token.out.v.Load() {
			live++
		}
	}
	return live
}

// runOutOf describes a run of to that has not returned, or returns "".
func (w *exWorld) runOutOf(to *Timeout) string {
	if to != w.to {
		return ""
	}
	return w.runOutElsewhere(nil) // any Timer's
}

// runOutElsewhere describes a run of the Timeout that a Timer other than tm
// handed out and that has not returned, or returns "".
func (w *exWorld) runOutElsewhere(tm *Timer) string {
	for _, r := range w.out {
		if r.live() && r.arm.timer != tm {
			return fmt.Sprintf("the run of arm %s, handed out by %s to its executor", r.arm.name, w.timerName(r.arm.timer))
		}
	}
	if queued := w.poolQueuedLive(); w.pool && tm != w.tm && queued+w.poolRunning > 0 {
		return fmt.Sprintf("a run on the pool of tm (%d queued, %d running)", queued, w.poolRunning)
	}
	return ""
}

// newTimer makes one of the world's Timers: owned, so that the explorer's
// operations drive the wheel, with an executor that keeps each run, so that
// a run is an operation of its own. NewTimer refuses an owned Timer with an
// executor (an owner runs its own tasks); the hand-out protocol the world
// explores is the same whoever drives the wheel, so the executor is set
// here, past the refusal.
func (w *exWorld) newTimer() *Timer {
	tm, err := NewTimer(WithoutWorker(), WithTickDuration(exTick), WithTicksPerWheel(8), WithLogger(exDiscard))
	if err != nil {
		panic(err) // the options are the test's own
	}
	if w.inline {
		return tm // tasks run inside Advance, as an owner's do
	}
	tm.conf.taskExecutor = func(fn func()) { w.handOut(tm, fn) }
	return tm
}

func (w *exWorld) timerName(tm *Timer) string {
	switch tm {
	case w.tm:
		return "tm"
	case w.tm2:
		return "tm2"
	}
	return "another Timer"
}

func (w *exWorld) failf(format string, args ...any) {
	w.failures = append(w.failures, fmt.Sprintf(format, args...))
}

// handOut is the executor: it keeps the run until it is made to return, and
// checks it is not early. It finds the run's arm from fn (see exArmOfRun):
// the wheel's steps between the expiry and this call (counting the run in
// Stats, say) are points, at which another goroutine may arm the Timeout
// again.
func (w *exWorld) handOut(tm *Timer, fn func()) {
	a, sameArm := w.armOfRun(fn)
	if a == nil {
		w.failf("%s handed out a run whose task is not an arm's", w.timerName(tm))
		return
	}
	a.handedOut++
	if a.timer != tm {
		w.failf("arm %s of %s was handed out by %s", a.name, w.timerName(a.timer), w.timerName(tm))
	}
	// The Timeout's deadline is the arm's while the Timeout is still on
	// that arm (a Reset of an expired one-shot arm fails).
	now := tm.life.startTime.Add(time.Duration(w.now[tm]))
	if d := exDeadlineOf(w.to); sameArm && d.After(now) {
		w.failf("arm %s ran early: handed out at %v, before its Deadline %v (times since the start of %s)",
			a.name, now.Sub(tm.life.startTime), d.Sub(tm.life.startTime), w.timerName(tm))
	}
	r := exRun{arm: a, fn: fn}
	if p, ok := w.to.task.(*periodicTask); ok {
		r.token = &p.token
	} else if w.execPanics > 0 {
		r.token = &exExecRunOf(fn).token
	}
	if w.execPanics > 0 {
		// An executor that panics (a full queue, say) after it kept the
		// func: the Timer takes the run as dropped, and ends it at once.
		w.execPanics--
		a.dropped++
		r.dropped = true
		w.out = append(w.out, r)
		panic("explore: the executor panicked")
	}
	w.out = append(w.out, r)
}

// exFuncPtr returns the closure a func value points to: two func values
// made by one method value, or copied from one, point to the same.
func exFuncPtr(fn func()) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&fn)) }

// armOfRun returns the arm whose run fn is, a func handed to the executor,
// and whether the Timeout is still on that arm. A periodic arm's fn is its
// periodicTask's exec (see exArm.periodicRun); a one-shot arm's is the
// method value r.run of an *execRun r made for the hand-out, a closure of
// gc's layout {code, r} (checked: r's Timeout is the world's), and r.task
// is the arm's task.
// exExecRunOf returns the *execRun whose method value r.run fn is (see
// armOfRun), or garbage the caller checks.
func exExecRunOf(fn func()) *execRun {
	return (*struct {
		code uintptr
		r    *execRun
	})(exFuncPtr(fn)).r
}

func (w *exWorld) armOfRun(fn func()) (*exArm, bool) {
	cur := exArmOf(exTaskOf(w.to))
	for _, a := range w.arms {
		if a.periodicRun != nil && a.periodicRun == exFuncPtr(fn) {
			return a, a == cur
		}
	}
	r := exExecRunOf(fn)
	if r == nil || r.to != w.to || r.t == nil {
		w.failf("the executor got a func that is neither a periodic arm's run nor an execRun's")
		return nil, false
	}
	a := exArmOf(userTask(r.task))
	return a, a != nil && a == cur
}

// newArm makes an arm on tm; it counts once a Schedule with its task has
// succeeded (see keep).
func (w *exWorld) newArm(name string, tm *Timer, notifies bool) *exArm {
	a := &exArm{w: w, name: name, timer: tm}
	if notifies {
		a.task = &exNotifyTask{a}
	} else {
		a.task = &exSilentTask{a}
	}
	return a
}

func (w *exWorld) keep(a *exArm) { w.arms = append(w.arms, a) }

// schedule arms the Timeout on tm with a new arm after ticks ticks.
func (w *exWorld) schedule(name string, tm *Timer, ticks int, notifies bool) error {
	a := w.newArm(name, tm, notifies)
	err := tm.Schedule(w.to, a.task, time.Duration(ticks)*exTick)
	if err == nil {
		w.keep(a)
		if out := w.runOutElsewhere(tm); out != "" {
			w.failf("Schedule of arm %s on %s succeeded while %s had not returned: runs of the Timeout may overlap",
				name, w.timerName(tm), out)
		}
	}
	return err
}

// advance is the owner's Advance to ticks ticks after tm's start.
func (w *exWorld) advance(tm *Timer, ticks int) (int, error) {
	w.now[tm] = max(w.now[tm], int64(ticks)*int64(exTick))
	return tm.Advance(tm.life.startTime.Add(time.Duration(ticks) * exTick))
}

// returnRun makes the oldest run still out return, and reports whether there
// was one. If the Timeout was armed again while the run was out and its
// Timer has stopped meanwhile, the new arm may end cancelled as the run
// returns, out of Stop's reach (see Timer.endAside).
func (w *exWorld) returnRun() bool {
	if len(w.out) == 0 {
		return false
	}
	r := w.out[0]
	w.out = w.out[1:]
	before, live := r.arm.runs, r.live()
	r.fn()
	switch ran := r.arm.runs != before; {
	case r.dropped && ran && !live:
		w.failf("arm %s: the executor panicked on its run, and the func it kept, called after the "+
			"recovery took the run's token, ran the task", r.arm.name)
	case r.dropped && ran:
		// Its call took the token before the recovery did (an executor
		// that passed the func on, then panicked): the run went on, once.
		r.arm.dropped--
	}
	if a := exArmOf(exTaskOf(w.to)); a != nil && a != r.arm && exIsStopped(a.timer) {
		a.mayEndAside = true
	}
	return true
}

// The operations. Each returns what it got, for the report.

type exOp struct {
	key  string // its name in the names of subtests
	name string
	run  func(w *exWorld, i int) string
	// goexits: the operation may end by runtime.Goexit (a Cancelled call
	// that it makes calls it), which is then no failure.
	goexits bool
}

var (
	opCancel = exOp{key: "cancel", name: "Cancel", run: func(w *exWorld, i int) string {
		w.cancelOps[i] = true
		ok := w.to.Cancel()
		if ok {
			// The arm it cancelled is the one its step cancelled, which
			// afterStep records (finish counts it): after that step come
			// points (the pending count, the wake-up) at which a
			// Schedule may arm the Timeout again.
			w.cancelTrue++
			w.cancelledTrue = append(w.cancelledTrue, i)
		}
		return fmt.Sprint(ok)
	}}
	opResetEarlier = exOp{key: "resetEarlier", name: "Reset(1 tick)", run: func(w *exWorld, _ int) string {
		return fmt.Sprint(w.to.Reset(exTick))
	}}
	opResetLater = exOp{key: "resetLater", name: "Reset(5 ticks)", run: func(w *exWorld, _ int) string {
		return fmt.Sprint(w.to.Reset(5 * exTick))
	}}
	opScheduleSame  = exScheduleOp("scheduleSame", "Schedule on tm", "s1", false, true)
	opScheduleSame2 = exScheduleOp("scheduleSame2", "Schedule on tm", "s2", false, true)
	opScheduleOther = exScheduleOp("scheduleOther", "Schedule on tm2", "o1", true, true)
	opTakeIn        = exOp{key: "takeIn", name: "NextDeadline (take-in)", run: func(w *exWorld, _ int) string {
		d, ok := w.tm.NextDeadline()
		if !ok {
			return "false"
		}
		return fmt.Sprint(d.Sub(w.tm.life.startTime))
	}}
	opExpire = exOp{key: "expire", name: "Advance(4 ticks)", run: func(w *exWorld, _ int) string {
		n, err := w.advance(w.tm, 4)
		return fmt.Sprint(n, err)
	}}
	opStop = exOp{key: "stop", name: "Stop", run: func(w *exWorld, i int) string {
		w.stopOps[i] = true
		s := w.tm.Stop()
		w.stops = append(w.stops, s)
		return fmt.Sprintf("%d timeouts", len(s))
	}}
	opRunReturns = exOp{key: "runReturns", name: "run returns", run: func(w *exWorld, _ int) string {
		if !w.returnRun() {
			return "no run out"
		}
		return "returned"
	}}
)

// exScheduleOp is a Schedule of the Timeout on tm (or tm2 if other), 2 ticks
// ahead, with a new arm called arm.
func exScheduleOp(key, name, arm string, other, notifies bool) exOp {
	return exOp{key: key, name: name, run: func(w *exWorld, i int) string {
		tm := w.tm
		if other {
			tm = w.tm2
		}
		err := w.schedule(arm, tm, 2, notifies)
		w.schedErrs[i] = err
		if err != nil {
			return "error: " + err.Error()
		}
		return "armed " + arm
	}}
}

// The set-up states. Each arms the Timeout on tm with arm a0, due 3 ticks
// ahead unless it says otherwise, and checks it left the state it promises.

type exSetup struct {
	name string
	desc string
	run  func(tb testing.TB, w *exWorld)
}

// exMust fails the set-up unless the Timeout's state has phase and held,
// and the flags in want.
func exMust(tb testing.TB, w *exWorld, phase, held, want state, what string) {
	if s := w.to.load(); s.phase() != phase || s.held() != held || s&want != want {
		tb.Fatalf("set-up %s: state %s", what, exState(uint32(s)))
	}
}

var (
	setupNew = exSetup{"new", "pending in the queue of new timeouts", func(tb testing.TB, w *exWorld) {
		if err := w.schedule("a0", w.tm, 3, true); err != nil {
			tb.Fatal(err)
		}
		exMust(tb, w, stPending, heldNew, 0, "new")
	}}
	setupLinked = exSetup{"linked", "pending, linked in a bucket", func(tb testing.TB, w *exWorld) {
		setupNew.run(tb, w)
		w.tm.NextDeadline()
		exMust(tb, w, stPending, heldBucket, 0, "linked")
	}}
	setupQueued = exSetup{"queued", "linked in a bucket, Reset earlier: in the changes queue too (heldBucketAndChanges)",
		func(tb testing.TB, w *exWorld) {
			setupLinked.run(tb, w)
			if !w.to.Reset(exTick) {
				tb.Fatal("set-up queued: Reset returned false")
			}
			exMust(tb, w, stPending, heldBucketAndChanges, 0, "queued")
		}}
	setupOut = exSetup{"out", "expired, its run handed out and not returned (heldRun)", func(tb testing.TB, w *exWorld) {
		if err := w.schedule("a0", w.tm, 0, true); err != nil {
			tb.Fatal(err)
		}
		if n, err := w.advance(w.tm, 1); n != 1 || err != nil {
			tb.Fatalf("set-up out: Advance = %d, %v", n, err)
		}
		exMust(tb, w, stExpired, heldRun, 0, "out")
	}}
	setupCancelledLinked = exSetup{"cancelled-linked", "cancelled while linked, not taken in yet",
		func(tb testing.TB, w *exWorld) {
			setupLinked.run(tb, w)
			if !w.to.Cancel() {
				tb.Fatal("set-up cancelled-linked: Cancel returned false")
			}
			w.cancelTrue++
			w.arms[0].cancels++
			exMust(tb, w, stCancelled, heldBucketAndChanges, stOwesCancelled, "cancelled-linked")
		}}
	setupCancelledNew = exSetup{"cancelled-new", "cancelled in the queue of new timeouts, not taken in yet",
		func(tb testing.TB, w *exWorld) {
			setupNew.run(tb, w)
			if !w.to.Cancel() {
				tb.Fatal("set-up cancelled-new: Cancel returned false")
			}
			w.cancelTrue++
			w.arms[0].cancels++
			exMust(tb, w, stCancelled, heldNew, stOwesCancelled, "cancelled-new")
		}}
	setupEnded = exSetup{"ended", "ran, and its run returned: no Timer holds it", func(tb testing.TB, w *exWorld) {
		setupOut.run(tb, w)
		w.returnRun()
		exMust(tb, w, stExpired, heldNowhere, 0, "ended")
	}}
)

// exState describes a state word.
func exState(word uint32) string {
	s := state(word)
	phases := []string{"unarmed", "pending", "cancelled", "expired"}
	held := []string{"nowhere", "in a queue of new timeouts", "in the wheel", "in the wheel and the changes queue",
		"in the changes queue", "out on its run", "out on a periodic run", "returning from a periodic run"}
	b := []string{phases[s.phase()], "held " + held[s.held()>>heldShift]}
	for _, f := range []struct {
		bit  state
		name string
	}{{stLocked, "locked"}, {stWantsCancelled, "wants Cancelled"}, {stOwesCancelled, "owes Cancelled"}} {
		if s&f.bit != 0 {
			b = append(b, "+"+f.name)
		}
	}
	return fmt.Sprintf("%s (generation %d)", strings.Join(b, ", "), s/genOne)
}

// finish ends a schedule the same way every time and returns what it found
// wrong. The operations have all returned.
func (w *exWorld) finish() []string {
	timers := []*Timer{w.tm, w.tm2}
	for _, i := range w.cancelledTrue {
		if a := w.cancelledBy[i]; a != nil {
			a.cancels++
		} else {
			w.failf("Cancel (T%d) returned true, but none of its steps cancelled an arm", i)
		}
	}
	// The runs still out return: until then their Timer cannot take in what
	// concerns the Timeout.
	for w.returnRun() {
	}
	// The take-in after the operations: it must make the Cancelled calls
	// owed for every Cancel that returned true.
	for _, tm := range timers {
		tm.NextDeadline()
	}
	for _, a := range w.arms {
		if a.cancels == 1 && !isSilent(a) && a.calls != 1 {
			w.failf("Cancel returned true for arm %s, but %d Cancelled call(s) had come by the take-in after "+
				"the operations (NextDeadline): a cancel was not taken in; the Timeout's state is %s",
				a.name, a.calls, exState(w.to.state.v.Load()))
		}
	}
	// Far enough for everything pending to run; the runs return, and may
	// arm the Timeout again.
	for round := range 4 {
		for _, tm := range timers {
			if !tm.isStopped() {
				w.advance(tm, 40+round)
			}
		}
		if !w.returnRun() && w.tm.PendingTimeouts()+w.tm2.PendingTimeouts() == 0 {
			break
		}
		for w.returnRun() {
		}
	}
	pendingPeriodic := 0
	for _, a := range w.arms {
		if a.periodic && a.calls == 0 && !w.to.IsCancelled() && exArmOf(exTaskOf(w.to)) == a {
			pendingPeriodic++
		}
	}
	if !w.tm.isStopped() && !w.tm2.isStopped() {
		// Nothing pending is left but a periodic arm, and the counts agree
		// with the ends so far (published now: their lag is not checked).
		var st Stats
		for _, tm := range timers {
			tm.publishStats()
			s := tm.Stats()
			st.Pending += s.Pending
			st.Expired += s.Expired
			st.Cancelled += s.Cancelled
		}
		if st.Pending != int64(pendingPeriodic) {
			w.failf("after Advance far past every deadline, PendingTimeouts is %d, want %d", st.Pending, pendingPeriodic)
		}
		if st.Cancelled != uint64(w.cancelTrue) {
			w.failf("after the take-in and Advance, Stats().Cancelled is %d, want %d (Cancel returned true %d time(s))",
				st.Cancelled, w.cancelTrue, w.cancelTrue)
		}
	}
	for _, tm := range timers {
		if s := tm.Stop(); len(s) > 0 {
			w.stops = append(w.stops, s)
		}
	}
	for w.returnRun() {
	}
	// Every arm ended exactly once. A Stop that found Advance or
	// NextDeadline in progress returns nil, and that call cancels what is
	// pending as it returns: what Stop cancels is in life.unprocessed
	// either way.
	stopped := 0
	for _, tm := range timers {
		u := tm.life.unprocessed
		stopped += len(u)
		for i, x := range u {
			if slices.Contains(u[:i], x) {
				w.failf("Stop cancelled the same *Timeout twice on %s, and returns it twice (%d timeouts: %v)",
					w.timerName(tm), len(u), u)
				break
			}
		}
	}
	for _, s := range w.stops {
		if s != nil && !slices.Equal(s, w.tm.life.unprocessed) && !slices.Equal(s, w.tm2.life.unprocessed) {
			w.failf("a Stop returned %v, not what it cancelled", s)
		}
	}
	// Each arm ended once: it ran (a one-shot); a Cancel cancelled it, and
	// its Cancelled call came if its task wants one; a Stop cancelled it
	// and returned it; or it ended aside, as a run returned after its Timer
	// stopped, and its Cancelled call came if its task wants one.
	var expired uint64
	stopCancels, aside := 0, 0
	for _, a := range w.arms {
		if a.periodic && a.calls == 0 && a.stopCancels == 0 && slices.Contains(a.timer.life.unprocessed, w.to) {
			// Stop tells the observer of a periodic timeout's task, a
			// periodicTask, nothing: the only periodic arm is the first,
			// and Stop returned the Timeout.
			a.stopCancels = 1
		}
		expired += uint64(a.handedOut)
		stopCancels += a.stopCancels
		// A periodic run cancelled (or stopped) after it was handed out
		// does not start.
		if a.runs != a.handedOut-a.dropped && !(a.periodic && a.runs < a.handedOut) {
			w.failf("arm %s: %d run(s) handed out, %d dropped by a panicking executor, %d ran",
				a.name, a.handedOut, a.dropped, a.runs)
		}
		ran := 0
		if !a.periodic {
			ran = a.handedOut
		}
		wantCall := 1
		if isSilent(a) {
			wantCall = 0
		}
		switch ends := ran + a.cancels + a.stopCancels; {
		case ends > 1:
			w.failf("arm %s ended %d times: %d run(s), cancelled %d time(s) by Cancel and %d time(s) by Stop",
				a.name, ends, ran, a.cancels, a.stopCancels)
		case a.cancels == 1 && a.calls != wantCall:
			w.failf("arm %s, cancelled by Cancel, got %d Cancelled call(s), want %d", a.name, a.calls, wantCall)
		case ends == 1 && a.cancels == 0 && a.calls != 0:
			w.failf("arm %s got %d Cancelled call(s), but it ran or a Stop cancelled it", a.name, a.calls)
		case ends == 0 && a.mayEndAside && a.calls == wantCall:
			aside++
		case ends == 0 && a.mayEndAside:
			w.failf("arm %s ended aside as a run returned after its Timer stopped, with %d Cancelled call(s), want %d",
				a.name, a.calls, wantCall)
		case ends == 0:
			w.failf("arm %s never ended: it did not run, no Cancel returned true for it, and no Stop cancelled it (%d Cancelled calls)",
				a.name, a.calls)
		}
	}
	if stopCancels != stopped {
		w.failf("Stop cancelled %d arm(s), but returned %d (or holds them for the owner's call in progress)",
			stopCancels, stopped)
	}
	var st Stats
	for _, tm := range timers {
		s := tm.Stats()
		st.Pending += s.Pending
		st.Expired += s.Expired
		st.Cancelled += s.Cancelled
	}
	if st.Pending != 0 {
		w.failf("after Stop, PendingTimeouts is %d", st.Pending)
	}
	if st.Expired != expired {
		w.failf("Stats().Expired is %d, but %d run(s) were handed out", st.Expired, expired)
	}
	if want := uint64(w.cancelTrue + stopped + aside); st.Cancelled != want {
		w.failf("Stats().Cancelled is %d, want %d (%d Cancel, %d returned by Stop, %d ended as their run returned)",
			st.Cancelled, want, w.cancelTrue, stopped, aside)
	}
	// Every Timer has stopped and let go of the Timeout: another Timer
	// arms it at once.
	if err := w.schedule("free", w.newTimer(), 1, true); errIsPending(err) {
		w.failf("every Timer has stopped, but Schedule on a new Timer fails: %v (state %s)",
			err, exState(w.to.state.v.Load()))
	}
	return w.failures
}

func isSilent(a *exArm) bool {
	_, ok := a.task.(*exSilentTask)
	return ok
}

// exScenario is a set-up state and the operations run on it at once.
type exScenario struct {
	setup exSetup
	ops   []exOp
	// check, if set, checks what the schedule did beyond finish's checks.
	check func(w *exWorld, res *exResult) []string
	opts  exploreOpts
	// oldCore, if set, says why the scenario fails on the core before the
	// rewrite that takes a lock per Timeout (commit 1f0fbed and before):
	// it is a known failure there, and must pass on the rewritten core.
	oldCore string
	// handOffs, if set, says why the scenario fails on the core before
	// Stop and the other hand-offs kept a Timeout held by its run until the
	// run returned (commit 8a73234 and before).
	handOffs string
	// pool: the scenario runs in the pool world (see newPooledTimer).
	pool bool
	// inline: the scenario runs in the inline world (see exWorld.inline).
	inline bool
}

func (sc exScenario) String() string {
	names := make([]string, len(sc.ops))
	for i, op := range sc.ops {
		names[i] = fmt.Sprintf("T%d %s", i, op.name)
	}
	return fmt.Sprintf("set-up %s (%s); %s", sc.setup.name, sc.setup.desc, strings.Join(names, " ‖ "))
}

// exRunPattern is the -run pattern that selects the running test alone.
func exRunPattern(t *testing.T) string {
	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// explore runs the scenario under every schedule within its preemption
// bound, then under random ones, and fails the test at the first schedule
// whose checks fail, with that schedule and how to replay it.
func explore(t *testing.T, sc exScenario) {
	t.Helper()
	opts := sc.opts.withDefaults()
	names := make([]string, len(sc.ops))
	for i, op := range sc.ops {
		names[i] = op.name
	}
	one := func(choose exChooser) (*exWorld, *exResult, []string) {
		w := newExWorld(len(sc.ops), sc.pool, sc.inline)
		sc.setup.run(t, w)
		w.lastPhase = state(w.to.state.v.Load()).phase()
		bodies := make([]func(), len(sc.ops))
		goexits := make([]bool, len(sc.ops))
		for i, op := range sc.ops {
			w.results[i] = "did not return (runtime.Goexit, or the schedule failed)"
			bodies[i] = func() { w.results[i] = op.run(w, i) }
			goexits[i] = op.goexits
		}
		res := runSchedule(names, bodies, choose, opts.maxSteps, w.afterStep, goexits...)
		if res.err != "" {
			return w, res, []string{res.err}
		}
		// The end of the schedule runs on a goroutine of its own, so that
		// one that never returns is reported rather than hangs the test.
		finished := make(chan []string, 1)
		go func() { finished <- w.finish() }()
		var fails []string
		select {
		case fails = <-finished:
		case <-time.After(exStepTimeout):
			res.stuck = true
			return w, res, []string{fmt.Sprintf("the end of the schedule (take-in, Advance, Stop) did not "+
				"return within %v: it loops, or blocks, for good", exStepTimeout)}
		}
		if sc.check != nil {
			fails = append(fails, sc.check(w, res)...)
		}
		return w, res, fails
	}
	report := func(how, replay string, w *exWorld, res *exResult, fails []string) {
		t.Helper()
		var b strings.Builder
		fmt.Fprintf(&b, "%v\nfound by %s\n", sc, how)
		for i, r := range w.results {
			fmt.Fprintf(&b, "  T%d %s → %s\n", i, sc.ops[i].name, r)
		}
		b.WriteString("failures:\n")
		for _, f := range fails {
			fmt.Fprintf(&b, "  - %s\n", f)
		}
		fmt.Fprintf(&b, "schedule (%d steps; each runs a goroutine from the point named to its next; * marks a preemption):\n%s",
			len(res.steps), exTrace(res))
		fmt.Fprintf(&b, "replay: go test -tags hashedwheel_explore -run '%s' %s .\n", exRunPattern(t), replay)
		if sc.oldCore != "" {
			fmt.Fprintf(&b, "known to fail on the old core: %s\n", sc.oldCore)
		}
		if sc.handOffs != "" {
			fmt.Fprintf(&b, "known to fail before the hand-offs were fixed (8a73234): %s\n", sc.handOffs)
		}
		t.Error(b.String())
		if res.stuck {
			// A goroutine spins, or blocks, for good: end the test binary,
			// which prints every goroutine's stack, the stuck one's too.
			panic("explore: a goroutine is stuck; see the schedule above and the stacks below")
		}
	}
	if *exploreScheduleFlag != "" {
		forced, err := exParseSchedule(*exploreScheduleFlag)
		if err != nil {
			t.Fatal(err)
		}
		bad := ""
		w, res, fails := one(exReplay(forced, &bad))
		if bad != "" {
			fails = append(fails, bad)
		}
		if len(fails) > 0 {
			report("replay of -explore.schedule", "-explore.schedule="+exFormatSchedule(res.steps), w, res, fails)
		} else {
			t.Logf("replayed %d steps: all checks pass\n%s", len(res.steps), exTrace(res))
		}
		return
	}
	start := time.Now()
	length := 0
	if opts.bound >= 0 {
		failed := false
		tried := 0
		runs, stopped, nondet := exDFS(opts.bound, opts.maxRuns, func(choose exChooser) (bool, string) {
			tried++
			w, res, fails := one(choose)
			if *exploreVerboseFlag {
				t.Logf("schedule %s: %d failures", exFormatSchedule(res.steps), len(fails))
			}
			if len(fails) > 0 {
				failed = true
				report(fmt.Sprintf("the exhaustive search (schedule %d, at most %d preemptions)", tried, opts.bound),
					"-explore.schedule="+exFormatSchedule(res.steps), w, res, fails)
				return true, ""
			}
			return false, ""
		})
		if nondet != "" {
			t.Fatalf("%v\nthe same steps did not replay the same: %s", sc, nondet)
		}
		if failed {
			return
		}
		if runs >= opts.maxRuns && !stopped {
			t.Logf("the exhaustive search stopped at its cap of %d schedules", opts.maxRuns)
		}
		t.Logf("%d schedules with at most %d preemptions in %v", runs, opts.bound, time.Since(start).Round(time.Millisecond))
	}
	// The random schedules place their preemptions among the steps of the
	// schedule without any, so that a seed replays alone.
	if opts.random > 0 {
		_, res, _ := one(func(_ int, st *exStep) int { return exDefaultChoice(st) })
		length = len(res.steps)
	}
	seed := *exploreSeedFlag
	if seed == 0 {
		seed = exDefaultSeed
	}
	start = time.Now()
	for i := range opts.random {
		s := seed + uint64(i)
		rng := rand.New(rand.NewPCG(s, 0x9e3779b97f4a7c15))
		depth := rng.IntN(opts.maxDepth + 1)
		w, res, fails := one(exPCT(rng, len(sc.ops), depth, length))
		if len(fails) > 0 {
			report(fmt.Sprintf("random schedule %d (seed %d, %d preemptions at most)", i, s, depth),
				fmt.Sprintf("-explore.mode=random -explore.seed=%d -explore.runs=1", s), w, res, fails)
			return
		}
	}
	if opts.random > 0 {
		t.Logf("%d random schedules in %v", opts.random, time.Since(start).Round(time.Millisecond))
	}
}

// errIsPending reports whether err wraps ErrTimeoutPending.
func errIsPending(err error) bool { return errors.Is(err, ErrTimeoutPending) }
