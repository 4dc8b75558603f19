// Command keepalive pings a connection that has read nothing for
// pingAfter, and closes one silent for closeAfter, with one
// hashedwheel.Timeout per connection: each run looks at the last read and
// re-arms with ScheduleAt, reading no clock. The reader stores its time in
// an atomic, as the task reads it on the Timer's worker. Connections are kept
// by pointer: append on a []conn would move their armed Timeouts.
//
// One net.Pipe peer answers every ping; the other stops after three.
//
//	go run ./examples/keepalive
package main

import (
	"bufio"
	"fmt"
	"log"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashedwheel/hashedwheel"
)

const pingAfter, closeAfter = 100 * time.Millisecond, 300 * time.Millisecond

// conn is a connection, its Timeout, and what it saw.
type conn struct {
	net.Conn
	name           string
	timeout        hashedwheel.Timeout // never copied or moved once armed
	opened         time.Time
	lastRead       atomic.Int64 // since opened: the reader writes it, Run reads it
	pings, answers atomic.Int32
	idle, done     atomic.Bool   // Run closed it; its reader returned
	silent         time.Duration // how long it had read nothing when Run closed it
}

func (c *conn) lastReadAt() time.Time { return c.opened.Add(time.Duration(c.lastRead.Load())) }

// Run, on the Timer's worker, at or after the deadline its Timeout was armed
// for, closes the connection, or pings it, and arms the Timeout again.
func (c *conn) Run(to *hashedwheel.Timeout) {
	if c.done.Load() {
		return // its reader returned: arm it no more
	}
	due, last := to.Deadline(), c.lastReadAt()
	next := last.Add(pingAfter)
	switch quiet := due.Sub(last); {
	case quiet >= closeAfter:
		c.idle.Store(true)
		c.Close() // its reader returns
		return
	case quiet >= pingAfter:
		c.SetWriteDeadline(time.Now().Add(pingAfter)) // a peer that stopped reading holds no one up
		if _, err := fmt.Fprintln(c, "ping"); err == nil {
			c.pings.Add(1)
		}
		// The next ping pingAfter after the deadline this run was for, not
		// after now: counted from the run, which comes up to a tick after
		// its deadline, the pings would drift a tick each.
		if next = due.Add(pingAfter); next.After(last.Add(closeAfter)) {
			next = last.Add(closeAfter)
		}
	}
	if err := to.Timer().ScheduleAt(to, c, next); err != nil {
		c.Close() // the Timer stopped
	}
}

// serve reads c until it is closed, noting the time of each read.
func serve(timer *hashedwheel.Timer, c *conn) {
	defer c.Close()
	c.opened = time.Now() // before the Timeout is armed, which orders it before Run
	if err := timer.ScheduleAt(&c.timeout, c, c.lastReadAt().Add(pingAfter)); err != nil {
		log.Print(err) // the Timer stopped
		return
	}
	for sc := bufio.NewScanner(c); sc.Scan(); c.answers.Add(1) {
		c.lastRead.Store(int64(time.Since(c.opened)))
	}
	c.done.Store(true)
	c.timeout.Cancel() // a run out now arms it once more at most, for a run that returns at once
	if c.idle.Load() {
		c.silent = time.Since(c.lastReadAt())
	}
}

// peer answers the first answers pings on c (all if 0) until stop is closed.
func peer(c net.Conn, answers int, stop <-chan struct{}) {
	go func() { <-stop; c.Close() }()
	for n, sc := 1, bufio.NewScanner(c); sc.Scan(); n++ {
		if answers == 0 || n <= answers {
			fmt.Fprintln(c, "pong")
		}
	}
}

// exchange links a connection to each peer for runFor, then has the peers
// hang up: "alice" answers every ping, "quiet" the first three.
func exchange(timer *hashedwheel.Timer, runFor time.Duration) []*conn {
	conns := []*conn{{name: "alice"}, {name: "quiet"}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, c := range conns {
		ours, theirs := net.Pipe()
		c.Conn = ours
		wg.Go(func() { serve(timer, c) })
		wg.Go(func() { peer(theirs, 3*i, stop) })
	}
	time.Sleep(runFor)
	close(stop)
	wg.Wait()
	return conns
}

func main() {
	timer, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(10 * time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	conns := exchange(timer, time.Second)
	timer.Stop() // on every path: nothing above returns early
	for _, c := range conns {
		fmt.Printf("%-5s pinged %d times, answered %d", c.name, c.pings.Load(), c.answers.Load())
		if c.silent > 0 {
			fmt.Printf(": closed after %v silent", c.silent.Round(10*time.Millisecond))
		}
		fmt.Println()
	}
}
