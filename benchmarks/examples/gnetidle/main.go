// Command gnetidle is a github.com/panjf2000/gnet/v2 echo server that closes
// connections silent for longer than a limit and pings those it has not
// written to for half of it. Each event loop owns a hashedwheel.Timer made
// WithoutWorker and drives it itself, so the timeouts' tasks close and write
// on the loop: no goroutine, lock or hand-off per timeout. Each connection
// holds one hashedwheel.Timeout and is its task: a message only notes its
// time, and the task, when it runs, closes or pings the connection and
// schedules its Timeout again (Timer.Schedule) for its next look.
//
// Run it from the benchmarks module with go run ./examples/gnetidle: it
// serves on loopback, connects a client that talks and one that stays
// silent, and prints what each saw.
package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashedwheel/hashedwheel"
	"github.com/panjf2000/gnet/v2"
)

const tick = 10 * time.Millisecond

type server struct {
	gnet.BuiltinEventEngine
	limit  time.Duration // a connection silent this long is closed
	origin time.Time     // when the server was made; loops publish deadlines relative to it
	eng    gnet.Engine
	booted chan struct{}
	mu     sync.Mutex // guards loops, which OnOpen of several loops fill
	loops  map[gnet.EventLoop]*loop
}

// loop is one event loop's wheel; only that loop calls Advance and
// NextDeadline. OnTick, on gnet's ticker goroutine, reads next and hands the
// loop a sweep when it has come.
//
// next is a duration since the server's origin, both read on the monotonic
// clock (time.Time.Sub, time.Since): a step of the wall clock neither
// delays nor hastens a sweep. Unix nanoseconds would follow such a step.
type loop struct {
	el     gnet.EventLoop
	origin time.Time
	wheel  *hashedwheel.Timer
	next   atomic.Int64 // NextDeadline as a time.Duration since origin, MaxInt64 if none
	queued atomic.Bool  // a sweep is on its way to the loop
}

// session is a connection's state, on its loop only, and the task of its
// timeout.
type session struct {
	c                   gnet.Conn
	l                   *loop
	limit               time.Duration
	lastRead, lastWrite time.Time
	timeout             hashedwheel.Timeout // lives here: never copied once armed
}

// Run looks at the connection, inside Advance on its loop: it closes it if
// silent for the limit, pings it if not written to for half of it, and
// schedules the look after, at the earlier of the two deadlines. Its
// timeout has expired once Run is called, so it may be scheduled again;
// Schedule fails only once the wheel is stopped, at shutdown, and the
// connection is then closed.
func (ss *session) Run(to *hashedwheel.Timeout) {
	now := time.Now()
	if now.Sub(ss.lastRead) >= ss.limit {
		_ = ss.l.el.Close(ss.c)
		return
	}
	if now.Sub(ss.lastWrite) >= ss.limit/2 {
		_, _ = ss.c.Write([]byte("ping\n"))
		ss.lastWrite = now
	}
	next := min(ss.lastRead.Add(ss.limit).Sub(now), ss.lastWrite.Add(ss.limit/2).Sub(now))
	if err := ss.l.wheel.Schedule(to, ss, next); err != nil {
		_ = ss.l.el.Close(ss.c) // no look again without a wheel: close it
	}
}

func (s *server) OnBoot(eng gnet.Engine) gnet.Action {
	s.eng = eng
	close(s.booted)
	return gnet.None
}

func (s *server) loopOf(el gnet.EventLoop) *loop {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.loops[el]; ok {
		return l
	}
	wheel, err := hashedwheel.NewTimer(hashedwheel.WithoutWorker(), hashedwheel.WithTickDuration(tick))
	if err != nil {
		panic(err) // the options are constants
	}
	l := &loop{el: el, origin: s.origin, wheel: wheel}
	s.loops[el] = l
	return l
}

// publish tells OnTick when the loop's wheel next needs it.
func (l *loop) publish() {
	next := time.Duration(math.MaxInt64)
	if at, ok := l.wheel.NextDeadline(); ok {
		next = at.Sub(l.origin) // monotonic: NextDeadline's time carries a monotonic reading
	}
	l.next.Store(int64(next))
}

func (s *server) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	l := s.loopOf(c.EventLoop())
	now := time.Now()
	ss := &session{c: c, l: l, limit: s.limit, lastRead: now, lastWrite: now}
	if err := l.wheel.Schedule(&ss.timeout, ss, s.limit/2); err != nil {
		return nil, gnet.Close
	}
	c.SetContext(ss)
	l.publish()
	return nil, gnet.None
}

// OnTraffic echoes. The session's task runs on this loop too, so it sees
// the new times when it next looks, and no close can race a message.
func (s *server) OnTraffic(c gnet.Conn) gnet.Action {
	ss := c.Context().(*session)
	buf, _ := c.Next(-1)
	_, _ = c.Write(buf)
	now := time.Now()
	ss.lastRead, ss.lastWrite = now, now
	return gnet.None
}

func (s *server) OnClose(c gnet.Conn, _ error) gnet.Action {
	if ss, ok := c.Context().(*session); ok {
		ss.timeout.Cancel()
	}
	return gnet.None
}

// OnTick hands each loop whose wheel's next deadline has come a sweep that
// advances it on the loop, and looks again a tick later.
func (s *server) OnTick() (time.Duration, gnet.Action) {
	now := time.Since(s.origin)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.loops {
		if time.Duration(l.next.Load()) <= now && l.queued.CompareAndSwap(false, true) {
			_ = l.el.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
				l.queued.Store(false)
				// The wheel is made WithoutWorker and only this loop drives
				// it, so the one error left is ErrTimerStopped, at shutdown.
				if _, err := l.wheel.Advance(time.Now()); err != nil {
					return err
				}
				l.publish()
				return nil
			}))
		}
	}
	return tick, gnet.None
}

func (s *server) OnShutdown(gnet.Engine) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.loops {
		l.wheel.Stop()
	}
}

func main() {
	talker, silent, err := run(time.Second)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gnetidle:", err)
		os.Exit(1)
	}
	fmt.Printf("talker: %v\nsilent: %v\n", talker, silent)
}
