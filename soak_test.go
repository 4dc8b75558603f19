package hashedwheel_test

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashedwheel/hashedwheel"
)

var soakFor = flag.Duration("soak", 0,
	"run TestSoak for this long in all, shared among its configurations (for example -soak=5m); 0 skips it")

// TestSoak runs the timer on the real clock under many goroutines that race
// NewTimeout, Cancel, Reset and Stop, one configuration after another, and
// accounts for every timeout. For each configuration it prints one line:
//
//	config=<name> ops=<n> lost=0 double=0 early=0 stuck=0
//
// and fails if any of the four is not zero. ops counts the calls of
// NewTimeout, NewPeriodicTimeout, Schedule, ScheduleAt, Cancel, Reset and
// Stop, whatever they returned. A timeout is
//
//   - lost if, once the timer is stopped and every task has returned, it
//     neither ran, nor was cancelled by a Cancel that returned true, nor was
//     returned by Stop (or, after a Stop from a task, cancelled by the
//     worker; on a Timer made WithoutWorker, after a Stop that found the
//     owner inside Advance, cancelled by that Advance); a periodic one, if
//     it was not cancelled;
//   - double if its task ran twice (a periodic one: two runs at once), or
//     ran and was also cancelled by a Cancel that returned true or returned
//     by Stop, or a Cancel returned true twice;
//   - early if its task ran before its Deadline() (a periodic one: before
//     the due time of that run), or before the delay had passed since just
//     before the NewTimeout, or the last Reset that returned true, was called;
//   - stuck if, while the timer runs, it is neither expired nor cancelled
//     soakStuckAfter past its deadline (a periodic one: past the due time of
//     its next run).
//
// Half of the tasks are CancelledTasks; the configuration fails if one of
// them got a Cancelled call for a timeout that Cancel did not cancel, or not
// exactly one for one it did.
//
// The configuration "churn" also checks that the heap does not grow: the heap
// after a GC at the end is within 10% of the heap after a GC once warmed up.
//
// The configurations "levels..." run wheels of 1 to 16 buckets, above which
// the slots of the levels start every millisecond or so (level 1) to every
// second (level 2), with delays at and around the levels' spans and slots'
// starts (see soakLevelDelay), and Reset across them both ways: timeouts
// move down while Cancel and Reset race them. A task now and then holds the
// worker (the owner, or a pool goroutine) for up to 300ms, across the starts
// of many slots, after which it catches up.
//
// The configurations "reuse-..." arm Timeouts that the soak owns with
// Schedule and ScheduleAt instead, round after round (see soakReuse):
// several goroutines schedule, cancel, reset and schedule again each one at
// once, so do its tasks from inside their runs (ScheduleAt at the latest
// deadline plus a delay, some of them) and its Cancelled calls, on a Timer
// or across two, and the Timers stop while they do. There the four counts
// are of arms (Schedules that returned nil), as soakReuseAccount says; an arm
// is early if it ran before the delay had passed since just before its
// Schedule, or before its ScheduleAt deadline (a wall-clock one, by more
// than soakWallSlack), and a second line
//
//	config=<name> armed=<n> armed-in-run=<n> overlapping=0 aside=<n> uncalled=<n>
//
// counts the arms, those that a task or a Cancelled call made, the runs of
// one Timeout that overlapped another (the configuration fails if one did),
// the arms that ended cancelled out of Stop's reach and the Cancelled calls
// not made for such arms (see soakConfig.aside). The configuration fails,
// too, if its Timers' Stats do not count each run and each cancel once.
func TestSoak(t *testing.T) {
	if *soakFor <= 0 {
		t.Skip("soak not asked for; run with -soak=5m")
	}
	configs := soakConfigs()
	each := *soakFor / time.Duration(len(configs))
	var total int64
	for _, c := range configs {
		t.Run(c.name, func(t *testing.T) {
			var n soakCounts
			// On a machine loaded by other work, a starved worker may hand
			// out nothing in a share of a few seconds: run the
			// configuration again (its counts add up) before deciding it
			// tested nothing.
			for attempt := 1; ; attempt++ {
				switch {
				case c.reuse:
					soakReuse(t, c, each, &n)
				case c.rounds:
					soakRounds(t, c, each, &n)
				default:
					soakContinuous(t, c, each, &n)
				}
				tested := n.ran.Load() != 0 && n.cancelled.Load() != 0 && (!c.reuse || n.armedInRun.Load() != 0)
				if tested || attempt == 4 {
					break
				}
				t.Logf("%s: nothing ran, nothing was cancelled or no task armed its own Timeout in %v; running it again", c.name, each)
			}
			line := fmt.Sprintf("config=%s ops=%d lost=%d double=%d early=%d stuck=%d",
				c.name, n.ops.Load(), n.lost.Load(), n.double.Load(), n.early.Load(), n.stuck.Load())
			fmt.Println(line)
			t.Logf("%s: ran %d (%d panicked; latest %v after its deadline), cancelled %d, returned by Stop %d, "+
				"cancelled by a Stop from a task %d, rejected %d, resets %d (%d true), Cancelled calls %d",
				c.name, n.ran.Load(), n.panicked.Load(), time.Duration(n.maxLate.Load()), n.cancelled.Load(),
				n.returned.Load(), n.stoppedFromTask.Load(), n.rejected.Load(), n.resets.Load(),
				n.resetsTrue.Load(), n.callbacks.Load())
			if n.lost.Load()+n.double.Load()+n.early.Load()+n.stuck.Load() != 0 {
				t.Errorf("%s: lost, double, early or stuck timeouts%s", line, n.notesText())
			}
			if n.badCallbacks.Load() != 0 {
				t.Errorf("%s: %d timeouts got a wrong number of Cancelled calls%s", c.name, n.badCallbacks.Load(), n.notesText())
			}
			if c.reuse {
				fmt.Printf("config=%s armed=%d armed-in-run=%d overlapping=%d aside=%d uncalled=%d\n", c.name,
					n.armed.Load(), n.armedInRun.Load(), n.overlap.Load(), n.aside.Load(), n.uncalled.Load())
				if n.overlap.Load() != 0 {
					t.Errorf("%s: runs of one Timeout overlapped %d times", c.name, n.overlap.Load())
				}
				if n.armedInRun.Load() == 0 {
					t.Errorf("%s: no task armed its own Timeout again; the soak tested nothing", c.name)
				}
			}
			if c.limit > 0 {
				fmt.Printf("config=%s rejected=%d pending-read-above-limit=%d\n", c.name, n.rejected.Load(), n.overLimit.Load())
				if n.overLimit.Load() != 0 {
					t.Errorf("%s: PendingTimeouts read above the limit of %d, %d times", c.name, c.limit, n.overLimit.Load())
				}
			}
			if n.ran.Load() == 0 || n.cancelled.Load() == 0 {
				t.Errorf("%s: nothing ran or nothing was cancelled; the soak tested nothing", line)
			}
			total += n.ops.Load()
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			t.Logf("%s: heap after GC once done %d B", c.name, ms.HeapAlloc)
		})
	}
	fmt.Printf("config=all ops=%d\n", total)
}

// soakStuckAfter is how long past its deadline a pending timeout counts as
// stuck: ticks are milliseconds, but a loaded machine, or the race detector,
// may stall the worker for far longer than a tick. On two cores at a load
// average of 17-20, the worker ran 17 s behind for a while, and caught up.
const soakStuckAfter = 30 * time.Second

type soakConfig struct {
	name      string
	producers int
	opts      func(*soakExec) []hashedwheel.Option
	limit     int64 // WithMaxPendingTimeouts
	periodic  bool  // make periodic timeouts too
	rounds    bool  // stop and replace the timer every few milliseconds
	churn     bool  // schedule and cancel only, and check the heap
	owned     bool  // made WithoutWorker: soakOwn drives it

	// reuse: arm reused Timeouts with Schedule (soakReuse) on a Timer made
	// with opts and one more for each of second.
	reuse  bool
	second []func(*soakExec) []hashedwheel.Option
	// aside: an arm may end cancelled out of Stop's reach, neither run nor
	// returned by Stop: one made while its Timeout was out on a run that
	// returns after its Timer has stopped (Stop does not wait for the runs
	// of an executor). Its Cancelled call, if its task is a CancelledTask,
	// is made as the run returns, whether Cancel cancelled it or not.
	aside bool

	// levels: the delays cross the levels above the wheel (see
	// soakLevelDelay), and a task now and then holds the worker (or the
	// owner, or a pool goroutine) across the starts of their slots.
	levels bool
}

// soakExec is a task executor that runs tasks on goroutines of its own, and
// can wait for them.
type soakExec struct{ wg sync.WaitGroup }

func (e *soakExec) goExecutor(task func()) { e.wg.Go(task) }

// soakBaseOpts is a 1ms tick and 256 buckets: the hour-long timeouts wrap
// the wheel many times. (A 16-bucket wheel holding tens of thousands of
// timeouts makes the worker walk thousands at every tick; on a loaded machine
// it then falls behind for good, as Netty's would. FuzzTimer covers turns of
// small wheels exactly.)
func soakBaseOpts() []hashedwheel.Option {
	return []hashedwheel.Option{
		hashedwheel.WithTickDuration(time.Millisecond),
		hashedwheel.WithTicksPerWheel(256),
		hashedwheel.WithLogger(slog.New(slog.DiscardHandler)),
	}
}

func soakConfigs() []soakConfig {
	with := func(extra ...hashedwheel.Option) func(*soakExec) []hashedwheel.Option {
		return func(*soakExec) []hashedwheel.Option { return append(soakBaseOpts(), extra...) }
	}
	goExec := func(e *soakExec) []hashedwheel.Option {
		return append(soakBaseOpts(), hashedwheel.WithTaskExecutor(e.goExecutor))
	}
	return []soakConfig{
		// First, so that its heap is not that of the goroutines the others
		// leave to the runtime to reuse.
		{name: "churn", producers: 4, opts: with(), churn: true},
		{name: "worker", producers: 8, opts: with()},
		{name: "executor-go", producers: 8, opts: goExec},
		{name: "executor-sync", producers: 8, opts: with(hashedwheel.WithTaskExecutor(func(task func()) { task() }))},
		{name: "pool", producers: 8, opts: with(hashedwheel.WithTaskWorkers(4))},
		{name: "limit", producers: 8, limit: 1024, opts: with(hashedwheel.WithMaxPendingTimeouts(1024))},
		{name: "periodic", producers: 8, periodic: true, opts: with()},
		{name: "periodic-executor-go", producers: 8, periodic: true, opts: goExec},
		{name: "periodic-pool", producers: 8, periodic: true, opts: with(hashedwheel.WithTaskWorkers(4))},
		{name: "stop-rounds", producers: 4, opts: with(), rounds: true},
		{name: "stop-rounds-pool", producers: 4, opts: with(hashedwheel.WithTaskWorkers(2)), rounds: true},
		// WithoutWorker: an owner goroutine drives the wheel (soakOwn).
		{name: "owned", producers: 8, owned: true, opts: with(hashedwheel.WithoutWorker())},
		{name: "owned-periodic", producers: 8, periodic: true, owned: true, opts: with(hashedwheel.WithoutWorker())},
		{name: "stop-rounds-owned", producers: 4, owned: true, opts: with(hashedwheel.WithoutWorker()), rounds: true},
		// Reused Timeouts armed with Schedule, round after round.
		{name: "reuse-worker", producers: 4, reuse: true, opts: with()},
		{name: "reuse-pool", producers: 4, reuse: true, opts: with(hashedwheel.WithTaskWorkers(4))},
		// Stop does not wait for the executor's runs.
		{name: "reuse-executor-go", producers: 4, reuse: true, aside: true, opts: goExec},
		{name: "reuse-owned", producers: 4, reuse: true, owned: true, opts: with(hashedwheel.WithoutWorker())},
		// Either Timer's runs arm Timeouts on the other once they returned
		// (Schedule refuses it while the run is out).
		{name: "reuse-two-timers", producers: 4, reuse: true, opts: with(),
			second: []func(*soakExec) []hashedwheel.Option{with(hashedwheel.WithTaskWorkers(2))}},
		// Timeouts across the levels above small wheels (see soakLevelDelay),
		// whose slots start every few milliseconds to every few seconds.
		{name: "levels", producers: 4, levels: true, periodic: true, opts: with(hashedwheel.WithTicksPerWheel(16))},
		{name: "levels-owned", producers: 4, levels: true, periodic: true, owned: true,
			opts: with(hashedwheel.WithTicksPerWheel(8), hashedwheel.WithoutWorker())},
		{name: "levels-pool", producers: 4, levels: true,
			opts: with(hashedwheel.WithTicksPerWheel(4), hashedwheel.WithTaskWorkers(2))},
		{name: "levels-reuse", producers: 4, reuse: true, levels: true, opts: with(hashedwheel.WithTicksPerWheel(1))},
	}
}

type soakCounts struct {
	ops, lost, double, early, stuck              atomic.Int64
	ran, panicked, cancelled, returned, rejected atomic.Int64
	stoppedFromTask, maxLate, overLimit          atomic.Int64
	resets, resetsTrue, callbacks, badCallbacks  atomic.Int64
	idleFull                                     atomic.Int64
	heapWarm, heapEnd                            atomic.Uint64

	// The reuse configurations': arms (Schedule returned nil), those made
	// by a task or a Cancelled call, runs of one Timeout that overlapped,
	// arms that ended cancelled aside, and Cancelled calls not made for
	// such an arm.
	armed, armedInRun, overlap, aside, uncalled atomic.Int64

	// paceRan and paceCancelled count the pacer's probes that ran, and
	// those it cancelled, late, at the end (see soakPace): runs and
	// cancellations that are not the producers'.
	paceRan, paceCancelled atomic.Int64

	// notes says what went wrong, for the failure's message: how an early
	// arm was armed and how early it ran, which slot lost or doubled an
	// arm. The first soakNotes are kept.
	notesMu sync.Mutex
	notes   []string
}

// soakNotes is how many notes a configuration keeps.
const soakNotes = 8

// note records what went wrong.
func (n *soakCounts) note(format string, args ...any) {
	n.notesMu.Lock()
	defer n.notesMu.Unlock()
	if len(n.notes) < soakNotes {
		n.notes = append(n.notes, fmt.Sprintf(format, args...))
	}
}

// notesText returns the notes, one a line.
func (n *soakCounts) notesText() string {
	n.notesMu.Lock()
	defer n.notesMu.Unlock()
	if len(n.notes) == 0 {
		return ""
	}
	return "\n\t" + strings.Join(n.notes, "\n\t")
}

// soakEpoch is the zero of soakRec's atomic times; it has a monotonic
// reading, so differences from it are monotonic too.
var soakEpoch = time.Now()

func soakNanos(t time.Time) int64 { return int64(t.Sub(soakEpoch)) }

// soakRec is a timeout's record and its task.
type soakRec struct {
	n    *soakCounts
	to   *hashedwheel.Timeout // producer only
	made time.Time            // just before NewTimeout; producer only
	kind int

	// earliest is when the task may run first, in soakNanos: made plus the
	// delay, or later after a Reset that returned true. Set before the
	// timeout is scheduled and after such a Reset, so a run racing the
	// Reset may be checked against the old value, never a wrong one.
	earliest atomic.Int64

	// period is the period of a periodic timeout, 0 for a one-shot one;
	// selfCancel is the run in which its task cancels it, 0 for never.
	period     time.Duration
	selfCancel int32

	runs          atomic.Int32
	inRun         atomic.Int32
	cancelledByUs atomic.Bool
	callbacks     atomic.Int32 // Cancelled calls
	doubleSeen    atomic.Bool  // so that a timeout counts once as double
	earlySeen     atomic.Bool
	stuckSeen     bool // producer only
}

const (
	soakPlain = iota
	soakPanic // the task panics
	soakStop  // the task stops its timer
	soakHold  // the task holds its goroutine for a while (see soakHoldFor)
)

func (r *soakRec) Run(to *hashedwheel.Timeout) {
	now := time.Now()
	overlap := r.inRun.Add(1) > 1
	defer r.inRun.Add(-1)
	// A one-shot task never runs after a Cancel that returned true; a
	// periodic one may start a run that was handed out just before it.
	if overlap || r.cancelledByUs.Load() && r.period == 0 {
		r.flag(&r.n.double, &r.doubleSeen)
	}
	runs := r.runs.Add(1)
	r.n.ran.Add(1)
	if r.period == 0 {
		if runs > 1 {
			r.flag(&r.n.double, &r.doubleSeen)
		}
		if soakNanos(now) < r.earliest.Load() || now.Before(to.Deadline()) {
			r.flag(&r.n.early, &r.earlySeen)
			r.n.note("EARLY one-shot by %v: now-deadline %v, kind %d", time.Duration(r.earliest.Load()-soakNanos(now)),
				now.Sub(to.Deadline()), r.kind)
		}
		late := int64(now.Sub(to.Deadline()))
		for m := r.n.maxLate.Load(); late > m && !r.n.maxLate.CompareAndSwap(m, late); m = r.n.maxLate.Load() {
		}
	} else {
		// Run k is due at made + k*period; runs may be skipped, never
		// brought forward, so this run, the runs-th, is due no sooner than
		// made + runs*period. Deadline already reports the next run.
		if soakNanos(now) < r.earliest.Load()+int64(runs-1)*int64(r.period) ||
			now.Before(to.Deadline().Add(-r.period)) {
			r.flag(&r.n.early, &r.earlySeen)
			r.n.note("EARLY periodic run %d by %v: now-(deadline-period) %v, period %v", runs,
				time.Duration(r.earliest.Load()+int64(runs-1)*int64(r.period)-soakNanos(now)),
				now.Sub(to.Deadline().Add(-r.period)), r.period)
		}
		if runs == r.selfCancel && to.Cancel() {
			r.n.ops.Add(1)
			r.markCancelled()
		}
	}
	switch r.kind {
	case soakPanic:
		r.n.panicked.Add(1)
		panic("soak: a task panics")
	case soakStop:
		to.Timer().Stop()
	case soakHold:
		time.Sleep(soakHoldFor())
	}
}

func (r *soakRec) flag(count *atomic.Int64, seen *atomic.Bool) {
	if seen.CompareAndSwap(false, true) {
		count.Add(1)
	}
}

// soakCallbackRec is a soakRec whose task is a CancelledTask.
type soakCallbackRec struct{ *soakRec }

func (r soakCallbackRec) Cancelled(*hashedwheel.Timeout) {
	r.callbacks.Add(1)
	r.n.callbacks.Add(1)
}

// cancel cancels r's timeout and records what Cancel said.
func (r *soakRec) cancel() {
	if r.to.Cancel() {
		r.markCancelled()
	}
}

func (r *soakRec) markCancelled() {
	r.n.cancelled.Add(1)
	if r.cancelledByUs.Swap(true) || (r.period == 0 && r.runs.Load() > 0) {
		r.flag(&r.n.double, &r.doubleSeen)
	}
}

// soakProducer schedules, cancels, resets and checks timeouts on one
// goroutine.
//
// Its records of timeouts not yet seen to end are in three lists, so that
// checking them costs about one look at each: recent, in the order they were
// made; late, timeouts that had not ended when sweep looked at them first;
// long, the hour-long ones, looked at only when the timer stops.
type soakProducer struct {
	tm        *hashedwheel.Timer
	n         *soakCounts
	rng       *rand.Rand
	limit     int64           // the timer's pending limit, 0 if none
	periodic  bool            // make periodic timeouts too
	cancels   chan<- *soakRec // to the cancellers, who race expiry
	recent    []*soakRec
	late      []*soakRec
	long      []*soakRec
	idle      []*soakRec // churn: hour-long timeouts kept pending
	ops       int64
	lastSweep time.Time

	// levels is the turn of the wheel if the delays cross the levels above
	// it (soakLevelDelay), 0 otherwise.
	levels time.Duration

	lastLateSweep time.Time
}

// soakSettle is how old a record must be before sweep looks at it: longer
// than the longest short delay and a few ticks.
const soakSettle = 50 * time.Millisecond

// soakMaxLong is how many hour-long timeouts a producer leaves pending.
const soakMaxLong = 32

// delay draws a delay: mostly a few ticks, sometimes zero or negative,
// sometimes an hour (those are cancelled, or returned by Stop).
func (p *soakProducer) delay() time.Duration {
	if p.levels > 0 {
		return soakLevelDelay(p.rng, p.levels)
	}
	switch x := p.rng.IntN(100); {
	case x < 5:
		return -time.Duration(p.rng.IntN(1000))
	case x < 10:
		return 0
	case x < 55:
		return time.Duration(p.rng.Int64N(int64(3 * time.Millisecond)))
	case x < 95:
		return time.Duration(p.rng.Int64N(int64(20 * time.Millisecond)))
	default:
		return time.Hour
	}
}

// step makes one timeout and maybe cancels or resets one. It returns false
// once the timer is stopped.
func (p *soakProducer) step(kind int) bool {
	d := p.delay()
	if kind == soakHold {
		d = time.Duration(p.rng.Int64N(int64(10 * time.Millisecond)))
	}
	r := &soakRec{n: p.n, kind: kind}
	var task hashedwheel.TimerTask = r
	if p.rng.IntN(2) == 0 {
		task = soakCallbackRec{r}
	}
	periodic := p.periodic && p.rng.IntN(8) == 0
	if periodic {
		d = time.Duration(1+p.rng.IntN(8)) * time.Millisecond
		if p.levels > 0 && p.rng.IntN(2) == 0 {
			d = soakLevelPeriod(p.rng, p.levels)
		}
		r.period = d
		r.selfCancel = int32(p.rng.IntN(20))
	}
	before := time.Now()
	r.earliest.Store(soakNanos(before) + int64(max(d, 0)))
	var to *hashedwheel.Timeout
	var err error
	if periodic {
		to, err = p.tm.NewPeriodicTimeout(task, d)
	} else {
		to, err = p.tm.NewTimeout(task, d)
	}
	p.ops++
	switch {
	case errors.Is(err, hashedwheel.ErrTimerStopped):
		return false
	case errors.Is(err, hashedwheel.ErrTooManyPendingTimeouts):
		p.n.rejected.Add(1)
		// Pending never exceeds the limit, even while calls are rejected.
		if p.limit > 0 && p.tm.PendingTimeouts() > p.limit {
			p.n.overLimit.Add(1)
		}
		return true
	case err != nil:
		panic(fmt.Sprintf("soak: NewTimeout: %v", err))
	}
	r.to = to
	r.made = before
	p.recent = append(p.recent, r)
	switch x := p.rng.IntN(100); {
	case periodic:
		// Cancelled by its task, by the sweep, or by Stop.
	case x < 15 || d == time.Hour && x < 90:
		// Cancel at once.
		r.cancel()
		p.ops++
	case x < 30:
		// Let a canceller race the expiry.
		select {
		case p.cancels <- r:
			p.ops++
		default:
		}
	case x < 35 && len(p.recent) > 1:
		// Cancel an older one, maybe again, maybe after it ran.
		p.recent[p.rng.IntN(len(p.recent))].cancel()
		p.ops++
	case x < 50:
		// Reset this one or an older one, racing its expiry, maybe after
		// it ran or was cancelled.
		p.reset(p.recent[p.rng.IntN(len(p.recent))])
	}
	if p.ops%512 == 0 && time.Since(p.lastSweep) > 5*time.Millisecond {
		p.sweep()
	}
	return true
}

func (p *soakProducer) reset(r *soakRec) {
	if r.period != 0 {
		return // the soak checks periodic runs against made + k*period
	}
	p.ops++
	d := p.delay()
	before := time.Now()
	// A run racing the Reset is checked against the earlier of the old and
	// new deadlines until Reset has said which holds.
	old, next := r.earliest.Load(), soakNanos(before)+int64(max(d, 0))
	r.earliest.Store(min(old, next))
	p.n.resets.Add(1)
	if r.to.Reset(d) {
		p.n.resetsTrue.Add(1)
	} else {
		next = old
	}
	r.earliest.Store(next)
}

// sweep drops the records of timeouts that ended as they should, and counts
// those stuck. It keeps those whose end is not yet visible: a task handed to
// an executor but not yet run, a Cancel that returned true but whose caller
// has not recorded it yet, a Cancelled call not yet made.
func (p *soakProducer) sweep() {
	now := time.Now()
	p.lastSweep = now
	if now.Sub(p.lastLateSweep) > soakSettle {
		p.lastLateSweep = now
		p.late = p.sweepList(p.late, now)
	}
	old := 0
	for old < len(p.recent) && now.Sub(p.recent[old].made) > soakSettle {
		r := p.recent[old]
		old++
		if p.ended(r, now) {
			continue
		}
		if r.period == 0 && r.to.Deadline().Sub(r.made) >= time.Hour {
			p.long = append(p.long, r)
			if len(p.long) > soakMaxLong {
				// Keep the hour-long ones few, as a server's idle timeouts
				// are; with a pending limit they would fill it.
				p.long[0].cancel()
				p.ops++
				p.long = p.sweepList(p.long, now)
			}
		} else {
			p.late = append(p.late, r)
		}
	}
	n := copy(p.recent, p.recent[old:])
	clear(p.recent[n:])
	p.recent = p.recent[:n]
}

func (p *soakProducer) sweepList(list []*soakRec, now time.Time) []*soakRec {
	kept := list[:0]
	for _, r := range list {
		if !p.ended(r, now) {
			kept = append(kept, r)
		}
	}
	clear(list[len(kept):])
	return kept
}

// ended reports whether r's timeout has visibly ended; it counts it as
// double or stuck if it is. A periodic timeout that has run for a while is
// cancelled here.
func (p *soakProducer) ended(r *soakRec, now time.Time) bool {
	expired, cancelled := r.to.IsExpired(), r.to.IsCancelled()
	_, wantsCallback := r.to.Task().(hashedwheel.CancelledTask)
	switch {
	case expired && (cancelled || r.period != 0):
		r.flag(&p.n.double, &r.doubleSeen)
		return true
	case expired && r.runs.Load() > 0:
		return true
	case cancelled && r.cancelledByUs.Load() && (!wantsCallback || r.callbacks.Load() > 0):
		return true
	}
	if !expired && !cancelled {
		if r.period != 0 && r.runs.Load() > 20 {
			r.cancel()
			p.ops++
			return false
		}
		// For a periodic timeout, Deadline is when the next run is due.
		if !r.stuckSeen && now.Sub(r.to.Deadline()) > soakStuckAfter {
			r.stuckSeen = true
			p.n.stuck.Add(1)
		}
	}
	return false
}

// records returns all of p's records not yet seen to end.
func (p *soakProducer) records() []*soakRec {
	return slices.Concat(p.recent, p.late, p.long, p.idle)
}

// soakAccount checks what is left once the timer is stopped and every task
// has returned: each timeout ran once (a periodic one: any number of times),
// or was cancelled by exactly one of Cancel and Stop, and a CancelledTask
// had one Cancelled call for a Cancel that returned true, none otherwise.
// fromTask says the timer was stopped by one of its tasks; then the worker
// cancels the pending timeouts and nobody gets them.
func soakAccount(n *soakCounts, producers []*soakProducer, stopped []*hashedwheel.Timeout, fromTask bool) {
	inStop := make(map[*hashedwheel.Timeout]bool, len(stopped))
	for _, to := range stopped {
		inStop[to] = true
	}
	n.returned.Add(int64(len(stopped)))
	found := 0
	for _, p := range producers {
		for _, r := range p.records() {
			expired, cancelled := r.to.IsExpired(), r.to.IsCancelled()
			runs, byUs, byStop := r.runs.Load(), r.cancelledByUs.Load(), inStop[r.to]
			if byStop {
				found++
			}
			oneShot := r.period == 0
			switch {
			case expired && cancelled, expired && !oneShot, oneShot && runs > 1,
				oneShot && runs > 0 && (cancelled || byStop), byUs && byStop:
				r.flag(&n.double, &r.doubleSeen)
			case expired && runs == 1:
			case cancelled && (byUs || byStop):
			case cancelled && fromTask:
				n.stoppedFromTask.Add(1)
			default:
				n.lost.Add(1)
			}
			if _, ok := r.to.Task().(hashedwheel.CancelledTask); ok {
				want := int32(0)
				if byUs {
					want = 1
				}
				if r.callbacks.Load() != want {
					n.badCallbacks.Add(1)
				}
			}
		}
		p.recent, p.late, p.long, p.idle = nil, nil, nil, nil
	}
	// What Stop returned and no producer holds had already ended.
	n.double.Add(int64(len(inStop) - found))
}

// soakContinuous runs one timer for d with producers and cancellers, then
// stops it and accounts for every timeout.
func soakContinuous(t *testing.T, c soakConfig, d time.Duration, n *soakCounts) {
	var exec soakExec
	tm, err := hashedwheel.NewTimer(c.opts(&exec)...)
	if err != nil {
		t.Fatal(err)
	}
	owner := soakOwn(tm, c.owned, nil)
	cancels := make(chan *soakRec, 1024)
	var cancellers sync.WaitGroup
	for range 2 {
		cancellers.Go(func() {
			for r := range cancels {
				r.cancel()
			}
		})
	}
	end := time.Now().Add(d)
	behind, paced := soakPace(tm, end, n)
	// churn pauses the producers twice to measure the heap: after warm-up
	// and at the end.
	var pause sync.RWMutex
	producers := make([]*soakProducer, c.producers)
	var wg sync.WaitGroup
	for i := range producers {
		p := &soakProducer{tm: tm, n: n, rng: rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano()))),
			limit: c.limit, periodic: c.periodic, cancels: cancels, lastSweep: time.Now(), levels: soakTurn(c, tm)}
		producers[i] = p
		lastHold := time.Now()
		wg.Go(func() {
			for time.Now().Before(end) {
				for behind.Load() && time.Now().Before(end) {
					time.Sleep(time.Millisecond)
					pause.RLock() // quiescentHeap sweeps too
					p.sweep()
					pause.RUnlock()
				}
				pause.RLock()
				for range 256 {
					if c.churn {
						p.churn()
						continue
					}
					kind := soakPlain
					if p.rng.IntN(2000) == 0 {
						kind = soakPanic
					}
					if c.levels && i == 0 && time.Since(lastHold) > soakHoldEvery {
						kind, lastHold = soakHold, time.Now()
					}
					p.step(kind)
				}
				pause.RUnlock()
			}
		})
	}
	if c.churn {
		// Warm up: a fifth of the time, at most 10 s, and until every
		// producer keeps its soakIdle timeouts.
		time.Sleep(min(d/5, 10*time.Second))
		for n.idleFull.Load() < int64(len(producers)) && time.Now().Before(end) {
			time.Sleep(time.Millisecond)
		}
		n.heapWarm.Store(quiescentHeap(t, tm, n, &pause, producers))
		time.Sleep(time.Until(end))
	}
	wg.Wait()
	<-paced
	if c.churn {
		n.heapEnd.Store(quiescentHeap(t, tm, n, &pause, producers))
	}
	close(cancels)
	cancellers.Wait()
	for _, p := range producers {
		p.sweep()
	}
	stopped := tm.Stop()
	<-owner
	exec.wg.Wait()
	for _, p := range producers {
		n.ops.Add(p.ops)
	}
	n.ops.Add(1) // the Stop
	// A Stop that finds the owner inside Advance returns nil, and that
	// Advance cancels the pending timeouts as it returns, as after a Stop
	// from a task.
	soakAccount(n, producers, stopped, c.owned && stopped == nil)
	if c.churn {
		warm, end := n.heapWarm.Load(), n.heapEnd.Load()
		growth := (float64(end) - float64(warm)) / float64(warm) * 100
		fmt.Printf("config=%s heap after warm-up %d B, at the end %d B (%+.1f%%)\n", c.name, warm, end, growth)
		if growth > 10 || growth < -10 {
			t.Errorf("heap after GC went from %d B after warm-up to %d B at the end (%+.1f%%), want within 10%%",
				warm, end, growth)
		}
	}
}

// soakPace reports, until end, whether the worker is behind: whether a
// timeout due at the next tick has not run within soakBehind. Producers that
// never pause, on a machine that other work loads too, can take so much of
// the CPU that the worker, one goroutine among many, falls further behind
// every second, and its timeouts would run later than soakStuckAfter with
// nothing wrong but the load. So producers pause while the worker is behind;
// they go on looking at their timeouts, so that a worker that stops for good
// leaves them paused and seeing the timeouts stuck. done is closed when the
// pacer has ended, its last timeout ended too.
func soakPace(tm *hashedwheel.Timer, end time.Time, n *soakCounts) (behind *atomic.Bool, done <-chan struct{}) {
	behind = new(atomic.Bool)
	d := make(chan struct{})
	go func() {
		defer close(d)
		for time.Now().Before(end) {
			ran := make(chan struct{})
			to, err := tm.AfterFunc(0, func() {
				n.paceRan.Add(1)
				close(ran)
			})
			if err != nil {
				return
			}
			wait := time.NewTimer(soakBehind)
			select {
			case <-ran:
			case <-wait.C:
				behind.Store(true)
				select {
				case <-ran:
				case <-time.After(time.Until(end)):
					if to.Cancel() { // or it ran; either way it has ended
						n.paceCancelled.Add(1)
					}
				}
			}
			wait.Stop()
			behind.Store(false)
			time.Sleep(time.Millisecond)
		}
	}()
	return behind, d
}

// soakBehind is how late the pacer's timeout may run before the producers
// slow down.
const soakBehind = 20 * time.Millisecond

// soakIdle is how many hour-long timeouts each churn producer keeps pending,
// as a server keeps one idle timeout per connection.
const soakIdle = 2048

// churn schedules timeouts and cancels them at once, as idle timeouts are
// (an hour), and lets a few short ones run; it keeps no record of those it
// cancelled. One in eight replaces one of its soakIdle pending ones.
func (p *soakProducer) churn() {
	if p.rng.IntN(8) == 0 {
		r := &soakRec{n: p.n, made: time.Now()}
		r.earliest.Store(soakNanos(r.made) + int64(time.Hour))
		to, err := p.tm.NewTimeout(r, time.Hour)
		p.ops++
		if err != nil {
			panic(fmt.Sprintf("soak: NewTimeout: %v", err))
		}
		r.to = to
		if len(p.idle) < soakIdle {
			p.idle = append(p.idle, r)
			if len(p.idle) == soakIdle {
				p.n.idleFull.Add(1)
			}
			return
		}
		i := p.rng.IntN(soakIdle)
		p.idle[i].cancel()
		p.ops++
		if !p.idle[i].cancelledByUs.Load() {
			p.long = append(p.long, p.idle[i]) // accounted for at the end
		}
		p.idle[i] = r
		return
	}
	r := &soakRec{n: p.n, made: time.Now()}
	d := time.Hour
	if p.rng.IntN(16) == 0 {
		d = time.Duration(p.rng.Int64N(int64(5 * time.Millisecond)))
	}
	r.earliest.Store(soakNanos(r.made) + int64(d))
	to, err := p.tm.NewTimeout(r, d)
	p.ops++
	if err != nil {
		panic(fmt.Sprintf("soak: NewTimeout: %v", err))
	}
	r.to = to
	if d == time.Hour {
		r.cancel()
		p.ops++
		if r.cancelledByUs.Load() {
			return // ended; keep no record
		}
	}
	p.recent = append(p.recent, r)
	if p.ops%512 == 0 && time.Since(p.lastSweep) > 5*time.Millisecond {
		p.sweep()
	}
}

// quiescentHeap pauses the producers, waits until the short timeouts have
// run and the worker has seen every cancellation (it unlinks a cancelled
// timeout when it counts it), drops the producers' records of what ended,
// and returns the heap in use after a full GC. It polls the timer's counters
// rather than sleeping a guess; the churn timer has no other timeouts than
// the producers' soakIdle hour-long ones left pending once it settles.
func quiescentHeap(t *testing.T, tm *hashedwheel.Timer, n *soakCounts, pause *sync.RWMutex, producers []*soakProducer) uint64 {
	pause.Lock()
	defer pause.Unlock()
	idle := 0
	for _, p := range producers {
		idle += len(p.idle)
	}
	// Settled: every run handed out has started, and the worker has seen
	// every cancellation.
	settled := func() bool {
		s := tm.Stats()
		return tm.PendingTimeouts() == int64(idle) && s.Pending == int64(idle) &&
			s.Expired == uint64(n.ran.Load()+n.paceRan.Load()) &&
			s.Cancelled == uint64(n.cancelled.Load()+n.paceCancelled.Load())
	}
	for give := time.Now().Add(10 * time.Second); !settled(); time.Sleep(time.Millisecond) {
		if time.Now().After(give) {
			s := tm.Stats()
			t.Errorf("heap read unsettled after 10s: %d pending (stats %d), want the %d idle ones; the worker saw %d cancellations of %d",
				tm.PendingTimeouts(), s.Pending, idle, s.Cancelled, n.cancelled.Load()+n.paceCancelled.Load())
			break
		}
	}
	for _, p := range producers {
		// Every record, however young (sweep looks only at those older than
		// soakSettle): once settled, all have ended but the idle ones.
		now := time.Now()
		p.recent, p.late, p.long = p.sweepList(p.recent, now), p.sweepList(p.late, now), p.sweepList(p.long, now)
		// Keep only what is needed, so that the lists' spare capacity
		// does not count as the timer's heap.
		p.recent, p.late, p.long = slices.Clone(p.recent), slices.Clone(p.late), slices.Clone(p.long)
	}
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// soakRounds makes a new timer every round, runs producers and cancellers on
// it for a few milliseconds, and stops it while they run: from the test, or
// from one of its tasks. Each round is accounted for on its own.
func soakRounds(t *testing.T, c soakConfig, d time.Duration, n *soakCounts) {
	end := time.Now().Add(d)
	for round := uint64(0); time.Now().Before(end); round++ {
		var exec soakExec
		tm, err := hashedwheel.NewTimer(c.opts(&exec)...)
		if err != nil {
			t.Fatal(err)
		}
		owner := soakOwn(tm, c.owned, nil)
		rng := rand.New(rand.NewPCG(round, uint64(time.Now().UnixNano())))
		fromTask := rng.IntN(4) == 0
		cancels := make(chan *soakRec, 256)
		var cancellers, wg sync.WaitGroup
		cancellers.Go(func() {
			for r := range cancels {
				r.cancel()
			}
		})
		producers := make([]*soakProducer, c.producers)
		for i := range producers {
			p := &soakProducer{tm: tm, n: n, rng: rand.New(rand.NewPCG(round, uint64(i))), cancels: cancels,
				periodic: true, lastSweep: time.Now()}
			producers[i] = p
			wg.Go(func() {
				for p.step(soakPlain) {
				}
			})
		}
		var stopped []*hashedwheel.Timeout
		if fromTask {
			// A task stops the timer, a few ticks in; the producers end
			// when they see it stopped. This Stop returns nil.
			stopper := &soakRec{n: &soakCounts{}, kind: soakStop}
			if _, err := tm.NewTimeout(stopper, time.Duration(rng.IntN(5000))*time.Microsecond); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			stopped = tm.Stop()
			n.ops.Add(2)
		} else {
			time.Sleep(time.Duration(rng.IntN(5000)) * time.Microsecond)
			stopped = tm.Stop()
			wg.Wait()
		}
		close(cancels)
		cancellers.Wait()
		<-owner
		exec.wg.Wait()
		for _, p := range producers {
			n.ops.Add(p.ops)
		}
		n.ops.Add(1)
		soakAccount(n, producers, stopped, fromTask || c.owned && stopped == nil)
	}
}

// soakOwn drives a Timer made WithoutWorker, if owned, as an event loop
// does: it calls Advance, then sleeps until NextDeadline, or for a tick at
// most, as what other goroutines schedule wakes nobody; it ends when Advance
// reports the Timer stopped, and closes the channel it returns. If not owned,
// that channel is closed already. Between two Advance calls it takes the
// requests of stops, if any: it stops the Timer itself and replies with what
// Stop returned.
func soakOwn(tm *hashedwheel.Timer, owned bool, stops <-chan chan<- []*hashedwheel.Timeout) <-chan struct{} {
	done := make(chan struct{})
	if !owned {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		sleep := time.NewTimer(time.Hour)
		defer sleep.Stop()
		for {
			if _, err := tm.Advance(time.Now()); err != nil {
				if !errors.Is(err, hashedwheel.ErrTimerStopped) {
					panic(fmt.Sprintf("soak: Advance: %v", err))
				}
				return
			}
			wait := time.Millisecond
			if at, ok := tm.NextDeadline(); ok {
				wait = min(wait, time.Until(at))
			}
			if wait <= 0 {
				select {
				case reply := <-stops:
					reply <- tm.Stop()
				default:
				}
				continue
			}
			sleep.Reset(wait)
			select {
			case <-sleep.C:
			case reply := <-stops:
				reply <- tm.Stop()
			}
		}
	}()
	return done
}

// soakSlots is how many reused Timeouts a reuse configuration keeps. Half of
// the producers' picks go to the first soakHotSlots, so that producers,
// tasks and Cancelled calls often act on one at once; the others spread
// over all, so that most arms live to run rather than being cancelled by
// the next call.
const (
	soakSlots    = 1024
	soakHotSlots = 16
)

// soakSlot is a Timeout the soak owns, armed again and again with Schedule
// and ScheduleAt on its round's Timers: from several producers at once, from
// inside its own runs and from inside its Cancelled calls. It outlives the rounds, so each
// round arms, on new Timers, Timeouts that the last round's ended.
//
// Any goroutine may act on to. The counters are the round's, reset between
// rounds while nothing runs.
type soakSlot struct {
	to       hashedwheel.Timeout
	notifies bool // every arm's task is a CancelledTask

	// mu guards candidates, resets and seq, the bookkeeping that gives
	// each run a bound below its arm's deadline (see soakArm.low). It is
	// never held across a call of the Timer or the Timeout.
	mu sync.Mutex
	// candidates are the arms that the latest Reset may move: those whose
	// Schedule is in flight, and those that returned nil and may be the
	// latest arm (see soakReuseRound.armWith).
	candidates []*soakArm
	// resets are the bounds of the Resets in flight: a Schedule that
	// begins meanwhile may be the arm such a Reset moves.
	resets []int64
	// seq numbers the beginnings and ends of the Schedules, in the order
	// their bookkeeping took mu.
	seq int64

	armed, runs, cancels, callbacks atomic.Int64
	inRun                           atomic.Int32 // runs going on now
}

// soakArm is one arm of a slot's Timeout, and its task.
type soakArm struct {
	s *soakSlot
	r *soakReuseRound

	// low is when the arm may run first, in soakNanos: just before its
	// Schedule plus the delay, or its ScheduleAt deadline (less
	// soakWallSlack for a wall-clock one), lowered by every Reset that may move it
	// before that Reset is called (a Reset that returns true sets a
	// deadline no sooner than its own bound). Written under s.mu.
	low atomic.Int64

	runs       atomic.Int32
	scheduling bool // its Schedule has not returned; under s.mu
	panics     bool // its task panics after what it does

	// begun and ended are s.seq as its Schedule began and as it returned
	// nil (0 before); under s.mu.
	begun, ended int64

	// how says how it was armed, for the message of a failure: with
	// Schedule, or with ScheduleAt at a deadline with a monotonic reading,
	// at one without (the wall clock), or at the latest deadline plus a
	// delay; d is the delay. Immutable.
	how string
	d   time.Duration
}

// soakArmCallback is a soakArm whose task is a CancelledTask.
type soakArmCallback struct{ *soakArm }

// soakReuseRound is a round of a reuse configuration: its Timers and
// counts.
type soakReuseRound struct {
	n      *soakCounts
	tms    []*hashedwheel.Timer
	behind *atomic.Bool // the first Timer's worker is behind (see soakPace)
	done   atomic.Bool  // the Timers are stopped: producers end

	// levels is the turn of the first Timer's wheel if the delays cross the
	// levels above it (see soakReuseRound.delay), 0 otherwise.
	levels time.Duration
}

func (a *soakArm) Run(to *hashedwheel.Timeout) {
	now := time.Now()
	s, n := a.s, a.r.n
	if s.inRun.Add(1) > 1 {
		n.overlap.Add(1)
	}
	defer s.inRun.Add(-1)
	s.runs.Add(1)
	n.ran.Add(1)
	if a.runs.Add(1) > 1 || to != &s.to { // ran twice, or got another Timeout
		n.double.Add(1)
	}
	low := a.low.Load()
	if soakNanos(now) < low {
		n.early.Add(1)
		n.note("EARLY by %v: now-Deadline() %v, how=%s d=%v, tick %v", time.Duration(low-soakNanos(now)),
			now.Sub(to.Deadline()), a.how, a.d, to.Timer().TickDuration())
	}
	late := soakNanos(now) - low
	for m := n.maxLate.Load(); late > m && !n.maxLate.CompareAndSwap(m, late); m = n.maxLate.Load() {
	}
	if time.Duration(late) > soakStuckAfter {
		n.stuck.Add(1)
	}
	// Act on its own Timeout from inside the run: it has expired, so it
	// may be armed at once (its new arm waits for this run to return), a
	// delay from now or, with ScheduleAt, from the latest arm's deadline,
	// then reset or cancelled.
	if x := rand.IntN(8); x < 4 {
		tm := to.Timer() // the latest arm's: another goroutine's, maybe
		if x == 0 {
			tm = a.r.tms[rand.IntN(len(a.r.tms))]
		}
		var err error
		if rand.IntN(3) == 0 {
			err = a.r.armAt(s, tm, to.Deadline().Add(soakReuseDelay()))
		} else {
			err = a.r.arm(s, tm, soakReuseDelay())
		}
		if err == nil {
			n.armedInRun.Add(1)
			switch rand.IntN(8) {
			case 0:
				a.r.cancel(s)
			case 1, 2:
				a.r.reset(s, a.r.delay())
			}
		}
	}
	switch x := rand.IntN(64); {
	case x < 8:
		// A run that takes a little while, so that producers arm the
		// Timeout while it is out.
		for range 1 + rand.IntN(20) {
			runtime.Gosched()
		}
	case x < 9:
		// A slow task (a blocked write, say), longer than a few ticks:
		// the arms made before it returns come due meanwhile, and wait.
		time.Sleep(time.Duration(1+rand.IntN(4)) * time.Millisecond)
	}
	if a.panics {
		n.panicked.Add(1)
		panic("soak: a task panics")
	}
}

func (c soakArmCallback) Cancelled(to *hashedwheel.Timeout) {
	c.s.callbacks.Add(1)
	c.r.n.callbacks.Add(1)
	// No Schedule could arm the Timeout until this call; from here on one
	// may, this one too.
	if rand.IntN(4) == 0 && c.r.arm(c.s, to.Timer(), c.r.delay()) == nil {
		c.r.n.armedInRun.Add(1)
	}
}

// soakReuseDelay draws a delay for an arm or a Reset: mostly a few ticks,
// sometimes zero or negative, sometimes an hour (those are cancelled, or
// returned by Stop).
func soakReuseDelay() time.Duration {
	switch x := rand.IntN(100); {
	case x < 5:
		return -time.Duration(rand.IntN(1000))
	case x < 10:
		return 0
	case x < 97:
		return time.Duration(rand.Int64N(int64(5 * time.Millisecond)))
	default:
		return time.Hour
	}
}

// soakWallSlack is how much earlier than the monotonic clock says an arm at
// a wall-clock deadline may run: the two clocks may run at rates a little
// apart (NTP slews the wall clock by up to 500 ppm), over the few
// milliseconds of a delay. The bound itself is taken from a monotonic
// reading before the wall-clock one the deadline is made from (see arm): on
// a loaded machine the wall and monotonic parts of one time.Now may be
// milliseconds apart, and ScheduleAt keeps the deadline on the wall clock.
const soakWallSlack = time.Millisecond

// arm schedules s's Timeout on tm d from now and records the arm: with
// Schedule, or with ScheduleAt at a deadline d after a reading of the clock
// (one time in three), a few of them wall-clock deadlines (without a
// monotonic reading). It returns what Schedule returned: nil, or an error
// wrapping ErrTimeoutPending (the Timeout was pending, or is still held) or
// ErrTimerStopped.
func (r *soakReuseRound) arm(s *soakSlot, tm *hashedwheel.Timer, d time.Duration) error {
	now := time.Now()
	switch x := rand.IntN(24); {
	case x < 7:
		at := now.Add(d)
		return r.armWith(s, soakNanos(at), "scheduleAt-mono", d, func(task hashedwheel.TimerTask) error {
			return tm.ScheduleAt(&s.to, task, at)
		})
	case x < 8:
		// The wall-clock reading of wall comes after the monotonic one of
		// now, whatever the order of time.Now's two readings, so the
		// deadline is no sooner than now plus d.
		at := time.Now().Round(0).Add(d)
		return r.armWith(s, soakNanos(now)+int64(d-soakWallSlack), "scheduleAt-wall", d, func(task hashedwheel.TimerTask) error {
			return tm.ScheduleAt(&s.to, task, at)
		})
	}
	return r.armWith(s, soakNanos(now)+int64(max(d, 0)), "schedule", d, func(task hashedwheel.TimerTask) error {
		return tm.Schedule(&s.to, task, d)
	})
}

// armAt schedules s's Timeout on tm at deadline with ScheduleAt, and
// records the arm, as arm does.
func (r *soakReuseRound) armAt(s *soakSlot, tm *hashedwheel.Timer, deadline time.Time) error {
	return r.armWith(s, soakNanos(deadline), "scheduleAt-deadline", time.Until(deadline), func(task hashedwheel.TimerTask) error {
		return tm.ScheduleAt(&s.to, task, deadline)
	})
}

// armWith arms s's Timeout with schedule, Schedule or ScheduleAt of it with
// the task it is given, and records the arm; low is when the arm may run
// first, in soakNanos, and how and d say how it was armed.
func (r *soakReuseRound) armWith(s *soakSlot, low int64, how string, d time.Duration,
	schedule func(hashedwheel.TimerTask) error) error {
	a := &soakArm{s: s, r: r, panics: rand.IntN(1000) == 0, how: how, d: d}
	s.mu.Lock()
	for _, b := range s.resets {
		low = min(low, b)
	}
	a.low.Store(low)
	a.scheduling = true
	s.seq++
	a.begun = s.seq
	s.candidates = append(s.candidates, a)
	s.mu.Unlock()

	var task hashedwheel.TimerTask = a
	if s.notifies {
		task = soakArmCallback{a}
	}
	err := schedule(task)
	r.n.ops.Add(1)

	s.mu.Lock()
	a.scheduling = false
	if err == nil {
		s.seq++
		a.ended = s.seq
	}
	s.candidates = soakCandidates(s.candidates, a, err == nil)
	s.mu.Unlock()

	switch {
	case err == nil:
		s.armed.Add(1)
		r.n.armed.Add(1)
	case errors.Is(err, hashedwheel.ErrTimeoutPending):
		r.n.rejected.Add(1)
	case !errors.Is(err, hashedwheel.ErrTimerStopped):
		panic(fmt.Sprintf("soak: Schedule: %v", err))
	}
	return err
}

// soakCandidates returns the arms a Reset may move once a's Schedule has
// returned (ok: nil), from those it might have moved before. A failed arm
// leaves, and nothing else changes. A successful one stays, as do the
// Schedules still in flight; of those that returned nil before, an arm
// leaves only if it returned before a's Schedule began: its arm came first,
// and had ended by the time a's came (Schedule arms only an ended Timeout),
// so no Reset moves it any more. One that returned while a's was in flight
// may have armed the Timeout after a did, and stays. Under s.mu.
func soakCandidates(candidates []*soakArm, a *soakArm, ok bool) []*soakArm {
	kept := candidates[:0]
	for _, c := range candidates {
		switch {
		case c == a:
			if ok {
				kept = append(kept, c)
			}
		case c.scheduling, !ok, c.ended > a.begun:
			kept = append(kept, c)
		}
	}
	clear(candidates[len(kept):])
	return kept
}

// reset resets s's Timeout to d from now, lowering first the bound of every
// arm it may move.
func (r *soakReuseRound) reset(s *soakSlot, d time.Duration) {
	bound := soakNanos(time.Now()) + int64(max(d, 0))
	s.mu.Lock()
	s.resets = append(s.resets, bound)
	for _, a := range s.candidates {
		a.low.Store(min(a.low.Load(), bound))
	}
	s.mu.Unlock()
	ok := s.to.Reset(d)
	s.mu.Lock()
	i := slices.Index(s.resets, bound)
	s.resets = slices.Delete(s.resets, i, i+1)
	s.mu.Unlock()
	r.n.ops.Add(1)
	r.n.resets.Add(1)
	if ok {
		r.n.resetsTrue.Add(1)
	}
}

// cancel cancels s's Timeout and records what Cancel said.
func (r *soakReuseRound) cancel(s *soakSlot) {
	r.n.ops.Add(1)
	if s.to.Cancel() {
		s.cancels.Add(1)
		r.n.cancelled.Add(1)
	}
}

// produce acts on random slots until the round's Timers are stopped, and on
// for a little while after, racing their Stop. It pauses while the worker is
// behind, as soakContinuous's producers do, and yields after each step, so
// that most arms live to run rather than ending cancelled by the next call.
func (r *soakReuseRound) produce(slots []soakSlot) {
	for ; !r.done.Load(); runtime.Gosched() {
		for r.behind.Load() && !r.done.Load() {
			time.Sleep(time.Millisecond)
		}
		s := &slots[rand.IntN(len(slots))]
		if rand.IntN(2) == 0 {
			s = &slots[rand.IntN(soakHotSlots)]
		}
		tm := r.tms[rand.IntN(len(r.tms))]
		switch x := rand.IntN(100); {
		case x < 60:
			r.arm(s, tm, r.delay())
		case x < 70:
			r.cancel(s)
		case x < 85:
			r.reset(s, r.delay())
		case x < 93:
			// Schedule and Cancel, as a request deadline is: on its own
			// Timer the Timeout stays where it is, and the next
			// Schedule there revives it in place.
			if r.arm(s, tm, time.Hour) == nil {
				r.cancel(s)
			}
		default:
			// Cancel and arm again at once: in place on its own Timer;
			// on another one, ErrTimeoutPending until its Timer has
			// taken the cancel in.
			r.cancel(s)
			r.arm(s, tm, r.delay())
		}
	}
}

// soakReuse runs a reuse configuration for d: round after round, it makes
// the configuration's Timers, races producers that schedule, cancel, reset
// and schedule again the soakSlots reused Timeouts on them (their tasks and
// Cancelled calls do too), stops the Timers while the producers go on, and
// accounts for every arm of the round.
func soakReuse(t *testing.T, c soakConfig, d time.Duration, n *soakCounts) {
	slots := make([]soakSlot, soakSlots)
	for i := range slots {
		slots[i].notifies = i%2 == 0
	}
	end := time.Now().Add(d)
	for round := 0; time.Now().Before(end); round++ {
		var exec soakExec
		r := &soakReuseRound{n: n}
		var owners []<-chan struct{}
		var stops []chan chan<- []*hashedwheel.Timeout
		for _, opts := range append([]func(*soakExec) []hashedwheel.Option{c.opts}, c.second...) {
			tm, err := hashedwheel.NewTimer(opts(&exec)...)
			if err != nil {
				t.Fatal(err)
			}
			r.tms = append(r.tms, tm)
			stops = append(stops, make(chan chan<- []*hashedwheel.Timeout))
			owners = append(owners, soakOwn(tm, c.owned, stops[len(stops)-1]))
		}
		r.levels = soakTurn(c, r.tms[0])
		for i := range slots {
			s := &slots[i]
			s.armed.Store(0)
			s.runs.Store(0)
			s.cancels.Store(0)
			s.callbacks.Store(0)
		}
		// Mostly short rounds, for Stop to race the producers often; some
		// long enough for the Timeouts to run many times. The round ends
		// when the pacer does, its last probe ended too.
		length := time.Duration(rand.IntN(40)) * time.Millisecond
		if round%8 == 7 {
			length = 250 * time.Millisecond
		}
		var pace soakCounts
		behind, paced := soakPace(r.tms[0], time.Now().Add(length), &pace)
		r.behind = behind
		var wg sync.WaitGroup
		for range c.producers {
			wg.Go(func() { r.produce(slots) })
		}
		<-paced
		stopped := make(map[*hashedwheel.Timeout]int)
		aside := c.aside
		for _, i := range rand.Perm(len(r.tms)) {
			var list []*hashedwheel.Timeout
			if c.owned && round%2 == 0 {
				// From the owner, between two Advance calls: Stop returns
				// every pending timeout.
				reply := make(chan []*hashedwheel.Timeout)
				stops[i] <- reply
				list = <-reply
			} else {
				list = r.tms[i].Stop()
				// A Stop that finds the owner inside Advance returns nil,
				// and that Advance cancels the pending timeouts as it
				// returns.
				aside = aside || c.owned && list == nil
			}
			n.ops.Add(1)
			for _, to := range list {
				stopped[to]++
			}
		}
		r.done.Store(true)
		wg.Wait()
		for _, o := range owners {
			<-o
		}
		exec.wg.Wait()
		soakReuseAccount(t, c, r, slots, stopped, aside, &pace)
	}
}

// soakReuseAccount checks a round once its Timers are stopped and every task
// and Cancelled call has returned. Every arm (a Schedule that returned nil)
// ended in exactly one of: a run, a Cancel that returned true, or among the
// timeouts that a Stop returned. But if aside, a slot's last arm may have
// ended cancelled out of Stop's reach (see soakConfig.aside; or cancelled
// by an Advance that Stop found in progress). A slot whose arms outnumber
// those ends (by more than such an arm) counts as lost, one with more ends
// than arms, or whose arm ran twice, as double. Its Cancelled calls are one
// per Cancel that returned true, and, for an arm of the executor's out of
// Stop's reach (c.aside), one more. The Timers' Stats count each run in
// Expired and each cancel, those out of reach too, in Cancelled.
func soakReuseAccount(t *testing.T, c soakConfig, r *soakReuseRound, slots []soakSlot,
	stopped map[*hashedwheel.Timeout]int, aside bool, pace *soakCounts) {
	n := r.n
	var runs, cancels, inStop, asideHere int64
	for i := range slots {
		s := &slots[i]
		armed, ran, cancelled, byStop := s.armed.Load(), s.runs.Load(), s.cancels.Load(), int64(stopped[&s.to])
		delete(stopped, &s.to)
		runs += ran
		cancels += cancelled
		inStop += byStop
		n.returned.Add(byStop)
		wantCalls := cancelled
		switch left := armed - ran - cancelled - byStop; {
		case s.inRun.Load() != 0:
			n.lost.Add(1) // a run that never returned
		case left < 0:
			n.double.Add(1)
		case left == 0:
		case left == 1 && aside && s.to.IsCancelled():
			asideHere++
			if c.aside {
				wantCalls++ // made as the run returned
			}
		default:
			n.lost.Add(1)
		}
		switch calls := s.callbacks.Load(); {
		case s.notifies && calls == wantCalls-1:
			n.uncalled.Add(1) // counted apart, and a failure all the same
			n.badCallbacks.Add(1)
		case !s.notifies && calls != 0, s.notifies && calls != wantCalls:
			n.badCallbacks.Add(1)
		}
	}
	n.aside.Add(asideHere)
	// Stop returned only the slots' Timeouts: the pacer's last probe had
	// ended before the round did.
	n.double.Add(int64(len(stopped)))
	// The pacer's probes ran, or it cancelled them.
	expired, cancelled := -pace.paceRan.Load(), -pace.paceCancelled.Load()
	for _, tm := range r.tms {
		s := tm.Stats()
		expired += int64(s.Expired)
		cancelled += int64(s.Cancelled)
	}
	if expired != runs || cancelled != cancels+inStop+asideHere {
		t.Errorf("%s: Stats say %d expired and %d cancelled; the tasks ran %d times, Cancel returned true %d times, "+
			"Stop returned %d and %d ended cancelled aside", c.name, expired, cancelled, runs, cancels, inStop, asideHere)
	}
}

// soakTurn returns the turn of tm's wheel (its buckets times the 1ms tick
// of soakBaseOpts) for a configuration whose delays cross the levels above
// it, 0 for the others.
func soakTurn(c soakConfig, tm *hashedwheel.Timer) time.Duration {
	if !c.levels {
		return 0
	}
	return time.Duration(tm.TicksPerWheel()) * time.Millisecond
}

// soakRand is what the delays draw from: a producer's generator, or the
// global one (soakGlobalRand).
type soakRand interface {
	IntN(n int) int
	Int64N(n int64) int64
}

// soakGlobalRand draws from math/rand/v2's global generator.
type soakGlobalRand struct{}

func (soakGlobalRand) IntN(n int) int       { return rand.IntN(n) }
func (soakGlobalRand) Int64N(n int64) int64 { return rand.Int64N(n) }

// soakLevelDelay draws a delay that crosses the levels above a wheel whose
// turn is turn. Level j >= 1 has 64 slots, each turn*64^(j-1) wide, and a
// timeout due beyond a turn waits in the slot of its deadline in the lowest
// level whose span holds it, until the worker moves it down at the slot's
// start: on the wheels of 1 to 4 buckets of the levels configurations,
// slots of level 1 start every 1-4ms, of level 2 every 64-256ms, of level 3
// every 4-16s. The delays are mostly within a few of a level's spans, many
// at or a tick or a nanosecond from a level's span or from k of its slots,
// so that timeouts are due, cancelled and reset as their slots come up;
// some an hour, a day, a year or saturated, which are cancelled, or
// returned by Stop.
func soakLevelDelay(rng soakRand, turn time.Duration) time.Duration {
	span := func(j int) time.Duration { // of level j, turn for j = 0
		s := turn
		for range j {
			s *= 64
		}
		return s
	}
	switch x := rng.IntN(100); {
	case x < 5:
		return -time.Duration(rng.IntN(1000))
	case x < 10:
		return 0
	case x < 20:
		return time.Duration(rng.Int64N(int64(2 * turn)))
	case x < 40:
		return time.Duration(rng.Int64N(int64(span(1))))
	case x < 55:
		return time.Duration(rng.Int64N(int64(min(span(2), 2*time.Second))))
	case x < 80:
		// At a level's span or k of its slots, or next to it.
		j := rng.IntN(3)
		d := span(j)
		if k := rng.IntN(4); k > 0 && j > 0 {
			d = span(j-1) * time.Duration(k*rng.IntN(16)+1)
		}
		return d + [...]time.Duration{0, time.Millisecond, -time.Millisecond, 1, -1}[rng.IntN(5)]
	case x < 88:
		return time.Hour
	case x < 94:
		return 24 * time.Hour
	case x < 98:
		return 365 * 24 * time.Hour
	default:
		return math.MaxInt64
	}
}

// soakLevelPeriod draws the period of a periodic timeout whose runs are due
// beyond a turn of the wheel: about a level 1 span (64 turns), a tick either
// side or a third of one more, so that each is re-armed into a level and
// moved down from there.
func soakLevelPeriod(rng soakRand, turn time.Duration) time.Duration {
	return 64*turn + [...]time.Duration{0, time.Millisecond, -time.Millisecond, time.Millisecond / 3}[rng.IntN(4)]
}

// soakHoldEvery is how often the first producer of a levels configuration
// schedules a task that holds its goroutine for soakHoldFor: the worker (or
// the owner, or a pool goroutine) then misses the starts of the slots of
// level 1, and of level 2 now and then, and catches up across them.
const soakHoldEvery = 250 * time.Millisecond

// soakHoldFor draws how long a soakHold task holds its goroutine.
func soakHoldFor() time.Duration {
	return time.Duration(10+rand.IntN(290)) * time.Millisecond
}

// delay draws the delay of an arm or a Reset: soakReuseDelay's, or, if the
// round's delays cross the levels, half of the time soakLevelDelay's.
func (r *soakReuseRound) delay() time.Duration {
	if r.levels > 0 && rand.IntN(2) == 0 {
		return soakLevelDelay(soakGlobalRand{}, r.levels)
	}
	return soakReuseDelay()
}

// TestSoakBookkeepingKeepsEveryArmThatMayBeTheLatest: the soak's own
// bookkeeping of which arms a Reset may move. An arm a2 whose Schedule has
// returned nil, but whose bookkeeping comes after another goroutine's arm a3
// began and returned nil too (a2 ended in between, and a3 armed the Timeout
// again), must leave a3 among those a Reset may move: a3 may be the latest
// arm. Dropped, a Reset of a3 to a few milliseconds left its bound an hour
// ahead, and its run counted as an hour early (on 8a73234: "EARLY by
// 59m59.956605139s ... how=scheduleAt-mono d=1h0m0s").
func TestSoakBookkeepingKeepsEveryArmThatMayBeTheLatest(t *testing.T) {
	var s soakSlot
	r := &soakReuseRound{n: &soakCounts{}}
	hour := soakNanos(time.Now().Add(time.Hour))
	var a3 *soakArm
	err := r.armWith(&s, hour, "scheduleAt-mono", time.Hour, func(hashedwheel.TimerTask) error {
		// a2's Schedule has armed the Timeout; before its bookkeeping,
		// a2 ends, and a3 is armed and done.
		return r.armWith(&s, hour, "scheduleAt-mono", time.Hour, func(task hashedwheel.TimerTask) error {
			a3 = task.(*soakArm)
			return nil
		})
	})
	if err != nil || a3 == nil {
		t.Fatalf("armWith: %v, a3 %v", err, a3)
	}
	r.reset(&s, 0)
	if a3.low.Load() >= hour {
		t.Errorf("a Reset left the bound of an arm it may move an hour ahead")
	}

	// An arm done before another began is not the latest: it leaves.
	if err := r.armWith(&s, hour, "schedule", time.Hour, func(hashedwheel.TimerTask) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if len(s.candidates) != 1 {
		t.Errorf("%d candidates once one arm followed another, want 1", len(s.candidates))
	}
}
