// Command heartbeat keeps loopback TCP links alive with heartbeats from one
// shared hashedwheel.Timer, and closes a link whose peer stops answering.
//
// A hub pings each peer every period with Timer.Every and re-arms an idle
// deadline with Timeout.Reset on each answer: a peer silent for deadAfter is
// closed. Pings are written on the timer's pool (WithTaskWorkers): a write
// blocked on a peer that stopped reading holds up one pool goroutine, for at
// most its write deadline; not the worker, and not the other links while
// another pool goroutine is free. One peer stops reading after a second; the
// program ends after two.
//
//	go run ./examples/heartbeat
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

const (
	period    = 50 * time.Millisecond
	deadAfter = 4 * period // no answer for this long: the peer is gone
)

var sent, answered atomic.Int64 // pings the hub wrote, answers it read

func main() {
	timer, err := hashedwheel.NewTimer(
		hashedwheel.WithTickDuration(5*time.Millisecond),
		hashedwheel.WithTaskWorkers(2))
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, name := range []string{"peer-1", "peer-2", "stuck"} {
		wg.Go(func() { peer(ln.Addr().String(), name, stop) })
		conn, err := ln.Accept()
		if err != nil {
			log.Fatal(err)
		}
		wg.Go(func() { hub(timer, conn) })
	}
	time.Sleep(2 * time.Second)
	close(stop) // the peers hang up
	wg.Wait()
	timer.Stop()
	s := timer.Stats() // final once Stop has returned
	fmt.Printf("hub: %d pings sent, %d answered; timer: %d task runs, at most %v late\n",
		sent.Load(), answered.Load(), s.Expired, s.MaxLateness.Round(time.Millisecond))
}

// hub pings the peer on conn every period and closes conn when the peer has
// not answered for deadAfter.
func hub(timer *hashedwheel.Timer, conn net.Conn) {
	defer conn.Close()
	idle, err1 := timer.AfterFunc(deadAfter, func() { conn.Close() })
	beat, err2 := timer.Every(period, func() { // runs on a pool goroutine
		conn.SetWriteDeadline(time.Now().Add(deadAfter))
		if _, err := fmt.Fprintln(conn, "ping"); err == nil {
			sent.Add(1)
		}
	})
	if err1 != nil || err2 != nil {
		return // the timer is stopped
	}
	defer beat.Cancel()
	sc := bufio.NewScanner(conn)
	sc.Scan() // the peer's name
	name, last := sc.Text(), time.Now()
	for sc.Scan() {
		if !idle.Reset(deadAfter) {
			break // too late: the idle task is closing conn
		}
		last = time.Now()
		answered.Add(1)
	}
	if !idle.Cancel() { // false: it fired, so the peer went silent
		fmt.Printf("hub: no answer from %s for %v: closed the link\n",
			name, time.Since(last).Round(time.Millisecond))
	}
}

// peer answers the hub's pings until stop is closed. The peer named "stuck"
// stops reading after a second.
func peer(addr, name string, stop <-chan struct{}) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		log.Fatal(err)
	}
	go func() { <-stop; conn.Close() }()
	fmt.Fprintln(conn, name)
	start, pings := time.Now(), 0
	var first, last time.Time
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		if last = time.Now(); pings == 0 {
			first = last
		}
		pings++
		if name == "stuck" && last.Sub(start) > time.Second {
			fmt.Printf("%s: stops reading after %d pings\n", name, pings)
			<-stop
			break
		}
		fmt.Fprintln(conn, "pong")
	}
	if pings > 1 { // the mean period between the first ping and the last
		fmt.Printf("%s: %d pings received, mean period %v (configured %v)\n",
			name, pings, (last.Sub(first) / time.Duration(pings-1)).Round(10*time.Microsecond), period)
	}
}
