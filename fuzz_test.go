package hashedwheel_test

import (
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashedwheel/hashedwheel"
)

// FuzzTimer decodes its input into a sequence of operations on one Timer,
// runs them on the fake clock of a synctest bubble, and checks every result
// against a reference model: every run time, exactly; every return value of
// NewTimeout, NewPeriodicTimeout, Schedule, ScheduleAt, Cancel, Reset and
// Stop;
// IsExpired, IsCancelled, Deadline, Task, Timer and PendingTimeouts after
// every operation; every CancelledTask call; and at the end that every arm
// of every timeout ran exactly once or was cancelled exactly once, and that
// Stats counts each.
//
// Timeouts are reused (guarantees 21 and 22, fuzz_reuse_test.go): Schedule
// and ScheduleAt arm the Timeouts of a few sessions, and those that
// NewTimeout and AfterFunc made, again once they have ended, with tasks that
// may schedule their own Timeout again from inside their run (after a delay,
// or at their last deadline plus one; and Reset or Cancel the new arm, and
// arm it again in place) or from inside their Cancelled call; Cancel and
// Reset act on the latest arm. A second Timer, made WithoutWorker and
// driven by the test goroutine, takes Timeouts over once the first has
// taken in their end and their run has returned.
//
// The model does not share the worker's code. It knows only the contract: a
// timeout with deadline d (nanoseconds since Start) belongs to tick d/tick,
// which is processed when it ends, at (d/tick+1)*tick; ticks are processed in
// order, and while a task blocks the worker none is, so the ticks missed are
// processed back to back once it returns. Within one tick the order is not
// promised, so the model takes the order from the runs it observes and checks
// only that each run is one that is due, at the time it is due. A periodic
// timeout's next run is due a period after the last one was due; when a run
// is handed out or returns, runs due more than a period before that moment
// are skipped, and the next run is in a later tick than the last.
//
// The input's first byte picks the configuration (tick, wheel size, pending
// limit, executor); the rest is read by op. The seeds in
// testdata/fuzz/FuzzTimer start from hand-made sequences: edge delays, a
// blocked worker that catches up or that Stop waits for, Stop from a task,
// the pending limit, panicking tasks and runtime.Goexit, Reset, periodic
// timeouts with a slow run, cancel callbacks; and, named reuse-..., the
// sessions' Timeouts scheduled, revived, re-armed from their own runs and
// Cancelled calls, re-armed while their run blocks the worker, and moved
// between two Timers.
func FuzzTimer(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		synctest.Test(t, func(t *testing.T) {
			runFuzzTimer(t, data, fuzzWorker)
		})
	})
}

// FuzzTimerPool is FuzzTimer with WithTaskWorkers: tasks run on a pool of one
// or two goroutines, so a blocking task holds one of them, not the worker;
// tasks handed out while all are held wait, in the order handed out, and run
// when one is released. A Timeout scheduled again while the run of its
// previous arm is out (blocked, or waiting for a pool goroutine) reaches the
// worker when that run returns, and runs at the first tick that ends after
// both its deadline and that return. Periodic timeouts are left to FuzzTimer: when a run on
// the pool has returned, the worker takes the timeout back at its next
// wake-up, which the contract leaves open.
func FuzzTimerPool(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		synctest.Test(t, func(t *testing.T) {
			runFuzzTimer(t, data, fuzzPool)
		})
	})
}

// FuzzTimerOwned is FuzzTimer for a Timer made WithoutWorker (guarantees
// 18-20): no worker runs; an owner goroutine in the bubble drives the wheel
// with Advance and NextDeadline, as an event loop or an actor would, and
// tasks run inside its Advance calls. The input's second byte picks the
// owner (see fuzzOwner): one that sleeps until NextDeadline, or until the
// test goroutine wakes it after each operation that schedules, resets,
// cancels or stops, and then calls Advance(time.Now()); or one that polls,
// calling Advance at every multiple of an interval of one to 3.3 ticks
// whatever NextDeadline says, as an event loop's tick does, so that one call
// often covers several ticks. A task that calls runtime.Goexit ends the
// owner's goroutine; the owner goes on in a new one, as a real owner would.
//
// The model is FuzzTimer's, with what the contract changes for an owner
// (see fuzzModel.settleOwned): a run happens at the owner's first Advance at
// or after the end of its tick; what a task schedules or re-arms during a
// call runs at a later call, so a periodic run is re-armed for a tick no
// earlier than the one the call ended at; Stop waits for nothing, and while a
// task blocks the owner it returns nil and that Advance cancels what is
// pending as it returns; Cancelled calls come at the owner's next call. It
// also checks that every Advance returns the number of runs that happened
// inside it, that tasks run only inside Advance, that NextDeadline is false
// exactly when nothing is pending and never later than the first run due,
// that overlapping calls fail and change nothing, that a now earlier than
// the last counts as the last, that WithTaskWorkers is refused, and that the
// owner's loop never spins.
//
// The seeds in testdata/fuzz/FuzzTimerOwned start from hand-made sequences:
// a blocked owner that catches up, Stop while a task blocks it and from a
// task, periodic catch-up in calls that cover several ticks, runtime.Goexit,
// chains, Reset, the executor and the polling owner; and reused Timeouts.
func FuzzTimerOwned(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		synctest.Test(t, func(t *testing.T) {
			runFuzzTimer(t, data, fuzzOwned)
		})
	})
}

// FuzzTimerLevels is FuzzTimer, FuzzTimerPool and FuzzTimerOwned (the
// input's first byte picks which: bits 0-1, 0 and 3 the worker, 1 the pool,
// 2 the owner; the rest of the input is theirs) with timeouts that cross the
// levels above the wheel (issue 29): a timeout due beyond a turn of the
// wheel waits in a level, in a slot of 64 times the width of the level
// below (the wheel's span for level 1), and moves down a level at a time
// as its slot's start comes. The model is theirs, and knows nothing of the
// levels: a timeout runs at the end of the tick that holds its deadline,
// however far. What changes is what the bytes decode to: a delay, a period
// or a move of the fake clock whose first byte has bit 7 set is a far one
// (see fuzzModel.farDelay, farPeriod and farAdvanceBy): at and around each
// level's span and slots (the wheel's span times 64^j, plus or minus a tick
// or a nanosecond, k slots of a level), at and around the start of the slot
// that holds a timeout's deadline in a level (so that a Cancel or a Reset
// comes in the tick the timeout moves down, just before or just after),
// an hour, a day, a year, up to saturation. The clock may move by days in
// one operation, also while a task blocks the worker or the owner (which
// then catches up across the slots' starts at once); and the polling owner
// may poll every hour or day, so that one Advance spans many slots' starts.
// Other bytes decode as in FuzzTimer: old and far timeouts mix.
//
// The seeds in testdata/fuzz/FuzzTimerLevels start from hand-made
// sequences on a wheel of 4 or 8 buckets of 1ms, where levels 1-4 are
// minutes to days away: a deadline many levels out, Reset across levels
// both ways and before and after its slot's start, Cancel in, just before
// and just after the tick of its move down, a blocked worker caught up
// across levels, and owners whose Advance jumps days.
func FuzzTimerLevels(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		synctest.Test(t, func(t *testing.T) {
			modes := [4]fuzzMode{fuzzWorker, fuzzPool, fuzzOwned, fuzzWorker}
			runFuzzTimer(t, data[1:], modes[data[0]&3]|fuzzFar)
		})
	})
}

// fuzzMode is the driver of the fuzzed Timer.
type fuzzMode int

const (
	fuzzWorker fuzzMode = iota // its worker goroutine
	fuzzPool                   // its worker, with WithTaskWorkers
	fuzzOwned                  // WithoutWorker: an owner goroutine (fuzzOwner)

	// fuzzFar, added to one of the above, is FuzzTimerLevels: the model
	// decodes far delays, periods and moves of the clock too.
	fuzzFar fuzzMode = 1 << 4
)

// maxFuzzOps bounds the operations one input runs, so that every execution
// is quick.
const maxFuzzOps = 64

func runFuzzTimer(t *testing.T, data []byte, mode fuzzMode) {
	far := mode&fuzzFar != 0
	mode &^= fuzzFar
	pool, owned := mode == fuzzPool, mode == fuzzOwned
	in := &fuzzInput{data: data}
	cfg := in.next()
	var style byte // FuzzTimerOwned: which owner, and how often it polls
	if owned {
		style = in.next()
	}
	ticks := [4]time.Duration{time.Millisecond, 10 * time.Millisecond, 3 * time.Millisecond, 7 * time.Millisecond}
	tick := ticks[cfg&3]
	wheelArg := int(cfg>>2&7) + 1 // rounded up to 1, 2, 4 or 8
	limits := [4]int64{0, 0, 1, 3}
	limit := limits[cfg>>5&3]
	opts := []hashedwheel.Option{
		hashedwheel.WithTickDuration(tick),
		hashedwheel.WithTicksPerWheel(wheelArg),
		hashedwheel.WithMaxPendingTimeouts(limit),
		hashedwheel.WithLogger(slog.New(slog.DiscardHandler)),
	}
	m := &fuzzModel{t: t, tick: int64(tick), limit: limit, byTO: make(map[*hashedwheel.Timeout]*fuzzHandle),
		latest: make(map[*hashedwheel.Timeout]*fuzzHandle), byTask: make(map[*fuzzTask]*fuzzHandle)}
	m.pool, m.owned, m.far = pool, owned, far
	if owned {
		opts = append(opts, hashedwheel.WithoutWorker())
		if style&1 != 0 {
			polls := [4]time.Duration{tick, 2 * tick, 3*tick + tick/3, 5 * tick / 2}
			m.poll = int64(polls[style>>1&3])
			if far && style&0x10 != 0 {
				m.poll = farPoll(style, int64(tick), int64(1)<<bitsFor(wheelArg))
			}
		}
		m.callRuns = make(map[int64]int)
		checkOwnedRefusesPool(t, 1+int(style>>3&1))
	}
	switch {
	case pool:
		m.poolN = 1 + int(cfg>>7)
		opts = append(opts, hashedwheel.WithTaskWorkers(m.poolN))
	case cfg&0x80 != 0 && !owned:
		// An executor that runs the task at once, on the worker. (An owned
		// Timer runs its own tasks: see checkOwnedRefusesPool.)
		m.hasExec = true
		opts = append(opts, hashedwheel.WithTaskExecutor(func(task func()) {
			m.execCalls.Add(1)
			task()
		}))
	}
	m.tracef("config tick=%v WithTicksPerWheel(%d) limit=%d executor=%v pool=%d owned=%v poll=%v", tick, wheelArg,
		limit, m.hasExec, m.poolN, owned, time.Duration(m.poll))
	if far {
		m.tracef("FuzzTimerLevels: far delays, periods and moves of the clock")
	}

	tm, err := hashedwheel.NewTimer(opts...)
	if err != nil {
		t.Fatalf("NewTimer: %v", err)
	}
	m.tm = tm
	m.wheel = int64(tm.TicksPerWheel())
	if want := int64(1) << bitsFor(wheelArg); m.wheel != want {
		t.Fatalf("TicksPerWheel() = %d for WithTicksPerWheel(%d), want %d", m.wheel, wheelArg, want)
	}
	if err := tm.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	m.start = time.Now()
	// The second Timer, to which the sessions' Timeouts move: same tick,
	// same start on the fake clock, no worker.
	m.other, err = hashedwheel.NewTimer(hashedwheel.WithoutWorker(), hashedwheel.WithTickDuration(tick),
		hashedwheel.WithLogger(slog.New(slog.DiscardHandler)))
	if err == nil {
		err = m.other.Start()
	}
	if err != nil {
		t.Fatalf("the second Timer: %v", err)
	}
	// Whatever fails, let every goroutine of the bubble end.
	t.Cleanup(func() {
		for _, h := range m.handles {
			if h.release != nil && !h.released {
				close(h.release)
				h.released = true
			}
		}
		tm.Stop()
		m.other.Stop()
		if m.owner != nil {
			m.owner.poke() // its next Advance returns ErrTimerStopped, and it ends
		}
	})
	if owned {
		m.owner = &fuzzOwner{m: m, poll: time.Duration(m.poll), wake: make(chan struct{}, 1),
			exited: make(chan struct{})}
		go m.owner.run(m.poll > 0)
		synctest.Wait()
		m.settle()
	}

	for ops := 0; ops < maxFuzzOps && in.more(); ops++ {
		m.op(in)
		m.check()
	}

	// Let every blocked task return, stop the timer if nothing did, and
	// account for every timeout.
	for _, h := range m.handles {
		if h.release != nil && !h.released {
			m.release(h)
			m.check()
		}
	}
	if m.stop == stopNone || m.stop == stopFromTask {
		m.stopOp()
		m.check()
	}
	m.final()
}

// fuzzInput reads the fuzzer's bytes; past the end it reads zeros.
type fuzzInput struct {
	data []byte
	i    int
}

func (in *fuzzInput) more() bool { return in.i < len(in.data) }

func (in *fuzzInput) next() byte {
	if in.i >= len(in.data) {
		return 0
	}
	b := in.data[in.i]
	in.i++
	return b
}

func bitsFor(n int) int {
	b := 0
	for 1<<b < n {
		b++
	}
	return b
}
