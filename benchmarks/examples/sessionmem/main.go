// Command sessionmem measures what a program written from the README sees:
// the live heap per session of 100,000 sessions, each with a heartbeat
// every second, made with hashedwheel's Timer.Every, with a hashedwheel
// Timeout in the session that its task re-arms with Timer.ScheduleAt at its
// last deadline plus the period, and with time.AfterFunc re-armed in its
// callback, all in this one process, one after the other. Each figure is the
// heap in use after runtime.GC with the sessions alive, less the same before
// they were made, over their number; it counts the 32-byte session itself
// (96 bytes with its Timeout).
//
//	cd benchmarks && go run ./examples/sessionmem
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/hashedwheel/hashedwheel"
)

// session is what a user keeps per connection: 32 bytes.
type session struct {
	id    int64
	beats atomic.Int64
	stop  func() bool
}

func (s *session) ping() { s.beats.Add(1) }

// timeoutSession is a session with its heartbeat's Timeout in it, which is
// the Timeout's task.
type timeoutSession struct {
	session
	timeout hashedwheel.Timeout
}

// period is the heartbeat period (-period).
var period time.Duration

func (s *timeoutSession) Run(to *hashedwheel.Timeout) {
	s.ping()
	_ = to.Timer().ScheduleAt(to, s, to.Deadline().Add(period)) // fails only once the Timer is stopped
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// measure makes n sessions with start, lets them beat for settle, and
// returns the live heap per session and the heartbeats they ran.
func measure(n int, settle time.Duration, start func(id int64) (*session, error)) (float64, int64, error) {
	sessions := make([]*session, n) // the user's own index, made before the baseline
	before := liveHeap()
	for i := range sessions {
		s, err := start(int64(i))
		if err != nil {
			return 0, 0, err
		}
		sessions[i] = s
	}
	time.Sleep(settle)
	after := liveHeap()
	var beats int64
	for _, s := range sessions {
		s.stop()
		beats += s.beats.Load()
	}
	runtime.KeepAlive(sessions)
	// The wheel lets go of what was cancelled within a tick: the next
	// measure's baseline must not count it.
	time.Sleep(time.Second)
	return (float64(after) - float64(before)) / float64(n), beats, nil
}

func main() {
	n := flag.Int("n", 100_000, "sessions")
	flag.DurationVar(&period, "period", time.Second, "heartbeat period")
	settle := flag.Duration("settle", 3*time.Second, "how long the sessions beat before the heap is read")
	flag.Parse()

	timer, err := hashedwheel.NewTimer()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer timer.Stop()

	// Spread the first heartbeats over a period, as a server's connections
	// arrive.
	first := func(id int64) time.Duration { return time.Duration(id) * period / time.Duration(*n) }
	wheel, wb, err := measure(*n, *settle, func(id int64) (*session, error) {
		s := &session{id: id}
		beat, err := timer.Every(period, s.ping)
		if err != nil {
			return nil, err
		}
		beat.Reset(first(id)) // Reset moves the first run (API.md 12)
		s.stop = beat.Cancel
		return s, nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	start := time.Now()
	inSession, ib, err := measure(*n, *settle, func(id int64) (*session, error) {
		s := &timeoutSession{session: session{id: id}}
		s.stop = s.timeout.Cancel
		return &s.session, timer.ScheduleAt(&s.timeout, s, start.Add(first(id)))
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	std, sb, err := measure(*n, *settle, func(id int64) (*session, error) {
		s := &session{id: id}
		var t *time.Timer
		var stopped atomic.Bool
		// Made an hour away and then moved, so that t is set before the
		// callback can run.
		t = time.AfterFunc(time.Hour, func() {
			s.ping()
			if !stopped.Load() {
				t.Reset(period)
			}
		})
		t.Reset(first(id))
		s.stop = func() bool { stopped.Store(true); return t.Stop() }
		return s, nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("%d sessions, a heartbeat every %v, heap read after %v\n", *n, period, *settle)
	fmt.Printf("hashedwheel Timer.Every:                %4.0f B per session (%d heartbeats)\n", wheel, wb)
	fmt.Printf("hashedwheel Timeout in the session:     %4.0f B per session (%d heartbeats)\n", inSession, ib)
	fmt.Printf("time.AfterFunc, re-armed:               %4.0f B per session (%d heartbeats)\n", std, sb)
	fmt.Printf("Timer.Every / time.AfterFunc:           %.2fx\n", wheel/std)
	fmt.Printf("Timeout in the session / time.AfterFunc: %.2fx\n", inSession/std)
}
