package main

import (
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashedwheel/hashedwheel"
)

// TestEachRequestIsCountedOnceByWhicheverEndsFirst races requests, each with
// a tally of its own, against their deadlines on the fake clock: each counts
// once, as finished only if its work ended by its deadline's tick's end, as
// timed out only if not before the deadline; Stats agrees.
func TestEachRequestIsCountedOnceByWhicheverEndsFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const tick, deadline, requests = 10 * time.Millisecond, 200 * time.Millisecond, 2000
		timer, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(tick))
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		work := []time.Duration{0, deadline - 1, deadline, deadline + tick - 1, deadline + tick, deadline + tick + 1} // edges
		for len(work) < requests {
			r := func() time.Duration { return time.Duration(rng.Int64N(int64(2 * deadline))) }
			work = append(work, r(), r(), r(), deadline+tick)
		}
		tallies := make([]tally, requests)
		start := time.Now()
		timer.Start() // ticks end at start + k*tick
		for i := range tallies {
			phase := time.Duration(rng.Int64N(int64(tick)))
			if work[i] == deadline+tick { // the work ends as the deadline's task runs
				phase = tick - time.Since(start)%tick
			}
			time.Sleep(phase)
			if err := tallies[i].request(timer, deadline, work[i]); err != nil {
				t.Fatal(err)
			}
		}
		var finished, timedOut uint64
		for i := range tallies {
			tallies[i].settled.Wait()
			f, o := tallies[i].finished.Load(), tallies[i].timedOut.Load()
			switch {
			case f+o != 1:
				t.Errorf("request %d (work %v) counted %d times", i, work[i], f+o)
			case f == 1 && work[i] > deadline+tick, o == 1 && work[i] < deadline:
				t.Errorf("request %d with work %v: finished %d, timed out %d", i, work[i], f, o)
			}
			finished, timedOut = finished+uint64(f), timedOut+uint64(o)
		}
		pending := timer.PendingTimeouts() // every request has settled
		if timer.Stop(); pending != 0 || timer.Stats().Expired != timedOut || timer.Stats().Cancelled != finished {
			t.Errorf("%d pending; Stats %+v, want %d expired, %d cancelled", pending, timer.Stats(), timedOut, finished)
		}
	})
}
