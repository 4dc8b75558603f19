package main

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashedwheel/hashedwheel"
)

// TestOnlyTheQuietSessionIsClosed serves the demo's clients on the fake
// clock: a session is closed once idle for the limit, at the end of that
// deadline's 10ms tick and never before; one that only receives never is.
func TestOnlyTheQuietSessionIsClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		timer, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(10 * time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		results := serveAll(timer, 300*time.Millisecond, clients())
		// quiet: last message at 200ms, due at 500ms, closed as its tick ends.
		want := []result{{10, true, 0, nil}, {10, true, 0, nil}, {2, false, 310 * time.Millisecond, nil}}
		for i, c := range clients() {
			if results[i] != want[i] {
				t.Errorf("%s: %+v, want %+v", c.name, results[i], want[i])
			}
		}
		if timer.Stop(); timer.Stats().Expired != 1 || timer.Stats().Cancelled != 2 {
			t.Errorf("Stats %+v: want 1 idle deadline fired, 2 cancelled", timer.Stats())
		}
	})
}
