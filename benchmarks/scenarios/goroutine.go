package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/hashedwheel/hashedwheel"
	"github.com/hashedwheel/hashedwheel/benchmarks/internal/measure"
)

// Goroutine per connection: the TCP idle server most Go programs are, with
// the clients of idleclient.go (the busy regime's, without pings): a
// goroutine per connection reads, echoes, and keeps the connection's idle
// deadline with
//
//   - deadline: conn.SetReadDeadline(now + limit) before each read; the read
//     fails with a timeout, and the goroutine closes the connection;
//   - afterfunc: time.AfterFunc(limit, close) once, Timer.Reset after each
//     read;
//   - wheel: Timer.AfterFunc(limit, close) once, Timeout.Reset after each
//     read.
//
// The kick lateness is measured where the goroutine sees its read fail.

func goroutineScenario(p params) *scenario {
	return &scenario{
		Name:  "goroutine",
		Title: "Goroutine per connection: a TCP server closing idle connections",
		Variants: []variant{
			{ID: "wheel", Label: "hashedwheel", API: "Timer.AfterFunc(limit, conn.Close) + Timeout.Reset after each read"},
			{ID: "afterfunc", Label: "time.AfterFunc", API: "time.AfterFunc(limit, conn.Close) + Timer.Reset after each read"},
			{ID: "deadline", Label: "SetReadDeadline", API: "conn.SetReadDeadline(time.Now().Add(limit)) before each read", Base: true},
		},
		Cases: []int{0},
		run: func(p params, v variant, _ int) (outcome, error) {
			ss := goroutineSpec{Variant: v.ID, Tick: p.Tick}
			ka := p.GrLimit * 2 / 3 // closed after 1.5 ka = the limit
			cs := clientSpec{
				Conns: p.GrConns, SilentEvery: p.GrSilent,
				ActiveKeepAlive: ka, SilentKeepAlive: ka,
				SendMin: p.GrLimit / 4, SendMax: p.GrLimit / 4,
			}
			return runServerAndClients("gorout-server", ss, cs, p.GrWarmup, p.GrWindow)
		},
	}
}

// goroutineSpec is the -spec of a gorout-server process.
type goroutineSpec struct {
	Variant string        `json:"variant"`
	Tick    time.Duration `json:"tick"`
}

type goroutineServer struct {
	spec  goroutineSpec
	timer *hashedwheel.Timer
	base  time.Time

	open, msgs, kicks atomic.Int64
	kickLog
}

func (s *goroutineServer) now() int64 { return int64(time.Since(s.base)) }

func runGoroutineServerRole(b []byte) error {
	var spec goroutineSpec
	if err := decodeSpec(b, &spec); err != nil {
		return err
	}
	s := &goroutineServer{spec: spec, base: time.Now()}
	switch spec.Variant {
	case "wheel":
		t, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(spec.Tick))
		if err != nil {
			return err
		}
		if err := t.Start(); err != nil {
			return err
		}
		s.timer = t
		defer t.Stop()
	case "afterfunc", "deadline":
	default:
		return fmt.Errorf("no variant %q", spec.Variant)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				if !errors.Is(err, net.ErrClosed) {
					fmt.Fprintln(os.Stderr, "accept:", err)
					if ne, ok := err.(net.Error); ok && ne.Timeout() {
						continue
					}
					time.Sleep(10 * time.Millisecond)
					continue
				}
				return
			}
			go s.serve(c.(*net.TCPConn))
		}
	}()
	ctl := newControl()
	heap0, stacks0 := measure.LiveMemory()
	ctl.say("ready %s", ln.Addr())

	if err := ctl.want("begin"); err != nil {
		return err
	}
	heap1, stacks1 := measure.LiveMemory()
	conns := s.open.Load()
	msgs0, kicks0 := s.msgs.Load(), s.kicks.Load()
	w, err := ctl.measureUntilEnd("goroutine-"+spec.Variant, &s.measuring)
	if err != nil {
		return err
	}
	o := connWindow{w, conns, heap0, heap1, s.msgs.Load() - msgs0, s.kicks.Load() - kicks0}.outcome(&s.kickLog, spec.Tick)
	o.Metrics["mem_per_conn"] = (float64(heap1+stacks1) - float64(heap0+stacks0)) / float64(max(conns, 1))
	if err := ctl.reply(o); err != nil {
		return err
	}
	ctl.waitEOF()
	return ln.Close()
}

// serve runs one connection: the first message declares its keep-alive,
// then every read is echoed and re-arms the idle deadline.
func (s *goroutineServer) serve(c *net.TCPConn) {
	s.open.Add(1)
	defer s.open.Add(-1)
	defer c.Close()
	buf := make([]byte, 4096)
	n := 0
	for !bytes.Contains(buf[:n], []byte{'\n'}) {
		m, err := c.Read(buf[n:])
		if err != nil || n+m == len(buf) {
			return
		}
		n += m
	}
	ka, err := parseHello(buf[:bytes.IndexByte(buf[:n], '\n')])
	if err != nil {
		return
	}
	limit := time.Duration(ka * 3 / 2)
	// The message's time is read before the deadline is armed, so that the
	// deadline is never earlier than lastMsg + limit.
	lastMsg := s.now()
	var kicked atomic.Bool
	kick := func() {
		kicked.Store(true)
		c.Close()
	}
	var (
		to *hashedwheel.Timeout
		t  *time.Timer
	)
	switch s.spec.Variant {
	case "wheel":
		if to, err = s.timer.AfterFunc(limit, kick); err != nil {
			return
		}
		defer to.Cancel()
	case "afterfunc":
		t = time.AfterFunc(limit, kick)
		defer t.Stop()
	}
	s.msgs.Add(1)
	if _, err := c.Write(buf[:n]); err != nil {
		return
	}
	// raced is set when a message was read after the deadline had run (its
	// Reset failed): the kick was already under way, and is no early kick.
	raced := false
	for {
		if s.spec.Variant == "deadline" {
			_ = c.SetReadDeadline(time.Now().Add(limit))
		}
		n, err := c.Read(buf)
		if err != nil {
			ne, ok := err.(net.Error)
			switch {
			case kicked.Load() && raced:
				s.racedKicks.Add(1)
			case kicked.Load() || (s.spec.Variant == "deadline" && ok && ne.Timeout()):
				s.kicks.Add(1)
				s.recordKick(s.now() - lastMsg - int64(limit))
			}
			return
		}
		lastMsg = s.now()
		s.msgs.Add(int64(bytes.Count(buf[:n], []byte{'\n'})))
		if _, err := c.Write(buf[:n]); err != nil {
			return
		}
		switch s.spec.Variant {
		case "wheel":
			raced = raced || !to.Reset(limit)
		case "afterfunc":
			raced = raced || !t.Reset(limit)
		}
	}
}
