// Command sessionmem measures what a program written from the README sees:
// the live heap per session of 100,000 sessions, each with a heartbeat
// every second, made with hashedwheel's Timer.Every and with time.AfterFunc
// re-armed in its callback, both in this one process, one after the other.
// Each figure is the heap in use after runtime.GC with the sessions alive,
// less the same before they were made, over their number; it counts the
// 32-byte session itself.
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

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// measure makes n sessions with start, lets them beat for settle, and
// returns the live heap per session and the heartbeats they ran.
func measure(n int, settle time.Duration, start func(s *session) error) (float64, int64, error) {
	sessions := make([]*session, n) // the user's own index, made before the baseline
	before := liveHeap()
	for i := range sessions {
		s := &session{id: int64(i)}
		if err := start(s); err != nil {
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
	return (float64(after) - float64(before)) / float64(n), beats, nil
}

func main() {
	n := flag.Int("n", 100_000, "sessions")
	period := flag.Duration("period", time.Second, "heartbeat period")
	settle := flag.Duration("settle", 3*time.Second, "how long the sessions beat before the heap is read")
	flag.Parse()

	timer, err := hashedwheel.NewTimer()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer timer.Stop()

	wheel, wb, err := measure(*n, *settle, func(s *session) error {
		// Spread the first heartbeats over a period, as a server's
		// connections arrive; Reset moves the first run (API.md 12).
		beat, err := timer.Every(*period, s.ping)
		if err != nil {
			return err
		}
		beat.Reset(time.Duration(s.id) * *period / time.Duration(*n))
		s.stop = beat.Cancel
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	std, sb, err := measure(*n, *settle, func(s *session) error {
		var t *time.Timer
		var stopped atomic.Bool
		first := time.Duration(s.id) * *period / time.Duration(*n)
		// Made an hour away and then moved, so that t is set before the
		// callback can run.
		t = time.AfterFunc(time.Hour, func() {
			s.ping()
			if !stopped.Load() {
				t.Reset(*period)
			}
		})
		t.Reset(first)
		s.stop = func() bool { stopped.Store(true); return t.Stop() }
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("%d sessions, a heartbeat every %v, heap read after %v\n", *n, *period, *settle)
	fmt.Printf("hashedwheel Timer.Every:        %4.0f B per session (%d heartbeats)\n", wheel, wb)
	fmt.Printf("time.AfterFunc, re-armed:       %4.0f B per session (%d heartbeats)\n", std, sb)
	fmt.Printf("hashedwheel / time.AfterFunc:   %.2fx\n", wheel/std)
}
