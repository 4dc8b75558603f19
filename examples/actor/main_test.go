package main

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestActorClosesOnlyTheQuietSession runs the actor on the fake clock: a
// session is closed once idle for the limit (at the end of that deadline's
// 10ms tick), never before, and sessions that keep talking never are.
func TestActorClosesOnlyTheQuietSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		closedAt := map[string]time.Duration{}
		a, err := newActor(300*time.Millisecond, func(name string) { closedAt[name] = time.Since(start) })
		if err != nil {
			t.Fatal(err)
		}
		inbox := make(chan string)
		var clients sync.WaitGroup
		clients.Go(func() { talk(inbox, "quiet", 450*time.Millisecond) }) // last message at 400ms
		clients.Go(func() { talk(inbox, "busy", 3*time.Second) })
		go func() {
			clients.Wait()
			close(inbox)
		}()
		if err := a.run(inbox); err != nil {
			t.Fatal(err)
		}
		// Idle from 400ms, due at 700ms: closed when the 700-710ms tick ends.
		want := map[string]time.Duration{"quiet": 710 * time.Millisecond}
		if len(closedAt) != 1 || closedAt["quiet"] != want["quiet"] {
			t.Errorf("closed %v, want %v", closedAt, want)
		}
		if _, open := a.sessions["busy"]; !open || len(a.sessions) != 1 {
			t.Errorf("open sessions %v, want busy only", a.sessions)
		}
	})
}
