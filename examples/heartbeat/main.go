// Command heartbeat keeps links alive with heartbeats from one shared
// hashedwheel.Timer, and closes a link whose peer stops answering.
//
// A hub pings each peer every period with Timer.Every, and re-arms an idle
// deadline with Timeout.Reset on each answer: a peer silent for 4 periods is
// closed. Pings are written on the timer's pool (WithTaskWorkers), so a write
// blocked on a peer that stopped reading holds up one pool goroutine, until
// its write deadline, not the worker or the other links. The links are
// net.Pipe connections, whose writes block until the peer reads, as a full
// TCP buffer does. One peer stops reading after a second.
//
//	go run ./examples/heartbeat
package main

import (
	"bufio"
	"errors"
	"fmt"
	"log"
	"net"
	"sync"
	"time"

	"github.com/hashedwheel/hashedwheel"
)

// link is what a hub saw of its peer.
type link struct {
	name     string
	answered int
	silent   time.Duration // how long the peer had been silent when closed; 0 if it hung up
	err      error
}

// hub pings the peer on conn every period and closes conn once the peer has
// not answered for deadAfter.
func hub(timer *hashedwheel.Timer, name string, conn net.Conn, period, deadAfter time.Duration) (l link) {
	defer conn.Close()
	l.name = name
	last := time.Now()
	idle, err1 := timer.AfterFunc(deadAfter, func() { conn.Close() })
	beat, err2 := timer.Every(period, func() { // runs on a pool goroutine
		conn.SetWriteDeadline(time.Now().Add(deadAfter))
		fmt.Fprintln(conn, "ping")
	})
	if l.err = errors.Join(err1, err2); l.err != nil {
		return l // the timer is stopped, and has cancelled the other
	}
	defer beat.Cancel()
	for sc := bufio.NewScanner(conn); sc.Scan(); {
		if !idle.Reset(deadAfter) {
			break // too late: the idle task is closing conn
		}
		last, l.answered = time.Now(), l.answered+1
	}
	if !idle.Cancel() { // false: it fired, so the peer went silent
		l.silent = time.Since(last)
	}
	return l
}

// peer answers pings on conn until stop is closed, and returns when each ping
// came. After stopAfter pings (0: never) it stops reading.
func peer(conn net.Conn, stopAfter int, stop <-chan struct{}) (pings []time.Time) {
	go func() { <-stop; conn.Close() }()
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		if pings = append(pings, time.Now()); len(pings) == stopAfter {
			<-stop
			break
		}
		fmt.Fprintln(conn, "pong")
	}
	return pings
}

// exchange links a hub to each of three peers for runFor, then has the peers
// hang up. The third, "stuck", stops reading after stuckAfter pings.
func exchange(timer *hashedwheel.Timer, period, runFor time.Duration, stuckAfter int) ([]link, [][]time.Time) {
	names, stopAfter := []string{"peer-1", "peer-2", "stuck"}, []int{0, 0, stuckAfter}
	links, pings := make([]link, len(names)), make([][]time.Time, len(names))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range names {
		hubEnd, peerEnd := net.Pipe()
		wg.Go(func() { links[i] = hub(timer, names[i], hubEnd, period, 4*period) })
		wg.Go(func() { pings[i] = peer(peerEnd, stopAfter[i], stop) })
	}
	time.Sleep(runFor)
	close(stop)
	wg.Wait()
	return links, pings
}

func main() {
	timer, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(5*time.Millisecond), hashedwheel.WithTaskWorkers(2))
	if err != nil {
		log.Fatal(err)
	}
	links, pings := exchange(timer, 50*time.Millisecond, 2*time.Second, 20)
	timer.Stop() // on every path: nothing above returns early
	for i, l := range links {
		switch p := pings[i]; {
		case l.err != nil:
			fmt.Println("hub:", l.err)
		case l.silent > 0:
			fmt.Printf("%-6s stopped reading after %d pings: closed, silent for %v\n", l.name, len(p), l.silent.Round(time.Millisecond))
		case len(p) > 1:
			fmt.Printf("%-6s answered %d pings, one every %v on average\n", l.name, l.answered, p[len(p)-1].Sub(p[0])/time.Duration(len(p)-1))
		}
	}
}
