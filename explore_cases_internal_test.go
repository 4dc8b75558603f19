//go:build hashedwheel_explore

package hashedwheel

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Why scenarios fail on the old core (commit 1f0fbed and before), the core
// before the rewrite that takes a lock per Timeout. The tests that fail there
// say so in their failure (oldCore); they are not skipped: on the rewritten
// core they must pass, and CI runs them.
const (
	exLostCancel = "the lost Cancel: processChange reads the phase, then clears stQueued (takeChange); " +
		"a Cancel in between sees stQueued set and pushes nothing, and the owner places the cancelled " +
		"timeout again: its Cancelled call and its count wait for Stop"
	exStopTwice = "an owned Timer's Stop cancels the arm it takes from a queue of new timeouts and lets go " +
		"of it; a Schedule that passed its stopped check then arms the Timeout afresh and pushes it " +
		"before the queues are closed, and closeQueues cancels it, and appends it, a second time"
)

// TestExploreLostCancel: a timeout linked in a bucket and Reset to an
// earlier deadline is in the changes queue (stQueued). The owner's take-in
// (processChange) reads its phase, then clears stQueued; a Cancel between
// the two sees stQueued set and pushes nothing, and the take-in places the
// cancelled timeout again: its Cancelled call never comes (until Stop), and
// Stats().Cancelled misses it.
func TestExploreLostCancel(t *testing.T) {
	explore(t, exScenario{
		setup:   setupQueued,
		ops:     []exOp{opTakeIn, opCancel},
		opts:    exploreOpts{bound: 2, random: 500},
		oldCore: exLostCancel,
	})
}

// exSetups are the set-up states the matrix explores.
var exSetups = []exSetup{setupNew, setupLinked, setupQueued, setupOut, setupCancelledLinked, setupCancelledNew, setupEnded}

// exPairs are the operations the matrix runs two at a time.
var exPairOps = []exOp{opCancel, opResetEarlier, opResetLater, opScheduleSame, opScheduleOther,
	opTakeIn, opExpire, opStop, opRunReturns}

// exMatrixOldCore lists the subtests of TestExploreMatrix known to fail on
// the old core, and why.
var exMatrixOldCore = map[string]string{
	"new/scheduleSame+stop":    exStopTwice,
	"linked/scheduleSame+stop": exStopTwice,
	"queued/scheduleSame+stop": exStopTwice,
	"queued/cancel+takeIn":     exLostCancel,
	"queued/cancel+expire":     exLostCancel,
}

// TestExploreMatrix runs every pair of operations (and a Cancel or a
// Schedule against another of its kind) on every set-up state, every
// schedule with at most two preemptions and a hundred random ones.
func TestExploreMatrix(t *testing.T) {
	for _, setup := range exSetups {
		t.Run(setup.name, func(t *testing.T) {
			for i, a := range exPairOps {
				for _, b := range exPairOps[i:] {
					if a.key == b.key {
						switch a.key {
						case "cancel":
						case "scheduleSame":
							b = opScheduleSame2
						default:
							continue
						}
					}
					if (a.key == "runReturns" || b.key == "runReturns") && setup.name != "out" {
						continue // no run is out
					}
					t.Run(a.key+"+"+b.key, func(t *testing.T) {
						explore(t, exScenario{setup: setup, ops: []exOp{a, b},
							opts:    exploreOpts{bound: 2, random: 200},
							oldCore: exMatrixOldCore[setup.name+"/"+a.key+"+"+b.key]})
					})
				}
			}
		})
	}
}

// exTriples are the three-operation scenarios TestExploreTriples runs.
var exTriples = []struct {
	setup exSetup
	ops   []exOp
}{
	{setupQueued, []exOp{opTakeIn, opCancel, opScheduleSame}},
	{setupQueued, []exOp{opTakeIn, opCancel, opResetLater}},
	{setupLinked, []exOp{opCancel, opScheduleSame, opTakeIn}},
	{setupLinked, []exOp{opCancel, opScheduleOther, opExpire}},
	{setupLinked, []exOp{opCancel, opStop, opScheduleSame}},
	{setupNew, []exOp{opCancel, opResetEarlier, opExpire}},
	{setupNew, []exOp{opCancel, opScheduleSame, opTakeIn}},
	{setupOut, []exOp{opRunReturns, opScheduleSame, opCancel}},
	{setupOut, []exOp{opRunReturns, opScheduleSame, opStop}},
	{setupOut, []exOp{opRunReturns, opScheduleSame, opTakeIn}},
	{setupCancelledLinked, []exOp{opScheduleSame, opScheduleOther, opTakeIn}},
	{setupCancelledLinked, []exOp{opScheduleSame, opCancel, opExpire}},
	{setupCancelledNew, []exOp{opScheduleSame, opScheduleSame2, opTakeIn}},
	{setupEnded, []exOp{opScheduleSame, opScheduleOther, opCancel}},
	{setupPeriodicOutNotify, []exOp{opRunReturns, opCancel, opTakeIn}},
	{setupPeriodicOutNotify, []exOp{opRunReturns, opResetLater, opTakeIn}},
	{setupPeriodicOutNotify, []exOp{opRunReturns, opCancel, opStop}},
	{setupPeriodicOutNotify, []exOp{opRunReturns, opCancel, opScheduleSame}},
	{setupPeriodicOut, []exOp{opRunReturns, opExpire, opCancel}},
}

// exTriplesOldCore lists the subtests of TestExploreTriples known to fail on
// the old core, and why.
var exTriplesOldCore = map[string]string{
	"queued/takeIn+cancel+scheduleSame": exLostCancel,
	"queued/takeIn+cancel+resetLater":   exLostCancel,
	"linked/cancel+stop+scheduleSame":   exStopTwice,
}

// TestExploreTriples runs three operations at once on a few set-up states:
// every schedule with at most one preemption (two for those known to fail on
// the old core), and random ones.
func TestExploreTriples(t *testing.T) {
	for _, tr := range exTriples {
		name := tr.setup.name + "/"
		for i, op := range tr.ops {
			if i > 0 {
				name += "+"
			}
			name += op.key
		}
		// Three goroutines take twice the steps of two, and the schedules
		// within two preemptions grow with their square: one preemption,
		// and more random schedules, but for the triples known to fail on
		// the old core, which keep two.
		opts := exploreOpts{bound: 1, random: 1000}
		if exTriplesOldCore[name] != "" {
			opts = exploreOpts{bound: 2, random: 500}
		}
		t.Run(name, func(t *testing.T) {
			explore(t, exScenario{setup: tr.setup, ops: tr.ops, opts: opts,
				oldCore: exTriplesOldCore[name]})
		})
	}
}

// TestExploreCancelledCallSchedulesOnAnotherTimer: from inside its Cancelled
// call a Timeout may be scheduled on any Timer (guarantee 21). Here the
// Timeout is linked in a bucket of tm and cancelled, and its Cancelled call
// schedules it on tm2, racing tm's Stop, which may make that call itself.
func TestExploreCancelledCallSchedulesOnAnotherTimer(t *testing.T) {
	setup := exSetup{"linked-rearms", "pending, linked in a bucket; its Cancelled call schedules it on tm2",
		func(tb testing.TB, w *exWorld) {
			setupLinked.run(tb, w)
			w.arms[0].onCancelled = func(*Timeout) {
				if err := w.schedule("c1", w.tm2, 2, true); errIsPending(err) {
					w.failf("Schedule on tm2 from inside the Cancelled call failed: %v (state %s)",
						err, exState(w.to.state.v.Load()))
				}
			}
		}}
	explore(t, exScenario{
		setup: setup,
		ops:   []exOp{opCancel, opStop},
		opts:  exploreOpts{bound: 3, random: 1000},
		oldCore: "Stop lets go of a cancelled Timeout it unlinks from a bucket (letGo(stLinked)) while " +
			"stQueued is still set, and makes its Cancelled call then: a Schedule on another Timer " +
			"from inside it finds the Timeout held",
	})
}

// opScheduleSilent is a Schedule on tm with a task that is no CancelledTask.
var opScheduleSilent = exScheduleOp("scheduleSilent", "Schedule on tm (no CancelledTask)", "s1", false, false)

// newPeriodic makes the world's Timeout a periodic one on tm, arm p0, every
// tick; its task is a CancelledTask if notifies.
func (w *exWorld) newPeriodic(tb testing.TB, notifies bool) {
	a := w.newArm("p0", w.tm, notifies)
	a.periodic = true
	to, err := w.tm.NewPeriodicTimeout(a.task, exTick)
	if err != nil {
		tb.Fatal(err)
	}
	w.to = to
	if exec := to.task.(*periodicTask).exec; exec != nil {
		a.periodicRun = exFuncPtr(exec)
	}
	w.keep(a)
}

// exSetupPeriodicOut: a periodic Timeout whose first run is out; its task
// is a CancelledTask if notifies.
func exSetupPeriodicOut(name string, notifies bool) exSetup {
	desc := "periodic, its first run handed out and not returned"
	if !notifies {
		desc = "periodic (no CancelledTask), its first run handed out and not returned"
	}
	return exSetup{name, desc, func(tb testing.TB, w *exWorld) {
		w.newPeriodic(tb, notifies)
		if n, err := w.advance(w.tm, 2); n != 1 || err != nil {
			tb.Fatalf("set-up %s: Advance = %d, %v", name, n, err)
		}
		exMust(tb, w, stPending, heldPeriodicRun, 0, name)
	}}
}

var (
	setupPeriodicOut       = exSetupPeriodicOut("periodic-out", false)
	setupPeriodicOutNotify = exSetupPeriodicOut("periodic-out-notify", true)
)

// TestExplorePeriodicScheduledAgainAfterCancel: a periodic Timeout whose run
// has returned and that Cancel then cancelled may be scheduled again on its
// own Timer at once (guarantee 21 allows ErrTimeoutPending only while a
// Cancelled call is owed, a run on another Timer has not returned, or a
// periodic Timeout was cancelled during a run that has not returned).
func TestExplorePeriodicScheduledAgainAfterCancel(t *testing.T) {
	explore(t, exScenario{
		setup: setupPeriodicOut,
		ops:   []exOp{opRunReturns, opCancel, opScheduleSilent},
		check: func(w *exWorld, res *exResult) []string {
			run, cancel, sched := res.threads[0], res.threads[1], res.threads[2]
			err := w.schedErrs[2]
			if errIsPending(err) && w.results[1] == "true" && run.last < cancel.first && cancel.last < sched.first {
				return []string{"the run returned, then Cancel cancelled the periodic Timeout, then " +
					"Schedule on its own Timer failed: " + err.Error()}
			}
			return nil
		},
		opts: exploreOpts{bound: 2, random: 1000},
		oldCore: "a periodic Timeout cancelled after its run returned, before the owner took it back " +
			"(stReturning), is not revived by Schedule on its own Timer (beginArm's revive excludes stReturning)",
	})
}

// TestExploreStopReturnsEachTimeoutOnce: two Schedule calls of one ended
// Timeout race its owned Timer's Stop. Stop returns the pending timeouts
// it cancelled, each once.
func TestExploreStopReturnsEachTimeoutOnce(t *testing.T) {
	explore(t, exScenario{
		setup:   setupEnded,
		ops:     []exOp{opScheduleSame, opScheduleSame2, opStop},
		opts:    exploreOpts{bound: 2, random: 1000},
		oldCore: exStopTwice,
	})
}

// The hand-offs: where the wheel hands a Timeout to someone else (a run
// out on the pool or an executor, the owner's loop, Stop's clean-up) and
// takes it back. Each scenario below names what it found on 8a73234, the
// core before the rule that a Timeout stays held by its run until the run
// returns, whoever cancelled it (handOffs).
const (
	exStopLetGoOfARunOut = "Stop took a periodic Timeout whose run was out off the list of runs and let go of it " +
		"(held nowhere) while the run was still out: Schedule on another Timer armed it, and a run there could " +
		"start beside the first"
	exStopCalledWhileOut = "Stop made the Cancelled call of a periodic Timeout that Cancel cancelled during its run " +
		"while that run was still out, having let go of it: from inside the call it was armed on another Timer"
	exPushAfterCollect = "a push that came after Stop's collection stayed in its queue while the stopping worker " +
		"waited for the pool, and nothing took it until the pool was done: a pooled task that waits on what it " +
		"scheduled never returns, and Stop never does"
	exGoexitInCleanUp = "a Cancelled call that called runtime.Goexit during an owned Timer's clean-up ended it: " +
		"collected was set before the clean-up, so nothing cancelled the rest"
)

// opPool plays the pool's one goroutine (the pool world): it runs the runs
// queued, one by one, until Stop closes the pool and it is empty, then exits
// as a pool goroutine does. Every scenario of the pool world has a Stop.
var opPool = exOp{key: "pool", name: "the pool's goroutine", run: func(w *exWorld, _ int) string {
	p := w.tm.conf.pool
	ran := 0
	for {
		explorePoint("retry load") // then reads the pool's queue and closed
		if w.poolRun() {
			ran++
			continue
		}
		p.mu.Lock()
		closed := p.closed && p.n == 0
		if closed {
			p.live--
		}
		p.mu.Unlock()
		if closed {
			// A point of its own: the step from it closes done, which
			// Stop waits for (a step from "spin" would only read).
			explorePoint("pool exit")
			close(p.done)
			return fmt.Sprintf("ran %d, exited", ran)
		}
		explorePoint("spin") // waits for a run or for Stop
	}
}}

// opStopGoexits is a Stop whose clean-up makes a Cancelled call that calls
// runtime.Goexit (see exGoexitOnCancelled): the operation ends there, and
// the clean-up must end all the same.
var opStopGoexits = exOp{key: "stopGoexits", name: "Stop (a Cancelled call in it calls runtime.Goexit)",
	run: opStop.run, goexits: true}

// opOwnerLoop is the owner's loop of Advance's example, three times round:
// it sleeps until NextDeadline and Advances to it. While the Timeout is
// pending, NextDeadline must say so, and never be later than the first time
// at which Advance would run something: the end of the tick of its
// deadline. (It runs in the inline world, whose owner runs its own tasks:
// no run is ever out.)
var opOwnerLoop = exOp{key: "ownerLoop", name: "the owner's loop (NextDeadline, Advance) x3",
	run: func(w *exWorld, _ int) string {
		var got []string
		for range 3 {
			// What the Timeout claims, looked at before NextDeadline and
			// after it: another operation (a run returning, a Cancel, a
			// Reset, a Schedule) may change it while NextDeadline runs,
			// which then owes what either look claims, not both. A
			// Timeout locked, mid-section, claims nothing.
			latestBefore, whyBefore := w.ownerClaim()
			at, ok := w.tm.NextDeadline()
			latestAfter, whyAfter := w.ownerClaim()
			if !ok {
				if whyBefore != "" && whyAfter != "" {
					w.failf("NextDeadline returned false, but %s", whyBefore)
				}
				got = append(got, "false")
				break
			}
			d := int64(at.Sub(w.tm.life.startTime))
			got = append(got, time.Duration(d).String())
			if latest := max(latestBefore, latestAfter); d > latest {
				w.failf("NextDeadline returned %v since the start, later than %v, when Advance would run "+
					"something: %s", time.Duration(d), time.Duration(latest), whyBefore)
				break
			}
			// Woken by another goroutine (one that schedules wakes the
			// owner) or by its sleep's end, ten ticks at most.
			w.advance(w.tm, int(min(d, w.now[w.tm]+10*int64(exTick))/int64(exTick)))
		}
		return strings.Join(got, ", ")
	}}

// ownerClaim returns the latest time NextDeadline may return, since tm's
// start, for what the Timeout is now (see opOwnerLoop), and why; or
// math.MaxInt64 and "" if it claims nothing. Read without points.
func (w *exWorld) ownerClaim() (int64, string) {
	s := state(w.to.state.v.Load())
	tick := int64(exTick)
	deadline := w.to.deadline.v.Load()
	switch pending := s.phase() == stPending; {
	case s&stLocked != 0:
	case pending && w.to.timer.v.Load() == w.tm && deadline < math.MaxInt64-tick:
		due := max(deadline, w.now[w.tm]) / tick
		return (due + 1) * tick, "the Timeout is pending"
	}
	return math.MaxInt64, ""
}

// exGoexitOnCancelled makes the Cancelled call of the set-up's first arm
// call runtime.Goexit, and schedules a bystander, a Timeout of its own due
// far ahead, on tm: after the Goexit the clean-up must still cancel it.
func exGoexitOnCancelled(setup exSetup) exSetup {
	return exSetup{setup.name + "-goexit", setup.desc + "; its Cancelled call calls runtime.Goexit; a bystander pending on tm",
		func(tb testing.TB, w *exWorld) {
			setup.run(tb, w)
			w.arms[0].onCancelled = func(*Timeout) { runtime.Goexit() }
			y := w.newArm("bystander", w.tm, false)
			if _, err := w.tm.NewTimeout(y.task, 10*exTick); err != nil {
				tb.Fatal(err)
			}
			w.keep(y)
		}}
}

// exSetupPeriodicPooled: in the pool world, a periodic Timeout whose first
// run is queued on the pool, not started: the set-up of exSetupPeriodicOut,
// whose run the pool world hands to the pool.
func exSetupPeriodicPooled(name string, notifies bool) exSetup {
	setup := exSetupPeriodicOut(name, notifies)
	setup.desc = "periodic, its first run handed to the pool and not started"
	return setup
}

var (
	setupPeriodicPooled       = exSetupPeriodicPooled("periodic-pooled", false)
	setupPeriodicPooledNotify = exSetupPeriodicPooled("periodic-pooled-notify", true)

	// setupPooled: in the pool world, a one-shot run handed to the pool
	// and not started: setupOut's set-up.
	setupPooled = exSetup{"pooled", "expired, its run handed to the pool and not started", setupOut.run}

	// setupPooledSchedules: setupPooled, whose task schedules a Timeout
	// of its own on tm (its check of the Timer's state may come before
	// Stop, its push after Stop's collection) and then waits until that
	// Timeout has ended, as a task that waits on a deadline context it
	// made does.
	setupPooledSchedules = exSetup{"pooled-schedules",
		"expired, its run on the pool, whose task schedules a Timeout and waits for it to end",
		func(tb testing.TB, w *exWorld) {
			setupPooled.run(tb, w)
			w.arms[0].onRun = func(*Timeout) {
				x := w.newArm("x", w.tm, false)
				to, err := w.tm.NewTimeout(x.task, 10*exTick)
				if err != nil {
					return // after Stop: ErrTimerStopped
				}
				w.keep(x)
				// One load a look: a spin waits for a write after it.
				for to.IsPending() {
					explorePoint("spin")
				}
			}
		}}
)

// TestExploreStopWithAPeriodicRunOut: Stop racing a periodic run out on
// an executor, or queued on the pool, and a Schedule of the Timeout on
// another Timer, which must fail until the run returns.
func TestExploreStopWithAPeriodicRunOut(t *testing.T) {
	t.Run("executor", func(t *testing.T) {
		explore(t, exScenario{setup: setupPeriodicOut, ops: []exOp{opStop, opScheduleOther, opRunReturns},
			opts: exploreOpts{bound: 2, maxRuns: 5000, random: 500}, handOffs: exStopLetGoOfARunOut})
	})
	t.Run("pool", func(t *testing.T) {
		explore(t, exScenario{setup: setupPeriodicPooled, ops: []exOp{opStop, opScheduleOther, opPool},
			opts: exploreOpts{bound: 2, maxRuns: 4000, random: 300}, handOffs: exStopLetGoOfARunOut, pool: true})
	})
}

// TestExploreCancelledCallOfARunOutSchedulesOnAnotherTimer: a periodic
// Timeout cancelled by Cancel while its run is out, racing Stop and the
// run's return; its Cancelled call schedules it on tm2 (guarantee 21 allows
// it from inside the call). The call comes once the run has returned.
func TestExploreCancelledCallOfARunOutSchedulesOnAnotherTimer(t *testing.T) {
	rearm := func(setup exSetup) exSetup {
		return exSetup{setup.name + "-rearms", setup.desc + "; its Cancelled call schedules it on tm2",
			func(tb testing.TB, w *exWorld) {
				setup.run(tb, w)
				w.arms[0].onCancelled = func(*Timeout) {
					if err := w.schedule("c1", w.tm2, 2, true); errIsPending(err) {
						w.failf("Schedule on tm2 from inside the Cancelled call failed: %v (state %s)",
							err, exState(w.to.state.v.Load()))
					}
				}
			}}
	}
	t.Run("executor", func(t *testing.T) {
		explore(t, exScenario{setup: rearm(setupPeriodicOutNotify), ops: []exOp{opCancel, opStop, opRunReturns},
			opts: exploreOpts{bound: 2, maxRuns: 5000, random: 500}, handOffs: exStopCalledWhileOut})
	})
	t.Run("pool", func(t *testing.T) {
		explore(t, exScenario{setup: rearm(setupPeriodicPooledNotify), ops: []exOp{opCancel, opStop, opPool},
			opts: exploreOpts{bound: 2, maxRuns: 4000, random: 300}, handOffs: exStopCalledWhileOut, pool: true})
	})
}

// TestExplorePushRacingStopsCollection: a task on the pool schedules a
// Timeout as Stop comes, and waits for it to end. Its check of the Timer's
// state may pass before Stop and its push come after Stop's collection:
// the stopping worker, waiting for the pool, takes and cancels it then.
func TestExplorePushRacingStopsCollection(t *testing.T) {
	explore(t, exScenario{setup: setupPooledSchedules, ops: []exOp{opStop, opPool},
		opts: exploreOpts{bound: 3, maxRuns: 5000, random: 500}, handOffs: exPushAfterCollect, pool: true})
}

// TestExplorePoolRunReturnsArmedAgainAsStopComes: a one-shot run on the
// pool, armed again (and maybe cancelled) while it is out, returns while
// Stop waits for the pool: Stop takes the new arm as it comes, and cancels
// and returns it, or makes its Cancelled call.
func TestExplorePoolRunReturnsArmedAgainAsStopComes(t *testing.T) {
	for _, ops := range [][]exOp{
		{opScheduleSame, opStop, opPool},
		{opScheduleSame, opCancel, opStop, opPool},
	} {
		name := ""
		for _, op := range ops {
			name += op.key + "+"
		}
		t.Run(strings.TrimSuffix(name, "+"), func(t *testing.T) {
			explore(t, exScenario{setup: setupPooled, ops: ops, opts: exploreOpts{bound: 2, maxRuns: 4000, random: 300}, pool: true})
		})
	}
}

// TestExploreGoexitInACancelledCallDuringStop: the Cancelled call that
// Stop's clean-up makes calls runtime.Goexit, which ends Stop's goroutine:
// the clean-up goes on as the goroutine exits, so every arm ends, the
// bystander is cancelled and returned, and the Timer lets go of all.
func TestExploreGoexitInACancelledCallDuringStop(t *testing.T) {
	t.Run("cancelled-linked", func(t *testing.T) {
		explore(t, exScenario{setup: exGoexitOnCancelled(setupCancelledLinked), ops: []exOp{opStopGoexits, opScheduleOther},
			opts: exploreOpts{bound: 2, random: 300}, handOffs: exGoexitInCleanUp})
	})
	t.Run("periodic-pooled", func(t *testing.T) {
		explore(t, exScenario{setup: exGoexitOnCancelled(setupPeriodicPooledNotify),
			ops:  []exOp{opCancel, opStopGoexits, opPool},
			opts: exploreOpts{bound: 2, maxRuns: 4000, random: 300}, handOffs: exGoexitInCleanUp, pool: true})
	})
}

// setupEndedInline: in the inline world, setupEnded: the run ran on the
// owner's goroutine, inside the set-up's Advance, and returned.
var setupEndedInline = exSetup{"ended", "ran on the owner's goroutine, and returned: no Timer holds it",
	func(tb testing.TB, w *exWorld) {
		if err := w.schedule("a0", w.tm, 0, true); err != nil {
			tb.Fatal(err)
		}
		if n, err := w.advance(w.tm, 1); n != 1 || err != nil {
			tb.Fatalf("set-up ended: Advance = %d, %v", n, err)
		}
		exMust(tb, w, stExpired, heldNowhere, 0, "ended")
	}}

// TestExploreOwnerTakeInRacingScheduleAndCancel: on Timers made
// WithoutWorker with no executor (the inline world: a task runs on the
// goroutine that calls Advance), a Cancel, a Schedule or a Reset races the
// owner's take-in (NextDeadline), its Advance, or its loop of both, from
// every set-up state that needs no run out. Every step of the owner's
// take-in is a point now: the advancing token, the queues' producerTop and
// pending counts, the published counters, beside the Timeout's state word.
func TestExploreOwnerTakeInRacingScheduleAndCancel(t *testing.T) {
	setups := []exSetup{setupNew, setupLinked, setupQueued, setupCancelledLinked, setupCancelledNew, setupEndedInline}
	for _, setup := range setups {
		t.Run(setup.name, func(t *testing.T) {
			for _, a := range []exOp{opCancel, opScheduleSame, opResetEarlier} {
				for _, b := range []exOp{opTakeIn, opExpire, opOwnerLoop} {
					t.Run(a.key+"+"+b.key, func(t *testing.T) {
						explore(t, exScenario{setup: setup, ops: []exOp{a, b}, inline: true,
							opts: exploreOpts{bound: 2, maxRuns: 3000, random: 100}})
					})
				}
			}
		})
	}
	t.Run("linked/cancel+scheduleSame+expire", func(t *testing.T) {
		explore(t, exScenario{setup: setupLinked, ops: []exOp{opCancel, opScheduleSame, opExpire}, inline: true,
			opts: exploreOpts{bound: 1, random: 300}})
	})
	t.Run("ended/scheduleSame+cancel+takeIn", func(t *testing.T) {
		explore(t, exScenario{setup: setupEndedInline, ops: []exOp{opScheduleSame, opCancel, opTakeIn}, inline: true,
			opts: exploreOpts{bound: 1, random: 300}})
	})
}

// TestExploreStopAsAPooledPeriodicRunReturns: Stop racing the pool's
// goroutine as it runs a periodic Timeout's run queued there and the run
// returns (hands the Timeout back), with nothing else going on: Stop
// returns the Timeout, or the run's return ends it aside, once.
func TestExploreStopAsAPooledPeriodicRunReturns(t *testing.T) {
	for _, setup := range []exSetup{setupPeriodicPooled, setupPeriodicPooledNotify} {
		t.Run(setup.name, func(t *testing.T) {
			explore(t, exScenario{setup: setup, ops: []exOp{opStop, opPool},
				opts: exploreOpts{bound: 2, maxRuns: 4000, random: 300}, pool: true})
		})
	}
}

// TestExploreGoexitInACancelledCallDuringStopOwnedAlone: as
// TestExploreGoexitInACancelledCallDuringStop, on Timers with no executor
// (the inline world), and with the cancelled Timeout in a queue of new
// timeouts as well as in a bucket.
func TestExploreGoexitInACancelledCallDuringStopOwnedAlone(t *testing.T) {
	for _, setup := range []exSetup{setupCancelledLinked, setupCancelledNew} {
		t.Run(setup.name, func(t *testing.T) {
			explore(t, exScenario{setup: exGoexitOnCancelled(setup), ops: []exOp{opStopGoexits, opScheduleOther},
				inline: true, opts: exploreOpts{bound: 2, maxRuns: 4000, random: 300}})
		})
	}
}

// exSetupDropped: the Timeout due at once on tm, a one-shot arm or, if
// periodic, a periodic Timeout, whose executor panics at its first hand-out.
func exSetupDropped(periodic bool) exSetup {
	name, desc := "dropped", "due, its executor panics as it is handed out"
	if periodic {
		name, desc = "periodic-dropped", "periodic, due, its executor panics as its first run is handed out"
	}
	return exSetup{name, desc, func(tb testing.TB, w *exWorld) {
		w.execPanics = 1
		if !periodic {
			if err := w.schedule("a0", w.tm, 0, true); err != nil {
				tb.Fatal(err)
			}
			exMust(tb, w, stPending, heldNew, 0, name)
			return
		}
		w.newPeriodic(tb, true)
		exMust(tb, w, stPending, heldNew, 0, name)
	}}
}

// TestExploreExecutorPanics: an executor that panics as a run is handed
// out, having kept the func it was given, against a Schedule (on the same
// Timer or another), a Cancel, Stop, and the kept func called late. The
// Timer takes the run as dropped and ends it at once, as if it had
// returned: on 8d45524 a one-shot Timeout stayed held by that run for good.
func TestExploreExecutorPanics(t *testing.T) {
	oneShot, periodic := exSetupDropped(false), exSetupDropped(true)
	for _, c := range []struct {
		setup exSetup
		ops   []exOp
	}{
		{oneShot, []exOp{opExpire, opScheduleOther, opRunReturns}},
		{oneShot, []exOp{opExpire, opScheduleSame, opStop}},
		{periodic, []exOp{opExpire, opCancel, opRunReturns}},
		{periodic, []exOp{opExpire, opCancel, opStop}},
	} {
		keys := make([]string, len(c.ops))
		for i, op := range c.ops {
			keys[i] = op.key
		}
		t.Run(c.setup.name+"/"+strings.Join(keys, "+"), func(t *testing.T) {
			explore(t, exScenario{setup: c.setup, ops: c.ops,
				opts: exploreOpts{bound: 2, maxRuns: 4000, random: 300}})
		})
	}
}
