//go:build hashedwheel_explore

package hashedwheel

import "testing"

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
// every schedule with at most two preemptions, and random ones.
func TestExploreTriples(t *testing.T) {
	for _, tr := range exTriples {
		name := tr.setup.name + "/"
		for i, op := range tr.ops {
			if i > 0 {
				name += "+"
			}
			name += op.key
		}
		t.Run(name, func(t *testing.T) {
			explore(t, exScenario{setup: tr.setup, ops: tr.ops,
				opts:    exploreOpts{bound: 2, random: 500},
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
						err, exState(w.to.state.Load()))
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

// exSetupPeriodicOut: a periodic Timeout whose first run is out; its task
// is a CancelledTask if notifies.
func exSetupPeriodicOut(name string, notifies bool) exSetup {
	desc := "periodic, its first run handed out and not returned"
	if !notifies {
		desc = "periodic (no CancelledTask), its first run handed out and not returned"
	}
	return exSetup{name, desc, func(tb testing.TB, w *exWorld) {
		a := w.newArm("p0", w.tm, notifies)
		a.periodic = true
		to, err := w.tm.NewPeriodicTimeout(a.task, exTick)
		if err != nil {
			tb.Fatal(err)
		}
		w.to = to
		w.keep(a)
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
