package hashedwheel_test

import (
	"bufio"
	"fmt"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hashedwheel/hashedwheel"
)

// This test checks, on the synctest fake clock, heartbeats with Every on a
// task pool that close a silent peer (examples/heartbeat). Loopback TCP does
// not block durably inside a bubble, so it uses net.Pipe, which does.

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
