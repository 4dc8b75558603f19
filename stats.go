package hashedwheel

import "time"

// Stats is a snapshot of what a Timer's worker has done. The counters only
// grow; they are at most about a tick behind the worker. See the example of
// [Timer.Stats].
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
// after [Timer.Stop], and cheap: it reads a few atomics and takes no lock.
// Keeping the statistics costs [Timer.NewTimeout], Cancel and Reset nothing:
// the Timer counts what it sees and publishes its counts after each tick and
// before it sleeps (on a Timer made [WithoutWorker], as each [Timer.Advance]
// or [Timer.NextDeadline] that did something returns). A run is counted in
// Expired before its task starts, wherever it runs, so a task that blocks
// hides no run started before it, nor, in Late and MaxLateness, the lateness
// of the runs behind it. See guarantee 15 in docs/guarantees.md, and the
// example of Timer.Stats.
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

// publishedCounters are the counters as Stats reads them. Stored by the
// worker (or the holder of an owned Timer's advancing token) from its
// counters, in publishStats and as it hands out a run; loaded by any
// goroutine.
type publishedCounters struct {
	expired, cancelled, ticks, wakeups, late atomicUint64
	maxLateness                              atomicInt64
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

// handOutClock gives the time of the runs one walk of a bucket hands out,
// for Late and MaxLateness and for the skip of a periodic timeout's runs
// behind, without a clock read after every task that runs on the worker,
// which would cost a burst of runs due at once a quarter of its time.
//
// A run's lateness is its hand-out time less its deadline. The worker reads
// the clock before the first run of the walk, and then once a batch of runs
// has been handed out, or every 64 hand-outs. While no task has run on the
// worker since the last reading, the hand-outs happen at that reading, to
// within the worker's own work. A run handed out after a task ran here, in
// a batch, is counted at the reading that ends the batch: never earlier than
// its hand-out, so a task that blocked hides no lateness behind it, and
// later by at most what the batch's tasks took. A batch is one run at the
// start of every walk and after any batch that took a 64th of a tick or
// more, so a run behind a task that blocked is timed exactly; it doubles,
// up to 64 runs, after each batch that took less, so a burst of short tasks
// costs a clock read per 64 runs. The one inexact count: when a task blocks
// inside a batch of k runs, the up to k-1 runs handed out before it in that
// batch are counted as late as the batch's end.
type handOutClock struct {
	t        *Timer
	now      int64                  // the latest reading, in nanoseconds since the start
	read1    bool                   // now has been read in this walk
	ran      bool                   // a task ran on the worker since now was read
	batch    int                    // runs in a batch (0 counts as 1): between two readings while tasks run here
	since    int                    // runs handed out since now was read
	deferred [maxHandOutBatch]int64 // deadlines of the runs handed out after a task ran here since now
	nDefer   int
	reads    int // readings taken, for tests
}

// maxHandOutBatch is the most runs handed out between two readings.
const maxHandOutBatch = 64

// handOut returns the time at which a run due at deadline is handed out, and
// counts the run's lateness (now, or once its batch ends). fresh asks for a
// reading made after the last task that ran here: a periodic run skips the
// runs more than a period behind that time.
func (c *handOutClock) handOut(deadline int64, fresh bool) int64 {
	if !c.read1 || c.since >= maxHandOutBatch || c.ran && (c.since >= max(c.batch, 1) || fresh) {
		c.read(c.t.elapsed())
	}
	c.since++
	if !c.ran {
		c.t.countLateness(c.now - deadline)
	} else {
		c.deferred[c.nDefer] = deadline
		c.nDefer++
	}
	return c.now
}

// taskRan records that a task ran on the worker (or through the executor,
// which may run it there): time may have passed since now.
func (c *handOutClock) taskRan() { c.ran = true }

// read takes now as the latest reading: it counts the runs deferred to it,
// and sizes the next batch by how long the last one took.
func (c *handOutClock) read(now int64) {
	for _, deadline := range c.deferred[:c.nDefer] {
		c.t.countLateness(now - deadline)
	}
	if c.ran {
		if c.read1 && now-c.now < c.t.conf.tickDuration/64 {
			c.batch = min(2*max(c.batch, 1), maxHandOutBatch)
		} else {
			c.batch = 1
		}
	}
	c.now, c.read1, c.ran, c.since, c.nDefer = now, true, false, 0, 0
	c.reads++
}

// finish counts the runs still deferred, with a reading taken now.
func (c *handOutClock) finish() {
	if c.nDefer > 0 {
		c.read(c.t.elapsed())
	}
}
