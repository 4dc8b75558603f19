package main

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashedwheel/hashedwheel"
)

// TestOnlyTheSilentConnectionIsClosed, on the fake clock with a 10ms tick: a
// ping comes at the end of the tick 100ms after the last read (110ms after,
// as the pong comes at once). quiet's last read is its third pong, at 330ms;
// it is pinged at 440ms and 540ms and closed at 640ms, 310ms after, never
// before 300ms. alice, pinged every 110ms, last read at 990ms of the 1s.
func TestOnlyTheSilentConnectionIsClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		timer, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(10 * time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		defer timer.Stop()
		want := map[string]string{"alice": "9 9 10ms", "quiet": "5 3 310ms"} // pings, answers, silent
		for _, c := range exchange(timer, time.Second) {
			if got := fmt.Sprint(c.pings.Load(), c.answers.Load(), c.silent); got != want[c.name] {
				t.Errorf("%s: %s, want %s", c.name, got, want[c.name])
			}
		}
		if n := timer.PendingTimeouts(); n != 0 {
			t.Errorf("%d Timeouts pending once every connection has ended", n)
		}
	})
}
