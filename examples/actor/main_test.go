package main

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestActorClosesOnlyTheQuietSession: on the fake clock, a session is closed
// at the end of the 10ms tick its idle deadline falls in; a busy one never.
func TestActorClosesOnlyTheQuietSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		closedAt := map[string]time.Duration{}
		a, err := newActor(300*time.Millisecond, func(name string) { closedAt[name] = time.Since(start) })
		if err != nil {
			t.Fatal(err)
		}
		inbox := make(chan string)
		go talk(inbox, map[string]time.Duration{"quiet": 450 * time.Millisecond, "busy": 3 * time.Second}) // quiet's last at 400ms
		if err := a.run(inbox); err != nil {
			t.Fatal(err)
		}
		// Idle from 400ms, due at 700ms: closed when the 700-710ms tick ends.
		if len(closedAt) != 1 || closedAt["quiet"] != 710*time.Millisecond {
			t.Errorf("closed %v, want quiet at 710ms", closedAt)
		}
		if _, open := a.sessions["busy"]; !open || len(a.sessions) != 1 {
			t.Errorf("open sessions %v, want busy only", a.sessions)
		}
	})
}
