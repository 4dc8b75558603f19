package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/RussellLuo/timingwheel"
	antlabs "github.com/antlabs/timer"
	timewheel "github.com/rfyiamcool/go-timewheel"
	"github.com/zeromicro/go-zero/core/collection"

	"github.com/hashedwheel/hashedwheel"
)

// Every wheel is driven with the same tick and, where it has the setting, the
// same number of buckets: benchTick, except in the mixed-horizon workload,
// which runs at each of its ticks (-ticks). antlabs/timer's tick is fixed at
// 10ms.
const (
	benchTick     = 10 * time.Millisecond
	benchBuckets  = 512
	antlabsTick   = 10 * time.Millisecond
	hashedwheelID = "hashedwheel"
	stdlibID      = "stdlib"
	// compareID is the implementation that -compare-exe adds: hashedwheel
	// as another build of this command links it.
	compareID = "hashedwheel-compare"
)

// impl describes one implementation: how to make it, its module, and the API
// it offers for the workloads beyond schedule and cancel ("" where it has
// none).
type impl struct {
	id     string // the -impl flag
	label  string // in tables and charts
	module string // its Go module; "" for the standard library
	// newer makes it with the given tick, or fails with errNoTick if it
	// cannot take that tick.
	newer func(tick time.Duration) (wheel, error)

	// rearmAPI, reuseAPI, heartbeatAPI and contextAPI name the calls each
	// workload uses, or are "" where the implementation has no such API.
	rearmAPI, reuseAPI, heartbeatAPI, contextAPI string
	// tickAPI says how its tick is set.
	tickAPI string

	// exe is the program its child processes run, and childID the -impl
	// they are given: another build of this command for compareID, this
	// one ("") and id otherwise.
	exe, childID string
}

// errNoTick reports that an implementation cannot run at a tick: its tick is
// fixed (antlabs/timer's, at 10ms).
var errNoTick = errors.New("no such tick")

// wheel is the interface every implementation is driven through.
type wheel interface {
	// schedule runs f once, after d. The handle is what cancel takes.
	schedule(d time.Duration, f func()) (any, error)
	// cancel stops a scheduled task from running.
	cancel(h any)
	// flush returns once the implementation has processed every schedule and
	// cancel made so far, when it defers that work to a goroutine of its
	// own; n were made over d just before the call.
	flush(n int, d time.Duration) error
}

// rearmer is a wheel with a call that moves a pending timer's deadline.
type rearmer interface {
	// newRearmable schedules f after d and returns a handle whose reset
	// moves the deadline to d from now.
	newRearmable(d time.Duration, f func()) (rearmable, error)
}

type rearmable interface{ reset(d time.Duration) }

// reuser is a wheel with a timer the caller keeps and schedules again once
// it is cancelled, allocating nothing.
type reuser interface {
	// newReusable returns a timer, not yet scheduled, that runs f once
	// after d from each call of arm, unless disarm cancels it first.
	newReusable(f func()) (reusable, error)
}

type reusable interface {
	arm(d time.Duration) error
	disarm()
}

// periodic is a wheel with an API for tasks that repeat every period.
type periodic interface {
	// every runs f every period, from period from now, until the returned
	// function is called.
	every(period time.Duration, f func()) (stop func(), err error)
}

// contexter is a wheel that makes request-deadline contexts.
type contexter interface {
	withTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc)
}

// wakeCounter is a wheel that counts its own wake-ups.
type wakeCounter interface{ wakeups() uint64 }

// impls lists the implementations in the order of every table and chart.
var impls = []impl{
	{
		id: hashedwheelID, label: "hashedwheel", module: "github.com/hashedwheel/hashedwheel",
		newer:    newHashedwheel,
		rearmAPI: "Timeout.Reset", reuseAPI: "Timer.Schedule into a reused Timeout, Timeout.Cancel",
		heartbeatAPI: "Timer.Every", contextAPI: "Timer.WithTimeout",
		tickAPI: "WithTickDuration, and WithTicksPerWheel(512)",
	},
	{
		id: stdlibID, label: "time.AfterFunc",
		newer:    func(time.Duration) (wheel, error) { return stdlibWheel{}, nil },
		rearmAPI: "time.Timer.Reset", reuseAPI: "time.Timer.Reset on a reused time.Timer, Stop",
		heartbeatAPI: "time.AfterFunc, re-armed by its task with Reset",
		contextAPI:   "context.WithTimeout",
		tickAPI:      "none: the runtime's timer heaps",
	},
	{
		id: "russellluo", label: "RussellLuo/timingwheel", module: "github.com/RussellLuo/timingwheel",
		newer:        newRussellLuo,
		heartbeatAPI: "TimingWheel.ScheduleFunc",
		tickAPI:      "NewTimingWheel(tick, 512)",
	},
	{
		id: "gozero", label: "go-zero TimingWheel", module: "github.com/zeromicro/go-zero",
		newer:    newGoZero,
		rearmAPI: "TimingWheel.MoveTimer",
		tickAPI:  "NewTimingWheel(tick, 512, execute)",
	},
	{
		id: "antlabs", label: "antlabs/timer", module: "github.com/antlabs/timer",
		newer:    newAntlabs,
		rearmAPI: "TimeNoder.Reset", heartbeatAPI: "Timer.ScheduleFunc",
		tickAPI: "none: fixed at 10ms (WithTimeWheel)",
	},
	{
		id: "rfyiamcool", label: "rfyiamcool/go-timewheel", module: "github.com/rfyiamcool/go-timewheel",
		newer:    newRfyiamcool,
		rearmAPI: "Timer.Reset", heartbeatAPI: "TimeWheel.AddCron",
		tickAPI: "NewTimeWheel(tick, 512)",
	},
}

// compareImpl is hashedwheel as another build of this command links it (say,
// one whose go.mod's replace points at an older commit): its child
// processes run exe with -impl hashedwheel.
func compareImpl(exe, label string) impl {
	im, _ := implByID(hashedwheelID)
	im.id, im.label, im.module = compareID, label, ""
	im.exe, im.childID = exe, hashedwheelID
	return im
}

func implByID(id string) (impl, error) {
	for _, im := range impls {
		if im.id == id {
			return im, nil
		}
	}
	return impl{}, fmt.Errorf("unknown -impl %q", id)
}

// hashedwheel: NewTimer with the tick and the bench buckets; AfterFunc and
// Cancel; Timeout.Reset; Schedule into a Timeout it keeps, and Cancel; Every;
// WithTimeout; Stats().Wakeups.

type hwWheel struct{ tm *hashedwheel.Timer }

func newHashedwheel(tick time.Duration) (wheel, error) {
	tm, err := hashedwheel.NewTimer(
		hashedwheel.WithTickDuration(tick),
		hashedwheel.WithTicksPerWheel(benchBuckets),
	)
	if err != nil {
		return nil, err
	}
	return hwWheel{tm}, tm.Start()
}

func (w hwWheel) schedule(d time.Duration, f func()) (any, error) {
	return w.tm.AfterFunc(d, f)
}

func (w hwWheel) cancel(h any) { h.(*hashedwheel.Timeout).Cancel() }

// flush returns once the worker has processed the n timeouts scheduled over
// d just before the call, and every cancellation made before it.
//
// It needs no access to the worker, only to how it works: each tick it first
// unlinks every cancellation queued so far, then moves new timeouts into
// buckets until its queues are empty or it has moved 100,000 in that tick; a
// worker that falls behind processes the ticks it missed back to back, each
// with that budget. The queues of new timeouts are FIFO only per shard, so
// flush counts ticks: it runs a chain of sentinels, each scheduled with delay
// 0 by the task of the one before, so each runs in a later tick. Once the
// chain has spanned backlog/100,000 ticks after the first sentinel's (and at
// least one, for the cancellations), everything is processed.
func (w hwWheel) flush(n int, d time.Duration) error {
	const budget = 100_000 // moved per tick, at most
	tick := w.tm.TickDuration()
	perTick := int(min(int64(n), int64(n)*int64(tick)/max(int64(d), 1)))
	backlog := min(n, max(0, n-budget*int(d/tick))+perTick)
	left := 1 + max(1, (backlog+budget-1)/budget)

	done := make(chan error, 1)
	var sentinel hashedwheel.TimerFunc
	sentinel = func(*hashedwheel.Timeout) {
		if left--; left == 0 {
			done <- nil
			return
		}
		if _, err := w.tm.NewTimeout(sentinel, 0); err != nil {
			done <- err
		}
	}
	if _, err := w.tm.NewTimeout(sentinel, 0); err != nil {
		return err
	}
	return <-done
}

func (w hwWheel) newRearmable(d time.Duration, f func()) (rearmable, error) {
	to, err := w.tm.AfterFunc(d, f)
	return hwTimeout{to}, err
}

type hwTimeout struct{ to *hashedwheel.Timeout }

func (t hwTimeout) reset(d time.Duration) { t.to.Reset(d) }

func (w hwWheel) newReusable(f func()) (reusable, error) {
	return &hwReusable{tm: w.tm, task: hashedwheel.TimerFunc(func(*hashedwheel.Timeout) { f() })}, nil
}

// hwReusable is a Timeout the caller keeps, a field of its own struct, and
// its task, made once.
type hwReusable struct {
	tm   *hashedwheel.Timer
	to   hashedwheel.Timeout
	task hashedwheel.TimerTask
}

func (r *hwReusable) arm(d time.Duration) error { return r.tm.Schedule(&r.to, r.task, d) }
func (r *hwReusable) disarm()                   { r.to.Cancel() }

func (w hwWheel) every(period time.Duration, f func()) (func(), error) {
	to, err := w.tm.Every(period, f)
	if err != nil {
		return nil, err
	}
	return func() { to.Cancel() }, nil
}

func (w hwWheel) wakeups() uint64 { return w.tm.Stats().Wakeups }

func (w hwWheel) withTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return w.tm.WithTimeout(parent, d)
}

// stdlib: time.AfterFunc and Timer.Stop; Timer.Reset; Timer.Reset and Stop
// on one time.AfterFunc timer kept stopped; context.WithTimeout.

type stdlibWheel struct{}

func (stdlibWheel) schedule(d time.Duration, f func()) (any, error) {
	return time.AfterFunc(d, f), nil
}

func (stdlibWheel) cancel(h any)                   { h.(*time.Timer).Stop() }
func (stdlibWheel) flush(int, time.Duration) error { return nil }

func (stdlibWheel) newRearmable(d time.Duration, f func()) (rearmable, error) {
	return stdTimer{time.AfterFunc(d, f)}, nil
}

type stdTimer struct{ t *time.Timer }

func (s stdTimer) reset(d time.Duration) { s.t.Reset(d) }

// newReusable makes a time.AfterFunc timer and stops it: Reset arms it
// again, Stop cancels it.
func (stdlibWheel) newReusable(f func()) (reusable, error) {
	t := time.AfterFunc(time.Hour, f)
	t.Stop()
	return stdTimer{t}, nil
}

func (s stdTimer) arm(d time.Duration) error {
	s.t.Reset(d)
	return nil
}

func (s stdTimer) disarm() { s.t.Stop() }

// every re-arms a time.AfterFunc timer from its own task: the standard
// library's way to run a function periodically without a goroutine per
// ticker. Like the wheels' periodic APIs, it keeps to period from the
// previous due time, not from when the task ran.
func (stdlibWheel) every(period time.Duration, f func()) (func(), error) {
	var (
		mu      sync.Mutex // guards t, next and stopped
		t       *time.Timer
		next    time.Time
		stopped bool
	)
	mu.Lock()
	defer mu.Unlock()
	next = time.Now().Add(period)
	t = time.AfterFunc(period, func() {
		f()
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			next = next.Add(period)
			t.Reset(time.Until(next))
		}
	})
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		t.Stop()
	}, nil
}

func (stdlibWheel) withTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, d)
}

// RussellLuo/timingwheel: AfterFunc and Timer.Stop; ScheduleFunc.

type rlWheel struct{ tw *timingwheel.TimingWheel }

func newRussellLuo(tick time.Duration) (wheel, error) {
	if tick < time.Millisecond {
		return nil, errNoTick // it panics under 1ms
	}
	tw := timingwheel.NewTimingWheel(tick, benchBuckets)
	tw.Start()
	return rlWheel{tw}, nil
}

func (w rlWheel) schedule(d time.Duration, f func()) (any, error) {
	return w.tw.AfterFunc(d, f), nil
}

func (w rlWheel) cancel(h any)                   { h.(*timingwheel.Timer).Stop() }
func (w rlWheel) flush(int, time.Duration) error { return nil }

// everyScheduler is a timingwheel.Scheduler for a fixed period.
type everyScheduler time.Duration

func (s everyScheduler) Next(prev time.Time) time.Time { return prev.Add(time.Duration(s)) }

func (w rlWheel) every(period time.Duration, f func()) (func(), error) {
	t := w.tw.ScheduleFunc(everyScheduler(period), f)
	return func() { t.Stop() }, nil
}

// go-zero core/collection TimingWheel: SetTimer and RemoveTimer by key;
// MoveTimer. Its tasks all go through one Execute function, so the key is a
// pointer to the task: a timer needs a comparable key, and this one costs a
// 16-byte allocation, counted in its figures.

type gzWheel struct{ tw *collection.TimingWheel }

type gzKey struct{ f func() }

func newGoZero(tick time.Duration) (wheel, error) {
	tw, err := collection.NewTimingWheel(tick, benchBuckets, func(key, _ any) {
		key.(*gzKey).f()
	})
	if err != nil {
		return nil, err
	}
	return gzWheel{tw}, nil
}

func (w gzWheel) schedule(d time.Duration, f func()) (any, error) {
	k := &gzKey{f}
	return k, w.tw.SetTimer(k, nil, gzDelay(d))
}

// gzDelay maps delays <= 0, which go-zero rejects, to 1ns, which it raises
// to one tick as it does every delay under one tick.
func gzDelay(d time.Duration) time.Duration { return max(d, 1) }

func (w gzWheel) cancel(h any) { _ = w.tw.RemoveTimer(h) }

// flush: go-zero's calls hand their work to its goroutine over unbuffered
// channels. Once a RemoveTimer that follows a SetTimer has been received,
// the goroutine has finished with everything before it.
func (w gzWheel) flush(int, time.Duration) error {
	k := &gzKey{func() {}}
	if err := w.tw.SetTimer(k, nil, time.Hour); err != nil {
		return err
	}
	return w.tw.RemoveTimer(k)
}

func (w gzWheel) newRearmable(d time.Duration, f func()) (rearmable, error) {
	k := &gzKey{f}
	return gzTimer{w.tw, k}, w.tw.SetTimer(k, nil, gzDelay(d))
}

type gzTimer struct {
	tw *collection.TimingWheel
	k  *gzKey
}

func (t gzTimer) reset(d time.Duration) { _ = t.tw.MoveTimer(t.k, gzDelay(d)) }

// antlabs/timer (its default, the 5-level time wheel, 10ms tick): AfterFunc
// and TimeNoder.Stop; TimeNoder.Reset; ScheduleFunc.

type alWheel struct{ tm antlabs.Timer }

func newAntlabs(tick time.Duration) (wheel, error) {
	if tick != antlabsTick {
		return nil, errNoTick
	}
	tm := antlabs.NewTimer(antlabs.WithTimeWheel())
	go tm.Run()
	return alWheel{tm}, nil
}

func (w alWheel) schedule(d time.Duration, f func()) (any, error) {
	return w.tm.AfterFunc(d, f), nil
}

func (w alWheel) cancel(h any)                   { h.(antlabs.TimeNoder).Stop() }
func (w alWheel) flush(int, time.Duration) error { return nil }

func (w alWheel) newRearmable(d time.Duration, f func()) (rearmable, error) {
	return alTimer{w.tm.AfterFunc(d, f)}, nil
}

type alTimer struct{ n antlabs.TimeNoder }

func (t alTimer) reset(d time.Duration) { t.n.Reset(d) }

func (w alWheel) every(period time.Duration, f func()) (func(), error) {
	n := w.tm.ScheduleFunc(period, f)
	return func() { n.Stop() }, nil
}

// rfyiamcool/go-timewheel: Add and Remove; Timer.Reset (on the Timer that
// its AfterFunc returns); AddCron.

type rfWheel struct{ tw *timewheel.TimeWheel }

func newRfyiamcool(tick time.Duration) (wheel, error) {
	tw, err := timewheel.NewTimeWheel(tick, benchBuckets)
	if err != nil {
		return nil, err
	}
	tw.Start()
	return rfWheel{tw}, nil
}

func (w rfWheel) schedule(d time.Duration, f func()) (any, error) {
	return w.tw.Add(d, f), nil
}

func (w rfWheel) cancel(h any)                   { _ = w.tw.Remove(h.(*timewheel.Task)) }
func (w rfWheel) flush(int, time.Duration) error { return nil }

func (w rfWheel) newRearmable(d time.Duration, f func()) (rearmable, error) {
	return rfTimer{w.tw.AfterFunc(d, f)}, nil
}

type rfTimer struct{ t *timewheel.Timer }

func (t rfTimer) reset(d time.Duration) { t.t.Reset(d) }

func (w rfWheel) every(period time.Duration, f func()) (func(), error) {
	t := w.tw.AddCron(period, f)
	return func() { _ = w.tw.Remove(t) }, nil
}

// stopDefaultTimeWheel stops the wheel that rfyiamcool/go-timewheel starts in
// its package init (1s tick), in every process, so that linking it in does
// not add its ticks to the figures of the others.
func stopDefaultTimeWheel() { timewheel.DefaultTimeWheel.Stop() }
