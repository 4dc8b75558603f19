package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashedwheel/hashedwheel/benchmarks/internal/measure"
)

// The clients of the event-loop and goroutine-per-connection scenarios, all
// in one process of their own: a goroutine per connection, as many
// connections as Conns, kept open. Each declares its keep-alive in its first
// message; an active one then sends a message every SendMin to SendMax
// (uniformly; the first after a random part of that), a silent one (one in
// SilentEvery) nothing, until the server closes it; then it reconnects.
// The client checks the server from outside: no connection may be closed
// less than 1.5x its keep-alive after the last message the server echoed
// was sent, and no active one may be closed unless it went that long
// without a message (it can, when this process is not run for a second on
// an overloaded machine: those are counted apart, as stalled).

// clientSpec is the -spec of an idle-client process.
type clientSpec struct {
	Addr            string        `json:"addr"`
	Conns           int           `json:"conns"`
	SilentEvery     int           `json:"silent_every"`
	ActiveKeepAlive time.Duration `json:"active_keepalive"`
	SilentKeepAlive time.Duration `json:"silent_keepalive"`
	SendMin         time.Duration `json:"send_min"`
	SendMax         time.Duration `json:"send_max"`
}

type idleClient struct {
	clientSpec
	base     time.Time
	stopping atomic.Bool
	dials    chan struct{} // dial slots: connecting 20,000 at once overflows the listen backlog
	slots    []atomic.Pointer[net.TCPConn]

	ready sync.WaitGroup // one per slot, done at its first connection

	dialErrors, reconnects, pings, echoes atomic.Int64
	activeClosed, activeStalled           atomic.Int64
	earlyCloses, writeErrors              atomic.Int64

	mu               sync.Mutex
	silentLate       []float64 // ms after the limit: a silent connection's close, seen here, after its last send
	activeClosedGaps []float64 // ms since the last send, of active connections the server closed
}

func (c *idleClient) now() int64 { return int64(time.Since(c.base)) }

func runIdleClientRole(b []byte) error {
	var spec clientSpec
	if err := decodeSpec(b, &spec); err != nil {
		return err
	}
	c := &idleClient{clientSpec: spec, base: time.Now(), dials: make(chan struct{}, 128)}
	c.slots = make([]atomic.Pointer[net.TCPConn], spec.Conns)
	c.ready.Add(spec.Conns)
	var wg sync.WaitGroup
	for i := range spec.Conns {
		wg.Go(func() { c.run(i) })
	}
	readyErr := withTimeout(time.Minute+time.Duration(spec.Conns)*time.Millisecond, "connecting", func() error {
		c.ready.Wait()
		return nil
	})
	ctl := newControl()
	if readyErr != nil {
		return fmt.Errorf("%v: %d dial errors", readyErr, c.dialErrors.Load())
	}
	var w measure.Window
	w.Begin()
	ctl.say("ready")

	if err := ctl.want("end"); err != nil {
		return err
	}
	w.End()
	c.stopping.Store(true)
	for i := range c.slots {
		if conn := c.slots[i].Load(); conn != nil {
			_ = conn.SetDeadline(time.Now()) // wakes its goroutine, which closes it
		}
	}
	if err := withTimeout(30*time.Second, "closing the connections", func() error { wg.Wait(); return nil }); err != nil {
		return err
	}
	m := map[string]float64{
		"cores":          w.Cores(),
		"pings_per_s":    float64(c.pings.Load()) / w.Wall.Seconds(),
		"echoes_per_s":   float64(c.echoes.Load()) / w.Wall.Seconds(),
		"dial_errors":    float64(c.dialErrors.Load()),
		"reconnects":     float64(c.reconnects.Load()),
		"active_closed":  float64(c.activeClosed.Load()),
		"active_stalled": float64(c.activeStalled.Load()),
		"early_closes":   float64(c.earlyCloses.Load()),
		"write_errors":   float64(c.writeErrors.Load()),
	}
	c.mu.Lock()
	latenessFigures(m, "silent_late", c.silentLate)
	gaps := c.activeClosedGaps
	c.mu.Unlock()
	// Early closes are judged by the driver, against the server's raced
	// kicks: see runServerAndClients.
	var o outcome
	o.Metrics = m
	if n := c.earlyCloses.Load(); n > 0 {
		o.Violations = append(o.Violations, fmt.Sprintf("client: %d closes less than their limit after the last message echoed (of %d active ones closed, ms since that message: %v)", n, c.activeClosed.Load(), firstFew(gaps)))
	}
	if err := ctl.reply(o); err != nil {
		return err
	}
	ctl.waitEOF()
	return nil
}

func firstFew(v []float64) string {
	s := ""
	for i, x := range v {
		if i == 5 {
			s += " ..."
			break
		}
		s += fmt.Sprintf(" %.0f", x)
	}
	return "[" + s + " ]"
}

// sendLog is one connection's messages in flight: the times they were sent,
// in order, until their echoes come back. The server echoes every message
// before it could kick the connection for silence, so the last echoed
// message is the last one the server read; a message sent after the server
// closed (its close not read here yet) is never echoed and never counts.
type sendLog struct {
	sent              []int64 // send times of the messages not echoed yet
	echoed, prevEcho  int64   // send times of the last two messages echoed
	lineStart, inPing bool    // the scanner's state between reads
}

func (l *sendLog) send(t int64) { l.sent = append(l.sent, t) }

// read scans what the server wrote: echoes (a line per message) and pings
// ("p\n"). It returns the pings and echoes it found.
func (l *sendLog) read(b []byte) (pings, echoes int64) {
	for _, ch := range b {
		if l.lineStart {
			l.inPing = ch == 'p'
		}
		l.lineStart = ch == '\n'
		if ch != '\n' {
			continue
		}
		if l.inPing {
			pings++
			continue
		}
		echoes++
		if len(l.sent) > 0 {
			l.prevEcho, l.echoed = l.echoed, l.sent[0]
			if l.prevEcho == 0 { // the first echo: no message before it
				l.prevEcho = l.echoed
			}
			l.sent = l.sent[1:]
		}
	}
	return pings, echoes
}

// run keeps slot i connected until the client stops.
func (c *idleClient) run(i int) {
	silent := i%c.SilentEvery == c.SilentEvery-1
	ka := c.ActiveKeepAlive
	if silent {
		ka = c.SilentKeepAlive
	}
	limit := int64(ka) * 3 / 2
	rng := rand.New(rand.NewPCG(uint64(i), uint64(c.base.UnixNano())))
	interval := func() time.Duration {
		return c.SendMin + time.Duration(rng.Int64N(int64(c.SendMax-c.SendMin)+1))
	}
	hello := []byte("K " + strconv.FormatInt(int64(ka), 10) + "\n")
	msg := []byte(fmt.Sprintf("m %016d\n", i))
	buf := make([]byte, 4096)
	first := true
	for !c.stopping.Load() {
		conn := c.dial()
		if conn == nil {
			return // stopping
		}
		c.slots[i].Store(conn)
		log := sendLog{lineStart: true}
		// Read the clock before the write: the server may read the message
		// before this goroutine runs again, and the check must never blame
		// it for that.
		log.send(c.now())
		if _, err := conn.Write(hello); err != nil {
			c.writeErrors.Add(1)
			conn.Close()
			continue
		}
		if first {
			c.ready.Done()
			first = false
		} else {
			c.reconnects.Add(1)
		}
		// The first message after a random part of the interval, so that
		// the clients' messages spread over it.
		next := time.Now().Add(time.Duration(rng.Int64N(int64(interval()) + 1)))
		for {
			if silent {
				_ = conn.SetReadDeadline(time.Time{})
			} else {
				_ = conn.SetReadDeadline(next)
			}
			// After the deadline is set: the stopping goroutine sets
			// stopping, then wakes every connection in the slots.
			if c.stopping.Load() {
				conn.Close()
				return
			}
			n, err := conn.Read(buf)
			if n > 0 {
				p, e := log.read(buf[:n])
				c.pings.Add(p)
				c.echoes.Add(e)
			}
			if err == nil {
				continue
			}
			if c.stopping.Load() {
				conn.Close()
				return
			}
			if ne, ok := err.(net.Error); ok && ne.Timeout() && !silent {
				log.send(c.now())
				if _, err := conn.Write(msg); err == nil {
					next = time.Now().Add(interval())
					continue
				}
				c.writeErrors.Add(1)
			}
			// The server closed it.
			c.closed(silent, c.now()-log.echoed, log.echoed-log.prevEcho, limit)
			conn.Close()
			break
		}
	}
}

// closed records a connection the server closed gap ns after the last
// message it echoed, which came prev ns after the one before it.
func (c *idleClient) closed(silent bool, gap, prev, limit int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if silent {
		c.silentLate = append(c.silentLate, measure.Millis(time.Duration(gap-limit)))
		if gap < limit {
			c.earlyCloses.Add(1)
		}
		return
	}
	c.activeClosed.Add(1)
	c.activeClosedGaps = append(c.activeClosedGaps, measure.Millis(time.Duration(gap)))
	// An active client that went a whole limit without a message (this
	// process was not run for that long: the machine was overloaded) was
	// rightly closed; its last message may even have raced the kick.
	if gap >= limit || prev >= limit {
		c.activeStalled.Add(1)
		return
	}
	c.earlyCloses.Add(1)
}

// dial connects, retrying until it succeeds or the client stops (then it
// returns nil).
func (c *idleClient) dial() *net.TCPConn {
	for !c.stopping.Load() {
		c.dials <- struct{}{}
		conn, err := net.DialTimeout("tcp", c.Addr, 10*time.Second)
		<-c.dials
		if err == nil {
			return conn.(*net.TCPConn)
		}
		c.dialErrors.Add(1)
		if errors.Is(err, os.ErrDeadlineExceeded) || c.dialErrors.Load()%100 == 1 {
			fmt.Fprintln(os.Stderr, "dial:", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}
