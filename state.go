package hashedwheel

import (
	"fmt"
	"runtime"
)

// A Timeout's life is its state word, and every change to it is a critical
// section under the Timeout's own lock, as the runtime guards a time.Timer
// with its t.mu: take the lock (lock), check the state and the fields it
// guards, write them, and release the lock with the new state (unlock). A
// critical section never blocks and never calls user code: what it decides
// to do with user code (run a task, make a Cancelled call) happens after it,
// with what it read inside. It allocates nothing, but for the worker's first
// placement of a timeout in a level above the wheel, which makes the level
// (1.5 KiB, once per level and Timer). Goroutines that only look
// (IsPending, IsExpired, IsCancelled, Timer, the refusal of Cancel on an arm
// that has ended, and Deadline unless an arm is being made) load the word
// without the lock.
//
// Two kinds of change skip the lock, each for a reason of its own:
// initState writes the first state of a Timeout NewTimeout has made and not
// yet published (nobody else can reach it); and a swap is a section that
// writes only the word, in one compare-and-swap from an unlocked state,
// which fails, changing nothing, if anything changed it since it was loaded
// (Cancel of a Timeout no bucket holds, the take of a cancelled new one that
// owes nothing, the end of a run nobody armed again).
//
// The word holds:
//   - the lock bit, stLocked;
//   - the phase: stUnarmed (the zero Timeout), stPending, stCancelled or
//     stExpired. An arm moves once from pending to cancelled or expired; a
//     periodic arm stays pending until it is cancelled. Schedule arms an
//     ended Timeout again, and counts one more arm in the generation;
//   - where the Timeout is held, one value of the field held (below);
//   - stWantsCancelled: the arm's task is a CancelledTask;
//   - stOwesCancelled: Cancel cancelled such an arm, and its Cancelled call
//     has not been made. Schedule refuses the Timeout meanwhile, as the call
//     needs the arm's task;
//   - stLevel: for a Timeout in the wheel, the level it waits in: 0 for a
//     bucket, k for a slot of level k above the wheel (see checktick.go);
//   - the generation, the bits above: one more with every arm (genOne).
//
// The generation is why a lock-free look at the word can trust the fields
// beside it. Timeout.timer and Timeout.deadline are written only by
// Schedule, under the lock, in the section that adds genOne, so the word
// changes with every arm: a swap from a state s loaded unlocked succeeds
// only if no arm began or ended since s was loaded, so the Timer that
// Cancel's swap read between the load and the swap is the arm's; and a
// word unlocked and the same before and after two loads of the timer and
// the deadline says they are one arm's (see Timeout.timerAndDeadline).
//
// The lock guards, besides the word, the fields Timeout.task,
// Timeout.checkTick, the writes of Timeout.timer and Timeout.deadline (read
// without it by the lookers, as above) and, while a Timeout is held, which
// list or queue it is in. The worker's own structures (buckets, the list of
// periodic runs) are the worker's: it changes them, and a Timeout's bucket
// links, only inside a critical section of the Timeout it moves, so that
// where a Timeout is held and the list it is in change together.
//
// Where a Timeout is held (the field held), and who moves it there:
//
//	heldNowhere           no Timer refers to it: unarmed, or ended and let go.
//	heldNew               in a shard's queue of new timeouts: pushed, inside
//	                      the section, by NewTimeout's publication or Schedule
//	                      (a Timeout heldNowhere), or by the end of a one-shot
//	                      run that was armed again while out (heldRun).
//	heldBucket            in the wheel: in a bucket, or in a slot of a level
//	                      above the buckets (stLevel); placed by the worker.
//	heldBucketAndChanges  in the wheel, and in the changes queue (Timeout.next):
//	                      pushed there, inside the section, by a Cancel of a
//	                      Timeout heldBucket, or by a Reset to a deadline
//	                      before its check tick (or of any deadline during an
//	                      owned Timer's Advance). The worker alone takes it out.
//	heldChanges           in the changes queue, and on no list of the Timer,
//	                      its cancel counted: a stopping worker took it from
//	                      its bucket, or the periodic run that held it
//	                      (heldRun) returned after Stop. Whoever takes it from
//	                      the queue lets go of it, and makes its call.
//	heldRun               out on a run, on no list of the Timer: the run of
//	                      a one-shot arm, wherever it runs (the worker, the
//	                      pool, the executor, an owner's Advance); or a
//	                      periodic run in progress that a stopping worker
//	                      took off the list of runs. Only the run's end
//	                      (endRun, by whoever took the run's token) lets go
//	                      of it, so runs of one Timeout never overlap,
//	                      whoever cancels it.
//	heldPeriodicRun       out on a periodic run, and on the worker's list of
//	                      runs; Reset refuses it.
//	heldReturning         a periodic run has returned: in a queue of new
//	                      timeouts on its way back, and on the list of runs.
//
// The critical sections, one row each. From: the phase and held value that
// the section acts on (others it leaves as they are, or refuses). To: what
// it writes. Every row but those marked (no lock) runs under the Timeout's
// lock; the functions are named beside it.
//
//	by                        from                          to                                       function
//	NewTimeout (no lock)      unarmed, unpublished          pending, new; pushed                     Timer.scheduleTimeout
//	Schedule(At)              ended, nowhere                pending, new; pushed                     Timer.arm
//	Schedule(At)              expired, run (on this Timer)  pending, run (its end pushes it)         Timer.arm
//	Schedule(At) (revive)     cancelled, new, bucket+chg,   pending, where it is; the cancel is
//	                          run or returning, this Timer  counted aside                            Timer.arm
//	Cancel                    pending, bucket               cancelled, bucket+changes; pushed        Timeout.Cancel
//	Cancel (no lock: swap)    pending, elsewhere            cancelled, where it is                   Timeout.Cancel
//	Reset                     pending, not periodic run     new deadline; bucket -> bucket+changes
//	                                                        and pushed if before its check tick, or
//	                                                        during an owned Timer's Advance          Timeout.Reset
//	worker, queue take        cancelled, new, no call owed  nowhere, counted                         Timeout.dropCancelled
//	  (no lock: swap)
//	worker, new timeout       pending, new or returning     bucket (placed)                          Timer.takeNew
//	worker, new timeout       cancelled, new or returning   nowhere; call taken                      Timer.takeNew
//	worker, changes queue     pending, bucket+changes       bucket (placed again)                    Timer.takeChange
//	worker, changes queue     cancelled, bucket+changes     nowhere, unlinked; call taken            Timer.takeChange
//	worker, changes queue     cancelled, changes            nowhere; call taken (counted before)     Timer.takeChange
//	worker, cascade           any, bucket (a level's slot)  placed a level lower, or in a bucket     Timer.cascade
//	worker, bucket walk       pending, bucket, not due      bucket (placed again)                    Timer.expireTimeouts
//	worker, bucket walk       pending, bucket, due          one-shot: expired, run; periodic:
//	                                                        pending, periodic run, on the list       Timer.expireTimeouts,
//	                                                                                                 ends in expireDue
//	run's goroutine, start    pending, periodic run         as it is; starts the task or skips it    Timer.startPeriodic
//	  (pool, executor)
//	run's end (the token's    expired, run                  nowhere (no lock: swap, or the lock)     Timer.endRun
//	  taker: the run, an      pending or cancelled, run     new; pushed (armed again while out)      Timer.endRun
//	  executor's recovery,    periodic run                  returning, next deadline; pushed         Timer.endRun
//	  Stop for a run not      cancelled, run (periodic)     changes; pushed to the changes queue     Timer.endRun
//	  started)                any, run, queues closed       cancelled, nowhere; counted aside (by    Timer.endRun
//	                          (after Stop)                  Stop before, for a periodic one); call
//	                                                        if owed, or if it was pending and wants it
//	worker, stopping          pending, new, bucket,         cancelled (Stop's), let go; returned     Timer.cancelForStop
//	                          bucket+chg or returning
//	worker, stopping          cancelled, new, bucket or     nowhere; call taken                      Timer.cancelForStop
//	                          returning
//	worker, stopping          cancelled, bucket+changes     changes (counted; call taken there)      Timer.cancelForStop
//	worker, stopping          any, periodic run, token      as it is; its run ends (endRun above)    Timer.cancelRunForStop
//	                          taken (the run not started)
//	worker, stopping          any, periodic run (in         cancelled (Stop's, returned, if it was
//	                          progress)                     pending), run, off the list; counted     Timer.cancelRunForStop
//	worker, stopping          cancelled, call owed, let go  the call no longer owed; then the call   Timer.makeCalls
//	                          with it (endCancelled)
//	Task, String, Deadline    any                           as it is: they read the arm              Timeout.Task, Timeout.String,
//	                                                                                                 Timeout.timerAndDeadline
//
// "ended" is cancelled or expired, with no Cancelled call owed. "Let go"
// is heldNowhere, or heldChanges for a Timeout that is still in the
// changes queue: whoever takes it from there lets go of it. "Call taken":
// if stOwesCancelled is set, the section clears it and reads the task, and
// the Cancelled call is made after the section. The worker is the worker
// goroutine, or the holder of an owned Timer's own.advancing; "stopping" is
// that goroutine cancelling what is pending for Stop (see Timer.shutdown).
// The function named is the one that takes the lock (or swaps); a name after
// it ends the section. TestStateTableNamesEverySection holds the table to
// the code: every function that takes a Timeout's lock, swaps or sets its
// first state is named here, and every name is a function.
// A Cancelled call owed for a Timeout that leaves the Timer otherwise (a run
// that returns after its Timer closed its queues) is made by the goroutine
// that lets go of it.
//
// Rules that follow from the table, checked at every unlock and swap under
// the tag hashedwheel_assert (see assertState): a pending Timeout is held
// somewhere; a cancelled Timeout in a bucket is in the changes queue too
// (heldBucketAndChanges), so the worker takes the cancel in at its next
// take-in; an expired one is held by its run or nowhere; a Cancelled call is
// owed only by a cancelled arm that wants it. And wherever the worker finds
// a Timeout (a queue, a bucket, the list of runs, a run that returns), its
// state says it is held there (see assertFoundIn).

// state is a Timeout's state word.
type state uint32

const (
	stUnarmed   state = 0
	stPending   state = 1
	stCancelled state = 2
	stExpired   state = 3
	phaseMask   state = 3

	heldShift                  = 2
	heldNowhere          state = 0 << heldShift
	heldNew              state = 1 << heldShift
	heldBucket           state = 2 << heldShift
	heldBucketAndChanges state = 3 << heldShift
	heldChanges          state = 4 << heldShift
	heldRun              state = 5 << heldShift
	heldPeriodicRun      state = 6 << heldShift
	heldReturning        state = 7 << heldShift
	heldMask             state = 7 << heldShift

	stLocked         state = 1 << 5
	stWantsCancelled state = 1 << 6
	stOwesCancelled  state = 1 << 7

	// stLevel is the level a timeout held in the wheel waits in: 0 for the
	// wheel's buckets, k for level k above it (see checktick.go).
	levelShiftInState       = 8
	stLevel           state = 0xf << levelShiftInState

	// genOne is one arm in the generation, the bits above the flags.
	genOne state = 1 << 12
)

// phase returns the phase of s.
func (s state) phase() state { return s & phaseMask }

// held returns where s says the Timeout is held.
func (s state) held() state { return s & heldMask }

// withPhase returns s with phase p.
func (s state) withPhase(p state) state { return s&^phaseMask | p }

// withHeld returns s held at h.
func (s state) withHeld(h state) state { return s&^heldMask | h }

// level returns the level of the wheel s is held in (see stLevel).
func (s state) level() int { return int(s&stLevel) >> levelShiftInState }

// withLevel returns s held in level k of the wheel.
func (s state) withLevel(k int) state { return s&^stLevel | state(k)<<levelShiftInState }

// load reads the state without the lock, for a caller that just looks.
func (to *Timeout) load() state {
	return state(to.state.Load())
}

// lock takes the Timeout's lock and returns the state, without stLocked.
// Critical sections are short and never block: a caller that finds the lock
// held tries again at once, as its holder, running on another CPU, is out
// within tens of nanoseconds (the longest, the worker's hand-out of a run,
// reads the clock at most once), and yields its CPU only after lockSpins
// tries, in case the holder was preempted (or shares its CPU).
func (to *Timeout) lock() state {
	for spins := 0; ; spins++ {
		s := state(to.state.Load())
		if s&stLocked == 0 {
			if to.state.CompareAndSwap(uint32(s), uint32(s|stLocked)) {
				return s
			}
			continue
		}
		explorePoint("lock-wait")
		if spins >= lockSpins {
			runtime.Gosched()
		}
	}
}

// lockSpins is how many times lock tries a held lock again before it
// yields its CPU between tries.
const lockSpins = 100

// initState sets the state of a Timeout that nobody else can reach yet:
// one NewTimeout has made and not published, or whose publication failed.
func (to *Timeout) initState(s state) {
	to.state.Store(uint32(s))
}

// unlock ends a critical section: it writes the new state s and releases
// the lock in one store.
func (to *Timeout) unlock(s state) {
	if assertInvariants {
		assertState(to, s)
	}
	to.state.Store(uint32(s &^ stLocked))
}

// swap is a critical section that writes only the state word, in one step:
// from s, unlocked, to ns. It reports false, changing nothing, if the state
// is no longer s (or is locked); the caller then takes the lock.
func (to *Timeout) swap(s, ns state) bool {
	if assertInvariants {
		assertState(to, ns)
	}
	return s&stLocked == 0 && to.state.CompareAndSwap(uint32(s), uint32(ns))
}

// assertState panics if s breaks a rule of the table above.
func assertState(to *Timeout, s state) {
	var broken string
	switch phase, held := s.phase(), s.held(); {
	case phase == stUnarmed && held != heldNowhere:
		broken = "an unarmed Timeout is held"
	case phase == stCancelled && held == heldBucket:
		broken = "a cancelled Timeout in a bucket is not queued for take-in"
	case phase == stExpired && held != heldNowhere && held != heldRun:
		broken = "an expired Timeout is held by another than its run"
	case phase == stPending && held == heldChanges:
		broken = "a pending Timeout is in the changes queue out of its bucket"
	case phase == stPending && held == heldNowhere:
		broken = "a pending Timeout is held nowhere: no Timer would run or cancel it"
	case s&stOwesCancelled != 0 && (phase != stCancelled || s&stWantsCancelled == 0):
		broken = "a Cancelled call is owed by an arm that is not cancelled or does not want it"
	}
	if broken != "" {
		panic(fmt.Sprintf("hashedwheel: invariant broken: %s (state %#x)", broken, uint32(s)))
	}
}
