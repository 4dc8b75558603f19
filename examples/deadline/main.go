// Command deadline races simulated requests against deadlines kept by one
// shared hashedwheel.Timer, and counts each request exactly once.
//
// Each request schedules its deadline with AfterFunc and does work of a random
// length, up to twice the deadline. Whichever ends first settles the request,
// and Cancel's result says which did:
//
//   - The work ends first and its Cancel returns true: the deadline's task
//     will never run, so the work counts the request as finished.
//   - The deadline fires first: its task counts the request as timed out and
//     aborts the work. A Cancel that comes too late returns false, and the
//     work counts nothing.
//
// No lock and no flag per request are needed. A cancelled timeout leaves
// PendingTimeouts at once: it is 0 as soon as every request has settled.
//
//	go run ./examples/deadline
package main

import (
	"fmt"
	"log"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashedwheel/hashedwheel"
)

// tally counts requests as they settle, each once: finished or timed out.
// late counts those timed out whose work ended just after (Cancel false).
type tally struct {
	finished, timedOut, late atomic.Int64
	settled                  sync.WaitGroup // one Done per request
}

// request starts a request of work against a deadline, to be counted in t.
func (t *tally) request(timer *hashedwheel.Timer, deadline, work time.Duration) error {
	abort := make(chan struct{})
	t.settled.Add(1)
	to, err := timer.AfterFunc(deadline, func() {
		t.timedOut.Add(1)
		close(abort)
		t.settled.Done()
	})
	if err != nil {
		t.settled.Done()
		return err
	}
	go func() {
		select {
		case <-time.After(work):
			if to.Cancel() {
				t.finished.Add(1)
				t.settled.Done()
			} else {
				t.late.Add(1) // the task has counted the request
			}
		case <-abort:
		}
	}()
	return nil
}

func main() {
	timer, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(10 * time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	const requests, deadline = 2000, 200 * time.Millisecond
	rng := rand.New(rand.NewPCG(1, 2)) // the same work lengths every run
	var t tally
	start := time.Now()
	for range requests {
		if err := t.request(timer, deadline, time.Duration(rng.Int64N(int64(2*deadline)))); err != nil {
			timer.Stop()
			log.Fatal(err)
		}
	}
	t.settled.Wait()
	fmt.Printf("%d requests, deadline %v, work 0-%v: all settled in %v, %d timeouts pending\n",
		requests, deadline, 2*deadline, time.Since(start).Round(time.Millisecond), timer.PendingTimeouts())
	fmt.Printf("  finished:  %4d (Cancel returned true)\n", t.finished.Load())
	fmt.Printf("  timed out: %4d (%d of them finished just too late: Cancel returned false)\n",
		t.timedOut.Load(), t.late.Load())
	timer.Stop()
	s := timer.Stats() // final once Stop has returned
	fmt.Printf("  timer: %d deadlines fired, %d cancelled, at most %v late\n",
		s.Expired, s.Cancelled, s.MaxLateness.Round(time.Millisecond))
}
