package hashedwheel

import (
	"log/slog"
	"math"
	"math/bits"
	"runtime"
	"time"
)

// Worker states. The state moves init→started→shutdown or init→shutdown, and
// never back.
const (
	stateInit int32 = iota
	stateStarted
	stateShutdown
)

// Timer schedules tasks to run after a delay, on a hashed wheel. Its methods
// are safe for concurrent use by any number of goroutines. Make one with
// [NewTimer], share it, and [Timer.Stop] it when done. See the example of
// NewTimer.
type Timer struct {
	// Many goroutines produce timeouts (NewTimeout, AfterFunc, Every,
	// Schedule, ScheduleAt, Cancel, Reset); one goroutine turns the wheel
	// and hands out the tasks: the worker, started by Start or the first
	// call that schedules, or, on a Timer made WithoutWorker, whichever
	// goroutine holds own.advancing. Producers never touch the wheel: they
	// hand timeouts over through lock-free queues, new timeouts (and
	// periodic ones back from a run) through the shards' queues, timeouts in
	// a bucket that were cancelled or reset earlier through changes. The
	// fields are grouped by who writes them.

	// conf is the configuration: immutable after NewTimer.
	conf settings

	// life is the Timer's start and stop, shared through atomics and
	// channels.
	life lifecycle

	// wake is how producers wake the worker, shared through atomics and a
	// channel.
	wake wakeSignals

	// wheel is the wheel and the state of the goroutine that turns it: no
	// other goroutine reads or writes it, but for the length of its buckets,
	// set by NewTimer (and nil on a Timer that NewTimer did not make).
	wheel wheel

	// own is the token that the goroutine turning an owned Timer's wheel
	// holds, and that goroutine's own state.
	own ownerState

	// published is what Stats reads: the worker's counters, copied with
	// atomic stores.
	published publishedCounters

	// shards hold the new timeouts until the worker moves them into buckets,
	// and count the pending ones. Any goroutine pushes; the worker pops.
	shards [shardCount]shard

	// changes holds timeouts in buckets that the worker has to look at
	// again: cancelled ones to unlink, and ones Reset to a deadline before
	// their check tick to move. A timeout is in it at most once (its state
	// says heldBucketAndChanges or heldChanges while it is). Any goroutine
	// pushes; the worker pops.
	changes mpscQueue

	// instance counts the timer among the live ones until Stop; nil for a
	// Timer made WithoutWorker, which has no goroutine to leak.
	instance *instance
}

// settings is a Timer's configuration, set by NewTimer and immutable after:
// any goroutine reads it.
type settings struct {
	tickDuration       int64 // nanoseconds, at least minTickDuration
	mask               int64 // len(wheel.buckets) - 1
	wheelBits          uint  // log2(len(wheel.buckets))
	maxPendingTimeouts int64 // <= 0: unlimited
	taskExecutor       func(task func())
	logger             *slog.Logger
	pool               *taskPool // nil unless WithTaskWorkers

	// owned is set for a Timer made WithoutWorker: its owner drives it with
	// Advance, and no worker goroutine runs.
	owned bool

	// createdOnFakeClock records whether NewTimer ran inside a
	// testing/synctest bubble, whose clock has no monotonic reading.
	createdOnFakeClock bool
}

// lifecycle is a Timer's start and stop. Any goroutine reads it.
type lifecycle struct {
	// mu serialises Start with itself.
	mu mutex

	// startTime is the zero of every deadline. It is written once, under
	// mu, before state becomes stateStarted (by NewTimer for an owned
	// Timer); it is read only by goroutines that have seen stateStarted,
	// or that hold a Timeout.
	startTime time.Time

	// state is stateInit, stateStarted or stateShutdown; changed only by
	// CompareAndSwap.
	state atomicInt32

	// clockSeen is a recent reading of the real clock, in nanoseconds
	// since startTime, that elapsed checked was not a bubble's. Any
	// goroutine that reads the Timer's clock; atomic, and no point of the
	// explorer (see atomicClockInt64).
	clockSeen atomicClockInt64

	// workerID is the worker goroutine's ID, so that Stop can tell it is
	// called from a task on the worker. Written by the worker as it starts;
	// atomic.
	workerID atomicUint64

	// stopped is closed by the Stop that moves state to stateShutdown.
	stopped chan struct{}

	// done is closed by the worker when it exits, after it has written
	// unprocessed, or by a Stop that finds the worker never started.
	done chan struct{}

	// unprocessed holds the timeouts cancelled by the stop. Written by the
	// worker (or the owner) before done is closed, or under own.advancing;
	// read by Stop after.
	unprocessed []*Timeout
}

// wakeSignals is how producers wake the worker: when it sleeps past the next
// tick, and when it is late to take new timeouts. Written by the worker and
// by producers, with atomics; the channel's sends never block.
type wakeSignals struct {
	// sleeping is set by the worker while it sleeps longer than one tick,
	// parks with an empty wheel, or, stopping, waits for the pool (see
	// waitForPool). A producer that pushes to a queue and sees it
	// set wakes the worker. The worker sets it before it checks the queues
	// are empty, and producers push before they check it: with sequentially
	// consistent atomics at least one side sees the other.
	sleeping atomicBool

	// kickAt is when, in nanoseconds since startTime, a producer that
	// pushes a new timeout kicks the worker (see nudgeWorker and
	// kickWorker): kickAfter after the worker last took new timeouts, plus
	// a tick unless it took many. Written by the worker each time it takes
	// them.
	kickAt atomicInt64

	// kicked is set by the producer that kicks the worker, so that only one
	// does, and cleared by the worker when it next takes new timeouts.
	//
	// kickAt and kicked are hints, and need no ordering: a kick that is
	// lost or comes late delays only an early drain. No timeout waits on
	// them: the worker takes new timeouts at every tick, and sleeping
	// covers longer sleeps.
	kicked atomicBool

	// ch carries a wake-up to a sleeping worker. Buffer of one.
	ch chan struct{}
}

// wheel is the wheel of buckets and what the goroutine that turns it keeps:
// the worker, or the goroutine that holds an owned Timer's own.advancing
// (taking the token orders each holder's writes before the next holder's
// reads). No other goroutine reads or writes it, except the buckets slice
// itself, which NewTimer sets and any goroutine may test for nil or take the
// length of.
type wheel struct {
	// buckets is the array of buckets, a power of two long.
	buckets []bucket

	// occupied is the set of non-empty buckets.
	occupied occupancy

	// levels are the levels above the buckets, for timeouts due beyond a
	// turn of the wheel (see checktick.go): level k is levels[k-1], made
	// when a timeout first goes there.
	levels [maxLevels]*level

	// running lists the periodic timeouts whose run has been handed out and
	// has not come back yet, so that Stop can return them.
	running bucket

	// counters are the statistics, copied to Timer.published after each
	// tick and before the worker blocks (and Expired before each hand-out).
	counters counters

	// scanned counts the buckets nextDueTick looked at, and walked the
	// bucket walks of expireTimeouts, for tests.
	scanned, walked uint64

	// tick counts the ticks since startTime: the worker is processing, or
	// waiting to process, tick number tick, which covers the deadlines in
	// [tick*tickDuration, (tick+1)*tickDuration).
	tick int64

	// clockTick is the tick the clock was in when the worker started its
	// tick (or, for an owned Timer, the tick of the now given to Advance):
	// ticks before it have ended. It runs ahead of tick while the worker
	// catches up; timeouts due by it are then placed at their deadline's
	// tick, not through the levels (see checkTickOf).
	clockTick int64

	// transferBudget is how many more new timeouts the worker may take from
	// the queue before tick ends: maxTransfersPerTick at the start of each
	// tick.
	transferBudget int

	// drainInterval is how long, in nanoseconds, the worker waits between
	// early drains of the queues (see drainBatch).
	drainInterval int64

	// nextShard is the shard whose queue the worker drains first next time.
	nextShard int

	// cleanUp is how far the clean-up of a stopped Timer has gone (see
	// shutdown). From cleanUpCollecting on, the Cancelled calls owed go to
	// calls, made after the state changes of the phase that owes them.
	cleanUp cleanUpPhase

	// calls are the Timeouts whose Cancelled call the clean-up owes.
	calls []*Timeout
}

// cleanUpPhase is how far the clean-up of a stopped Timer has gone.
type cleanUpPhase uint8

const (
	cleanUpNotStarted cleanUpPhase = iota
	cleanUpCollecting              // cancelling what is pending
	cleanUpCollected               // done; waiting for the pool, closing the queues
	cleanUpDone                    // pending timeouts cancelled, queues closed
)

// ownerState is what an owned Timer (made WithoutWorker) keeps for its
// owner: the token and the owner's reading of time.
type ownerState struct {
	// advancing is held by the goroutine that plays the worker of an owned
	// Timer: Advance, NextDeadline, or a Stop that collects the pending
	// timeouts. Taken by CompareAndSwap; whoever holds it may touch the
	// fields below and Timer.wheel.
	advancing atomicBool

	// lastNow is the latest time, in nanoseconds since startTime, that an
	// owner gave Advance.
	lastNow int64

	// nextDueAt is when, at the earliest, something in the wheel may come
	// due, in nanoseconds since startTime: the end of the first tick whose
	// bucket may hold a due timeout, or math.MaxInt64 if none may. A lower
	// bound, exact after each Advance that processed ticks.
	nextDueAt int64
}

// NewTimer returns a Timer with the given options. The worker goroutine
// starts with Start or with the first call that schedules. A Timer is meant
// to live as long as the program or the subsystem that uses it: it costs far
// more to make than the timeouts it is for (its wheel, 12 KiB by default, and
// its goroutine), and its worker goroutine runs until Stop, so a Timer
// dropped without Stop leaks that goroutine.
//
// A Timer created inside a testing/synctest bubble runs on the bubble's fake
// clock: create, start, use and stop it inside that one bubble. Used across a
// bubble's border (a package-level Timer in a synctest test, say), it fails
// with [ErrClockMismatch] rather than keep deadlines decades off, and Reset
// returns false.
//
// An invalid option makes NewTimer return a nil Timer and an error naming the
// option and the value it got. See the example of NewTimer.
func NewTimer(opts ...Option) (*Timer, error) {
	c, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if !canReadGoroutineIDs() {
		return nil, errGoroutineIDs
	}
	now := time.Now()
	t := &Timer{
		conf: settings{
			tickDuration:       int64(c.tickDuration),
			mask:               int64(c.ticksPerWheel - 1),
			wheelBits:          uint(bits.TrailingZeros(uint(c.ticksPerWheel))),
			maxPendingTimeouts: c.maxPendingTimeouts,
			taskExecutor:       c.taskExecutor,
			logger:             c.logger,
			createdOnFakeClock: isFakeClock(now),
		},
		life: lifecycle{
			stopped: make(chan struct{}),
			done:    make(chan struct{}),
		},
		wake: wakeSignals{ch: make(chan struct{}, 1)},
		wheel: wheel{
			buckets:        newBuckets(c.ticksPerWheel),
			occupied:       newOccupancy(c.ticksPerWheel),
			transferBudget: maxTransfersPerTick,
			drainInterval:  int64(c.tickDuration),
		},
	}
	if c.taskWorkers > 0 {
		t.conf.pool = newTaskPool(t, c.taskWorkers)
	}
	for i := range t.shards {
		t.shards[i].timeouts.dropsCancelled = true
	}
	if c.withoutWorker {
		// Its owner's clock starts now; nobody is ever kicked.
		t.conf.owned = true
		t.life.startTime = now
		t.own.nextDueAt = math.MaxInt64
		t.wake.kickAt.Store(math.MaxInt64)
		t.life.state.Store(stateStarted)
	} else {
		// The worker takes new timeouts as soon as it starts.
		t.wake.kickAt.Store(t.conf.tickDuration)
	}
	if !c.withoutWorker {
		t.instance = newInstance(c.logger)
		// A timer dropped without Stop stops counting as live once
		// collected. A started timer is never collected: its worker
		// refers to it.
		runtime.AddCleanup(t, (*instance).release, t.instance)
	}
	return t, nil
}

// TickDuration returns the tick duration in effect, after raising values under
// 1ms. See the example of [NewTimer].
func (t *Timer) TickDuration() time.Duration { return time.Duration(t.conf.tickDuration) }

// TicksPerWheel returns the number of buckets in the wheel, after rounding up
// to a power of two. See the example of [NewTimer].
func (t *Timer) TicksPerWheel() int { return len(t.wheel.buckets) }

// Start starts the worker goroutine (and the [WithTaskWorkers] pool), if it is
// not running yet. Calling it is optional: every call that schedules starts
// the worker when needed. Start returns [ErrTimerStopped] if the timer was
// stopped, [ErrNotCreated] on a Timer that [NewTimer] did not make, and
// [ErrClockMismatch] if the Timer was created outside the testing/synctest
// bubble it is started in, or inside one and started outside it. See the
// example of NewTimer, which leaves starting to the first call that schedules.
func (t *Timer) Start() error {
	if t.wheel.buckets == nil {
		return ErrNotCreated
	}
	switch t.life.state.Load() {
	case stateStarted:
		return nil
	case stateShutdown:
		return ErrTimerStopped
	}
	t.life.mu.Lock()
	defer t.life.mu.Unlock()
	if t.life.state.Load() == stateInit {
		now := time.Now()
		if isFakeClock(now) != t.conf.createdOnFakeClock {
			return ErrClockMismatch
		}
		t.life.startTime = now
		if t.life.state.CompareAndSwap(stateInit, stateStarted) {
			if t.conf.pool != nil {
				t.conf.pool.start()
			}
			go t.run()
		}
	}
	if t.life.state.Load() == stateShutdown {
		return ErrTimerStopped
	}
	return nil
}

// isFakeClock reports whether now was read inside a testing/synctest bubble,
// whose clock has no monotonic reading; the real clock always has one.
func isFakeClock(now time.Time) bool { return now == now.Round(0) }

// elapsed returns the nanoseconds since the timer started, on its clock: the
// monotonic clock, or a synctest bubble's fake one. It is negative when the
// caller reads another clock than the timer's: a timer of the real clock
// read inside a bubble sees the bubble's clock, which has no monotonic
// reading; one of a bubble read outside it sees a reading with one.
func (t *Timer) elapsed() int64 {
	if t.conf.createdOnFakeClock {
		now := time.Now()
		if !isFakeClock(now) {
			return -1
		}
		return int64(now.Sub(t.life.startTime))
	}
	// time.Since reads the monotonic clock alone, about half the cost of
	// time.Now, but inside a bubble it returns the difference of the fake
	// wall clock and the start's: negative until the fake clock passes the
	// real start, anything after. A reading less than a millisecond after
	// the latest one checked comes from the real clock; any other is
	// checked with time.Now, whose reading tells a bubble's clock (see
	// isFakeClock). So a bubble is told every time, but for a fake clock
	// within a millisecond of the real clock's latest checked reading.
	d := int64(time.Since(t.life.startTime))
	if seen := t.life.clockSeen.Load(); d < seen || d-seen >= int64(time.Millisecond) {
		return t.checkedElapsed()
	}
	return d
}

// checkedElapsed is elapsed for a Timer of the real clock, from a reading
// of time.Now: -1 inside a bubble. It records a real reading in clockSeen.
func (t *Timer) checkedElapsed() int64 {
	now := time.Now()
	if isFakeClock(now) {
		return -1
	}
	d := int64(now.Sub(t.life.startTime))
	t.life.clockSeen.Store(d)
	return d
}

// PendingTimeouts returns the number of timeouts scheduled that have neither
// expired nor been cancelled. It is 0 after [Timer.Stop]. See the example of
// [Timeout.Cancel].
func (t *Timer) PendingTimeouts() int64 {
	if t.wheel.buckets == nil || t.isStopped() {
		return 0
	}
	var n int64
	for i := range t.shards {
		n += t.shards[i].pending().Load()
	}
	return n
}

func (t *Timer) isStopped() bool { return t.life.state.Load() == stateShutdown }
