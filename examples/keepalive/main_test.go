package main

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashedwheel/hashedwheel"
)

// TestOnlyTheSilentConnectionIsClosed runs the exchange on the fake clock,
// with a 10ms tick. A connection is pinged once it has read nothing for
// 100ms, at the end of that tick (110ms after its last read, as the pong
// comes at once), and closed once it has read nothing for 300ms, never
// before: quiet's last read is its third pong, at 330ms; it is pinged at
// 440ms and 540ms, and closed at 640ms, 310ms after that read. alice,
// which answers, is pinged every 110ms and never closed.
func TestOnlyTheSilentConnectionIsClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		timer, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(10 * time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		defer timer.Stop()
		type result struct {
			pings, answers int32
			silent         time.Duration
		}
		want := map[string]result{"alice": {9, 9, 0}, "quiet": {5, 3, 310 * time.Millisecond}}
		for _, c := range exchange(timer, time.Second) {
			if got := (result{c.pings.Load(), c.answers.Load(), c.silent}); got != want[c.name] {
				t.Errorf("%s: %+v, want %+v", c.name, got, want[c.name])
			}
			if c.silent > 0 && c.silent < closeAfter {
				t.Errorf("%s: closed after %v silent, before %v", c.name, c.silent, closeAfter)
			}
		}
		if n := timer.PendingTimeouts(); n != 0 {
			t.Errorf("%d Timeouts pending once every connection has ended", n)
		}
	})
}
