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
			runFuzzTimer(t, data, false)
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
			runFuzzTimer(t, data, true)
		})
	})
}

// maxFuzzOps bounds the operations one input runs, so that every execution
// is quick.
const maxFuzzOps = 64

func runFuzzTimer(t *testing.T, data []byte, pool bool) {
	in := &fuzzInput{data: data}
	cfg := in.next()
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
	m := &fuzzModel{t: t, tick: int64(tick), limit: limit, pool: pool,
		byTO: make(map[*hashedwheel.Timeout]*fuzzHandle)}
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
	m.tracef("config tick=%v WithTicksPerWheel(%d) limit=%d executor=%v pool=%d", tick, wheelArg, limit,
		m.hasExec, m.poolN)

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
	})

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
