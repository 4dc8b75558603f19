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
// PendingTimeouts at once, so the count is 0 as soon as every request has
// settled.
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

const (
	requests = 2000
	deadline = 200 * time.Millisecond
)

func main() {
	timer, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(10 * time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2)) // the same work lengths every run
	var finished, timedOut, late atomic.Int64
	var settled sync.WaitGroup // one Done per request, by whichever side counts it
	start := time.Now()
	for range requests {
		work := time.Duration(rng.Int64N(int64(2 * deadline)))
		abort := make(chan struct{})
		settled.Add(1)
		to, err := timer.AfterFunc(deadline, func() {
			timedOut.Add(1)
			close(abort)
			settled.Done()
		})
		if err != nil {
			log.Fatal(err)
		}
		go func() {
			done := time.NewTimer(work)
			defer done.Stop()
			select {
			case <-done.C:
				if to.Cancel() {
					finished.Add(1)
					settled.Done()
				} else {
					late.Add(1) // the task has counted the request
				}
			case <-abort:
			}
		}()
	}
	settled.Wait()
	fmt.Printf("%d requests, deadline %v, work 0-%v, all settled in %v\n",
		requests, deadline, 2*deadline, time.Since(start).Round(time.Millisecond))
	fmt.Printf("  finished:  %4d (Cancel returned true)\n", finished.Load())
	fmt.Printf("  timed out: %4d (%d of them finished just too late: Cancel returned false)\n",
		timedOut.Load(), late.Load())
	fmt.Printf("  counted:   %4d\n", finished.Load()+timedOut.Load())
	fmt.Printf("  PendingTimeouts once all settled: %d\n", timer.PendingTimeouts())
	timer.Stop()
	s := timer.Stats()
	fmt.Printf("  timer: %d deadlines fired, %d cancelled, at most %v late\n",
		s.Expired, s.Cancelled, s.MaxLateness.Round(time.Millisecond))
}
