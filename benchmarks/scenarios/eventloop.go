package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/panjf2000/gnet/v2/pkg/logging"

	"github.com/hashedwheel/hashedwheel/benchmarks/internal/measure"
)

// Event loop: a gnet echo server, its clients in another process (see
// idleclient.go). Every client declares its keep-alive K in its first
// message, "K <nanoseconds>\n", as MQTT clients do; the server closes a
// connection that sent nothing for 1.5 K (a kick), and writes "p\n" (a ping)
// to a connection it has written nothing to for the ping interval. Every
// message is a line, echoed whole. One connection in SilentEvery sends its
// first message and then nothing: it is kicked, and reconnects.
//
// The variants keep those two deadlines per connection in different ways;
// timers[T] is the seam, so a new variant is one more implementation of it
// and one more line in newGnetServer. See the variants' list there.

type regime string

const (
	regimeBusy regime = "busy"
	regimeIdle regime = "idle"
)

func eventLoopScenario(p params, r regime) *scenario {
	sc := &scenario{
		Name: "eventloop-" + string(r),
		Variants: []variant{
			{ID: "wheel", Label: "hashedwheel", API: "Timer.AfterFunc + Timeout.Reset in OnTraffic (idle); Timer.Every + Timeout.Reset on each write (ping); tasks call Conn.Close and Conn.AsyncWrite"},
			{ID: "wheel-owner", Label: "hashedwheel, loop-driven", API: "a Timer per event loop made WithoutWorker: AfterFunc + Reset (idle), Every + Reset (ping) as above; OnTick hands a loop whose NextDeadline has come a sweep (EventLoop.Execute) that calls Advance, and the tasks close and write on the loop"},
			{ID: "wheel-lazy", Label: "hashedwheel, loop-driven, lazy", API: "a Timer per event loop made WithoutWorker, driven as above, with one timeout per connection and nothing done on traffic: the connection is the task, which kicks or pings when due and schedules its next look with NewTimeout, as the heap variant re-arms"},
			{ID: "wheel-schedule", Label: "hashedwheel, loop-driven, lazy, Schedule", API: "as the lazy variant, with the timeout in the connection: each connection embeds one Timeout and is its task, which kicks or pings when due and schedules its Timeout again with Timer.Schedule (no allocation per look)"},
			{ID: "heap", Label: "min-heap in OnTick", API: "two min-heaps per event loop (idle, ping), re-armed lazily; OnTick hands each loop with something due a sweep (EventLoop.Execute), which closes and writes on the loop"},
			{ID: "afterfunc", Label: "time.AfterFunc", API: "time.AfterFunc + Timer.Reset per connection (idle, ping); callbacks call Conn.Close and Conn.AsyncWrite", Base: true},
		},
		Cases: []int{0},
	}
	switch r {
	case regimeBusy:
		sc.Title = "Event loop, busy: gnet, every active connection sending every T/4"
	case regimeIdle:
		sc.Title = "Event loop, mostly idle: gnet, as many connections as the file limit allows"
	}
	sc.run = func(p params, v variant, _ int) (outcome, error) { return runEventLoop(p, v, r) }
	return sc
}

// gnetSpec is the -spec of a gnet-server process.
type gnetSpec struct {
	Variant string        `json:"variant"`
	Ping    time.Duration `json:"ping"` // 0: no pings
	Tick    time.Duration `json:"tick"`
}

// regimeSpecs returns the server's and the client's specs, and the warm-up
// and window, of a regime.
func regimeSpecs(p params, v variant, r regime) (gnetSpec, clientSpec, time.Duration, time.Duration) {
	s := gnetSpec{Variant: v.ID, Tick: p.Tick}
	var c clientSpec
	var warm, win time.Duration
	switch r {
	case regimeBusy:
		s.Ping = p.BusyLimit / 2
		ka := p.BusyLimit * 2 / 3 // closed after 1.5 ka = T
		c = clientSpec{
			Conns: p.BusyConns, SilentEvery: p.BusySilent,
			ActiveKeepAlive: ka, SilentKeepAlive: ka,
			SendMin: p.BusyLimit / 4, SendMax: p.BusyLimit / 4,
		}
		warm, win = p.BusyWarmup, p.BusyWindow
	case regimeIdle:
		s.Ping = p.IdlePing
		c = clientSpec{
			Conns: p.IdleConns, SilentEvery: p.IdleSilent,
			ActiveKeepAlive: p.IdleActiveKeepAlive, SilentKeepAlive: p.IdleSilentKeepAlive,
			SendMin: p.IdleSendMin, SendMax: p.IdleSendMax,
		}
		if c.Conns == 0 {
			c.Conns = connsTheFileLimitAllows()
		}
		warm, win = p.IdleWarmup, p.IdleWindow
	}
	return s, c, warm, win
}

// fdHeadroom is how many descriptors a server or client process keeps for
// other things than its connections: standard streams, epoll and eventfd
// descriptors, listeners, a reconnect's overlap.
const fdHeadroom = 100

// connsTheFileLimitAllows is the most connections one process can hold
// under RLIMIT_NOFILE (Go raises the soft limit to the hard one at start).
func connsTheFileLimitAllows() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 1000
	}
	return int(min(lim.Max, 1<<20)) - fdHeadroom
}

func runEventLoop(p params, v variant, r regime) (outcome, error) {
	ss, cs, warm, win := regimeSpecs(p, v, r)
	return runServerAndClients("gnet-server", ss, cs, warm, win)
}

// pingMsg is what the server writes to a connection it has not written to
// for the ping interval.
var pingMsg = []byte("p\n")

// timers keeps the idle and ping deadlines of a gnet server's connections.
// T is what it keeps in each connection. The server calls its methods:
//
//   - newLoop, on an event loop the first time a connection opens there;
//   - opened, on the connection's loop, once its first message set limit;
//   - traffic, on the loop, after each later message was read and echoed
//     (lastMsg and lastWrite are then now); it returns false if the idle
//     deadline had already run, so that the kick under way raced the
//     message;
//   - closed, on the loop, from OnClose;
//   - tick, from gnet's ticker goroutine (not a loop), if usesTicker.
//
// Kicks and pings go through the server's kick and ping methods: the
// ...OnLoop ones from code running on the connection's loop, the ...Async
// ones from anywhere else.
type timers[T any] interface {
	newLoop(l *loopState[T]) any
	opened(c *conn[T])
	traffic(c *conn[T]) bool
	closed(c *conn[T])
	usesTicker() bool
	tick() time.Duration
	stop()
}

// loopState is the server's state for one gnet event loop.
type loopState[T any] struct {
	el gnet.EventLoop
	// Counters, written on the loop; read by the control goroutine.
	msgs, pings, kicks atomic.Int64
	data               any // the timers' own, from newLoop
}

// conn is the server's state for one connection; gnet keeps it as the
// connection's context. Fields without an atomic are the loop's.
type conn[T any] struct {
	c     gnet.Conn
	loop  *loopState[T]
	limit int64 // ns of silence before a kick: 1.5x the declared keep-alive; 0 before the first message
	// lastMsg and lastWrite are when the last message was read and the last
	// byte written, in ns since the server's base.
	lastMsg, lastWrite int64
	kicked             atomic.Bool // set by whoever kicks, before closing
	closed             atomic.Bool // set in OnClose
	raced              bool        // a message came after the idle deadline had run
	tm                 T
}

// gnetServer is the event handler; one per process.
type gnetServer[T any] struct {
	gnet.BuiltinEventEngine
	spec   gnetSpec
	tm     timers[T]
	base   time.Time
	booted chan struct{}
	eng    gnet.Engine // set in OnBoot, before booted is closed
	// pingDone is pingWritten, made once: a method value allocates.
	pingDone gnet.AsyncCallback

	loopsMu sync.Mutex
	loops   atomic.Pointer[[]*loopState[T]] // copy on write
	byEL    sync.Map                        // gnet.EventLoop → *loopState[T]

	open atomic.Int64
	kickLog
}

func (s *gnetServer[T]) now() int64 { return int64(time.Since(s.base)) }

func (s *gnetServer[T]) OnBoot(eng gnet.Engine) gnet.Action {
	s.eng = eng
	close(s.booted)
	return gnet.None
}

func (s *gnetServer[T]) loopFor(el gnet.EventLoop) *loopState[T] {
	if l, ok := s.byEL.Load(el); ok {
		return l.(*loopState[T])
	}
	s.loopsMu.Lock()
	defer s.loopsMu.Unlock()
	if l, ok := s.byEL.Load(el); ok {
		return l.(*loopState[T])
	}
	l := &loopState[T]{el: el}
	l.data = s.tm.newLoop(l)
	var all []*loopState[T]
	if p := s.loops.Load(); p != nil {
		all = append(all, *p...)
	}
	all = append(all, l)
	s.loops.Store(&all)
	s.byEL.Store(el, l)
	return l
}

func (s *gnetServer[T]) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	c.SetContext(&conn[T]{c: c, loop: s.loopFor(c.EventLoop())})
	s.open.Add(1)
	return nil, gnet.None
}

func (s *gnetServer[T]) OnTraffic(c gnet.Conn) gnet.Action {
	cs := c.Context().(*conn[T])
	first := cs.limit == 0
	if first {
		// The first line declares the keep-alive; wait until it is whole.
		buf, _ := c.Peek(-1)
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			return gnet.None
		}
		ka, err := parseHello(buf[:i])
		if err != nil {
			return gnet.Close
		}
		cs.limit = ka * 3 / 2
	}
	buf, _ := c.Next(-1)
	now := s.now()
	cs.loop.msgs.Add(int64(bytes.Count(buf, []byte{'\n'})))
	if _, err := c.Write(buf); err != nil {
		return gnet.Close
	}
	cs.lastMsg, cs.lastWrite = now, now
	if first {
		s.tm.opened(cs)
	} else if !s.tm.traffic(cs) {
		cs.raced = true
	}
	return gnet.None
}

func (s *gnetServer[T]) OnClose(c gnet.Conn, _ error) gnet.Action {
	cs, ok := c.Context().(*conn[T])
	if !ok {
		return gnet.None
	}
	cs.closed.Store(true)
	s.open.Add(-1)
	if cs.limit > 0 {
		s.tm.closed(cs)
	}
	if cs.kicked.Load() && cs.raced {
		// The deadline ran before this message was read and the kick was
		// under way: not an early kick, but an active client that waited
		// its whole limit.
		s.racedKicks.Add(1)
	} else if cs.kicked.Load() {
		cs.loop.kicks.Add(1)
		s.recordKick(s.now() - cs.lastMsg - cs.limit)
	}
	return gnet.None
}

func (s *gnetServer[T]) OnTick() (time.Duration, gnet.Action) {
	return s.tm.tick(), gnet.None
}

// kickOnLoop closes a connection from code running on its loop.
func (s *gnetServer[T]) kickOnLoop(cs *conn[T]) {
	cs.kicked.Store(true)
	_ = cs.loop.el.Close(cs.c)
}

// kickAsync closes a connection from any goroutine: gnet hands the close to
// the connection's loop, waking it.
func (s *gnetServer[T]) kickAsync(cs *conn[T]) {
	if cs.closed.Load() {
		return
	}
	cs.kicked.Store(true)
	_ = cs.c.Close()
}

// pingOnLoop writes a ping from code running on the connection's loop.
func (s *gnetServer[T]) pingOnLoop(cs *conn[T], now int64) {
	if _, err := cs.c.Write(pingMsg); err == nil {
		cs.lastWrite = now
		cs.loop.pings.Add(1)
	}
}

// pingAsync writes a ping from any goroutine: gnet hands the write to the
// connection's loop, waking it.
func (s *gnetServer[T]) pingAsync(cs *conn[T]) {
	if cs.closed.Load() {
		return
	}
	_ = cs.c.AsyncWrite(pingMsg, s.pingDone)
}

// pingWritten runs on the loop once an asynchronous ping was written.
func (s *gnetServer[T]) pingWritten(c gnet.Conn, err error) error {
	if err != nil {
		return nil
	}
	if cs, ok := c.Context().(*conn[T]); ok {
		cs.lastWrite = s.now()
		cs.loop.pings.Add(1)
	}
	return nil
}

func runGnetServerRole(b []byte) error {
	var spec gnetSpec
	if err := decodeSpec(b, &spec); err != nil {
		return err
	}
	switch spec.Variant {
	case "wheel":
		return serveGnet(spec, func(s *gnetServer[wheelConn]) (timers[wheelConn], error) { return newWheelTimers(s) })
	case "heap":
		return serveGnet(spec, func(s *gnetServer[heapConn]) (timers[heapConn], error) { return newHeapTimers(s), nil })
	case "afterfunc":
		return serveGnet(spec, func(s *gnetServer[afterFuncConn]) (timers[afterFuncConn], error) { return newAfterFuncTimers(s), nil })
	case "wheel-owner":
		return serveGnet(spec, func(s *gnetServer[wheelConn]) (timers[wheelConn], error) { return newOwnerTimers(s), nil })
	case "wheel-lazy":
		return serveGnet(spec, func(s *gnetServer[lazyTimersConn]) (timers[lazyTimersConn], error) { return newLazyTimers(s), nil })
	case "wheel-schedule":
		return serveGnet(spec, func(s *gnetServer[scheduleTimersConn]) (timers[scheduleTimersConn], error) {
			return newScheduleTimers(s), nil
		})
	// A new variant: an implementation of timers[T] and a case here, and an
	// entry in eventLoopScenario's Variants.
	default:
		return fmt.Errorf("no variant %q", spec.Variant)
	}
}

// serveGnet runs the gnet server with the timers newTimers makes, under the
// control protocol: "ready <addr>", then "begin" and "end" (answered with
// the figures), then the end of its input.
func serveGnet[T any](spec gnetSpec, newTimers func(*gnetServer[T]) (timers[T], error)) error {
	s := &gnetServer[T]{spec: spec, base: time.Now(), booted: make(chan struct{})}
	s.pingDone = s.pingWritten
	tm, err := newTimers(s)
	if err != nil {
		return err
	}
	s.tm = tm
	addr, err := freeLoopbackAddr()
	if err != nil {
		return err
	}
	proto := "tcp://" + addr
	runErr := make(chan error, 1)
	go func() {
		runErr <- gnet.Run(s, proto,
			gnet.WithMulticore(true), // one event loop per core
			gnet.WithTicker(tm.usesTicker()),
			gnet.WithReuseAddr(true),
			gnet.WithLogger(stderrLogger{}))
	}()
	select {
	case <-s.booted:
	case err := <-runErr:
		return fmt.Errorf("gnet.Run: %w", err)
	case <-time.After(30 * time.Second):
		return fmt.Errorf("gnet did not boot within 30s")
	}
	ctl := newControl()
	heap0, _ := measure.LiveMemory()
	ctl.say("ready %s", addr)

	if err := ctl.want("begin"); err != nil {
		return err
	}
	heap1, _ := measure.LiveMemory()
	conns := s.open.Load()
	msgs0, pings0, kicks0 := s.counts()
	w, err := ctl.measureUntilEnd("eventloop-"+spec.Variant, &s.measuring)
	if err != nil {
		return err
	}
	msgs1, pings1, kicks1 := s.counts()
	o := connWindow{w, conns, heap0, heap1, msgs1 - msgs0, kicks1 - kicks0}.outcome(&s.kickLog, spec.Tick)
	o.Metrics["pings_per_s"] = float64(pings1-pings0) / w.Wall.Seconds()
	if st, ok := tm.(interface{ stats() map[string]float64 }); ok {
		for k, v := range st.stats() {
			o.Metrics[k] = v
		}
	}
	if err := ctl.reply(o); err != nil {
		return err
	}

	ctl.waitEOF()
	tm.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.eng.Stop(ctx)
}

func (s *gnetServer[T]) counts() (msgs, pings, kicks int64) {
	if p := s.loops.Load(); p != nil {
		for _, l := range *p {
			msgs += l.msgs.Load()
			pings += l.pings.Load()
			kicks += l.kicks.Load()
		}
	}
	return
}

// stderrLogger is gnet's logger here: warnings and errors go to standard
// error (standard output is the driver's), the rest nowhere.
type stderrLogger struct{}

func (stderrLogger) Debugf(string, ...any)        {}
func (stderrLogger) Infof(string, ...any)         {}
func (stderrLogger) Warnf(f string, args ...any)  { fmt.Fprintf(os.Stderr, "gnet: "+f+"\n", args...) }
func (stderrLogger) Errorf(f string, args ...any) { fmt.Fprintf(os.Stderr, "gnet: "+f+"\n", args...) }
func (stderrLogger) Fatalf(f string, args ...any) {
	fmt.Fprintf(os.Stderr, "gnet: "+f+"\n", args...)
	os.Exit(1)
}

var _ logging.Logger = stderrLogger{}

// freeLoopbackAddr returns a loopback address with a port free a moment ago.
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
