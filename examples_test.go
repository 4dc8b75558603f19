package hashedwheel_test

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hashedwheel/hashedwheel"
)

// These tests check, on the synctest fake clock and exactly, what the
// programs under examples/ only show: the idle deadline re-armed with Reset
// (examples/idle), request deadlines counted once by Cancel's result
// (examples/deadline), and heartbeats with Every on a task pool that close a
// silent peer (examples/heartbeat). Loopback TCP does not block durably
// inside a bubble, so they use net.Pipe, which does.

// idleConn is what serveIdle saw of one connection.
type idleConn struct {
	lines    int
	started  time.Time // when serving began
	last     time.Time // when the last line was read, or serving began
	ended    time.Time // when the read ended
	hungUp   bool      // Cancel stopped the idle timeout: the client hung up
	lateLine bool      // a line came after the timeout had fired
}

// serveIdle is examples/idle's serve: it reads lines from conn, re-arming an
// idle timeout with Reset on each one, until the timeout's task closes conn
// or the client hangs up.
func serveIdle(t *testing.T, timer *hashedwheel.Timer, conn net.Conn, limit time.Duration) idleConn {
	c := idleConn{started: time.Now(), last: time.Now()}
	idle, err := timer.AfterFunc(limit, func() { conn.Close() })
	require.NoError(t, err)
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		if !idle.Reset(limit) {
			c.lateLine = true
			break
		}
		c.last = time.Now()
		c.lines++
	}
	c.ended = time.Now()
	if idle.Cancel() {
		c.hungUp = true
		conn.Close()
	}
	return c
}

func TestIdleConnectionIsClosedAfterTheLimitNotBefore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const tick, limit = 10 * time.Millisecond, 300 * time.Millisecond
		timer := newTimer(t, hashedwheel.WithTickDuration(tick))
		var wg sync.WaitGroup
		served := make([]idleConn, 3)
		wrote := make([]int, 3)
		// Lines gap apart, the last client hangs up. The gaps are off the
		// tick boundaries, where the worker visits the wheel.
		for i, c := range []struct {
			lines  int
			gap    time.Duration
			hangUp bool
		}{{8, 97 * time.Millisecond, false}, {3, limit - time.Millisecond, false}, {8, 151 * time.Millisecond, true}} {
			server, client := net.Pipe()
			wg.Go(func() { served[i] = serveIdle(t, timer, server, limit) })
			wg.Go(func() {
				defer client.Close()
				for range c.lines {
					time.Sleep(c.gap)
					if _, err := fmt.Fprintln(client, "line"); err != nil {
						return // closed by the server
					}
					wrote[i]++
				}
				if !c.hangUp {
					_, err := client.Read(make([]byte, 1))
					assert.Error(t, err, "client %d: the server sent data instead of closing", i)
				}
			})
		}
		wg.Wait()

		for i, c := range served {
			assert.Equal(t, wrote[i], c.lines, "client %d: lines written and read", i)
			assert.False(t, c.lateLine, "client %d: a line was read after the timeout fired", i)
		}
		for i, c := range served[:2] {
			assert.False(t, c.hungUp, "client %d went quiet: the timer, not a hang-up, must close it", i)
			idleFor := c.ended.Sub(c.last)
			assert.GreaterOrEqual(t, idleFor, limit, "client %d: closed before the idle limit", i)
			assert.LessOrEqual(t, idleFor, limit+tick, "client %d: closed more than a tick after the limit", i)
		}
		for _, i := range []int{0, 2} {
			assert.Equal(t, 8, served[i].lines, "client %d was closed while it kept talking", i)
			assert.Greater(t, served[i].last.Sub(served[i].started), 2*limit,
				"client %d must talk for longer than the limit", i)
		}
		assert.True(t, served[2].hungUp, "a client that hangs up is closed by the server, not the timer")

		timer.Stop()
		s := timer.Stats()
		assert.Equal(t, uint64(2), s.Expired, "idle timeouts fired")
		assert.Equal(t, uint64(1), s.Cancelled, "idle timeouts cancelled by the hang-up")
		assert.Zero(t, s.Pending)
	})
}

func TestCancelResultCountsEachRequestExactlyOnce(t *testing.T) {
	// examples/deadline: whichever of the work and the deadline ends first
	// counts the request, and Cancel's result alone decides which.
	synctest.Test(t, func(t *testing.T) {
		const tick, deadline, requests = 10 * time.Millisecond, 200 * time.Millisecond, 2000
		timer := newTimer(t, hashedwheel.WithTickDuration(tick))
		rng := rand.New(rand.NewPCG(1, 2))
		work := make([]time.Duration, requests)
		for i := range work {
			work[i] = time.Duration(rng.Int64N(int64(2 * deadline)))
		}
		// The edges: just before the deadline, at it, and a tick after it.
		copy(work, []time.Duration{0, deadline - 1, deadline, deadline + tick - 1, deadline + tick, deadline + tick + 1})

		const (
			pending = iota
			finished
			timedOut
		)
		state := make([]atomic.Int32, requests)
		var double, early atomic.Int32
		var settled, workers sync.WaitGroup
		settle := func(i int, outcome int32) {
			if !state[i].CompareAndSwap(pending, outcome) {
				double.Add(1)
				return
			}
			settled.Done()
		}
		for i := range requests {
			time.Sleep(time.Duration(rng.Int64N(int64(tick)))) // start at any phase of a tick
			settled.Add(1)
			start := time.Now()
			to, err := timer.AfterFunc(deadline, func() {
				if time.Since(start) < deadline {
					early.Add(1)
				}
				settle(i, timedOut)
			})
			require.NoError(t, err)
			workers.Go(func() {
				time.Sleep(work[i])
				if to.Cancel() {
					settle(i, finished)
				}
			})
		}
		settled.Wait()
		assert.Zero(t, timer.PendingTimeouts(), "a request settled, but its timeout is still pending")
		workers.Wait()
		timer.Stop()

		assert.Zero(t, double.Load(), "requests counted twice")
		assert.Zero(t, early.Load(), "deadlines that fired early")
		var nFinished, nTimedOut uint64
		for i := range state {
			switch s := state[i].Load(); {
			case s == finished:
				nFinished++
				assert.LessOrEqual(t, work[i], deadline+tick, "request %d finished after its deadline had fired", i)
			case s == timedOut:
				nTimedOut++
				assert.GreaterOrEqual(t, work[i], deadline, "request %d timed out, but its work ended in time", i)
			default:
				t.Errorf("request %d was never counted", i)
			}
		}
		assert.Equal(t, uint64(requests), nFinished+nTimedOut)
		s := timer.Stats()
		assert.Equal(t, nTimedOut, s.Expired, "Stats.Expired counts the deadlines that fired")
		assert.Equal(t, nFinished, s.Cancelled, "Stats.Cancelled counts the requests that cancelled")
	})
}

func TestHeartbeatsKeepTheirPeriodAndASilentPeerIsClosed(t *testing.T) {
	// examples/heartbeat: a hub pings peers with Every on a pool of two task
	// goroutines, and closes a peer that answers nothing for deadAfter. The
	// peer that stops reading blocks its ping's write; the others' pings
	// must still arrive on time.
	synctest.Test(t, func(t *testing.T) {
		const tick, period, deadAfter = 5 * time.Millisecond, 50 * time.Millisecond, 200 * time.Millisecond
		timer := newTimer(t, hashedwheel.WithTickDuration(tick), hashedwheel.WithTaskWorkers(2))
		type link struct {
			started      time.Time   // when the hub called Every
			arrivals     []time.Time // when the peer read each ping
			lastAnswer   time.Time
			ended        time.Time
			closedByIdle bool
		}
		links := make([]link, 3)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for i := range links {
			l := &links[i]
			hubEnd, peerEnd := net.Pipe()
			wg.Go(func() { // the hub's side
				idle, err := timer.AfterFunc(deadAfter, func() { hubEnd.Close() })
				require.NoError(t, err)
				l.started, l.lastAnswer = time.Now(), time.Now()
				beat, err := timer.Every(period, func() {
					hubEnd.SetWriteDeadline(time.Now().Add(deadAfter))
					fmt.Fprintln(hubEnd, "ping")
				})
				require.NoError(t, err)
				sc := bufio.NewScanner(hubEnd)
				for sc.Scan() && idle.Reset(deadAfter) {
					l.lastAnswer = time.Now()
				}
				l.ended = time.Now()
				beat.Cancel()
				l.closedByIdle = !idle.Cancel()
				hubEnd.Close()
			})
			wg.Go(func() { // the peer: the last one stops reading after 5 pings
				go func() { <-stop; peerEnd.Close() }()
				sc := bufio.NewScanner(peerEnd)
				for sc.Scan() {
					l.arrivals = append(l.arrivals, time.Now())
					if i == 2 && len(l.arrivals) == 5 {
						<-stop
						return
					}
					fmt.Fprintln(peerEnd, "pong")
				}
			})
		}
		time.Sleep(time.Second + period/2)
		close(stop)
		wg.Wait()

		for i, l := range links[:2] {
			assert.False(t, l.closedByIdle, "peer %d answered every ping, but was closed as idle", i)
			require.Len(t, l.arrivals, 20, "peer %d: pings in a second", i)
			for k, at := range l.arrivals {
				due := l.started.Add(time.Duration(k+1) * period)
				assert.False(t, at.Before(due), "peer %d: ping %d came early", i, k+1)
				assert.LessOrEqual(t, at.Sub(due), tick, "peer %d: ping %d came more than a tick late", i, k+1)
			}
			mean := l.arrivals[len(l.arrivals)-1].Sub(l.arrivals[0]) / time.Duration(len(l.arrivals)-1)
			assert.Equal(t, period, mean, "peer %d: mean period", i)
		}
		stuck := links[2]
		assert.Len(t, stuck.arrivals, 5)
		assert.True(t, stuck.closedByIdle, "the peer that stopped reading was not closed as idle")
		silent := stuck.ended.Sub(stuck.lastAnswer)
		assert.GreaterOrEqual(t, silent, deadAfter, "the silent peer was closed before deadAfter")
		assert.LessOrEqual(t, silent, deadAfter+tick, "the silent peer was closed more than a tick after deadAfter")
	})
}
