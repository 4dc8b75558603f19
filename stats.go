package hashedwheel

import (
	"sync/atomic"
	"time"
)

// Stats is a snapshot of what a Timer's worker has done. The counters only
// grow; they are at most about a tick behind the worker.
//
// See the example of [Timer.Stats].
type Stats struct {
	Pending     int64         // as PendingTimeouts
	Expired     uint64        // task runs handed out (each run of a periodic timeout counts)
	Cancelled   uint64        // timeouts cancelled, by Cancel or by Stop
	Ticks       uint64        // ticks the worker has processed
	Wakeups     uint64        // times the worker goroutine woke up
	Late        uint64        // runs handed out more than two ticks after their deadline
	MaxLateness time.Duration // largest (hand-out time - deadline) seen
}

// Stats returns the timer's statistics. It is safe to call at any time, also
// after [Timer.Stop], and cheap: it reads a few atomics and holds no lock.
// Keeping the statistics costs [Timer.NewTimeout], Cancel and Reset nothing:
// the worker counts what it sees (a cancellation when it unlinks or drops the
// timeout; [Timer.Schedule] and [Timer.ScheduleAt] count one they arm again
// before the worker saw it) and publishes its counts after each tick and
// before it sleeps (on a Timer made [WithoutWorker], as each [Timer.Advance]
// or [Timer.NextDeadline] that did something returns); it counts a run in
// Expired before its task starts, on the worker, the [WithTaskWorkers] pool
// or the [WithTaskExecutor] executor, so a task that blocks hides no run
// handed out before it.
func (t *Timer) Stats() Stats {
	if t.wheel.buckets == nil {
		return Stats{}
	}
	p := &t.published
	return Stats{
		Pending:     t.PendingTimeouts(),
		Expired:     p.expired.Load(),
		Cancelled:   p.cancelled.Load() + t.cancelledAside(),
		Ticks:       p.ticks.Load(),
		Wakeups:     p.wakeups.Load(),
		Late:        p.late.Load(),
		MaxLateness: time.Duration(p.maxLateness.Load()),
	}
}

// cancelledAside returns how many cancelled timeouts the worker never saw
// (see shard.cancelledAside).
func (t *Timer) cancelledAside() uint64 {
	var n uint64
	for i := range t.shards {
		n += t.shards[i].cancelledAside.Load()
	}
	return n
}

// counters are the worker's own statistics.
type counters struct {
	expired, cancelled, ticks, wakeups, late uint64
	maxLateness                              int64
}

// publishedCounters are the counters as Stats reads them.
type publishedCounters struct {
	expired, cancelled, ticks, wakeups, late atomic.Uint64
	maxLateness                              atomic.Int64
}

// countLateness records a run handed out late after its deadline.
func (t *Timer) countLateness(late int64) {
	if late > 2*t.conf.tickDuration {
		t.wheel.counters.late++
	}
	t.wheel.counters.maxLateness = max(t.wheel.counters.maxLateness, late)
}

// publishStats makes the worker's counters visible to Stats. It runs after
// each tick and before the worker blocks, so counters are at most a tick
// behind.
func (t *Timer) publishStats() {
	c := &t.wheel.counters
	t.published.expired.Store(c.expired)
	t.published.cancelled.Store(c.cancelled)
	t.published.ticks.Store(c.ticks)
	t.published.wakeups.Store(c.wakeups)
	t.published.late.Store(c.late)
	t.published.maxLateness.Store(c.maxLateness)
}
