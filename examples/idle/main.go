// Command idle closes in-memory sessions idle for a limit, with neither a
// message from their client nor one to it, with one shared hashedwheel.Timer.
//
// Each session is a chat or pub/sub client held in memory. Every message,
// from it or to it, re-arms its idle deadline with Timeout.Reset, which does
// not allocate; the deadline's task closes a session silent both ways for the
// limit. A listener that only receives stays open: a read deadline would not.
//
// Use net.Conn.SetReadDeadline instead when a goroutine per connection reads
// anyway and idle means "nothing was read": the runtime's poller keeps that
// deadline at no extra cost, and a wheel gains nothing. A wheel pays when the
// deadline follows what the poller does not see: writes too, messages in
// memory, sessions that outlive a connection, or an event loop (examples/actor).
//
//	go run ./examples/idle
package main

import (
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/hashedwheel/hashedwheel"
)

// client is how a simulated client uses its session: n messages gap apart,
// sent by it or delivered to it (either way is activity); then it is quiet
// until it leaves.
type client struct {
	name       string
	n          int
	gap, leave time.Duration
}

// result is how a session ended: its client left, it was closed idleFor
// after its last message, or it could not start (err).
type result struct {
	messages int
	left     bool
	idleFor  time.Duration
	err      error
}

// serve runs c's session until the client leaves or the session is closed.
func serve(timer *hashedwheel.Timer, limit time.Duration, c client) (r result) {
	closed := make(chan struct{})
	idle, err := timer.AfterFunc(limit, func() { close(closed) })
	if r.err = err; err != nil {
		return r
	}
	last, sent := time.Now(), 0
	messages := time.NewTicker(c.gap)
	defer messages.Stop()
	leave := time.After(c.leave)
	for {
		select {
		case now := <-messages.C:
			// A message either way is activity: re-arm. Reset returns false
			// once the deadline has fired: the session is closing.
			if sent++; sent <= c.n && idle.Reset(limit) {
				r.messages, last = r.messages+1, now
			}
		case <-leave:
			if r.left = idle.Cancel(); r.left { // false: it is closing
				return r
			}
		case <-closed:
			r.idleFor = time.Since(last)
			return r
		}
	}
}

// serveAll serves the sessions of cs at once.
func serveAll(timer *hashedwheel.Timer, limit time.Duration, cs []client) []result {
	results := make([]result, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() { results[i] = serve(timer, limit, c) })
	}
	wg.Wait()
	return results
}

// clients are the demo's: two keep their sessions busy, one of them only
// receiving, and one goes quiet after two messages.
func clients() []client {
	return []client{
		{"talker", 10, 100 * time.Millisecond, 1050 * time.Millisecond},
		{"listener", 10, 100 * time.Millisecond, 1050 * time.Millisecond},
		{"quiet", 2, 100 * time.Millisecond, 1050 * time.Millisecond},
	}
}

func main() {
	// One timer for every session; its 10ms tick is the idle limit's precision.
	timer, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(10 * time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	const limit = 300 * time.Millisecond
	cs := clients()
	for i, r := range serveAll(timer, limit, cs) {
		switch c := cs[i]; {
		case r.err != nil:
			fmt.Printf("%-8s %v\n", c.name, r.err)
		case r.left:
			fmt.Printf("%-8s left after %d messages\n", c.name, r.messages)
		default:
			fmt.Printf("%-8s closed after %d messages, idle for %v (limit %v)\n",
				c.name, r.messages, r.idleFor.Round(time.Millisecond), limit)
		}
	}
	timer.Stop()       // on every path: nothing above returns early
	s := timer.Stats() // final once Stop has returned
	fmt.Printf("timer: %d idle deadlines fired, %d cancelled\n", s.Expired, s.Cancelled)
}
