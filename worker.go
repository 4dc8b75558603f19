package hashedwheel

import (
	"bytes"
	"runtime"
	"strconv"
	"time"
)

// run is the worker goroutine: Netty's Worker.run. Each tick it unlinks the
// timeouts cancelled in buckets, moves new timeouts into buckets, expires the
// current bucket and advances. Ticks are absolute, counted from startTime, so
// they do not drift; a worker that falls behind processes the missed ticks
// back to back.
func (t *Timer) run() {
	defer close(t.done)
	t.workerID.Store(goroutineID())
	// The sleep timer is made here, by the worker, so that in a synctest
	// bubble it runs on the bubble's clock.
	sleep := time.NewTimer(time.Hour)
	sleep.Stop()
	for {
		now, ok := t.waitForNextTick(sleep)
		if !ok {
			break
		}
		idx := t.tick & t.mask
		t.processCancelledTasks()
		t.transferTimeoutsToBuckets()
		t.wheel[idx].expireTimeouts(now)
		t.tick++
	}
	t.unprocessed = t.collectUnprocessed()
}

// waitForNextTick waits until tick t.tick has ended and returns the time, in
// nanoseconds since start, at which the worker saw that. It returns false
// when the timer is stopped.
//
// Netty's worker wakes every tick. This one sleeps longer when it can prove
// nothing is due sooner: both queues are empty and the buckets of the next
// ticks are empty. It then skips those ticks, waking at the first non-empty
// bucket, or parks until woken if the whole wheel is empty. A producer that
// pushes while the worker sleeps wakes it; the worker then takes its tick
// from the clock, never past a bucket it has not processed, so deadlines are
// kept exactly as if it had ticked all along.
func (t *Timer) waitForNextTick(sleep *time.Timer) (int64, bool) {
	for {
		if t.isStopped() {
			return 0, false
		}
		now := t.elapsed()
		if now >= (t.tick+1)*t.tickDuration {
			return now, true
		}
		skip, park := 0, false
		if t.wheel[t.tick&t.mask].head == nil {
			t.sleeping.Store(true)
			if t.timeouts.isEmpty() && t.cancelledTimeouts.isEmpty() {
				skip = t.emptyBucketsAhead()
				park = skip == len(t.wheel)
			}
			if skip == 0 {
				t.sleeping.Store(false)
			}
		}
		if park {
			select {
			case <-t.wake:
			case <-t.stopped:
			}
		} else {
			sleep.Reset(time.Duration((t.tick+int64(skip)+1)*t.tickDuration - now))
			select {
			case <-sleep.C:
			case <-t.wake:
				sleep.Stop()
			case <-t.stopped:
				sleep.Stop()
			}
		}
		if skip > 0 {
			t.sleeping.Store(false)
			// The skipped buckets are empty and nothing was transferred
			// meanwhile, so the worker may stand at any tick up to the clock's,
			// but not beyond the first bucket it has not seen empty.
			clockTick := t.elapsed() / t.tickDuration
			if !park {
				clockTick = min(clockTick, t.tick+int64(skip))
			}
			t.tick = max(t.tick, clockTick)
		}
	}
}

// emptyBucketsAhead returns how many consecutive buckets, starting with the
// current tick's, are empty: len(t.wheel) if all are.
func (t *Timer) emptyBucketsAhead() int {
	for i := range t.wheel {
		if t.wheel[(t.tick+int64(i))&t.mask].head != nil {
			return i
		}
	}
	return len(t.wheel)
}

// processCancelledTasks unlinks the timeouts cancelled since the last tick
// from their buckets.
func (t *Timer) processCancelledTasks() {
	for {
		to := t.cancelledTimeouts.pop()
		if to == nil {
			return
		}
		t.wheel[to.bucketIndex].remove(to)
	}
}

// transferTimeoutsToBuckets moves up to maxTransfersPerTick new timeouts into
// their buckets. A timeout whose deadline is in a tick already processed goes
// into the current bucket and expires this tick. Timeouts cancelled before
// they got here are dropped; they count against the limit, as in Netty.
func (t *Timer) transferTimeoutsToBuckets() {
	wheelLen := int64(len(t.wheel))
	for range maxTransfersPerTick {
		to := t.timeouts.pop()
		if to == nil {
			return
		}
		if !to.state.CompareAndSwap(stInit, stLinked) {
			continue // cancelled; Cancel has already counted it out
		}
		calculated := to.deadline / t.tickDuration
		to.remainingRounds = (calculated - t.tick) / wheelLen
		idx := max(calculated, t.tick) & t.mask
		to.bucketIndex = int32(idx)
		t.wheel[idx].add(to)
	}
}

// collectUnprocessed cancels every timeout still pending, in the buckets or
// still queued, and returns those it cancelled. It runs on the worker as it
// exits.
func (t *Timer) collectUnprocessed() []*Timeout {
	var unprocessed []*Timeout
	for i := range t.wheel {
		unprocessed = t.wheel[i].clearTimeouts(unprocessed)
	}
	// A producer that pushed before it could see the stop is in this queue,
	// possibly still in a bubble: wait for it rather than lose its timeout.
	for !t.timeouts.isEmpty() {
		to := t.timeouts.pop()
		if to == nil {
			runtime.Gosched()
			continue
		}
		if _, ok := to.markCancelled(); ok {
			unprocessed = append(unprocessed, to)
		}
	}
	for t.cancelledTimeouts.pop() != nil {
		// Unlinked already, with their buckets; popping drops the queue's
		// references to them.
	}
	return unprocessed
}

// goroutineID returns the ID of the calling goroutine, which Go does not
// expose otherwise. Stop uses it to tell that it runs inside a task on the
// worker, where waiting for the worker would deadlock. It parses the header
// of the goroutine's stack trace, "goroutine 42 [running]:", and costs about
// a microsecond; only Stop and the worker's start call it. It returns 0,
// which is no goroutine's ID, if the header cannot be parsed.
func goroutineID() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	b, _, _ = bytes.Cut(b, []byte(" "))
	id, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		return 0
	}
	return id
}
