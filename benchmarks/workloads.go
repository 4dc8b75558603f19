package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashedwheel/hashedwheel/benchmarks/internal/measure"
)

// sizes are the workloads' parameters: full, or tiny for -quick.
type sizes struct {
	ops          int           // schedule+cancel (new and reused), re-arm and context operations
	goroutines   int           // of the parallel schedule+cancel
	pendingOps   int           // schedule+cancel operations at each pending count
	pendings     []int         // pending counts of the cost-per-op sweep
	memory       int           // pending timeouts of the memory workload
	burst        int           // timeouts due at once
	burstLead    time.Duration // from the start of scheduling to their deadline
	idleWindow   time.Duration
	idlePending  int // timeouts an hour away in the second idle run
	late         int // timeouts of the lateness workload,
	lateSpread   time.Duration
	conns        int           // connections whose idle timer is re-armed
	heartbeats   int           // of the heartbeat and the mixed-horizon workloads
	period       time.Duration // of the heartbeats
	heartbeatWin time.Duration
	mixedFar     int             // far timeouts beside the heartbeats, 1h..2h away
	mixedWindow  time.Duration   // of the mixed-horizon workload
	mixedTicks   []time.Duration // the mixed-horizon workload's ticks (-ticks)
	watchdog     time.Duration   // one workload in a child, at most (see watchdogFor)
}

// defaultMixedTicks are the ticks the mixed-horizon workload runs at unless
// -ticks says otherwise.
var defaultMixedTicks = []time.Duration{time.Millisecond, 10 * time.Millisecond}

var fullSizes = sizes{
	ops: 1_000_000, goroutines: 8,
	pendingOps: 500_000, pendings: []int{1e3, 1e4, 1e5, 1e6},
	memory: 1_000_000, burst: 1_000_000, burstLead: 3 * time.Second,
	idleWindow: 2 * time.Second, idlePending: 1_000_000,
	late: 200_000, lateSpread: time.Second,
	conns: 10_000, heartbeats: 10_000, period: 100 * time.Millisecond, heartbeatWin: 2 * time.Second,
	mixedFar: 1_000_000, mixedWindow: 3 * time.Second, mixedTicks: defaultMixedTicks,
	watchdog: time.Minute,
}

var quickSizes = sizes{
	ops: 20_000, goroutines: 8,
	pendingOps: 10_000, pendings: []int{1e2, 1e3},
	memory: 10_000, burst: 10_000, burstLead: 300 * time.Millisecond,
	idleWindow: 200 * time.Millisecond, idlePending: 10_000,
	late: 2_000, lateSpread: 100 * time.Millisecond,
	conns: 100, heartbeats: 100, period: 50 * time.Millisecond, heartbeatWin: 200 * time.Millisecond,
	mixedFar: 10_000, mixedWindow: 200 * time.Millisecond, mixedTicks: defaultMixedTicks,
	watchdog: 10 * time.Second,
}

// childResult is what a child process prints, as JSON, for the driver.
type childResult struct {
	Metrics    map[string]float64 `json:"metrics"`
	Quantiles  []float64          `json:"quantiles,omitempty"` // lateness, ms, at 0, 0.001, ..., 1
	GOMAXPROCS int                `json:"gomaxprocs"`
}

// errNoAPI reports that an implementation has no API for a workload.
var errNoAPI = errors.New("no API")

// errSpread starts the error of a burst whose scheduling outlasted its lead,
// so that its timeouts would not be due at once.
const errSpread = "burst spread"

// cancelDelay is the delay of timeouts that are cancelled: far enough that
// none fires.
const cancelDelay = 30 * time.Second

func nop() {}

// runWorkload runs one workload on one implementation made with tick, in
// this process.
func runWorkload(im impl, workload string, param int, tick time.Duration, sz sizes) (childResult, error) {
	w, err := im.newer(tick)
	if err != nil {
		return childResult{}, err
	}
	res := childResult{GOMAXPROCS: runtime.GOMAXPROCS(0)}
	switch workload {
	case "schedcancel":
		res.Metrics, err = scheduleCancel(w, 1, sz.ops, 0)
	case "schedcancel-parallel":
		res.Metrics, err = scheduleCancel(w, sz.goroutines, sz.ops, 0)
	case "schedcancel-reused":
		r, ok := w.(reuser)
		if !ok {
			return res, errNoAPI
		}
		res.Metrics, err = scheduleCancelReused(w, r, sz.ops)
	case "pending":
		res.Metrics, err = scheduleCancel(w, 1, sz.pendingOps, param)
	case "memory":
		res.Metrics, err = pendingMemory(w, sz.memory)
	case "burst":
		n := sz.burst
		if param > 0 {
			n = param // the driver passes sz.burst; a -child run may ask for another
		}
		res.Metrics, err = burst(w, n, sz.burstLead)
	case "idle":
		res.Metrics, err = idle(w, param, sz.idleWindow)
	case "lateness":
		res.Metrics, res.Quantiles, err = lateness(w, sz.late, sz.lateSpread)
	case "rearm":
		r, ok := w.(rearmer)
		if !ok {
			return res, errNoAPI
		}
		res.Metrics, err = rearm(w, r, sz.conns, sz.ops)
	case "heartbeat":
		p, ok := w.(periodic)
		if !ok {
			return res, errNoAPI
		}
		res.Metrics, err = heartbeat(p, sz.heartbeats, sz.period, sz.heartbeatWin)
	case "context":
		c, ok := w.(contexter)
		if !ok {
			return res, errNoAPI
		}
		res.Metrics, err = contexts(w, c, sz.ops, param == 1)
	case "mixed":
		p, ok := w.(periodic)
		if !ok {
			return res, errNoAPI
		}
		res.Metrics, err = mixed(w, p, sz.heartbeats, sz.period, param, sz.mixedWindow)
	default:
		err = fmt.Errorf("unknown -workload %q", workload)
	}
	return res, err
}

// farDelay is the delay of the i-th of n timeouts pending far away: an hour,
// plus i/n of one turn of a 512-bucket, 10ms wheel. They fill every bucket
// evenly, as timeouts made over time would. The root module's benchmarks
// have the same function, for the same wheel, in bench_test.go.
func farDelay(i, n int) time.Duration {
	const turn = benchBuckets * benchTick
	return time.Hour + time.Duration(i)*turn/time.Duration(n)
}

// mixedFarDelay is the delay of the i-th of n far timeouts of the
// mixed-horizon workload: spread evenly from one hour to two, as the
// deadlines of sessions opened over an hour would be.
func mixedFarDelay(i, n int) time.Duration {
	return time.Hour + time.Duration(i)*time.Hour/time.Duration(n)
}

// fillPending schedules len(handles) timeouts far away, the i-th after
// delay(i, len(handles)), keeps their handles in handles and waits until the
// implementation has processed them.
func fillPending(w wheel, handles []any, delay func(i, n int) time.Duration) error {
	start := time.Now()
	for i := range handles {
		h, err := w.schedule(delay(i, len(handles)), nop)
		if err != nil {
			return err
		}
		handles[i] = h
	}
	return w.flush(len(handles), time.Since(start))
}

// scheduleCancel schedules a timeout 30s away and cancels it, ops times, from
// goroutines goroutines, with pending timeouts an hour away already
// scheduled. The timed region ends when the implementation has processed
// every call.
func scheduleCancel(w wheel, goroutines, ops, pending int) (map[string]float64, error) {
	handles := make([]any, pending)
	if err := fillPending(w, handles, farDelay); err != nil {
		return nil, err
	}
	settle()
	op := func() error {
		h, err := w.schedule(cancelDelay, nop)
		if err != nil {
			return err
		}
		w.cancel(h)
		return nil
	}
	var r measure.Window
	r.Begin()
	errs := make(chan error, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		n := ops / goroutines
		if g < ops%goroutines {
			n++
		}
		wg.Go(func() {
			for range n {
				if err := op(); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	err := w.flush(ops, r.Elapsed())
	r.End()
	runtime.KeepAlive(handles)
	close(errs)
	if e := <-errs; e != nil {
		return nil, e
	}
	return perOp(&r, ops), err
}

// scheduleCancelReused schedules one timer 30s away and cancels it, the same
// timer every time, ops times, on one goroutine: a timer the caller keeps
// and schedules again per request. The timed region ends when the
// implementation has processed every call.
func scheduleCancelReused(w wheel, r reuser, ops int) (map[string]float64, error) {
	t, err := r.newReusable(nop)
	if err != nil {
		return nil, err
	}
	settle()
	var reg measure.Window
	reg.Begin()
	for range ops {
		if err := t.arm(cancelDelay); err != nil {
			return nil, err
		}
		t.disarm()
	}
	// One timer: at most it is left for the implementation's goroutine.
	err = w.flush(1, reg.Elapsed())
	reg.End()
	return perOp(&reg, ops), err
}

// pendingMemory reports the live heap per pending timeout, with n pending an
// hour away, and how long one forced GC takes with them pending. The handles
// are kept, as a user would, in a slice made before the baseline is read.
func pendingMemory(w wheel, n int) (map[string]float64, error) {
	handles := make([]any, n)
	before, _ := measure.LiveMemory()
	if err := fillPending(w, handles, farDelay); err != nil {
		return nil, err
	}
	after, _ := measure.LiveMemory()
	var r measure.Window
	r.Begin()
	runtime.GC()
	r.End()
	runtime.KeepAlive(handles)
	return map[string]float64{
		"bytes_per_timeout": (float64(after) - float64(before)) / float64(n),
		"gc_ms":             measure.Millis(r.Wall),
		"gc_cpu_ms":         measure.Millis(r.CPU),
	}, nil
}

// burst schedules n timeouts due at one moment, lead after the start of
// scheduling, and reports the time from that deadline to the first and to
// the last run, and how many ran before it.
func burst(w wheel, n int, lead time.Duration) (map[string]float64, error) {
	base := time.Now()
	ran := make([]int64, n) // ns since base
	var next atomic.Int64
	done := make(chan struct{})
	task := func() {
		i := next.Add(1) - 1
		ran[i] = int64(time.Since(base))
		if i == int64(n-1) {
			close(done)
		}
	}
	settle()
	var r measure.Window
	r.Begin()
	deadline := time.Now().Add(lead)
	for i := range n {
		if _, err := w.schedule(time.Until(deadline), task); err != nil {
			return nil, err
		}
		if i%1024 == 0 && time.Now().After(deadline) {
			return nil, fmt.Errorf("%s: only %d of %d timeouts were scheduled by their deadline", errSpread, i+1, n)
		}
	}
	if over := time.Since(deadline); over > 0 {
		return nil, fmt.Errorf("%s: scheduling %d timeouts ended %v after their deadline", errSpread, n, over)
	}
	select {
	case <-done:
	case <-time.After(lead + time.Minute):
		return nil, fmt.Errorf("%d of %d tasks ran within a minute of their deadline", next.Load(), n)
	}
	r.End()
	dl := int64(deadline.Sub(base))
	early := 0
	for _, t := range ran {
		if t < dl {
			early++
		}
	}
	return map[string]float64{
		"ms_to_first":    measure.Millis(time.Duration(slices.Min(ran) - dl)),
		"ms_to_last":     measure.Millis(time.Duration(slices.Max(ran) - dl)),
		"early":          float64(early),
		"cpu_ns_timeout": float64(r.CPU.Nanoseconds()) / float64(n),
		"lead_ms":        measure.Millis(lead),
	}, nil
}

// idle reports the process CPU per second, and the threads' wake-ups per
// second, of a started implementation with pending timeouts an hour away
// (none, or pending) and nothing due.
func idle(w wheel, pending int, window time.Duration) (map[string]float64, error) {
	handles := make([]any, pending)
	if err := fillPending(w, handles, farDelay); err != nil {
		return nil, err
	}
	settle()
	var wake0 uint64
	wc, counts := w.(wakeCounter)
	if counts {
		wake0 = wc.wakeups()
	}
	var r measure.Window
	r.Begin()
	time.Sleep(window)
	r.End()
	runtime.KeepAlive(handles)
	secs := r.Wall.Seconds()
	m := map[string]float64{
		"cpu_ms_per_s":  measure.Millis(r.CPU) / secs,
		"wakeups_per_s": float64(r.Nvcsw) / secs,
	}
	if counts {
		m["stats_wakeups_per_s"] = float64(wc.wakeups()-wake0) / secs
	}
	return m, nil
}

// lateness schedules n timeouts spread evenly over spread and reports how
// late their tasks ran against the time each was meant for (time.Now() just
// before it was scheduled, plus its delay): quantiles, and the count of
// early runs.
func lateness(w wheel, n int, spread time.Duration) (map[string]float64, []float64, error) {
	base := time.Now()
	intended := make([]int64, n) // ns since base
	ran := make([]int64, n)
	var left atomic.Int64
	left.Store(int64(n))
	done := make(chan struct{})
	settle()
	for i := range n {
		delay := time.Duration(i) * spread / time.Duration(n)
		intended[i] = int64(time.Since(base) + delay)
		_, err := w.schedule(delay, func() {
			ran[i] = int64(time.Since(base))
			if left.Add(-1) == 0 {
				close(done)
			}
		})
		if err != nil {
			return nil, nil, err
		}
	}
	select {
	case <-done:
	case <-time.After(spread + time.Minute):
		return nil, nil, fmt.Errorf("%d of %d tasks ran within a minute of their deadline", int64(n)-left.Load(), n)
	}
	late := make([]float64, n)
	early := 0
	for i := range n {
		d := ran[i] - intended[i]
		if d < 0 {
			early++
		}
		late[i] = measure.Millis(time.Duration(d))
	}
	slices.Sort(late)
	q := make([]float64, 1001)
	for i := range q {
		q[i] = late[min(n-1, i*n/1000)]
	}
	return map[string]float64{
		"min_ms": late[0],
		"p50_ms": late[n/2],
		"p99_ms": late[n*99/100],
		"max_ms": late[n-1],
		"early":  float64(early),
	}, q, nil
}

// rearm keeps conns idle timers 30s away and re-arms one of them, in turn,
// per activity, ops times, on one goroutine.
func rearm(w wheel, r rearmer, conns, ops int) (map[string]float64, error) {
	timers := make([]rearmable, conns)
	start := time.Now()
	for i := range timers {
		t, err := r.newRearmable(cancelDelay, nop)
		if err != nil {
			return nil, err
		}
		timers[i] = t
	}
	if err := w.flush(conns, time.Since(start)); err != nil {
		return nil, err
	}
	settle()
	var reg measure.Window
	reg.Begin()
	for i := range ops {
		timers[i%conns].reset(cancelDelay)
	}
	// A re-arm schedules nothing new: flush only waits for the calls that
	// an implementation hands to its own goroutine.
	err := w.flush(0, reg.Elapsed())
	reg.End()
	return perOp(&reg, ops), err
}

// heartbeat runs n periodic tasks, started evenly over one period, and
// reports the process CPU per second and per run, and the runs per second,
// over window, after two periods of warm-up.
func heartbeat(p periodic, n int, period, window time.Duration) (map[string]float64, error) {
	var runs atomic.Int64
	f := func() { runs.Add(1) }
	stops := make([]func(), 0, n)
	const batches = 10
	for b := range batches {
		for range n / batches {
			stop, err := p.every(period, f)
			if err != nil {
				return nil, err
			}
			stops = append(stops, stop)
		}
		if b < batches-1 {
			time.Sleep(period / batches)
		}
	}
	time.Sleep(2 * period)
	runs0 := runs.Load()
	var r measure.Window
	r.Begin()
	time.Sleep(window)
	r.End()
	got := runs.Load() - runs0
	for _, stop := range stops {
		stop()
	}
	secs := r.Wall.Seconds()
	return map[string]float64{
		"cpu_ms_per_s":        measure.Millis(r.CPU) / secs,
		"runs_per_s":          float64(got) / secs,
		"expected_runs_per_s": float64(len(stops)) / period.Seconds(),
		"cpu_ns_run":          float64(r.CPU.Nanoseconds()) / max(float64(got), 1),
	}, nil
}

// contexts makes a request-deadline context 30s away and cancels it, ops
// times, on one goroutine. With serving, as in a server, the parent is a
// cancellable context (the connection's) and the work reads Done once, as
// any select on it does; otherwise the parent is context.Background() and
// Done is never read.
func contexts(w wheel, c contexter, ops int, serving bool) (map[string]float64, error) {
	settle()
	parent := context.Background()
	if serving {
		var cancelParent context.CancelFunc
		parent, cancelParent = context.WithCancel(parent)
		defer cancelParent()
	}
	var r measure.Window
	r.Begin()
	for range ops {
		ctx, cancel := c.withTimeout(parent, cancelDelay)
		if serving {
			select {
			case <-ctx.Done():
				return nil, ctx.Err() // not due for 30s
			default:
			}
		}
		cancel()
	}
	err := w.flush(ops, r.Elapsed())
	r.End()
	return perOp(&r, ops), err
}

// mixed runs n heartbeats every period, the i-th started i/n of a period
// after the first so that something is due at nearly every tick, beside far
// timeouts pending 1h..2h away (none, or far), and reports the process CPU
// per second and per run, and the runs per second, over window, after two
// periods of warm-up and a settle. The far timeouts are scheduled, and
// processed, before the heartbeats start.
func mixed(w wheel, p periodic, n int, period time.Duration, far int, window time.Duration) (map[string]float64, error) {
	handles := make([]any, far)
	if err := fillPending(w, handles, mixedFarDelay); err != nil {
		return nil, err
	}
	var runs atomic.Int64
	f := func() { runs.Add(1) }
	stops := make([]func(), 0, n)
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()
	base := time.Now()
	for i := range n {
		// Sleep only when a millisecond or more ahead: the phases are then
		// within about a millisecond of i/n of a period, which puts
		// something due at nearly every tick of 1ms and more.
		if d := time.Until(base.Add(time.Duration(i) * period / time.Duration(n))); d >= time.Millisecond {
			time.Sleep(d)
		}
		stop, err := p.every(period, f)
		if err != nil {
			return nil, err
		}
		stops = append(stops, stop)
	}
	time.Sleep(2 * period)
	// The garbage of the fill is collected here; with the heartbeats
	// running, the process may not get quiet, and settle then waits its
	// half second.
	settle()
	runs0 := runs.Load()
	var r measure.Window
	r.Begin()
	time.Sleep(window)
	r.End()
	got := runs.Load() - runs0
	runtime.KeepAlive(handles)
	secs := r.Wall.Seconds()
	return map[string]float64{
		"cpu_ms_per_s":        measure.Millis(r.CPU) / secs,
		"runs_per_s":          float64(got) / secs,
		"expected_runs_per_s": float64(n) / period.Seconds(),
		"cpu_ns_run":          float64(r.CPU.Nanoseconds()) / max(float64(got), 1),
		"gcs_per_s":           float64(r.GCs) / secs,
	}, nil
}
