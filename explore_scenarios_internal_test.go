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
)

// exTick is the tick of the explored Timers: long enough that the real time a
// schedule takes never moves a deadline across a tick.
const exTick = time.Hour

// exArm is one arm of the explored Timeout; its task records what happened
// to it.
type exArm struct {
	name     string
	timer    *Timer
	periodic bool
	task     TimerTask

	handedOut   int // runs handed out (to the executor)
	runs        int // runs that ran
	calls       int // Cancelled calls
	stopCancels int // times a Stop cancelled it (see timerStopped)

	// mayEndAside: a run of an earlier arm returned after the arm's Timer
	// had stopped, which then cancels the arm out of Stop's reach.
	mayEndAside bool

	// onCancelled, if set, runs inside the Cancelled call.
	onCancelled func(to *Timeout)
}

// exNotifyTask is the task of an arm that wants its Cancelled calls.
type exNotifyTask struct{ a *exArm }

func (k *exNotifyTask) Run(*Timeout)          { k.a.runs++ }
func (k *exNotifyTask) timerStopped(*Timeout) { k.a.stopCancels++ }
func (k *exNotifyTask) Cancelled(to *Timeout) {
	k.a.calls++
	if k.a.onCancelled != nil {
		k.a.onCancelled(to)
	}
}

// exSilentTask is the task of an arm that is no CancelledTask.
type exSilentTask struct{ a *exArm }

func (k *exSilentTask) Run(*Timeout)          { k.a.runs++ }
func (k *exSilentTask) timerStopped(*Timeout) { k.a.stopCancels++ }

// The tasks are stopObservers, which Stop tells of each arm it cancels (as it
// tells a deadline context's), so that the checks know which arm each
// cancel of Stop ended.
var _, _ stopObserver = (*exNotifyTask)(nil), (*exSilentTask)(nil)

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

// exRun is a run handed to the executor that has not returned.
type exRun struct {
	arm *exArm
	fn  func()
}

// exWorld is everything one schedule acts on and records. The operations
// run one at a time (the explorer resumes one goroutine at a time, through
// channels), so they share it without locks.
type exWorld struct {
	tm, tm2 *Timer
	to      *Timeout

	now     map[*Timer]int64 // the owner's latest now given to Advance, since the Timer's start
	arms    []*exArm
	out     []exRun // runs handed out that have not returned
	results []string

	cancelTrue int           // Cancel calls that returned true
	stops      [][]*Timeout  // what each Stop returned
	failures   []string      // found as it went: a run before its deadline, say
	stopOps    map[int]bool  // the operations that are a Stop
	schedErrs  map[int]error // what each Schedule operation returned
}

var exDiscard = slog.New(slog.DiscardHandler)

func newExWorld(ops int) *exWorld {
	w := &exWorld{to: &Timeout{}, now: map[*Timer]int64{}, results: make([]string, ops),
		stopOps: map[int]bool{}, schedErrs: map[int]error{}}
	w.tm = w.newTimer()
	w.tm2 = w.newTimer()
	return w
}

func (w *exWorld) newTimer() *Timer {
	var tm *Timer
	tm, err := NewTimer(WithoutWorker(), WithTickDuration(exTick), WithTicksPerWheel(8),
		WithLogger(exDiscard), WithTaskExecutor(func(fn func()) { w.handOut(tm, fn) }))
	if err != nil {
		panic(err) // the options are the test's own
	}
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
// checks it is not early. Nothing else runs between the expiry and this
// call, so the Timeout's task and deadline are still those of the arm.
func (w *exWorld) handOut(tm *Timer, fn func()) {
	a := exArmOf(w.to.Task())
	if a == nil {
		w.failf("%s handed out a run whose task is not an arm's: %v", w.timerName(tm), w.to.Task())
		return
	}
	a.handedOut++
	if a.timer != tm {
		w.failf("arm %s of %s was handed out by %s", a.name, w.timerName(a.timer), w.timerName(tm))
	}
	now := tm.life.startTime.Add(time.Duration(w.now[tm]))
	if d := w.to.Deadline(); d.After(now) {
		w.failf("arm %s ran early: handed out at %v, before its Deadline %v (times since the start of %s)",
			a.name, now.Sub(tm.life.startTime), d.Sub(tm.life.startTime), w.timerName(tm))
	}
	w.out = append(w.out, exRun{arm: a, fn: fn})
}

// newArm makes an arm on tm; it counts once a Schedule with its task has
// succeeded (see keep).
func (w *exWorld) newArm(name string, tm *Timer, notifies bool) *exArm {
	a := &exArm{name: name, timer: tm}
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
// returns, out of Stop's reach (see runReturned).
func (w *exWorld) returnRun() bool {
	if len(w.out) == 0 {
		return false
	}
	r := w.out[0]
	w.out = w.out[1:]
	r.fn()
	if a := exArmOf(w.to.Task()); a != nil && a != r.arm && a.timer.isStopped() {
		a.mayEndAside = true
	}
	return true
}

// The operations. Each returns what it got, for the report.

type exOp struct {
	key  string // its name in the names of subtests
	name string
	run  func(w *exWorld, i int) string
}

var (
	opCancel = exOp{"cancel", "Cancel", func(w *exWorld, _ int) string {
		ok := w.to.Cancel()
		if ok {
			w.cancelTrue++
		}
		return fmt.Sprint(ok)
	}}
	opResetEarlier = exOp{"resetEarlier", "Reset(1 tick)", func(w *exWorld, _ int) string {
		return fmt.Sprint(w.to.Reset(exTick))
	}}
	opResetLater = exOp{"resetLater", "Reset(5 ticks)", func(w *exWorld, _ int) string {
		return fmt.Sprint(w.to.Reset(5 * exTick))
	}}
	opScheduleSame  = exScheduleOp("scheduleSame", "Schedule on tm", "s1", false, true)
	opScheduleSame2 = exScheduleOp("scheduleSame2", "Schedule on tm", "s2", false, true)
	opScheduleOther = exScheduleOp("scheduleOther", "Schedule on tm2", "o1", true, true)
	opTakeIn        = exOp{"takeIn", "NextDeadline (take-in)", func(w *exWorld, _ int) string {
		d, ok := w.tm.NextDeadline()
		if !ok {
			return "false"
		}
		return fmt.Sprint(d.Sub(w.tm.life.startTime))
	}}
	opExpire = exOp{"expire", "Advance(4 ticks)", func(w *exWorld, _ int) string {
		n, err := w.advance(w.tm, 4)
		return fmt.Sprint(n, err)
	}}
	opStop = exOp{"stop", "Stop", func(w *exWorld, i int) string {
		w.stopOps[i] = true
		s := w.tm.Stop()
		w.stops = append(w.stops, s)
		return fmt.Sprintf("%d timeouts", len(s))
	}}
	opRunReturns = exOp{"runReturns", "run returns", func(w *exWorld, _ int) string {
		if !w.returnRun() {
			return "no run out"
		}
		return "returned"
	}}
)

// exScheduleOp is a Schedule of the Timeout on tm (or tm2 if other), 2 ticks
// ahead, with a new arm called arm.
func exScheduleOp(key, name, arm string, other, notifies bool) exOp {
	return exOp{key, name, func(w *exWorld, i int) string {
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
			exMust(tb, w, stCancelled, heldBucketAndChanges, stOwesCancelled, "cancelled-linked")
		}}
	setupCancelledNew = exSetup{"cancelled-new", "cancelled in the queue of new timeouts, not taken in yet",
		func(tb testing.TB, w *exWorld) {
			setupNew.run(tb, w)
			if !w.to.Cancel() {
				tb.Fatal("set-up cancelled-new: Cancel returned false")
			}
			w.cancelTrue++
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
	// The runs still out return: until then their Timer cannot take in what
	// concerns the Timeout.
	for w.returnRun() {
	}
	// The take-in after the operations: it must make the Cancelled calls
	// owed for every Cancel that returned true.
	for _, tm := range timers {
		tm.NextDeadline()
	}
	notifying := true
	for _, a := range w.arms {
		notifying = notifying && !isSilent(a)
	}
	calls := 0
	for _, a := range w.arms {
		calls += a.calls
	}
	if notifying && calls != w.cancelTrue {
		w.failf("Cancel returned true %d time(s), but %d Cancelled call(s) had come by the take-in after "+
			"the operations (NextDeadline): a cancel was not taken in; the Timeout's state is %s",
			w.cancelTrue, calls, exState(w.to.state.Load()))
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
		if a.periodic && a.calls == 0 && !w.to.IsCancelled() && exArmOf(w.to.Task()) == a {
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
	// Each arm ended once: it ran (a one-shot), got its Cancelled call, or a
	// Stop cancelled it. An arm with none of these was cancelled by a
	// Cancel without a call (its task is no CancelledTask) or as a run
	// returned after its Timer stopped.
	var expired uint64
	calls, stopCancels, silentNoEnd, aside := 0, 0, 0, 0
	for _, a := range w.arms {
		if a.periodic && a.calls == 0 && a.stopCancels == 0 && slices.Contains(a.timer.life.unprocessed, w.to) {
			// Stop tells the observer of a periodic timeout's task, a
			// periodicTask, nothing: the only periodic arm is the first,
			// and Stop returned the Timeout.
			a.stopCancels = 1
		}
		expired += uint64(a.handedOut)
		calls += a.calls
		stopCancels += a.stopCancels
		// A periodic run cancelled (or stopped) after it was handed out
		// does not start.
		if a.runs != a.handedOut && !(a.periodic && a.runs < a.handedOut) {
			w.failf("arm %s: %d run(s) handed out, %d ran", a.name, a.handedOut, a.runs)
		}
		ran := 0
		if !a.periodic {
			ran = a.handedOut
		}
		switch ends := ran + a.calls + a.stopCancels; {
		case ends > 1:
			w.failf("arm %s ended %d times: %d run(s), %d Cancelled call(s), cancelled %d time(s) by Stop",
				a.name, ends, ran, a.calls, a.stopCancels)
		case ends == 0 && isSilent(a):
			silentNoEnd++
		case ends == 0 && a.mayEndAside:
			aside++
		case ends == 0:
			w.failf("arm %s never ended: it did not run, got no Cancelled call, and no Stop cancelled it", a.name)
		}
	}
	if stopCancels != stopped {
		w.failf("Stop cancelled %d arm(s), but returned %d (or holds them for the owner's call in progress)",
			stopCancels, stopped)
	}
	if silent := w.cancelTrue - calls; silent < 0 || silent > silentNoEnd {
		w.failf("Cancel returned true %d time(s), but %d Cancelled call(s) came in all", w.cancelTrue, calls)
	} else {
		aside += silentNoEnd - silent
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
			err, exState(w.to.state.Load()))
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
		w := newExWorld(len(sc.ops))
		sc.setup.run(t, w)
		bodies := make([]func(), len(sc.ops))
		for i, op := range sc.ops {
			bodies[i] = func() { w.results[i] = op.run(w, i) }
		}
		res := runSchedule(names, bodies, choose, opts.maxSteps)
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
