package main

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashedwheel/hashedwheel"
)

// TestHeartbeatsKeepTheirPeriodAndASilentPeerIsClosed: on the fake clock, pings
// come each period, never early, at most a tick late, while the stuck peer's
// blocks a pool goroutine; it is closed once silent for 4 periods, within a tick.
func TestHeartbeatsKeepTheirPeriodAndASilentPeerIsClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const tick, period = 5 * time.Millisecond, 50 * time.Millisecond
		timer, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(tick), hashedwheel.WithTaskWorkers(2))
		if err != nil {
			t.Fatal(err)
		}
		defer timer.Stop()
		start := time.Now() // when the hubs call Every
		links, pings := exchange(timer, period, time.Second+period/2, 5)
		for i, l := range links[:2] {
			if len(pings[i]) != 20 || l.answered != 20 || l.silent != 0 || l.err != nil {
				t.Fatalf("%s: %d pings, %+v; want 20 pings, 20 answers, not closed", l.name, len(pings[i]), l)
			}
			for k, at := range pings[i] {
				if due := start.Add(time.Duration(k+1) * period); at.Before(due) || at.Sub(due) > tick {
					t.Errorf("%s: ping %d came %v after it was due", l.name, k+1, at.Sub(due))
				}
			}
		}
		if s := links[2].silent; len(pings[2]) != 5 || s < 4*period || s > 4*period+tick {
			t.Errorf("stuck: %d pings, closed after %v silent; want 5, closed after 4 periods", len(pings[2]), s)
		}
	})
}
