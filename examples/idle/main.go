// Command idle closes idle TCP connections with one shared hashedwheel.Timer.
//
// A loopback server gives each connection an idle timeout and re-arms it with
// Timeout.Reset on every line it reads: no allocation, no Cancel and
// reschedule. If nothing arrives for idleLimit, the timeout's task closes the
// connection. In-process clients show both ends: chatty ones keep their
// connection open for longer than the limit and hang up themselves, quiet ones
// go silent and get closed. At the end it prints the timer's Stats.
//
//	go run ./examples/idle
package main

import (
	"bufio"
	"fmt"
	"log"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/hashedwheel/hashedwheel"
)

const idleLimit = 300 * time.Millisecond

func main() {
	// One timer for every connection; its 10ms tick is the idle limit's precision.
	timer, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(10 * time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return // the listener is closed
			}
			wg.Go(func() { serve(timer, conn) })
		}
	})

	var clients sync.WaitGroup
	addr := ln.Addr().String()
	clients.Go(func() { client(addr, "chatty-1", 8, 100*time.Millisecond, true) })
	clients.Go(func() { client(addr, "chatty-2", 4, 200*time.Millisecond, true) })
	clients.Go(func() { client(addr, "quiet-1", 2, 50*time.Millisecond, false) })
	clients.Go(func() { client(addr, "quiet-2", 3, 100*time.Millisecond, false) })
	clients.Wait()

	ln.Close()
	wg.Wait()
	timer.Stop()
	s := timer.Stats()
	fmt.Printf("stats: %d idle timeouts fired, %d cancelled, %d pending; "+
		"worker: %d ticks, %d wake-ups, at most %v late\n",
		s.Expired, s.Cancelled, s.Pending, s.Ticks, s.Wakeups, s.MaxLateness.Round(time.Millisecond))
}

// serve reads lines from conn until it is closed, for idleness by the timer or
// by the client.
func serve(timer *hashedwheel.Timer, conn net.Conn) {
	last := time.Now()
	idle, err := timer.AfterFunc(idleLimit, func() { conn.Close() })
	if err != nil {
		conn.Close()
		return
	}
	name, lines := "?", 0
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		if !idle.Reset(idleLimit) {
			// Too late: the timeout fired and its task is closing conn (or it
			// was cancelled). Drop the line; schedule no new timeout.
			break
		}
		last = time.Now()
		name, _, _ = strings.Cut(sc.Text(), " ")
		lines++
	}
	// The read ended. If Cancel stops the timeout, the client hung up first
	// and closing conn is ours; if not, the timeout's task closed it.
	if idle.Cancel() {
		conn.Close()
		fmt.Printf("server: %s hung up after %d lines\n", name, lines)
		return
	}
	fmt.Printf("server: closed %s, idle for %v after %d lines\n",
		name, time.Since(last).Round(time.Millisecond), lines)
}

// client sends lines lines, gap apart. Then it hangs up, or it goes quiet and
// waits for the server to close the connection.
func client(addr, name string, lines int, gap time.Duration, hangUp bool) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	for i := range lines {
		time.Sleep(gap)
		fmt.Fprintf(conn, "%s line %d\n", name, i+1)
	}
	if hangUp {
		fmt.Printf("%s: sent %d lines in %v, %v apart; hanging up\n",
			name, lines, time.Since(start).Round(time.Millisecond), gap)
		return
	}
	last := time.Now()
	conn.SetReadDeadline(last.Add(5 * time.Second)) // never wait forever
	_, err = conn.Read(make([]byte, 1))             // io.EOF once the server closes
	fmt.Printf("%s: went quiet after %d lines; the server closed the connection %v later (%v)\n",
		name, lines, time.Since(last).Round(time.Millisecond), err)
}
