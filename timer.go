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
// tasks of the current bucket whose remaining rounds have reached zero.
// Unlike Netty's, the worker parks when there is nothing to do and sleeps
// through runs of empty buckets, so an idle Timer costs no CPU.
package hashedwheel

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
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

// ErrNilTask is returned by NewTimeout with a nil task and by AfterFunc with a
// nil function.
var ErrNilTask = errors.New("hashedwheel: nil task")

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
// Many goroutines produce timeouts (NewTimeout, AfterFunc, Cancel); one worker
// goroutine, started by Start or the first NewTimeout, owns the wheel and runs
// the tasks. Producers never touch the wheel: they hand timeouts to the
// worker through lock-free queues: new timeouts through the queues of the
// shards, cancelled timeouts that are linked in a bucket through one more.
type Timer struct {
	// Configuration, immutable after NewTimer.
	tickDuration       int64 // nanoseconds, at least minTickDuration
	mask               int64 // len(wheel) - 1
	maxPendingTimeouts int64 // <= 0: unlimited
	taskExecutor       func(task func())
	logger             *slog.Logger

	// wheel is the array of buckets, a power of two long. Worker only.
	wheel []bucket

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

	// cancelledTimeouts holds cancelled timeouts that the worker has to
	// unlink from their buckets.
	cancelledTimeouts mpscQueue

	// instance counts the timer among the live ones until Stop.
	instance *instance
}

// NewTimer returns a Timer with the given options. The worker goroutine
// starts with Start or with the first NewTimeout or AfterFunc.
//
// A Timer created inside a testing/synctest bubble runs on the bubble's fake
// clock. Create, start, use and stop it inside that one bubble: its worker
// waits on channels that belong to the bubble it was created in.
//
// An invalid option makes NewTimer return a nil Timer and an error naming the
// option and the value it got.
func NewTimer(opts ...Option) (*Timer, error) {
	c, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	t := &Timer{
		tickDuration:       int64(c.tickDuration),
		mask:               int64(c.ticksPerWheel - 1),
		maxPendingTimeouts: c.maxPendingTimeouts,
		taskExecutor:       c.taskExecutor,
		logger:             c.logger,
		wheel:              newWheel(c.ticksPerWheel),
		wake:               make(chan struct{}, 1),
		stopped:            make(chan struct{}),
		done:               make(chan struct{}),
		instance:           newInstance(c.logger),
	}
	for i := range t.shards {
		t.shards[i].timeouts.init()
	}
	t.cancelledTimeouts.init()
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

// Start starts the worker goroutine, if it is not running yet. Calling it is
// optional: NewTimeout and AfterFunc start the worker when needed. Start
// returns ErrTimerStopped if the timer was stopped.
func (t *Timer) Start() error {
	switch t.state.Load() {
	case stateStarted:
		return nil
	case stateShutdown:
		return ErrTimerStopped
	}
	t.startMu.Lock()
	defer t.startMu.Unlock()
	if t.state.Load() == stateInit {
		t.startTime = time.Now()
		if t.state.CompareAndSwap(stateInit, stateStarted) {
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
// task never runs. The task runs on the worker goroutine, or through the
// WithTaskExecutor executor, at the first tick at or after the deadline.
//
// NewTimeout returns ErrNilTask for a nil task, ErrTimerStopped after Stop,
// and an error wrapping ErrTooManyPendingTimeouts when the timer holds its
// WithMaxPendingTimeouts limit.
func (t *Timer) NewTimeout(task TimerTask, delay time.Duration) (*Timeout, error) {
	if task == nil {
		return nil, ErrNilTask
	}
	if f, ok := task.(TimerFunc); ok && f == nil {
		return nil, ErrNilTask
	}
	return t.schedule(task, delay)
}

// AfterFunc schedules f to run once, after delay, like NewTimeout. The
// returned Timeout's Task calls f.
func (t *Timer) AfterFunc(delay time.Duration, f func()) (*Timeout, error) {
	if f == nil {
		return nil, ErrNilTask
	}
	return t.schedule(funcTask(f), delay)
}

func (t *Timer) schedule(task TimerTask, delay time.Duration) (*Timeout, error) {
	to := &Timeout{timer: t, task: task}
	if err := t.scheduleTimeout(to, delay); err != nil {
		return nil, err
	}
	return to, nil
}

// scheduleTimeout schedules to, which the caller allocated (possibly inside a
// larger object) with its timer and task set, to be due after delay. It
// returns the errors NewTimeout does: ErrTimerStopped, or
// ErrTooManyPendingTimeouts wrapped with the counts.
func (t *Timer) scheduleTimeout(to *Timeout, delay time.Duration) error {
	if t.state.Load() != stateStarted {
		if err := t.Start(); err != nil {
			return err
		}
	}
	pending := t.pendingFor(to)
	if n := pending.Add(1); t.maxPendingTimeouts > 0 && n > t.maxPendingTimeouts {
		pending.Add(-1)
		return fmt.Errorf("%w: %d pending, limit %d",
			ErrTooManyPendingTimeouts, n-1, t.maxPendingTimeouts)
	}
	to.deadline = t.deadlineAfter(delay)
	t.shardFor(to).timeouts.push(to)
	t.wakeWorker()
	// A Stop that ran since the check above may have drained the queue
	// before the push. If so, take the timeout back; if the worker got it
	// first, it has ended expired or cancelled, and the caller may have it.
	if t.isStopped() && to.Cancel() {
		return ErrTimerStopped
	}
	return nil
}

// deadlineAfter returns the deadline delay from now, in nanoseconds since the
// timer started. Delays below zero count as zero, and a sum past
// math.MaxInt64 saturates.
func (t *Timer) deadlineAfter(delay time.Duration) int64 {
	now := t.elapsed()
	if delay <= 0 {
		return now
	}
	if int64(delay) > math.MaxInt64-now {
		return math.MaxInt64
	}
	return now + int64(delay)
}

// elapsed returns the nanoseconds since the timer started, on its clock: the
// monotonic clock, or a synctest bubble's fake one.
func (t *Timer) elapsed() int64 { return int64(time.Since(t.startTime)) }

// Stop stops the timer. The first call cancels every timeout still pending and
// returns them; a timeout cancelled earlier is not among them. Later calls
// return nil. When Stop returns, the worker goroutine has exited; if a task is
// running, Stop waits for it to return.
//
// Called from a task running on the worker goroutine, Stop neither waits nor
// deadlocks: it marks the timer stopped and returns nil, and the worker
// cancels the pending timeouts and exits once the task returns. (A task that
// a WithTaskExecutor runs on another goroutine while the worker waits for it
// is not on the worker goroutine, and must not call Stop.)
//
// After Stop, NewTimeout, AfterFunc and Start return ErrTimerStopped and
// PendingTimeouts returns 0.
func (t *Timer) Stop() []*Timeout {
	id := goroutineID()
	onWorker := id != 0 && id == t.workerID.Load()
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
	if t.isStopped() {
		return 0
	}
	var n int64
	for i := range t.shards {
		n += t.shards[i].pending.Load()
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
	timeouts mpscQueue

	// pending counts this shard's timeouts scheduled and neither expired
	// nor cancelled; with a pending limit, shard 0 counts all of them, so
	// that the limit is exact. Any goroutine; atomic.
	pending atomic.Int64
	_       [cacheLineSize - 8]byte
}

// shardFor returns the shard of to.
func (t *Timer) shardFor(to *Timeout) *shard {
	return &t.shards[uintptr(unsafe.Pointer(to))/allocSpanBytes%shardCount]
}

// pendingFor returns the counter that counts to among the pending timeouts.
func (t *Timer) pendingFor(to *Timeout) *atomic.Int64 {
	if t.maxPendingTimeouts > 0 {
		return &t.shards[0].pending
	}
	return &t.shardFor(to).pending
}

func (t *Timer) isStopped() bool { return t.state.Load() == stateShutdown }

// wakeWorker wakes the worker if it is sleeping past the next tick, after a
// push that may give it work sooner.
func (t *Timer) wakeWorker() {
	if t.sleeping.Load() && t.sleeping.CompareAndSwap(true, false) {
		select {
		case t.wake <- struct{}{}:
		default:
		}
	}
}

// runTask runs the task of an expired timeout, through the executor if there
// is one. A panic in the task, or in the executor, is logged with the timeout
// and does not reach the worker.
func (t *Timer) runTask(to *Timeout) {
	if t.taskExecutor == nil {
		t.callTask(to)
		return
	}
	defer t.recoverPanic(to, "task executor")
	t.taskExecutor(func() { t.callTask(to) })
}

func (t *Timer) callTask(to *Timeout) {
	defer t.recoverPanic(to, "task")
	to.task.Run(to)
}

func (t *Timer) recoverPanic(to *Timeout, what string) {
	if r := recover(); r != nil {
		t.logger.Error("hashedwheel: "+what+" panicked",
			"timeout", to, "panic", r, "stack", string(debug.Stack()))
	}
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
