// Command deadline races simulated requests against deadlines kept by one
// shared hashedwheel.Timer.
//
// It runs numRequests requests, at most maxInFlight at a time. Each request
// does simulated work of a random duration, between 0 and twice the deadline,
// drawn from a seeded math/rand/v2 source so that every run uses the same
// durations. When a request starts, it schedules a timeout due after
// deadline. Whichever comes first wins:
//
//   - The work finishes first: the request cancels its timeout. Cancel
//     returns true only for the call that moved the timeout from pending to
//     cancelled, and then the task never runs, so the request counts itself
//     as finished.
//   - The timeout fires first: its task counts the request as timed out and
//     tells the work to stop. If the work finishes just after and its Cancel
//     returns false, the work knows that the task has counted the request
//     (or is about to) and counts nothing.
//
// So the Cancel result alone makes each request count exactly once. An atomic
// state per request, moved only by CompareAndSwap, checks that: a request
// counted twice would be a bug in the timer, and the program reports it.
//
// At the end it prints how many requests finished and how many timed out,
// checks that they add up to numRequests, that no timeout fired before its
// Deadline, and that PendingTimeouts drops to 0, then stops the timer. It
// takes no flags, exits by itself within a few seconds and exits with status
// 1 if a check fails. Run it with:
//
//	go run ./examples/deadline
//
// or, to check it for data races:
//
//	go run -race ./examples/deadline
package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashedwheel/hashedwheel"
)

const (
	numRequests = 10_000
	deadline    = 200 * time.Millisecond
	tick        = 10 * time.Millisecond

	// maxInFlight bounds the requests running at once, as a server bounds
	// its concurrency. It also keeps the goroutine count far below the race
	// detector's limit of 8128 live goroutines.
	maxInFlight = 2_000

	// seed makes the work durations the same on every run.
	seed = 2024

	// runBudget bounds the whole program.
	runBudget = 15 * time.Second
)

// Request states. A request moves from statePending to exactly one of the
// others, only by CompareAndSwap.
const (
	statePending int32 = iota
	stateFinished
	stateTimedOut
)

// request is one simulated request.
type request struct {
	id    int
	work  time.Duration // how long the simulated work takes
	start time.Time     // when the deadline was scheduled

	// state is the request's outcome; see statePending.
	state atomic.Int32

	// abort is closed by the deadline task to stop the work early.
	abort chan struct{}

	// timeout is the request's deadline. It is set before the work
	// goroutine starts and not changed after.
	timeout *hashedwheel.Timeout
}

// stats counts outcomes. Every field is updated from the work goroutines and
// the timer's worker goroutine, so every field is atomic.
type stats struct {
	finished      atomic.Int64
	timedOut      atomic.Int64
	doubleCounted atomic.Int64 // a request whose state was already final
	early         atomic.Int64 // deadline tasks that ran before Deadline()
	maxLate       atomic.Int64 // the latest deadline task, in ns after Deadline()
	shortTimedOut atomic.Int64 // timed out although work < deadline
	longFinished  atomic.Int64 // finished although work >= deadline

	// settled is done once per request, by whichever side counted it.
	settled sync.WaitGroup
}

// storeMax raises v to at least x.
func storeMax(v *atomic.Int64, x int64) {
	for {
		old := v.Load()
		if x <= old || v.CompareAndSwap(old, x) {
			return
		}
	}
}

func main() {
	// A watchdog that cannot be fooled by a stuck goroutine: whatever
	// happens, the program ends shortly after runBudget.
	watchdog := time.AfterFunc(runBudget+2*time.Second, func() {
		fmt.Fprintln(os.Stderr, "deadline: watchdog: the program did not finish in time")
		os.Exit(2)
	})
	err := run()
	watchdog.Stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "deadline:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), runBudget)
	defer cancel()

	// 64 buckets of 10ms cover 640ms per turn of the wheel, more than
	// deadline, so each timeout fires in its first round.
	timer, err := hashedwheel.NewTimer(
		hashedwheel.WithTickDuration(tick),
		hashedwheel.WithTicksPerWheel(64),
	)
	if err != nil {
		return fmt.Errorf("create timer: %w", err)
	}

	rng := rand.New(rand.NewPCG(seed, seed))
	s := &stats{}
	var shortWork int // requests whose work is shorter than deadline
	sem := make(chan struct{}, maxInFlight)
	var workers sync.WaitGroup
	began := time.Now()

	fmt.Printf("%d requests, deadline %v, work 0-%v (seed %d), at most %d in flight, tick %v\n",
		numRequests, deadline, 2*deadline, seed, maxInFlight, timer.TickDuration())

	var runErr error
	for i := range numRequests {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			runErr = fmt.Errorf("started only %d of %d requests: %w", i, numRequests, ctx.Err())
		}
		if runErr != nil {
			break
		}
		r := &request{
			id:    i,
			work:  time.Duration(rng.Int64N(int64(2 * deadline))),
			abort: make(chan struct{}),
		}
		if r.work < deadline {
			shortWork++
		}
		s.settled.Add(1)
		r.start = time.Now()
		t, err := timer.NewTimeout(hashedwheel.TimerFunc(func(t *hashedwheel.Timeout) { s.onDeadline(r, t) }), deadline)
		if err != nil {
			s.settled.Done()
			<-sem
			runErr = fmt.Errorf("request %d: schedule deadline: %w", i, err)
			break
		}
		r.timeout = t
		workers.Add(1)
		go func() {
			defer func() { <-sem; workers.Done() }()
			s.doWork(r)
		}()
	}

	// Wait until every started request is counted, but never past ctx.
	settled := make(chan struct{})
	go func() {
		workers.Wait()
		s.settled.Wait()
		close(settled)
	}()
	select {
	case <-settled:
	case <-ctx.Done():
		// Something is stuck. Stop the timer and give up; the program
		// exits right after, leaving the waiting goroutine behind.
		return errors.Join(runErr, fmt.Errorf("requests not all settled: %w", ctx.Err()), stopErr(timer))
	}
	elapsed := time.Since(began)

	// A cancelled timeout leaves the pending count only when the worker
	// unlinks it at its next tick, as in Netty, so allow a few ticks.
	pendingAtEnd := timer.PendingTimeouts()
	drainStart := time.Now()
	for timer.PendingTimeouts() != 0 && time.Since(drainStart) < 50*tick {
		time.Sleep(tick)
	}
	pending := timer.PendingTimeouts()
	drained := time.Since(drainStart)
	left := timer.Stop()

	finished, timedOut := s.finished.Load(), s.timedOut.Load()
	fmt.Printf("finished:   %6d  (work shorter than the deadline: %d)\n", finished, shortWork)
	fmt.Printf("timed out:  %6d\n", timedOut)
	fmt.Printf("total:      %6d  of %d requests, in %v\n", finished+timedOut, numRequests, elapsed.Round(time.Millisecond))
	fmt.Printf("near the deadline: %d short requests timed out, %d long ones finished (a tick or scheduling noise decides)\n",
		s.shortTimedOut.Load(), s.longFinished.Load())
	fmt.Printf("deadline tasks: %d ran early, the latest ran %v after its Deadline()\n",
		s.early.Load(), time.Duration(s.maxLate.Load()).Round(time.Microsecond))
	fmt.Printf("PendingTimeouts: %d when all requests settled, %d after %v; Stop returned %d\n",
		pendingAtEnd, pending, drained.Round(time.Millisecond), len(left))

	var problems []string
	if runErr != nil {
		problems = append(problems, runErr.Error())
	}
	if finished+timedOut != numRequests {
		problems = append(problems, fmt.Sprintf("finished+timed out = %d, want %d", finished+timedOut, numRequests))
	}
	if n := s.doubleCounted.Load(); n != 0 {
		problems = append(problems, fmt.Sprintf("%d requests counted twice", n))
	}
	if n := s.early.Load(); n != 0 {
		problems = append(problems, fmt.Sprintf("%d deadline tasks ran before their Deadline()", n))
	}
	if pending != 0 {
		problems = append(problems, fmt.Sprintf("PendingTimeouts = %d at the end, want 0", pending))
	}
	if len(left) != 0 {
		problems = append(problems, fmt.Sprintf("Stop returned %d timeouts, want 0", len(left)))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d problem(s):\n  %s", len(problems), strings.Join(problems, "\n  "))
	}
	fmt.Println("ok: every request was counted exactly once")
	return nil
}

// stopErr stops the timer and reports what it still held.
func stopErr(timer *hashedwheel.Timer) error {
	if left := timer.Stop(); len(left) > 0 {
		return fmt.Errorf("stop cancelled %d pending timeouts", len(left))
	}
	return nil
}

// doWork simulates the request's work on its own goroutine, racing the
// deadline.
func (s *stats) doWork(r *request) {
	work := time.NewTimer(r.work)
	select {
	case <-work.C:
		// The work is done. Cancel reports true only if the deadline
		// had not fired: then its task will never run and the request
		// is ours to count. If it reports false, the task has counted
		// the request as timed out (or is about to), so count nothing.
		if r.timeout.Cancel() {
			s.settle(r, stateFinished)
		}
	case <-r.abort:
		// The deadline fired first and its task counted the request;
		// stop working.
		work.Stop()
	}
}

// onDeadline is the request's timer task. It runs on the timer's worker
// goroutine, so it only counts and signals.
func (s *stats) onDeadline(r *request, t *hashedwheel.Timeout) {
	now := time.Now()
	if now.Before(t.Deadline()) || now.Sub(r.start) < deadline {
		s.early.Add(1)
	}
	storeMax(&s.maxLate, int64(now.Sub(t.Deadline())))
	if s.settle(r, stateTimedOut) {
		close(r.abort)
	}
}

// settle moves r from pending to outcome and counts it. It reports false,
// and counts a double count, if r was already counted.
func (s *stats) settle(r *request, outcome int32) bool {
	if !r.state.CompareAndSwap(statePending, outcome) {
		s.doubleCounted.Add(1)
		return false
	}
	short := r.work < deadline
	switch outcome {
	case stateFinished:
		s.finished.Add(1)
		if !short {
			s.longFinished.Add(1)
		}
	case stateTimedOut:
		s.timedOut.Add(1)
		if short {
			s.shortTimedOut.Add(1)
		}
	}
	s.settled.Done()
	return true
}
