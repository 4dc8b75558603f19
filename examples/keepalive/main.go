// Command keepalive pings a connection that has read nothing for pingAfter
// and closes one silent for closeAfter, with one hashedwheel.Timeout per
// connection: its task looks at the last read and re-arms with ScheduleAt
// from its deadline. One net.Pipe peer answers every ping, the other three.
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
	timeout        hashedwheel.Timeout // kept by pointer: never copied or moved once armed
	opened         time.Time
	lastRead       atomic.Int64 // since opened: the reader writes it, Run reads it
	pings, answers atomic.Int32
	done           atomic.Bool   // its reader returned
	silent         time.Duration // how long it had read nothing when it was closed
}

// Run, on the Timer's worker, closes the connection, or pings it, and re-arms.
func (c *conn) Run(to *hashedwheel.Timeout) {
	if c.done.Load() {
		return // its reader returned: arm it no more
	}
	due, last := to.Deadline(), c.opened.Add(time.Duration(c.lastRead.Load()))
	next := last.Add(pingAfter)
	switch quiet := due.Sub(last); {
	case quiet >= closeAfter:
		c.Close() // its reader returns
		return
	case quiet >= pingAfter:
		c.SetWriteDeadline(time.Now().Add(pingAfter)) // a peer that stopped reading holds no one up
		if _, err := fmt.Fprintln(c, "ping"); err == nil {
			c.pings.Add(1)
		}
		// The next ping pingAfter after this run's deadline, not after now:
		// a run comes up to a tick late, and the pings would drift with it.
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
	if err := timer.ScheduleAt(&c.timeout, c, c.opened.Add(pingAfter)); err != nil {
		log.Print(err) // the Timer stopped
		return
	}
	for sc := bufio.NewScanner(c); sc.Scan(); c.answers.Add(1) {
		c.lastRead.Store(int64(time.Since(c.opened)))
	}
	c.done.Store(true)
	c.silent = time.Since(c.opened) - time.Duration(c.lastRead.Load())
	c.timeout.Cancel() // a run out now arms it once more at most, for a run that returns at once
}

// peer answers the first answers pings on c (all if 0) until it is closed.
func peer(c net.Conn, answers int) {
	defer c.Close()
	for n, sc := 1, bufio.NewScanner(c); sc.Scan(); n++ {
		if answers == 0 || n <= answers {
			fmt.Fprintln(c, "pong")
		}
	}
}

// exchange links alice (answers every ping) and quiet (three) to peers for runFor.
func exchange(timer *hashedwheel.Timer, runFor time.Duration) []*conn {
	conns := []*conn{{name: "alice"}, {name: "quiet"}}
	var wg sync.WaitGroup
	for i, c := range conns {
		ours, theirs := net.Pipe()
		c.Conn = ours
		wg.Go(func() { serve(timer, c) })
		wg.Go(func() { peer(theirs, 3*i) })
	}
	time.Sleep(runFor)
	for _, c := range conns {
		c.Close()
	}
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
		fmt.Printf("%-5s pinged %d times, answered %d, closed after %v silent\n", c.name, c.pings.Load(), c.answers.Load(), c.silent.Round(10*time.Millisecond))
	}
}
