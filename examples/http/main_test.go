package main

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashedwheel/hashedwheel"
)

// TestDeadlineAnswers503NeverBeforeItAndAtMostATickAfter: on the fake clock,
// 200 once the work is done, else 503 within a tick after the deadline.
func TestDeadlineAnswers503NeverBeforeItAndAtMostATickAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const tick, deadline = 10 * time.Millisecond, 100 * time.Millisecond
		timer, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(tick))
		if err != nil {
			t.Fatal(err)
		}
		defer timer.Stop()
		late := make(chan time.Duration, 3)
		for _, d := range []time.Duration{5 * time.Millisecond, 3 * deadline, time.Hour} {
			time.Sleep(3 * time.Millisecond) // start mid-tick
			start, rec := time.Now(), httptest.NewRecorder()
			withDeadline(timer, deadline, work(d, late)).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
			took, code, want := time.Since(start), http.StatusServiceUnavailable, deadline
			if d < deadline {
				code, want = http.StatusOK, d
			}
			if rec.Code != code || took < want || took > want+tick || timer.PendingTimeouts() != 0 {
				t.Errorf("work %v: %d after %v, %d pending; want %d after %v", d, rec.Code, took, timer.PendingTimeouts(), code, want)
			}
		}
		for range 2 { // one per 503: a missing one blocks the bubble and fails the test
			if d := <-late; d < 0 || d > tick {
				t.Errorf("a 503 recorded as sent %v after its deadline, want 0 to a tick", d)
			}
		}
	})
}
