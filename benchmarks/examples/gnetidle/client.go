package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"time"

	"github.com/panjf2000/gnet/v2"
)

// run serves on loopback with the given limit, connects a client that sends
// a line every limit/4 and one that stays silent, for two limits, and
// returns what each saw.
func run(limit time.Duration) (talker, silent report, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // to find a free port
	if err != nil {
		return talker, silent, err
	}
	addr := ln.Addr().String()
	ln.Close()
	s := &server{limit: limit, origin: time.Now(), booted: make(chan struct{}), loops: make(map[gnet.EventLoop]*loop)}
	served := make(chan error, 1)
	go func() {
		served <- gnet.Run(s, "tcp://"+addr, gnet.WithMulticore(true), gnet.WithTicker(true))
	}()
	select {
	case <-s.booted:
	case err := <-served:
		return talker, silent, err
	}
	done := make(chan report)
	go func() { done <- dial(addr, 0, 2*limit) }()
	talker = dial(addr, limit/4, 2*limit)
	silent = <-done
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.eng.Stop(ctx); err != nil {
		return talker, silent, err
	}
	return talker, silent, <-served
}

// report is what a client saw: the lines it got back, and when the server
// closed the connection, counted from its last line or, if it sent none,
// from the dial (0 if it did not close it).
type report struct {
	echoes, pings int
	closedAfter   time.Duration
	err           error
}

func (r report) String() string {
	if r.err != nil {
		return r.err.Error()
	}
	state := "still open"
	if r.closedAfter > 0 {
		state = fmt.Sprintf("closed %v after its last line", r.closedAfter.Round(time.Millisecond))
	}
	return fmt.Sprintf("%d echoes, %d pings, %s", r.echoes, r.pings, state)
}

// dial connects to addr and, for d, sends a line every period (never, if 0).
func dial(addr string, every, d time.Duration) (r report) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return report{err: err}
	}
	defer c.Close()
	lines := make(chan string)
	go func() {
		defer close(lines)
		for sc := bufio.NewScanner(c); sc.Scan(); {
			lines <- sc.Text()
		}
	}()
	last := time.Now()
	var send <-chan time.Time
	if every > 0 {
		tk := time.NewTicker(every)
		defer tk.Stop()
		send = tk.C
	}
	end := time.After(d)
	for {
		select {
		case <-send:
			if _, err := fmt.Fprintln(c, "hello"); err != nil {
				return report{err: err}
			}
			last = time.Now()
		case line, ok := <-lines:
			switch {
			case !ok:
				r.closedAfter = time.Since(last)
				return r
			case line == "ping":
				r.pings++
			default:
				r.echoes++
			}
		case <-end:
			c.Close()
			for range lines {
			}
			return r
		}
	}
}
