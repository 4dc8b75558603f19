// Package hashedwheel is a timer for very many approximate timeouts: a Go port
// of Netty's HashedWheelTimer.
//
// Scheduling and cancelling a timeout are O(1) and allocate one small object.
// All tasks run on one worker goroutine per Timer, or through an executor you
// supply, instead of a goroutine per timer as with time.AfterFunc.
//
// # Tick duration
//
// The timer is approximate: it does not run a task at its deadline but at the
// first tick at or after it. A task never runs early and, on an idle machine,
// runs at most about one tick late. Smaller ticks are more precise and wake
// the worker more often. In most network programs I/O timeouts need not be
// precise, so the default tick is 100ms. Ticks under 1ms are raised to 1ms.
//
// # Ticks per wheel (wheel size)
//
// A Timer keeps a wheel: a hash table of timeouts whose hash is the tick of
// their deadline. Each tick the worker walks one bucket, including the
// timeouts in it that are due in a later turn of the wheel. The default wheel
// has 512 buckets; give it more if you schedule very many long timeouts.
//
// # Do not create many instances
//
// Each started Timer has a worker goroutine and a wheel. Create one and share
// it across your program; creating one per connection or request defeats its
// purpose. More than 64 live timers in one process logs a warning.
//
// # Implementation
//
// The design is George Varghese and Tony Lauck's, "Hashed and Hierarchical
// Timing Wheels: Data Structures for the Efficient Implementation of a Timer
// Facility" (scheme 6, the hashed wheel with unsorted lists), as Netty's
// HashedWheelTimer implements it. New timeouts go into a lock-free queue; on
// each tick the worker moves up to 100,000 of them into buckets, and runs the
// tasks of the current bucket whose deadline is before the end of the tick:
// exactly those whose remaining rounds Netty would find at zero. Comparing
// deadlines instead of counting rounds down lets the worker skip visits: it
// parks when there is nothing to do and sleeps through ticks at which nothing
// is due, so an idle Timer costs no CPU.
//
// # Jobs
//
// Beyond Netty's one-shot timeouts, Timeout.Reset re-arms an idle deadline
// without allocating, Timer.Every and Timer.NewPeriodicTimeout run heartbeats
// that do not drift, CancelledTask tells a task it was cancelled,
// WithTaskWorkers runs tasks on a pool so a slow one delays only itself,
// Timer.Stats reports what the worker did, and Timer.WithTimeout and
// Timer.WithDeadline keep request deadlines as a context.Context.
package hashedwheel

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// ErrTimerStopped is returned by Start, NewTimeout and AfterFunc after the
// timer was stopped.
var ErrTimerStopped = errors.New("hashedwheel: timer stopped")

// ErrTooManyPendingTimeouts is returned, wrapped with the counts, by
// NewTimeout and AfterFunc when the timer already holds its
// WithMaxPendingTimeouts limit.
var ErrTooManyPendingTimeouts = errors.New("hashedwheel: too many pending timeouts")

// ErrNilTask is returned by NewTimeout and NewPeriodicTimeout with a nil task
// and by AfterFunc and Every with a nil function.
var ErrNilTask = errors.New("hashedwheel: nil task")

// ErrInvalidPeriod is returned, wrapped with the period, by NewPeriodicTimeout
// and Every when the period is not positive.
var ErrInvalidPeriod = errors.New("hashedwheel: invalid period")

// ErrNotCreated is returned by Start, NewTimeout, AfterFunc,
// NewPeriodicTimeout and Every on a Timer that NewTimer did not make, such as
// the zero value.
var ErrNotCreated = errors.New("hashedwheel: Timer not created by NewTimer; " +
	"use hashedwheel.NewTimer, not a zero Timer value")

// ErrClockMismatch is returned by Start, NewTimeout, AfterFunc,
// NewPeriodicTimeout and Every when a Timer is used with another clock than
// the one it was created or started on: a testing/synctest bubble's fake
// clock and the real one. Its deadlines would be decades off. Create, start,
// use and stop a Timer inside the one bubble that uses it, or outside any.
var ErrClockMismatch = errors.New("hashedwheel: Timer used with another clock than it was " +
	"created or started on (a testing/synctest bubble and outside it); " +
	"create, start and use a Timer inside the one bubble that uses it")

// errGoroutineIDs is returned by NewTimer if this Go release writes stack
// traces in a form the package cannot read goroutine IDs from: Stop would
// then deadlock when called from a task. It is a bug to report.
var errGoroutineIDs = errors.New("hashedwheel: cannot read goroutine IDs from runtime.Stack " +
	"in this Go release, so Stop could not tell a call from a task; please report this bug")

// Worker states. The state moves init→started→shutdown or init→shutdown, and
// never back.
const (
	stateInit int32 = iota
	stateStarted
	stateShutdown
)

// maxTransfersPerTick bounds how many new timeouts the worker moves into
// buckets in one tick, so that goroutines calling NewTimeout in a loop cannot
// keep it from expiring timeouts.
const maxTransfersPerTick = 100_000

// Timer schedules tasks to run after a delay, on a hashed wheel. Its methods
// are safe for concurrent use by any number of goroutines.
//
// Many goroutines produce timeouts (NewTimeout, AfterFunc, Every, Cancel,
// Reset); one worker goroutine, started by Start or the first NewTimeout, owns
// the wheel and hands out the tasks. Producers never touch the wheel: they
// hand timeouts to the worker through lock-free queues: new timeouts (and
// periodic ones back from a run) through the queues of the shards, timeouts
// in a bucket that were cancelled or reset earlier through one more.
type Timer struct {
	// Configuration, immutable after NewTimer.
	tickDuration       int64 // nanoseconds, at least minTickDuration
	mask               int64 // len(wheel) - 1
	maxPendingTimeouts int64 // <= 0: unlimited
	taskExecutor       func(task func())
	logger             *slog.Logger
	pool               *taskPool // nil unless WithTaskWorkers

	// createdOnFakeClock records whether NewTimer ran inside a
	// testing/synctest bubble, whose clock has no monotonic reading.
	// Immutable.
	createdOnFakeClock bool

	// wheel is the array of buckets, a power of two long. Worker only.
	wheel []bucket

	// occupied is the set of non-empty buckets. Worker only.
	occupied occupancy

	// running lists the periodic timeouts whose run has been handed out and
	// has not come back yet, so that Stop can return them. Worker only.
	running bucket

	// counters are the worker's statistics, copied to published before it
	// blocks. Worker only.
	counters counters

	// published is what Stats reads. Written by the worker; atomic.
	published publishedCounters

	// scanned counts the buckets nextDueTick looked at, for tests. Worker
	// only.
	scanned uint64

	// tick counts the ticks since startTime: the worker is processing, or
	// waiting to process, tick number tick, which covers the deadlines in
	// [tick*tickDuration, (tick+1)*tickDuration). Worker only.
	tick int64

	// transferBudget is how many more new timeouts the worker may take from
	// the queue before tick ends: maxTransfersPerTick at the start of each
	// tick. Worker only.
	transferBudget int

	// drainInterval is how long, in nanoseconds, the worker waits between
	// early drains of the queues (see drainBatch). Worker only.
	drainInterval int64

	// nextShard is the shard whose queue the worker drains first next time.
	// Worker only.
	nextShard int

	// startMu serialises Start with itself.
	startMu sync.Mutex

	// startTime is the zero of every deadline. It is written once, under
	// startMu, before state becomes stateStarted; it is read only by
	// goroutines that have seen stateStarted, or that hold a Timeout.
	startTime time.Time

	// state is stateInit, stateStarted or stateShutdown. Any goroutine;
	// changed only by CompareAndSwap.
	state atomic.Int32

	// workerID is the worker goroutine's ID, so that Stop can tell it is
	// called from a task on the worker. Written by the worker as it starts.
	workerID atomic.Uint64

	// sleeping is set by the worker while it sleeps longer than one tick, or
	// parks with an empty wheel. A producer that pushes to a queue and sees it
	// set wakes the worker. The worker sets it before it checks the queues
	// are empty, and producers push before they check it: with sequentially
	// consistent atomics at least one side sees the other.
	sleeping atomic.Bool

	// kickAt is when, in nanoseconds since startTime, a producer that
	// pushes a new timeout kicks the worker (see scheduleTimeout and
	// kickWorker): kickAfter after the worker last took new timeouts, plus
	// a tick unless it took many. Written by the worker each time it takes
	// them.
	kickAt atomic.Int64

	// kicked is set by the producer that kicks the worker, so that only one
	// does, and cleared by the worker when it next takes new timeouts.
	//
	// kickAt and kicked are hints, and need no ordering: a kick that is
	// lost or comes late delays only an early drain. No timeout waits on
	// them: the worker takes new timeouts at every tick, and sleeping
	// covers longer sleeps.
	kicked atomic.Bool

	// wake carries a wake-up to a sleeping worker. Buffer of one; sends never
	// block.
	wake chan struct{}

	// stopped is closed by the Stop that moves state to stateShutdown.
	stopped chan struct{}

	// done is closed by the worker when it exits, after it has written
	// unprocessed, or by a Stop that finds the worker never started.
	done chan struct{}

	// unprocessed holds the timeouts the worker cancelled on its way out.
	// Written by the worker before done is closed; read by Stop after.
	unprocessed []*Timeout

	// shards hold the new timeouts until the worker moves them into buckets,
	// and count the pending ones.
	shards [shardCount]shard

	// changes holds timeouts in buckets that the worker has to look at
	// again: cancelled ones to unlink, and ones Reset to an earlier
	// deadline to move. A timeout is in it at most once (stQueued).
	changes mpscQueue

	// instance counts the timer among the live ones until Stop.
	instance *instance
}

// NewTimer returns a Timer with the given options. The worker goroutine
// starts with Start or with the first NewTimeout or AfterFunc.
//
// A Timer created inside a testing/synctest bubble runs on the bubble's fake
// clock. Create, start, use and stop it inside that one bubble: its worker
// waits on channels that belong to the bubble it was created in. A Timer
// created or started outside a bubble and used inside one (a package-level
// Timer in a synctest test, say), or one of a bubble used outside it, fails
// with ErrClockMismatch rather than keep deadlines decades off; Reset returns
// false there.
//
// A Timer is meant to live as long as the program or the subsystem that uses
// it: its worker goroutine runs until Stop, so a Timer dropped without Stop
// leaks that goroutine.
//
// An invalid option makes NewTimer return a nil Timer and an error naming the
// option and the value it got.
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
		tickDuration:       int64(c.tickDuration),
		mask:               int64(c.ticksPerWheel - 1),
		maxPendingTimeouts: c.maxPendingTimeouts,
		taskExecutor:       c.taskExecutor,
		logger:             c.logger,
		createdOnFakeClock: isFakeClock(now),
		wheel:              newWheel(c.ticksPerWheel),
		occupied:           newOccupancy(c.ticksPerWheel),
		transferBudget:     maxTransfersPerTick,
		drainInterval:      int64(c.tickDuration),
		wake:               make(chan struct{}, 1),
		stopped:            make(chan struct{}),
		done:               make(chan struct{}),
		instance:           newInstance(c.logger),
	}
	if c.taskWorkers > 0 {
		t.pool = newTaskPool(t, c.taskWorkers)
	}
	for i := range t.shards {
		t.shards[i].timeouts.dropsCancelled = true
	}
	// The worker takes new timeouts as soon as it starts.
	t.kickAt.Store(t.tickDuration)
	// A timer dropped without Stop stops counting as live once collected. A
	// started timer is never collected: its worker refers to it.
	runtime.AddCleanup(t, (*instance).release, t.instance)
	return t, nil
}

// TickDuration returns the tick duration in effect, after raising values
// under 1ms.
func (t *Timer) TickDuration() time.Duration { return time.Duration(t.tickDuration) }

// TicksPerWheel returns the number of buckets in the wheel, after rounding up
// to a power of two.
func (t *Timer) TicksPerWheel() int { return len(t.wheel) }

// Start starts the worker goroutine (and the WithTaskWorkers pool), if it is
// not running yet. Calling it is optional: NewTimeout and AfterFunc start the
// worker when needed, and so do Every, NewPeriodicTimeout, WithTimeout and
// WithDeadline. Start returns ErrTimerStopped if the timer was stopped,
// ErrNotCreated on a Timer that NewTimer did not make, and ErrClockMismatch
// if the Timer was created outside the testing/synctest bubble it is started
// in, or inside one and started outside it.
func (t *Timer) Start() error {
	if t.wheel == nil {
		return ErrNotCreated
	}
	switch t.state.Load() {
	case stateStarted:
		return nil
	case stateShutdown:
		return ErrTimerStopped
	}
	t.startMu.Lock()
	defer t.startMu.Unlock()
	if t.state.Load() == stateInit {
		now := time.Now()
		if isFakeClock(now) != t.createdOnFakeClock {
			return ErrClockMismatch
		}
		t.startTime = now
		if t.state.CompareAndSwap(stateInit, stateStarted) {
			if t.pool != nil {
				t.pool.start()
			}
			go t.run()
		}
	}
	if t.state.Load() == stateShutdown {
		return ErrTimerStopped
	}
	return nil
}

// NewTimeout schedules task to run once, after delay. A delay of zero or less
// runs it at the next tick; a delay too large to represent saturates, and the
// task never runs. The task runs on the worker goroutine, on the
// WithTaskWorkers pool or through the WithTaskExecutor executor, at the first
// tick at or after the deadline.
//
// NewTimeout returns ErrNilTask for a nil task, ErrTimerStopped after Stop,
// an error wrapping ErrTooManyPendingTimeouts when the timer holds its
// WithMaxPendingTimeouts limit, and the errors of Start: ErrNotCreated, and
// ErrClockMismatch for a Timer used with another clock than its own (see
// NewTimer).
func (t *Timer) NewTimeout(task TimerTask, delay time.Duration) (*Timeout, error) {
	if isNilTask(task) {
		return nil, ErrNilTask
	}
	to := &Timeout{timer: t, task: task}
	if err := t.scheduleTimeout(to, delay); err != nil {
		return nil, err
	}
	return to, nil
}

// AfterFunc schedules f to run once, after delay, like NewTimeout. The
// returned Timeout's Task calls f.
func (t *Timer) AfterFunc(delay time.Duration, f func()) (*Timeout, error) {
	if f == nil {
		return nil, ErrNilTask
	}
	to := &Timeout{timer: t, task: funcTask(f)}
	if err := t.scheduleTimeout(to, delay); err != nil {
		return nil, err
	}
	return to, nil
}

// NewPeriodicTimeout schedules task to run every period, first at period
// from now: run k is due at start + k*period, whatever the lateness of the
// runs before it, and runs at the first tick at or after that. A run never
// starts while the previous one is still running; runs that fall more than a
// period behind (because a run, the worker or the WithTaskWorkers pool was
// slow) are skipped, as a time.Ticker drops ticks, never run back to back to
// catch up: a run starts as the latest one due, and the next is due a
// period after it.
//
// The timeout stays pending until it is cancelled, by Cancel (also from
// inside its own task) or by Stop: IsExpired stays false, PendingTimeouts
// counts it once, and Run gets the same *Timeout every time. Deadline reports
// the due time of the run in progress while the task runs, and of the next
// run otherwise. Reset moves the next run once the run in progress has
// returned. Scheduling is one allocation of 96 bytes (three with a
// WithTaskExecutor); runs allocate nothing.
//
// NewPeriodicTimeout returns the errors NewTimeout does, and an error
// wrapping ErrInvalidPeriod if period is not positive.
func (t *Timer) NewPeriodicTimeout(task TimerTask, period time.Duration) (*Timeout, error) {
	if isNilTask(task) {
		return nil, ErrNilTask
	}
	if period <= 0 {
		return nil, fmt.Errorf("%w: %v: the period must be > 0", ErrInvalidPeriod, period)
	}
	p := &periodicTask{task: task, period: int64(period)}
	to := &p.to
	to.timer, to.task = t, p
	if t.taskExecutor != nil {
		e := &periodicExec{}
		e.run = func() {
			if e.handedOut.CompareAndSwap(true, false) {
				t.runTimeout(to)
			}
		}
		p.exec = e
	}
	if err := t.scheduleTimeout(to, period); err != nil {
		return nil, err
	}
	return to, nil
}

// Every runs f every period, like NewPeriodicTimeout. The returned Timeout's
// Task calls f; cancel it to stop the runs.
func (t *Timer) Every(period time.Duration, f func()) (*Timeout, error) {
	if f == nil {
		return nil, ErrNilTask
	}
	return t.NewPeriodicTimeout(funcTask(f), period)
}

// isNilTask reports whether task is nil, or a nil TimerFunc or func.
func isNilTask(task TimerTask) bool {
	switch f := task.(type) {
	case nil:
		return true
	case TimerFunc:
		return f == nil
	case funcTask:
		return f == nil
	}
	return false
}

// scheduleTimeout schedules to, whose timer and task are set, after delay.
// The caller allocates to, possibly inside a larger object.
func (t *Timer) scheduleTimeout(to *Timeout, delay time.Duration) error {
	if t.state.Load() != stateStarted {
		if err := t.Start(); err != nil {
			return err
		}
	}
	now := t.elapsed()
	if now < 0 {
		return ErrClockMismatch
	}
	sh := t.shardFor(to)
	if t.maxPendingTimeouts <= 0 {
		sh.pending().Add(1)
	} else if err := t.reservePending(); err != nil {
		return err
	}
	// to is not published yet: a plain write is enough.
	to.deadline = addDelay(now, delay)
	sh.timeouts.push(to)
	// The checks that decide whether to wake the worker are inline: at a
	// million calls a second, most find nothing to do.
	if !t.wakeWorker() && now >= t.kickAt.Load() {
		t.kickWorker()
	}
	// A Stop that ran since the check above may have drained the queue
	// before the push. If so, take the timeout back: the caller gets an
	// error and never sees it, so it is withdrawn rather than cancelled. If
	// the worker got it first, it has ended expired or cancelled, and the
	// caller may have it.
	if t.isStopped() && to.cancel(stWithdrawn) {
		return ErrTimerStopped
	}
	return nil
}

// reservePending counts a new timeout among the pending ones of a timer
// with a pending limit, or fails if the limit is reached. It never counts
// past the limit, so a rejected call is never seen in PendingTimeouts and
// never makes another call fail. (Without a limit, each shard counts its
// own timeouts; see pendingFor.)
func (t *Timer) reservePending() error {
	pending := t.shards[0].pending()
	for {
		n := pending.Load()
		if n >= t.maxPendingTimeouts {
			return fmt.Errorf("%w: %d pending, limit %d",
				ErrTooManyPendingTimeouts, n, t.maxPendingTimeouts)
		}
		if pending.CompareAndSwap(n, n+1) {
			return nil
		}
	}
}

// addDelay returns the deadline delay after now, both in nanoseconds since
// the timer started. Delays below zero count as zero, and a sum past
// math.MaxInt64 saturates.
func addDelay(now int64, delay time.Duration) int64 {
	if delay <= 0 {
		return now
	}
	if int64(delay) > math.MaxInt64-now {
		return math.MaxInt64
	}
	return now + int64(delay)
}

// isFakeClock reports whether now was read inside a testing/synctest bubble,
// whose clock has no monotonic reading; the real clock always has one.
func isFakeClock(now time.Time) bool { return now == now.Round(0) }

// elapsed returns the nanoseconds since the timer started, on its clock: the
// monotonic clock, or a synctest bubble's fake one. It is negative when the
// caller reads another clock than the timer's: a timer of the real clock
// read inside a bubble sees the bubble's clock, which starts in 2000; one of
// a bubble read outside it sees a reading with a monotonic clock.
func (t *Timer) elapsed() int64 {
	if !t.createdOnFakeClock {
		return int64(time.Since(t.startTime))
	}
	now := time.Now()
	if !isFakeClock(now) {
		return -1
	}
	return int64(now.Sub(t.startTime))
}

// Stop stops the timer. The first call cancels every timeout still pending and
// returns them; a timeout cancelled earlier is not among them. Later calls
// return nil. When Stop returns, the worker goroutine and the WithTaskWorkers
// pool have exited; if a task is running on them, Stop waits for it to
// return, and tasks already handed to the pool run first. Timeouts still
// pending never run after Stop. A periodic timeout is pending between its
// runs and during one, so Stop returns it; a run in progress on an executor
// goroutine is not waited for.
//
// Called from a task running on the worker goroutine or on the pool, Stop
// neither waits nor deadlocks: it marks the timer stopped and returns nil,
// and the worker cancels the pending timeouts and exits once the task
// returns. (A task that a WithTaskExecutor runs on another goroutine while
// the worker waits for it is on neither, and must not call Stop.)
//
// After Stop, NewTimeout, AfterFunc and Start return ErrTimerStopped and
// PendingTimeouts returns 0.
func (t *Timer) Stop() []*Timeout {
	if t.wheel == nil {
		return nil // not made by NewTimer: nothing to stop
	}
	id := goroutineID()
	onWorker := id != 0 && (id == t.workerID.Load() || t.pool.runs(id))
	for {
		switch t.state.Load() {
		case stateInit:
			if t.state.CompareAndSwap(stateInit, stateShutdown) {
				// No worker will ever run, so nothing else closes done.
				t.instance.release()
				close(t.stopped)
				close(t.done)
				return nil
			}
		case stateStarted:
			if t.state.CompareAndSwap(stateStarted, stateShutdown) {
				t.instance.release()
				close(t.stopped)
				if onWorker {
					return nil
				}
				<-t.done
				return t.unprocessed
			}
		default:
			// Already stopped. Honour "the worker has exited when Stop
			// returns" for this caller too.
			if !onWorker {
				<-t.done
			}
			return nil
		}
	}
}

// PendingTimeouts returns the number of timeouts scheduled that have neither
// expired nor been cancelled. It is 0 after Stop.
func (t *Timer) PendingTimeouts() int64 {
	if t.wheel == nil || t.isStopped() {
		return 0
	}
	var n int64
	for i := range t.shards {
		n += t.shards[i].pending().Load()
	}
	return n
}

// shardCount is the number of shards of a Timer.
const shardCount = 8

// allocSpanBytes is the size of the spans from which Go's allocator hands out
// small objects, one span at a time to each P.
const allocSpanBytes = 8192

// shard is one of a Timer's queues of new timeouts, with a count of pending
// timeouts. A timeout's shard follows from its address: the allocator gives
// each P a span of its own to allocate from, so goroutines running on
// different Ps mostly push to different shards and do not take each other's
// cache lines. A timeout keeps its shard for life, so the counts add up.
// FIFO order holds within a shard, not across shards.
type shard struct {
	// timeouts is the queue of new timeouts. Its producerCount is the
	// shard's pending count: the shard's timeouts scheduled and neither
	// expired nor cancelled; with a pending limit, shard 0 counts all of
	// them, so that the limit is exact.
	timeouts mpscQueue
}

// pending returns the shard's count of pending timeouts.
func (s *shard) pending() *atomic.Int64 { return &s.timeouts.producerCount }

// shardFor returns the shard of to.
func (t *Timer) shardFor(to *Timeout) *shard {
	return &t.shards[uintptr(unsafe.Pointer(to))/allocSpanBytes%shardCount]
}

// pendingFor returns the counter that counts to among the pending timeouts.
func (t *Timer) pendingFor(to *Timeout) *atomic.Int64 {
	if t.maxPendingTimeouts > 0 {
		return t.shards[0].pending()
	}
	return t.shardFor(to).pending()
}

func (t *Timer) isStopped() bool { return t.state.Load() == stateShutdown }

// wakeWorker wakes the worker if it is sleeping past the next tick, after a
// push that may give it work sooner. It reports whether it woke it.
func (t *Timer) wakeWorker() bool {
	if t.sleeping.Load() && t.sleeping.CompareAndSwap(true, false) {
		select {
		case t.wake <- struct{}{}:
		default:
		}
		return true
	}
	return false
}

// kickAfter is how long new timeouts that arrive fast, at least kickBatch
// of them between two transfers, may wait for the worker before the
// goroutine that schedules one wakes it; see kickWorker.
const (
	kickAfter = 2 * minDrainInterval
	kickBatch = drainBatch / 4
)

// kickWorker wakes the worker, which is late to take new timeouts: the
// caller pushed one at or after kickAt. A timeout cancelled while still
// queued is reachable, and marked by every garbage collection, until the
// worker takes it; at a million schedule-and-cancels a second the queued
// ones would cost more than the rest of the work. The worker's own early
// drains (see drainBatch) keep the queues short while it gets a CPU, and then
// nobody kicks it. With GOMAXPROCS=1 it gets none while the scheduling
// goroutine runs: a woken worker waits until that goroutine blocks or is
// preempted, 10ms later. So there the kicking goroutine also yields, once per
// kick, which costs it a few hundred nanoseconds per kick, at most one per
// kickAfter.
func (t *Timer) kickWorker() {
	if t.kicked.Load() || !t.kicked.CompareAndSwap(false, true) {
		return
	}
	select {
	case t.wake <- struct{}{}:
	default:
	}
	if runtime.GOMAXPROCS(0) == 1 {
		runtime.Gosched()
	}
}

// execute hands an expired timeout's task to the WithTaskExecutor executor.
// A panic in the executor is logged with the timeout and does not reach the
// worker; a periodic run the executor did not start goes back to the worker,
// so the timeout is not stranded.
func (t *Timer) execute(to *Timeout) {
	p, periodic := to.task.(*periodicTask)
	if !periodic {
		defer t.recoverPanic(to, "task executor")
		t.taskExecutor(func() { t.callTask(to) })
		return
	}
	p.exec.handedOut.Store(true)
	defer func() {
		if r := recover(); r != nil {
			if p.exec.handedOut.CompareAndSwap(true, false) {
				t.handBack(to, p) // the run never started
			}
			t.logError("hashedwheel: task executor panicked",
				"timeout", to, "panic", r, "stack", string(debug.Stack()))
		}
	}()
	t.taskExecutor(p.exec.run)
}

// callTask runs to's task; a panic in it is logged with the timeout.
func (t *Timer) callTask(to *Timeout) {
	defer t.recoverPanic(to, "task")
	to.task.Run(to)
}

func (t *Timer) recoverPanic(to *Timeout, what string) {
	if r := recover(); r != nil {
		t.logError("hashedwheel: "+what+" panicked",
			"timeout", to, "panic", r, "stack", string(debug.Stack()))
	}
}

// logError logs through the timer's logger. A logger that panics must not
// take the worker down with it: its panic is written to standard error with
// the message instead.
func (t *Timer) logError(msg string, args ...any) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "%s %v (and the logger panicked: %v)\n", msg, args, r)
		}
	}()
	t.logger.Error(msg, args...)
}

// Stats is a snapshot of what a Timer's worker has done. The counters only
// grow; they are at most about a tick behind the worker.
type Stats struct {
	Pending     int64         // as PendingTimeouts
	Expired     uint64        // task runs handed out (each run of a periodic timeout counts)
	Cancelled   uint64        // timeouts cancelled, by Cancel or by Stop
	Ticks       uint64        // ticks the worker has processed
	Wakeups     uint64        // times the worker goroutine woke up
	Late        uint64        // runs handed out more than two ticks after their deadline
	MaxLateness time.Duration // largest (hand-out time - deadline) seen
}

// Stats returns the timer's statistics. It is safe to call at any time,
// also after Stop, and cheap: it reads a few atomics and holds no lock.
// Keeping the statistics costs NewTimeout, Cancel and Reset nothing: the
// worker counts what it sees (a cancellation when it unlinks or drops the
// timeout) and publishes its counts after each tick and before it sleeps;
// it counts a run in Expired before its task starts on the worker or in the
// WithTaskExecutor executor, so a task that blocks hides no run handed out
// before it.
func (t *Timer) Stats() Stats {
	if t.wheel == nil {
		return Stats{}
	}
	p := &t.published
	return Stats{
		Pending:     t.PendingTimeouts(),
		Expired:     p.expired.Load(),
		Cancelled:   p.cancelled.Load(),
		Ticks:       p.ticks.Load(),
		Wakeups:     p.wakeups.Load(),
		Late:        p.late.Load(),
		MaxLateness: time.Duration(p.maxLateness.Load()),
	}
}

// counters are the worker's own statistics.
type counters struct {
	expired, cancelled, ticks, wakeups, late uint64
	maxLateness                              int64
}

// publishedCounters are the counters as Stats reads them.
type publishedCounters struct {
	expired, cancelled, ticks, wakeups, late atomic.Uint64
	maxLateness                              atomic.Int64
}

// instanceCountLimit is how many live timers a process may have before
// NewTimer logs a warning (Netty's INSTANCE_COUNT_LIMIT).
const instanceCountLimit = 64

var (
	// liveTimers counts timers created and not yet stopped or collected.
	liveTimers atomic.Int64
	// tooManyTimersLogged makes the warning a once-per-process one.
	tooManyTimersLogged atomic.Bool
)

// instance is a timer's place in liveTimers. It is separate from the Timer so
// that a cleanup can release it after the Timer is collected.
type instance struct {
	released atomic.Bool
}

func newInstance(logger *slog.Logger) *instance {
	if n := liveTimers.Add(1); n > instanceCountLimit && tooManyTimersLogged.CompareAndSwap(false, true) {
		logger.Warn("hashedwheel: too many live timers; a Timer is a shared resource, "+
			"meant to be created once and reused", "live", n, "limit", instanceCountLimit)
	}
	return &instance{}
}

// release counts the timer out of liveTimers, once.
func (i *instance) release() {
	if i.released.CompareAndSwap(false, true) {
		liveTimers.Add(-1)
	}
}
