package hashedwheel_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/hashedwheel/hashedwheel"
)

func ExampleNewTimer() {
	// One timer for the whole program: 10ms precision, 1024 buckets.
	timer, err := hashedwheel.NewTimer(
		hashedwheel.WithTickDuration(10*time.Millisecond),
		hashedwheel.WithTicksPerWheel(1024),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer timer.Stop()
	fmt.Println(timer.TickDuration(), timer.TicksPerWheel())
	// Output: 10ms 1024
}

func ExampleTimer_NewTimeout() {
	timer, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(10 * time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer timer.Stop()

	done := make(chan struct{})
	task := hashedwheel.TimerFunc(func(timeout *hashedwheel.Timeout) {
		fmt.Println("expired:", timeout.IsExpired())
		close(done)
	})
	if _, err := timer.NewTimeout(task, 20*time.Millisecond); err != nil {
		log.Fatal(err)
	}
	<-done
	// Output: expired: true
}

func ExampleTimer_AfterFunc() {
	timer, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(10 * time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer timer.Stop()

	done := make(chan struct{})
	start := time.Now()
	timeout, err := timer.AfterFunc(30*time.Millisecond, func() { close(done) })
	if err != nil {
		log.Fatal(err)
	}
	<-done
	// The task never runs before the deadline; it may run up to a tick late.
	fmt.Println(!time.Now().Before(timeout.Deadline()), time.Since(start) >= 30*time.Millisecond)
	// Output: true true
}

func ExampleTimeout_Cancel() {
	timer, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(10 * time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer timer.Stop()

	// A request deadline. If the request finishes first, Cancel returns true
	// and the task will never run: the request owns the outcome.
	deadline, err := timer.AfterFunc(time.Minute, func() { fmt.Println("request timed out") })
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("finished in time:", deadline.Cancel(), "pending:", timer.PendingTimeouts())

	// Cancel returns false once the timeout is no longer pending: it was
	// cancelled already, or its task has run or is running and owns the
	// outcome.
	fmt.Println("cancel again:", deadline.Cancel())
	fired := make(chan struct{})
	late, err := timer.AfterFunc(0, func() { close(fired) })
	if err != nil {
		log.Fatal(err)
	}
	<-fired
	fmt.Println("cancel after it fired:", late.Cancel(), "expired:", late.IsExpired())

	// A cancelled or expired timeout stays so: to run the task again,
	// schedule it again.
	again, err := timer.AfterFunc(time.Minute, func() { fmt.Println("request timed out") })
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("scheduled again, pending:", timer.PendingTimeouts(), "cancelled:", again.IsCancelled())
	// Output:
	// finished in time: true pending: 0
	// cancel again: false
	// cancel after it fired: false expired: true
	// scheduled again, pending: 1 cancelled: false
}

func ExampleTimeout_IsPending() {
	// An owned Timer: nothing runs until Advance, so the states below are
	// exactly those printed.
	timer, err := hashedwheel.NewTimer(hashedwheel.WithoutWorker())
	if err != nil {
		log.Fatal(err)
	}
	defer timer.Stop()

	var c struct{ idle hashedwheel.Timeout } // a connection's idle deadline
	report := func(when string) {
		fmt.Printf("%s: pending %v, expired %v, cancelled %v\n",
			when, c.idle.IsPending(), c.idle.IsExpired(), c.idle.IsCancelled())
	}
	report("never armed")
	closeIdle := hashedwheel.TimerFunc(func(*hashedwheel.Timeout) { fmt.Println("idle: closing") })
	if err := timer.Schedule(&c.idle, closeIdle, time.Second); err != nil {
		log.Fatal(err)
	}
	report("armed")
	if _, err := timer.Advance(time.Now().Add(2 * time.Second)); err != nil {
		log.Fatal(err)
	}
	report("ran")
	if err := timer.Schedule(&c.idle, closeIdle, time.Minute); err != nil {
		log.Fatal(err)
	}
	c.idle.Cancel()
	report("armed again, cancelled")
	// Output:
	// never armed: pending false, expired false, cancelled false
	// armed: pending true, expired false, cancelled false
	// idle: closing
	// ran: pending false, expired true, cancelled false
	// armed again, cancelled: pending false, expired false, cancelled true
}

func ExampleTimeout_Reset() {
	timer, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(10 * time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer timer.Stop()

	// A connection's idle deadline: its task closes the connection.
	closed := make(chan struct{})
	idle, err := timer.AfterFunc(time.Minute, func() {
		fmt.Println("idle: closing the connection")
		close(closed)
	})
	if err != nil {
		log.Fatal(err)
	}
	// onMessage re-arms the deadline on every message, without allocating.
	// Reset returns false once the timeout has fired or was cancelled: the
	// connection is being closed, so drop the message and do not schedule a
	// new timeout for it.
	onMessage := func(msg string, idleLimit time.Duration) {
		if !idle.Reset(idleLimit) {
			fmt.Println("dropped", msg+": the connection is closing")
			return
		}
		fmt.Println("handled", msg)
	}
	onMessage("hello", time.Minute)
	onMessage("ping", time.Minute)
	onMessage("bye", 20*time.Millisecond) // after bye, close soon
	<-closed
	onMessage("late ping", time.Minute)
	// Output:
	// handled hello
	// handled ping
	// handled bye
	// idle: closing the connection
	// dropped late ping: the connection is closing
}

func ExampleTimer_Every() {
	timer, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(10 * time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer timer.Stop()

	const period = 20 * time.Millisecond
	start := time.Now()
	beats := make(chan time.Time, 8)
	heartbeat, err := timer.Every(period, func() {
		select {
		case beats <- time.Now():
		default: // never block the worker
		}
	})
	if err != nil {
		log.Fatal(err)
	}
	for k := 1; k <= 3; k++ {
		// Run k is due k periods after Every, whatever the lateness of the
		// runs before it; it never runs before that.
		at := <-beats
		fmt.Println("beat", k, "early:", at.Before(start.Add(time.Duration(k)*period)))
	}
	// A periodic timeout stays pending until it is cancelled.
	fmt.Println("cancelled:", heartbeat.Cancel(), "pending:", timer.PendingTimeouts())
	// Output:
	// beat 1 early: false
	// beat 2 early: false
	// beat 3 early: false
	// cancelled: true pending: 0
}

func ExampleTimer_Stats() {
	timer, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(10 * time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	var ran sync.WaitGroup
	for range 2 {
		ran.Add(1)
		if _, err := timer.AfterFunc(10*time.Millisecond, ran.Done); err != nil {
			log.Fatal(err)
		}
	}
	cancelled, err := timer.AfterFunc(time.Hour, func() {})
	if err != nil {
		log.Fatal(err)
	}
	cancelled.Cancel()
	if _, err := timer.AfterFunc(time.Hour, func() {}); err != nil { // Stop cancels it
		log.Fatal(err)
	}
	ran.Wait()
	timer.Stop()

	// Once Stop has returned, the counters are final.
	s := timer.Stats()
	fmt.Println("expired:", s.Expired, "cancelled:", s.Cancelled, "pending:", s.Pending)
	fmt.Println("ticks:", s.Ticks > 0, "wake-ups:", s.Wakeups > 0)
	// Output:
	// expired: 2 cancelled: 2 pending: 0
	// ticks: true wake-ups: true
}

func ExampleTimer_Stop() {
	timer, err := hashedwheel.NewTimer()
	if err != nil {
		log.Fatal(err)
	}
	for range 3 {
		if _, err := timer.AfterFunc(time.Hour, func() {}); err != nil {
			log.Fatal(err)
		}
	}
	unrun := timer.Stop()
	fmt.Println(len(unrun), unrun[0].IsCancelled(), len(timer.Stop()))

	_, err = timer.AfterFunc(time.Second, func() {})
	fmt.Println(err)
	// Output:
	// 3 true 0
	// hashedwheel: timer stopped
}

func ExampleTimer_WithTimeout() {
	// One timer for the whole program keeps every request's deadline.
	timer, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(10 * time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer timer.Stop()

	// In an HTTP middleware, the parent would be r.Context().
	ctx, cancel := timer.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel() // releases the wheel timeout as soon as the work is done

	slowWork := time.After(time.Minute) // far past the deadline, even on a loaded machine
	select {
	case <-slowWork:
		fmt.Println("finished")
	case <-ctx.Done():
		// Done at the first tick at or after the deadline, never before.
		fmt.Println(ctx.Err(), context.Cause(ctx))
	}
	// Output: context deadline exceeded context deadline exceeded
}

func ExampleTimer_Advance() {
	// A wheel its owner drives: no goroutine of its own. An event loop or an
	// actor runs its timeouts on its own goroutine, between two polls.
	wheel, err := hashedwheel.NewTimer(hashedwheel.WithoutWorker(),
		hashedwheel.WithTickDuration(10*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer wheel.Stop()

	sessions := map[string]bool{"alice": true, "bob": true} // the loop's own state, no mutex
	for name := range sessions {
		if _, err := wheel.AfterFunc(30*time.Millisecond, func() { delete(sessions, name) }); err != nil {
			log.Fatal(err)
		}
	}
	for len(sessions) > 0 {
		// Sleep until the next deadline (or, in a real loop, until the
		// next event), then run what is due.
		if at, ok := wheel.NextDeadline(); ok {
			time.Sleep(time.Until(at))
		}
		if _, err := wheel.Advance(time.Now()); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println("sessions left:", len(sessions))
	// Output: sessions left: 0
}

func ExampleCancelledTask() {
	timer, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(10 * time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer timer.Stop()

	task := &releasingTask{released: make(chan string, 1)}
	timeout, err := timer.NewTimeout(task, time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	timeout.Cancel()
	// The worker tells the task, within about a tick.
	fmt.Println(<-task.released)
	// Output: released by Cancelled
}

// releasingTask holds something it must release whether it runs or is
// cancelled.
type releasingTask struct{ released chan string }

func (r *releasingTask) Run(*hashedwheel.Timeout)       { r.released <- "released by Run" }
func (r *releasingTask) Cancelled(*hashedwheel.Timeout) { r.released <- "released by Cancelled" }

func ExampleWithTaskWorkers() {
	// Tasks that may block (a write to a slow peer) run on a pool of four
	// goroutines the timer owns: a blocked one delays only itself.
	timer, err := hashedwheel.NewTimer(hashedwheel.WithTaskWorkers(4),
		hashedwheel.WithTickDuration(10*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer timer.Stop()

	stuck := make(chan struct{})
	defer close(stuck)
	if _, err := timer.AfterFunc(0, func() { <-stuck }); err != nil {
		log.Fatal(err)
	}
	done := make(chan struct{})
	if _, err := timer.AfterFunc(20*time.Millisecond, func() { close(done) }); err != nil {
		log.Fatal(err)
	}
	<-done
	fmt.Println("ran while another task was stuck")
	// Output: ran while another task was stuck
}

func ExampleWithMaxPendingTimeouts() {
	timer, err := hashedwheel.NewTimer(hashedwheel.WithMaxPendingTimeouts(1))
	if err != nil {
		log.Fatal(err)
	}
	defer timer.Stop()

	first, err := timer.AfterFunc(time.Minute, func() {})
	if err != nil {
		log.Fatal(err)
	}
	_, err = timer.AfterFunc(time.Minute, func() {})
	fmt.Println(errors.Is(err, hashedwheel.ErrTooManyPendingTimeouts))
	first.Cancel() // frees the slot at once
	_, err = timer.AfterFunc(time.Minute, func() {})
	fmt.Println(err)
	// Output:
	// true
	// <nil>
}

// conn is a connection with its keepalive Timeout in it: scheduling it again
// allocates nothing, and its runs never overlap.
type conn struct {
	keepalive  hashedwheel.Timeout
	unanswered int // pings without an answer; only Run touches it
	closed     chan struct{}
}

// Run pings the peer, or kicks it after three unanswered pings, and looks
// again later by scheduling its own Timeout from inside its run: at its
// deadline plus the interval, so that the pings keep their period (a delay
// given to Schedule here would count from this run, up to a tick late).
func (c *conn) Run(timeout *hashedwheel.Timeout) {
	if c.unanswered == 3 {
		fmt.Println("no answer: kicked")
		close(c.closed)
		return
	}
	c.unanswered++ // an answer would set it back to 0
	fmt.Println("ping", c.unanswered)
	if err := timeout.Timer().ScheduleAt(timeout, c, timeout.Deadline().Add(20*time.Millisecond)); err != nil {
		log.Print(err) // the timer stopped
	}
}

func ExampleTimer_Schedule() {
	timer, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(10 * time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer timer.Stop()

	c := &conn{closed: make(chan struct{})}
	if err := timer.Schedule(&c.keepalive, c, 20*time.Millisecond); err != nil {
		log.Fatal(err)
	}
	<-c.closed
	// Output:
	// ping 1
	// ping 2
	// ping 3
	// no answer: kicked
}

// heartbeat is a heartbeat that lives in a struct of yours, with its
// Timeout: each run arms the Timeout again a period after the deadline it
// ran for, not after the time it ran, so the beats keep their period without
// drift however late each run, and no run reads the clock to arm the next.
type heartbeat struct {
	timeout hashedwheel.Timeout
	first   time.Time
	period  time.Duration
	left    int // beats left; only Run touches it
	done    chan struct{}
}

func (h *heartbeat) Run(timeout *hashedwheel.Timeout) {
	fmt.Println("beat due", timeout.Deadline().Sub(h.first), "after the first")
	if h.left--; h.left == 0 {
		close(h.done)
		return
	}
	if err := timeout.Timer().ScheduleAt(timeout, h, timeout.Deadline().Add(h.period)); err != nil {
		log.Print(err) // the timer stopped
	}
}

func ExampleTimer_ScheduleAt() {
	timer, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(10 * time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer timer.Stop()

	h := &heartbeat{period: 25 * time.Millisecond, left: 4, done: make(chan struct{})}
	h.first = time.Now().Add(h.period)
	if err := timer.ScheduleAt(&h.timeout, h, h.first); err != nil {
		log.Fatal(err)
	}
	<-h.done
	// Output:
	// beat due 0s after the first
	// beat due 25ms after the first
	// beat due 50ms after the first
	// beat due 75ms after the first
}

// pingConn is a connection pinged every interval by a Timeout it holds, as
// a time.AfterFunc made anew at each ping was: the connection is the
// Timeout's task.
type pingConn struct {
	ping     hashedwheel.Timeout // never copied or moved once armed
	interval time.Duration
	opened   time.Time
}

// Run re-arms the Timeout first, an interval after the deadline it ran for,
// then pings. Schedule(to, c, c.interval) here would count the interval from
// this run, which comes up to a tick after its deadline: the pings would
// drift a tick an interval. Armed first, the next ping stays armed if this
// one panics (the Timer recovers and logs the panic).
func (c *pingConn) Run(to *hashedwheel.Timeout) {
	due := to.Deadline() // before the re-arm: after it, Deadline is the next one's
	if err := to.Timer().ScheduleAt(to, c, due.Add(c.interval)); err != nil {
		return // the Timer stopped
	}
	fmt.Println("ping due at", due.Sub(c.opened), "next due at", to.Deadline().Sub(c.opened))
}

func Example_pingFromItsOwnTask() {
	// A Timer its owner drives, so that the example runs alike on any
	// machine. A server makes one Timer whose worker runs the pings, and
	// stops it in its shutdown.
	timer, err := hashedwheel.NewTimer(hashedwheel.WithoutWorker(),
		hashedwheel.WithTickDuration(10*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer timer.Stop()

	c := &pingConn{interval: time.Second, opened: time.Now()}
	if err := timer.ScheduleAt(&c.ping, c, c.opened.Add(c.interval)); err != nil {
		log.Fatal(err)
	}
	// The owner's clock at three turns of its loop; the second comes 300ms
	// late, as a worker held up by a slow task would be.
	for _, at := range []time.Duration{1050 * time.Millisecond, 2300 * time.Millisecond, 3050 * time.Millisecond} {
		if _, err := timer.Advance(c.opened.Add(at)); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println("armed:", c.ping.IsPending())
	c.ping.Cancel() // as the connection closes
	fmt.Println("armed after Cancel:", c.ping.IsPending())
	// Output:
	// ping due at 1s next due at 2s
	// ping due at 2s next due at 3s
	// ping due at 3s next due at 4s
	// armed: true
	// armed after Cancel: false
}

// bigConn is a connection whose struct an embedded Timeout would take into
// the next size class of the allocator: it holds its Timeout by pointer,
// made with it. The struct grows by 8 bytes, and the Timeout is an object of
// its own, 64 bytes and one allocation per connection; arming it again
// allocates nothing.
type bigConn struct {
	ping     *hashedwheel.Timeout // new(hashedwheel.Timeout), made with the connection
	interval time.Duration
	pings    int // Run only
}

func (c *bigConn) Run(to *hashedwheel.Timeout) {
	if err := to.Timer().ScheduleAt(to, c, to.Deadline().Add(c.interval)); err != nil {
		return // the Timer stopped
	}
	c.pings++
}

func Example_timeoutByPointer() {
	timer, err := hashedwheel.NewTimer(hashedwheel.WithoutWorker())
	if err != nil {
		log.Fatal(err)
	}
	defer timer.Stop()

	opened := time.Now()
	c := &bigConn{ping: new(hashedwheel.Timeout), interval: time.Second}
	if err := timer.ScheduleAt(c.ping, c, opened.Add(c.interval)); err != nil {
		log.Fatal(err)
	}
	for k := 1; k <= 3; k++ {
		if _, err := timer.Advance(opened.Add(time.Duration(k)*c.interval + 500*time.Millisecond)); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println("pings:", c.pings, "armed:", c.ping.IsPending())
	// Output: pings: 3 armed: true
}

// tickFor returns a tick for a Timer whose shortest interval or deadline is
// shortest: a tenth of it, so that a run is at most a tenth of it late (and
// an interval re-armed from its deadline keeps its length), between the 1ms
// a Timer allows and the 100ms default.
func tickFor(shortest time.Duration) time.Duration {
	return min(max(shortest/10, time.Millisecond), 100*time.Millisecond)
}

func Example_tickForConfiguredIntervals() {
	// A server whose ping interval is configured: 50ms in a test, seconds
	// or minutes in production.
	for _, interval := range []time.Duration{50 * time.Millisecond, 2 * time.Second, 2 * time.Minute} {
		timer, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(tickFor(interval)))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(interval, "pings on a Timer of", timer.TickDuration(), "ticks")
		timer.Stop()
	}
	// Output:
	// 50ms pings on a Timer of 5ms ticks
	// 2s pings on a Timer of 100ms ticks
	// 2m0s pings on a Timer of 100ms ticks
}
