package hashedwheel

import (
	"bytes"
	"log/slog"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests look inside the worker. They read worker-owned state only after
// synctest.Wait, which returns once the worker is durably blocked and orders
// its writes before the reads.

// linked counts the timeouts in the wheel's buckets.
func linked(t *Timer) int {
	n := 0
	for i := range t.wheel {
		for to := t.wheel[i].head; to != nil; to = to.bucketNext {
			n++
		}
	}
	return n
}

func TestGuarantee3CancelledTimeoutsAreUnlinkedAtTheNextTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, err := NewTimer(WithTickDuration(10*time.Millisecond), WithTicksPerWheel(16))
		require.NoError(t, err)
		defer tm.Stop()
		var timeouts []*Timeout
		for i := range 1000 {
			to, err := tm.AfterFunc(time.Duration(i+1)*time.Second, func() {})
			require.NoError(t, err)
			timeouts = append(timeouts, to)
		}
		time.Sleep(15 * time.Millisecond)
		synctest.Wait()
		require.Equal(t, 1000, linked(tm), "all timeouts should be in buckets after one tick")

		for _, to := range timeouts[1:] {
			require.True(t, to.Cancel())
		}
		assert.Equal(t, int64(1), tm.PendingTimeouts(), "Cancel counts a timeout out at once")
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		assert.Equal(t, 1, linked(tm), "cancelled timeouts must leave their buckets within a tick")
	})
}

func TestIdleWorkerParksAndSleepsUntilSomethingIsDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, err := NewTimer(WithTickDuration(100*time.Millisecond), WithTicksPerWheel(8))
		require.NoError(t, err)
		defer tm.Stop()
		require.NoError(t, tm.Start())
		time.Sleep(time.Hour)
		synctest.Wait()
		assert.True(t, tm.sleeping.Load(), "an idle worker must park")
		assert.Zero(t, tm.tick, "a parked worker must not count ticks")

		// One timeout 10s away lands in bucket (36000+100)&7 = 4 with 12
		// rounds. The worker skips the visits at which it is not due and
		// sleeps until tick 36100.
		to, err := tm.AfterFunc(10*time.Second, func() {})
		require.NoError(t, err)
		time.Sleep(1050 * time.Millisecond)
		synctest.Wait()
		// Woken at 1h, the worker took tick 36000 from the clock, moved the
		// timeout into its bucket, and sleeps until tick 36100 ends.
		assert.Equal(t, int64(36001), tm.tick)
		assert.True(t, tm.sleeping.Load())
		// Stop at once, before the clock can move: the worker's next step
		// then follows Stop, which orders it after the reads above.
		assert.Equal(t, []*Timeout{to}, tm.Stop())
	})
}

func TestWorkerSleepsThroughVisitsWithNothingDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, err := NewTimer(WithTickDuration(10*time.Millisecond), WithTicksPerWheel(8))
		require.NoError(t, err)
		defer tm.Stop()
		// Every bucket holds a timeout due in an hour, hundreds of turns
		// away. Netty's worker would wake every tick to count them down.
		for i := range 16 {
			_, err := tm.AfterFunc(time.Hour+time.Duration(i)*10*time.Millisecond, func() {})
			require.NoError(t, err)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, int64(1), tm.tick, "the worker woke for ticks with nothing due")
		assert.True(t, tm.sleeping.Load())
		assert.Equal(t, 16, linked(tm))
		assert.Len(t, tm.Stop(), 16)
	})
}

func noop() {}

func TestTimeoutIsOneSmallAllocation(t *testing.T) {
	// 64 bytes is a size class of its own; a 65th byte would cost 16 more.
	assert.Equal(t, uintptr(64), unsafe.Sizeof(Timeout{}))

	tm, err := NewTimer()
	require.NoError(t, err)
	defer tm.Stop()
	task := TimerFunc(func(*Timeout) {})
	require.NoError(t, tm.Start())
	allocs := testing.AllocsPerRun(1000, func() {
		to, err := tm.NewTimeout(task, time.Hour)
		if err != nil {
			panic(err)
		}
		to.Cancel()
	})
	assert.Equal(t, 1.0, allocs, "NewTimeout and Cancel must allocate only the Timeout")
	allocs = testing.AllocsPerRun(1000, func() {
		to, err := tm.AfterFunc(time.Hour, noop)
		if err != nil {
			panic(err)
		}
		to.Cancel()
	})
	assert.Equal(t, 1.0, allocs, "AfterFunc must allocate only the Timeout")
}

func TestTaskCallingGoexitDoesNotStopTheWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logger, logs := newTestLogger()
		tm, err := NewTimer(WithTickDuration(10*time.Millisecond), WithLogger(logger))
		require.NoError(t, err)
		// t.FailNow in a timer callback does this.
		_, err = tm.AfterFunc(0, runtime.Goexit)
		require.NoError(t, err)
		sameTick, err := tm.AfterFunc(0, func() {})
		require.NoError(t, err)
		time.Sleep(20 * time.Millisecond)
		assert.True(t, sameTick.IsExpired(), "the timeout behind the exiting task must still run")

		later, err := tm.AfterFunc(10*time.Millisecond, func() {})
		require.NoError(t, err)
		pending, err := tm.AfterFunc(time.Hour, func() {})
		require.NoError(t, err)
		time.Sleep(30 * time.Millisecond)
		assert.True(t, later.IsExpired())
		assert.Equal(t, []*Timeout{pending}, tm.Stop())
		assert.Contains(t, logs.String(), "Goexit")
	})
}

func TestGuarantee8SkippedTicksGetAFreshTransferBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, err := NewTimer(WithTickDuration(10 * time.Millisecond))
		require.NoError(t, err)
		defer tm.Stop()
		start := time.Now()
		// Exactly one tick's budget, far away: the worker then sleeps.
		for range maxTransfersPerTick {
			_, err := tm.AfterFunc(time.Hour, func() {})
			require.NoError(t, err)
		}
		time.Sleep(55 * time.Millisecond)
		ranAt := make(chan time.Duration, 1)
		_, err = tm.AfterFunc(0, func() { ranAt <- time.Since(start) })
		require.NoError(t, err)
		assert.Equal(t, 60*time.Millisecond, <-ranAt)
	})
}

func TestGuarantee4HugeElapsedTimeDoesNotOverflowTickArithmetic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const tick = time.Duration(1 << 62) // about 146 years
		tm, err := NewTimer(WithTickDuration(tick), WithTicksPerWheel(1))
		require.NoError(t, err)
		to, err := tm.AfterFunc(0, func() {})
		require.NoError(t, err)
		time.Sleep(150 * 365 * 24 * time.Hour)
		assert.True(t, to.IsExpired())
		late, err := tm.AfterFunc(time.Hour, func() {})
		require.NoError(t, err)
		time.Sleep(time.Hour)
		assert.False(t, late.IsExpired(), "the tick after 2^63ns never ends")
		assert.Equal(t, []*Timeout{late}, tm.Stop())
	})
}

// newTestLogger returns a logger and what it writes. Read the buffer only
// after Stop: the worker logs, and Stop orders its writes before its return.
func newTestLogger() (*slog.Logger, *bytes.Buffer) {
	var b bytes.Buffer
	return slog.New(slog.NewTextHandler(&b, nil)), &b
}

func TestSparseWheelGoesToSleepWithoutWalkingIt(t *testing.T) {
	// With 2^20 buckets and one timeout an hour away, each schedule and
	// cancel wakes the worker, which then goes back to sleep. Finding the
	// next due tick must look at the buckets that hold something, not at a
	// million empty ones.
	synctest.Test(t, func(t *testing.T) {
		tm, err := NewTimer(WithTickDuration(10*time.Millisecond), WithTicksPerWheel(1<<20))
		require.NoError(t, err)
		defer tm.Stop()
		_, err = tm.AfterFunc(time.Hour, func() {})
		require.NoError(t, err)
		synctest.Wait()
		before := tm.scanned
		const rounds = 500
		for i := range rounds {
			to, err := tm.AfterFunc(time.Duration(i+1)*time.Second, func() {})
			require.NoError(t, err)
			synctest.Wait()
			to.Cancel()
			synctest.Wait()
		}
		// Two sleeps a round, each looking at the one or two buckets in use.
		assert.LessOrEqual(t, tm.scanned-before, uint64(rounds*2*2))
		assert.Equal(t, int64(1), tm.PendingTimeouts())
	})
}

func TestOccupancyFindsTheNextNonEmptyBucket(t *testing.T) {
	for _, n := range []int{1, 8, 64, 65, 4096, 1 << 20} {
		o := newOccupancy(n)
		set := map[int]bool{}
		for _, i := range []int{0, 1, 63, 64, 65, 4095, 4096, 262143, 262144, n - 1} {
			if i < n {
				o.add(i)
				set[i] = true
			}
		}
		// Check next from every interesting position against a linear scan.
		for _, from := range []int{0, 1, 2, 62, 63, 64, 65, 66, 4094, 4095, 4096, 4097, 262143, 262144, 262145, n - 1, n} {
			if from > n {
				continue
			}
			want := -1
			for i := from; i < n; i++ {
				if set[i] {
					want = i
					break
				}
			}
			assert.Equal(t, want, o.next(from), "n=%d from=%d", n, from)
		}
		for i := range set {
			o.remove(i)
		}
		assert.Equal(t, -1, o.next(0), "n=%d: not empty after removing all", n)
	}
}

// stalledReset does what Reset(0) does on a goroutine that is preempted
// between the state change that marks the timeout queued and its push to the
// changes queue (Go may preempt there). finish does the rest.
func stalledReset(t *testing.T, to *Timeout) (finish func()) {
	s := to.state.Load()
	require.True(t, s&stLinked != 0 && s&stQueued == 0 && s&stBusy == 0 && s&phaseMask == stInit,
		"want a linked, unqueued, pending timeout; state %#x", s)
	require.True(t, to.state.CompareAndSwap(s, s|stBusy|stReset))
	atomic.StoreInt64(&to.deadline, to.timer.elapsed())
	require.True(t, to.state.CompareAndSwap(s|stBusy|stReset, s|stReset|stQueued))
	return func() {
		to.timer.changes.push(to)
		to.timer.wakeWorker()
	}
}

func TestPeriodicInTheChangesQueueIsNotHandedOut(t *testing.T) {
	// A periodic timeout reset to an earlier deadline is due while the
	// Reset's push to the changes queue is stalled. Handing its run out then
	// would put it in a shard queue, and the push then in the changes queue
	// too, through the same next field, breaking both queues. The worker
	// must wait until the changes queue gives it back.
	synctest.Test(t, func(t *testing.T) {
		tm, err := NewTimer(WithTickDuration(10*time.Millisecond), WithTicksPerWheel(8))
		require.NoError(t, err)
		require.NoError(t, tm.Start())
		w, err := tm.AfterFunc(time.Hour, func() {})
		require.NoError(t, err)
		var runs atomic.Int32
		p, err := tm.Every(50*time.Millisecond, func() {
			if runs.Add(1) == 1 {
				w.Cancel() // pushes to the changes queue from the run
			}
		})
		require.NoError(t, err)
		// Past the first tick, at whose end the worker links p at the
		// latest (it may take new timeouts earlier only while they arrive
		// fast).
		time.Sleep(15 * time.Millisecond)
		synctest.Wait()
		finish := stalledReset(t, p)
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		assert.Zero(t, runs.Load(), "ran while still in the changes queue")
		finish()
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		assert.Positive(t, runs.Load(), "never ran once out of the changes queue")

		var zRan atomic.Bool
		z, err := tm.AfterFunc(time.Hour, func() { zRan.Store(true) })
		require.NoError(t, err)
		time.Sleep(5 * time.Millisecond)
		require.True(t, z.Reset(30*time.Millisecond))
		time.Sleep(200 * time.Millisecond)
		synctest.Wait()
		assert.True(t, zRan.Load(), "a timeout reset earlier did not run: the changes queue is broken")
		done := make(chan struct{})
		go func() {
			tm.Stop()
			close(done)
		}()
		<-done
	})
}

// BenchmarkTransferCancelled measures the worker alone: its cost per timeout
// scheduled and cancelled before the worker took it, the common case of a
// deadline that was not needed. The timer is never started; the benchmark
// queues the same cancelled timeouts again and again and plays the worker.
// worker-ns/op is the worker's share; ns/op also counts the pushes.
func BenchmarkTransferCancelled(b *testing.B) {
	tm, err := NewTimer()
	require.NoError(b, err)
	task := TimerFunc(func(*Timeout) {})
	timeouts := make([]*Timeout, 2048) // about what the worker takes at a time
	for i := range timeouts {
		timeouts[i] = &Timeout{timer: tm, task: task}
		timeouts[i].state.Store(stCancelled)
	}
	var worker time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i += len(timeouts) {
		for _, to := range timeouts[:min(len(timeouts), b.N-i)] {
			tm.shardFor(to).timeouts.push(to)
		}
		tm.transferBudget = maxTransfersPerTick
		start := time.Now()
		tm.transferTimeoutsToBuckets()
		worker += time.Since(start)
	}
	b.ReportMetric(float64(worker)/float64(b.N), "worker-ns/op")
	require.Equal(b, uint64(b.N), tm.counters.cancelled)
}

// cancelCounter is a CancelledTask that counts its Cancelled calls.
type cancelCounter struct{ calls atomic.Int32 }

func (c *cancelCounter) Run(*Timeout)       {}
func (c *cancelCounter) Cancelled(*Timeout) { c.calls.Add(1) }

func TestGuarantee7TimeoutTakenBackFromAStoppedTimerIsNotCancelled(t *testing.T) {
	// A NewTimeout that pushes its timeout just as Stop comes takes it back
	// and returns ErrTimerStopped (see scheduleTimeout). Its caller never
	// gets the timeout, so the worker must not count it as cancelled, call
	// its Cancelled, or have Stop return it: whether the worker drops it as
	// it takes the queue (a plain task) or keeps it for a Cancelled call.
	for name, task := range map[string]TimerTask{
		"plain":     TimerFunc(func(*Timeout) {}),
		"Cancelled": &cancelCounter{},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tm, err := NewTimer(WithTickDuration(10 * time.Millisecond))
				require.NoError(t, err)
				running, release := make(chan struct{}), make(chan struct{})
				_, err = tm.AfterFunc(0, func() { close(running); <-release })
				require.NoError(t, err)
				<-running // the worker is busy until release

				// What scheduleTimeout does up to its push, having found
				// the timer started...
				to := &Timeout{timer: tm, task: task, deadline: int64(time.Hour)}
				tm.shardFor(to).pending().Add(1)
				tm.shardFor(to).timeouts.push(to)
				// ...then Stop comes, and waits for the worker...
				stopped := make(chan []*Timeout)
				go func() { stopped <- tm.Stop() }()
				synctest.Wait()
				require.True(t, tm.isStopped())
				// ...and scheduleTimeout takes the timeout back.
				require.True(t, to.cancel(stWithdrawn))
				close(release)

				assert.Empty(t, <-stopped)
				assert.Zero(t, tm.Stats().Cancelled)
				assert.Zero(t, tm.PendingTimeouts())
				if c, ok := task.(*cancelCounter); ok {
					assert.Zero(t, c.calls.Load())
				}
			})
		})
	}
}
