package hashedwheel_test

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashedwheel/hashedwheel"
)

// FuzzTimer decodes its input into a sequence of operations on one Timer,
// runs them on the fake clock of a synctest bubble, and checks every result
// against a reference model: every run time, exactly; every return value of
// NewTimeout, NewPeriodicTimeout, Cancel, Reset and Stop; IsExpired,
// IsCancelled, Deadline and PendingTimeouts after every operation; every
// CancelledTask call; and at the end that every timeout ran exactly once or
// was cancelled exactly once.
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
// timeouts with a slow run, cancel callbacks.
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
// when one is released. Periodic timeouts are left to FuzzTimer: when a run on
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
// chains, Reset, the executor and the polling owner.
func FuzzTimerOwned(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		synctest.Test(t, func(t *testing.T) {
			runFuzzTimer(t, data, fuzzOwned)
		})
	})
}

// fuzzMode is the driver of the fuzzed Timer.
type fuzzMode int

const (
	fuzzWorker fuzzMode = iota // its worker goroutine
	fuzzPool                   // its worker, with WithTaskWorkers
	fuzzOwned                  // WithoutWorker: an owner goroutine (fuzzOwner)
)

// maxFuzzOps bounds the operations one input runs, so that every execution
// is quick.
const maxFuzzOps = 64

func runFuzzTimer(t *testing.T, data []byte, mode fuzzMode) {
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
	m := &fuzzModel{t: t, tick: int64(tick), limit: limit, pool: pool, owned: owned,
		byTO: make(map[*hashedwheel.Timeout]*fuzzHandle)}
	if owned {
		opts = append(opts, hashedwheel.WithoutWorker())
		if style&1 != 0 {
			polls := [4]time.Duration{tick, 2 * tick, 3*tick + tick/3, 5 * tick / 2}
			m.poll = int64(polls[style>>1&3])
		}
		m.callRuns = make(map[int64]int)
		checkOwnedRefusesPool(t, 1+int(style>>3&1))
	}
	switch {
	case pool:
		m.poolN = 1 + int(cfg>>7)
		opts = append(opts, hashedwheel.WithTaskWorkers(m.poolN))
	case cfg&0x80 != 0:
		// An executor that runs the task at once, on the worker.
		m.hasExec = true
		opts = append(opts, hashedwheel.WithTaskExecutor(func(task func()) {
			m.execCalls.Add(1)
			task()
		}))
	}
	m.tracef("config tick=%v WithTicksPerWheel(%d) limit=%d executor=%v pool=%d owned=%v poll=%v", tick, wheelArg,
		limit, m.hasExec, m.poolN, owned, time.Duration(m.poll))

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
	// Whatever fails, let every goroutine of the bubble end.
	t.Cleanup(func() {
		for _, h := range m.handles {
			if h.release != nil && !h.released {
				close(h.release)
				h.released = true
			}
		}
		tm.Stop()
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

// checkOwnedRefusesPool checks that NewTimer refuses WithTaskWorkers with
// WithoutWorker, with an error naming both (guarantee 18).
func checkOwnedRefusesPool(t *testing.T, n int) {
	tm, err := hashedwheel.NewTimer(hashedwheel.WithoutWorker(), hashedwheel.WithTaskWorkers(n),
		hashedwheel.WithLogger(slog.New(slog.DiscardHandler)))
	if tm != nil || err == nil || !strings.Contains(err.Error(), "WithTaskWorkers") ||
		!strings.Contains(err.Error(), "WithoutWorker") {
		t.Fatalf("NewTimer(WithoutWorker(), WithTaskWorkers(%d)) = %v, %v; want a nil Timer and an error "+
			"naming both options", n, tm, err)
	}
}

// Values of fuzzOwner.in other than the number of an Advance in progress.
const (
	inNothing      = 0  // no call of the owner's in progress
	inNextDeadline = -1 // the owner's NextDeadline
	inProbe        = -2 // an Advance or NextDeadline of the test goroutine, while the owner sleeps
	inStop         = -3 // a Stop of the test goroutine, while the owner sleeps
)

// fuzzOwner is the goroutine that drives a Timer made WithoutWorker in
// FuzzTimerOwned. With poll 0 it loops NextDeadline, sleeps until that time
// or until poke wakes it, then Advance(time.Now()); the harness pokes it after
// each operation that schedules, resets, cancels or stops. With poll > 0 it
// calls Advance(time.Now()) at every multiple of poll since the timer was
// made, and sleeps in between whatever NextDeadline would say; Stop pokes
// it too, so that it ends at once. Either ends when Advance returns
// ErrTimerStopped.
type fuzzOwner struct {
	m    *fuzzModel
	poll time.Duration
	wake chan struct{} // buffer of one: a poke is never lost, and never blocks

	// in is the number of the Advance in progress, or one of the in...
	// values, so that a task or a Cancelled call knows inside which call
	// it runs. Set by the owner, or by the test goroutine while the owner
	// sleeps.
	in atomic.Int64

	// calls counts the Advance calls made. Owner goroutine only: a
	// successor starts after its predecessor has ended.
	calls int64

	exited chan struct{} // closed when Advance has returned ErrTimerStopped
}

// poke wakes the owner, if it sleeps.
func (o *fuzzOwner) poke() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// run is the owner's loop. advanceFirst makes it call Advance before it
// first sleeps.
func (o *fuzzOwner) run(advanceFirst bool) {
	m := o.m
	finished := false
	defer func() {
		o.in.Store(inNothing)
		if !finished {
			// A task called runtime.Goexit, which ends the goroutine that
			// called Advance: go on in a new one. The polling owner calls
			// Advance at once; the other asks NextDeadline first.
			go o.run(o.poll > 0)
		}
	}()
	sleep := time.NewTimer(time.Hour) // made here, so that it runs on the bubble's clock
	sleep.Stop()
	spins := 0 // Advance calls in a row made without sleeping that ran nothing
	for {
		slept := true
		if !advanceFirst {
			slept = o.wait(sleep, spins >= maxOwnerSpins)
		}
		advanceFirst = false
		now := time.Now()
		o.calls++
		call := o.calls
		o.in.Store(call)
		n, err := m.tm.Advance(now)
		o.in.Store(inNothing)
		if errors.Is(err, hashedwheel.ErrTimerStopped) {
			finished = true
			close(o.exited)
			return
		}
		m.advanced(call, now, n, err)
		if slept || n > 0 {
			spins = 0
			continue
		}
		if spins++; spins == maxOwnerSpins {
			m.ownerFailed("NextDeadline keeps returning a time already past, and Advance(%v) runs nothing: "+
				"an owner that sleeps until NextDeadline spins", now.Sub(m.start))
		}
	}
}

// maxOwnerSpins is how many Advance calls in a row, made at once because
// NextDeadline returned a time already past, may run nothing. One is normal:
// after a runtime.Goexit, NextDeadline points at the tick it cut short, which
// may hold nothing more.
const maxOwnerSpins = 3

// wait blocks until the owner's next Advance is due and reports whether it
// blocked. stuck makes the owner that sleeps until NextDeadline wait for a
// poke, rather than spin on a NextDeadline already past.
func (o *fuzzOwner) wait(sleep *time.Timer, stuck bool) bool {
	if o.poll > 0 {
		elapsed := time.Since(o.m.start)
		sleep.Reset((elapsed/o.poll+1)*o.poll - elapsed)
		select {
		case <-sleep.C:
		case <-o.wake:
			sleep.Stop()
		}
		return true
	}
	o.in.Store(inNextDeadline)
	at, ok := o.m.tm.NextDeadline()
	o.in.Store(inNothing)
	d := time.Until(at)
	switch {
	case ok && d <= 0 && !stuck:
		return false
	case ok && d > 0:
		sleep.Reset(d)
		select {
		case <-sleep.C:
		case <-o.wake:
			sleep.Stop()
		}
	default:
		<-o.wake
	}
	return true
}

// advanced checks what the owner's Advance number call returned: no error
// before Stop, and as many runs as the tasks that ran inside it.
func (m *fuzzModel) advanced(call int64, now time.Time, n int, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ran := m.callRuns[call]
	delete(m.callRuns, call)
	at := now.Sub(m.start)
	m.ownerCalls = append(m.ownerCalls, fmt.Sprintf("%v: Advance #%d = %d, %v", at, call, n, err))
	if len(m.ownerCalls) > 32 {
		m.ownerCalls = m.ownerCalls[len(m.ownerCalls)-32:]
	}
	switch {
	case err != nil:
		m.ownerErrs = append(m.ownerErrs, fmt.Sprintf("Advance(%v) = %d, %v; want no error before Stop", at, n, err))
	case n != ran:
		m.ownerErrs = append(m.ownerErrs, fmt.Sprintf("Advance(%v) returned %d, but %d runs happened inside it", at,
			n, ran))
	}
}

// ownerFailed records a failure seen on the owner's goroutine; the test
// goroutine reports it.
func (m *fuzzModel) ownerFailed(format string, args ...any) {
	m.mu.Lock()
	m.ownerErrs = append(m.ownerErrs, fmt.Sprintf(format, args...))
	m.mu.Unlock()
}
