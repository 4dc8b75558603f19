package hashedwheel_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hashedwheel/hashedwheel"
)

// These tests hold guarantees 18-20: a Timer made WithoutWorker, driven by
// its owner with Advance and NextDeadline. They run on the fake clock with
// the 10ms tick of the other job tests: a deadline D, since the timer was
// made, runs at the first Advance at or after the end of its tick,
// runEnd(D).

// ownedTimer returns a Timer made WithoutWorker with a 10ms tick and a small
// wheel, and the time it was made.
func ownedTimer(t *testing.T, opts ...hashedwheel.Option) (*hashedwheel.Timer, time.Time) {
	t.Helper()
	opts = append([]hashedwheel.Option{hashedwheel.WithoutWorker(),
		hashedwheel.WithTickDuration(jobTick), hashedwheel.WithTicksPerWheel(8)}, opts...)
	return newTimer(t, opts...), time.Now()
}

// advance calls Advance(time.Now()) and fails the test on error.
func advance(t *testing.T, tm *hashedwheel.Timer) int {
	t.Helper()
	n, err := tm.Advance(time.Now())
	require.NoError(t, err)
	return n
}

func TestGuarantee18WithoutWorkerStartsNoGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		before := runtime.NumGoroutine()
		tm, _ := ownedTimer(t)
		require.NoError(t, tm.Start(), "Start does nothing and returns nil")
		mustSchedule(t, tm, time.Millisecond, func() {})
		_, err := tm.Every(time.Millisecond, func() {})
		require.NoError(t, err)
		ctx, cancel := tm.WithTimeout(context.Background(), time.Second)
		defer cancel()
		<-time.After(time.Second)
		assert.Equal(t, before, runtime.NumGoroutine(), "goroutines after scheduling")
		assert.NoError(t, ctx.Err(), "nothing runs without Advance")
		assert.Zero(t, tm.Stats().Expired)
	})
}

func TestGuarantee18AdvanceRunsWhatIsDueOnItsGoroutineTickByTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, _ := ownedTimer(t)
		var owner sync.Mutex // held by the test goroutine: a task that took it would deadlock
		owner.Lock()
		defer owner.Unlock()
		var order []time.Duration
		delays := []time.Duration{95, 5, 42, 5, 17, 300, 0, 64, 1000}
		for _, d := range delays {
			d *= time.Millisecond
			mustSchedule(t, tm, d, func() {
				if owner.TryLock() {
					t.Error("a task ran off the goroutine that called Advance")
				}
				order = append(order, d)
			})
		}
		time.Sleep(99 * time.Millisecond)
		// Due by now: the ticks that ended by 99ms, those of deadlines
		// before 90ms.
		assert.Equal(t, 6, advance(t, tm))
		assert.ElementsMatch(t, []time.Duration{0, 5 * time.Millisecond, 5 * time.Millisecond,
			17 * time.Millisecond, 42 * time.Millisecond, 64 * time.Millisecond}, order)
		assert.Equal(t, []time.Duration{0, 0, 0, 1, 4, 6}, ticksOf(order), "ran tick by tick")
		assert.Equal(t, 0, advance(t, tm), "nothing more is due at the same instant")

		time.Sleep(time.Hour)
		assert.Equal(t, 3, advance(t, tm))
		assert.Equal(t, []time.Duration{95 * time.Millisecond, 300 * time.Millisecond, 1000 * time.Millisecond}, order[6:])
		assert.Equal(t, uint64(9), tm.Stats().Expired)
	})
}

// ticksOf returns the 10ms ticks of deadlines.
func ticksOf(deadlines []time.Duration) []time.Duration {
	ticks := make([]time.Duration, len(deadlines))
	for i, d := range deadlines {
		ticks[i] = d / jobTick
	}
	return ticks
}

func TestGuarantee18AdvanceIsNeverEarlyAndRunsEachOnce(t *testing.T) {
	// A random schedule, advanced at random times: every timeout runs
	// exactly once, at the first Advance at or after the end of its tick.
	synctest.Test(t, func(t *testing.T) {
		tm, start := ownedTimer(t)
		rng := rand.New(rand.NewPCG(3, 4))
		type rec struct {
			deadline time.Duration
			ran      []time.Duration
		}
		recs := make([]*rec, 500)
		for i := range recs {
			r := &rec{deadline: time.Duration(rng.Int64N(int64(2 * time.Second)))}
			recs[i] = r
			mustSchedule(t, tm, r.deadline, func() { r.ran = append(r.ran, time.Since(start)) })
		}
		var calls []time.Duration
		for time.Since(start) < 3*time.Second {
			time.Sleep(time.Duration(rng.Int64N(int64(40 * time.Millisecond))))
			advance(t, tm)
			calls = append(calls, time.Since(start))
		}
		for i, r := range recs {
			require.Len(t, r.ran, 1, "timeout %d (deadline %v)", i, r.deadline)
			// The first call at or after the end of its tick.
			want := calls[slices.IndexFunc(calls, func(c time.Duration) bool { return c >= runEnd(r.deadline) })]
			assert.Equal(t, want, r.ran[0], "timeout %d (deadline %v)", i, r.deadline)
		}
	})
}

func TestGuarantee18AdvanceCatchesUpAnHourInTimeThatGrowsWithWhatIsDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t, hashedwheel.WithoutWorker(), hashedwheel.WithTickDuration(time.Millisecond))
		var ran atomic.Int64
		for i := range 100 {
			mustSchedule(t, tm, time.Duration(i)*37*time.Second, func() { ran.Add(1) })
		}
		_, err := tm.Every(10*time.Minute, func() { ran.Add(1) })
		require.NoError(t, err)
		time.Sleep(time.Hour)
		assert.Equal(t, 98+1, advance(t, tm), "the one-shots due by then (0 to 97*37s) and the latest periodic run")
		assert.Equal(t, int64(99), ran.Load())
		assert.Less(t, tm.Stats().Ticks, uint64(200), "ticks processed for an hour of 1ms ticks")
	})
}

// TestGuarantee18AdvanceOverAnHourIsNotHeldBackByAnArmMadeDuringIt: a task
// that Advance runs cancels a Timeout waiting in another bucket and arms it
// again at a deadline already passed. The arm is taken in at the next call
// (what tasks arm during a call runs at a later one), so the rest of the
// hour costs what it would without it: the Timeout's bucket is not walked
// at each of the hour's 450,000 turns of the 8-bucket wheel.
func TestGuarantee18AdvanceOverAnHourIsNotHeldBackByAnArmMadeDuringIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t, hashedwheel.WithoutWorker(), hashedwheel.WithTickDuration(time.Millisecond),
			hashedwheel.WithTicksPerWheel(8))
		start := time.Now()
		var c session
		var cRuns atomic.Int32
		cTask := hashedwheel.TimerFunc(func(*hashedwheel.Timeout) { cRuns.Add(1) })
		require.NoError(t, tm.Schedule(&c.timeout, cTask, 5*time.Millisecond))
		rearmed := make(chan error, 1)
		mustSchedule(t, tm, time.Millisecond, func() {
			if !c.timeout.Cancel() {
				rearmed <- errors.New("Cancel returned false")
				return
			}
			rearmed <- tm.ScheduleAt(&c.timeout, cTask, start) // passed
		})
		time.Sleep(time.Hour)
		assert.Equal(t, 1, advance(t, tm), "runs of the hour's Advance")
		require.NoError(t, <-rearmed)
		assert.Less(t, tm.Stats().Ticks, uint64(20), "ticks processed for an hour of 1ms ticks")
		assert.Zero(t, cRuns.Load(), "an arm made during Advance ran in it")
		time.Sleep(time.Millisecond) // a passed deadline runs at the end of the tick it is taken in
		assert.Equal(t, 1, advance(t, tm), "runs of the next call")
		assert.Equal(t, int32(1), cRuns.Load())
	})
}

func TestGuarantee18ALaterNowRunsEarlyAnEarlierOneCountsAsTheLast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, start := ownedTimer(t)
		to := mustSchedule(t, tm, 55*time.Millisecond, func() {})
		n, err := tm.Advance(start.Add(60 * time.Millisecond))
		require.NoError(t, err)
		assert.Equal(t, 1, n, "a now 60ms ahead of the clock runs what is due by then")
		assert.True(t, to.IsExpired())

		next := mustSchedule(t, tm, 65*time.Millisecond, func() {}) // in the tick that ends at 70ms
		n, err = tm.Advance(start)                                  // earlier than the last call's now: counts as that
		require.NoError(t, err)
		assert.Zero(t, n)
		assert.False(t, next.IsExpired())
		n, err = tm.Advance(start.Add(70 * time.Millisecond))
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		assert.True(t, next.IsExpired())
	})
}

func TestGuarantee18WhatATaskSchedulesOrReArmsRunsAtALaterCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, start := ownedTimer(t)
		var ran []string
		other := mustSchedule(t, tm, time.Hour, func() { ran = append(ran, "re-armed") })
		mustSchedule(t, tm, 0, func() {
			ran = append(ran, "first")
			mustSchedule(t, tm, 0, func() { ran = append(ran, "scheduled by a task") })
			require.True(t, other.Reset(0))
		})
		periodic, err := tm.Every(10*time.Millisecond, func() { ran = append(ran, "periodic") })
		require.NoError(t, err)
		// A now far ahead, so that what tasks schedule is due by it.
		n, err := tm.Advance(start.Add(time.Second))
		require.NoError(t, err)
		assert.Equal(t, []string{"first", "periodic"}, ran, "one call runs what was scheduled before it, once")
		assert.Equal(t, 2, n)
		// The owner stands in the tick that ends at 1.01s: what arrives now,
		// due long ago, runs when that tick has ended.
		n, err = tm.Advance(start.Add(2 * time.Second))
		require.NoError(t, err)
		assert.ElementsMatch(t, []string{"first", "periodic", "scheduled by a task", "re-armed", "periodic"}, ran)
		assert.Equal(t, 3, n)
		periodic.Cancel()
	})
}

// TestGuarantee18AnOwnedTimerRunsItsOwnTasks: a Timer made WithoutWorker
// runs its tasks inside Advance, on the owner's goroutine; with a pool or an
// executor NewTimer returns an error that names both options, and no Timer.
func TestGuarantee18AnOwnedTimerRunsItsOwnTasks(t *testing.T) {
	for name, opt := range map[string]hashedwheel.Option{
		"WithTaskWorkers":  hashedwheel.WithTaskWorkers(2),
		"WithTaskExecutor": hashedwheel.WithTaskExecutor(func(task func()) { go task() }),
	} {
		t.Run(name, func(t *testing.T) {
			for _, opts := range [][]hashedwheel.Option{
				{hashedwheel.WithoutWorker(), opt},
				{opt, hashedwheel.WithoutWorker()},
			} {
				tm, err := hashedwheel.NewTimer(opts...)
				require.Error(t, err)
				assert.Nil(t, tm)
				assert.Contains(t, err.Error(), name)
				assert.Contains(t, err.Error(), "WithoutWorker")
			}
		})
	}
}

func TestGuarantee19NextDeadlineIsNeverLaterThanTheNextRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, start := ownedTimer(t)
		_, ok := tm.NextDeadline()
		assert.False(t, ok, "nothing pending")

		// Scheduled from another goroutine before the call.
		done := make(chan struct{})
		go func() {
			mustSchedule(t, tm, 25*time.Millisecond, func() {})
			close(done)
		}()
		<-done
		at, ok := tm.NextDeadline()
		require.True(t, ok)
		assert.Equal(t, start.Add(30*time.Millisecond), at, "the end of the deadline's tick")

		// The owner sleeps until then and runs it.
		time.Sleep(time.Until(at) - time.Nanosecond)
		assert.Zero(t, advance(t, tm), "a nanosecond before NextDeadline nothing is due")
		time.Sleep(time.Nanosecond)
		assert.Equal(t, 1, advance(t, tm))
		_, ok = tm.NextDeadline()
		assert.False(t, ok)

		// A timeout due more than a turn of the wheel ahead waits in a
		// level above it, taken down a level at a time, so NextDeadline
		// may be earlier than its run, never later: an owner that sleeps
		// until NextDeadline each time runs it at the end of its
		// deadline's tick after a call per level that runs nothing
		// (three levels for an hour at 10ms and 8 buckets).
		var ranAt time.Time
		record := func() { ranAt = time.Now() }
		far := mustSchedule(t, tm, time.Hour, record)
		wantAt := start.Add(30*time.Millisecond + time.Hour + 10*time.Millisecond)
		assert.Equal(t, 4, followNextDeadline(t, tm, wantAt), "calls of Advance, an hour (45,000 turns) ahead")
		assert.Equal(t, wantAt, ranAt)
		assert.False(t, far.Reset(time.Second), "it ran")

		// A Reset to an earlier deadline lowers it.
		far = mustSchedule(t, tm, time.Hour, record)
		now := time.Now()
		require.True(t, far.Reset(time.Second))
		wantAt = now.Add(time.Second + 10*time.Millisecond)
		assert.LessOrEqual(t, followNextDeadline(t, tm, wantAt), 3, "calls of Advance, 12 turns ahead")
		assert.Equal(t, wantAt, ranAt)

		far = mustSchedule(t, tm, time.Hour, record)
		require.True(t, far.Cancel())
		_, ok = tm.NextDeadline()
		assert.False(t, ok, "a cancelled timeout is not pending")

		mustSchedule(t, tm, time.Minute, func() {})
		allocs := testing.AllocsPerRun(100, func() { tm.NextDeadline() })
		assert.Zero(t, allocs, "NextDeadline allocates")
	})
}

// followNextDeadline sleeps until NextDeadline and calls Advance, until a
// call runs something, and returns the number of calls. It fails the test if
// NextDeadline is ever later than want, when the run is due.
func followNextDeadline(t *testing.T, tm *hashedwheel.Timer, want time.Time) int {
	t.Helper()
	for calls := 1; ; calls++ {
		at, ok := tm.NextDeadline()
		require.True(t, ok, "nothing pending")
		require.False(t, at.After(want), "NextDeadline %v is later than the run's %v", at, want)
		time.Sleep(time.Until(at))
		if advance(t, tm) > 0 {
			return calls
		}
	}
}

func TestGuarantee19OneOwnerAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, _ := ownedTimer(t)
		var innerErr error
		var innerNext bool
		mustSchedule(t, tm, 0, func() {
			_, innerErr = tm.Advance(time.Now())
			_, innerNext = tm.NextDeadline()
		})
		mustSchedule(t, tm, time.Hour, func() {})
		time.Sleep(10 * time.Millisecond)
		assert.Equal(t, 1, advance(t, tm))
		assert.ErrorIs(t, innerErr, hashedwheel.ErrConcurrentAdvance, "Advance from inside Advance")
		assert.False(t, innerNext, "NextDeadline from inside Advance")
		assert.Equal(t, int64(1), tm.PendingTimeouts(), "the overlapping calls changed nothing")

		assert.Len(t, tm.Stop(), 1, "Stop returns the pending timeout")
		_, err := tm.Advance(time.Now())
		assert.ErrorIs(t, err, hashedwheel.ErrTimerStopped)
		_, ok := tm.NextDeadline()
		assert.False(t, ok)
	})
	withWorker := newTimer(t)
	_, err := withWorker.Advance(time.Now())
	assert.ErrorIs(t, err, hashedwheel.ErrHasWorker)
	_, ok := withWorker.NextDeadline()
	assert.False(t, ok)
}

func TestGuarantee20AnyGoroutineMayResetCancelAndStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, start := ownedTimer(t)
		var ran []string
		cancelled := &cancelRecorder{cancelled: make(chan *hashedwheel.Timeout, 1)}
		a := mustSchedule(t, tm, 30*time.Millisecond, func() { ran = append(ran, "a") })
		b := mustSchedule(t, tm, 30*time.Millisecond, func() { ran = append(ran, "b") })
		c, err := tm.NewTimeout(cancelled, 30*time.Millisecond)
		require.NoError(t, err)
		d := mustSchedule(t, tm, time.Hour, func() { ran = append(ran, "d") })
		advance(t, tm)
		other := make(chan struct{})
		go func() {
			defer close(other)
			assert.True(t, a.Reset(100*time.Millisecond))
			assert.True(t, b.Cancel())
			assert.True(t, c.Cancel())
		}()
		<-other
		time.Sleep(50 * time.Millisecond)
		assert.Equal(t, 0, advance(t, tm), "a moved, b and c cancelled")
		select {
		case got := <-cancelled.cancelled:
			assert.Same(t, c, got, "Cancelled runs inside the Advance that takes the cancel in")
		default:
			t.Error("no Cancelled call during Advance")
		}
		time.Sleep(60 * time.Millisecond)
		assert.Equal(t, 1, advance(t, tm))
		assert.Equal(t, []string{"a"}, ran)
		assert.Equal(t, 110*time.Millisecond, time.Since(start))

		stopped := make(chan []*hashedwheel.Timeout)
		go func() { stopped <- tm.Stop() }()
		assert.Equal(t, []*hashedwheel.Timeout{d}, <-stopped, "Stop from another goroutine returns the pending timeouts")
		assert.True(t, d.IsCancelled())
	})
}

// TestGuarantee20CancelledCallsComeInsideAdvanceOrStop holds the one place
// where a Cancelled call can come outside Advance: a Stop made while no
// Advance runs makes the calls still owed itself, before it returns, on its
// caller's goroutine (Stop's doc says so), so none is lost to an owner that
// stops and never calls Advance again.
func TestGuarantee20CancelledCallsComeInsideAdvanceOrStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, _ := ownedTimer(t)
		rec := &cancelRecorder{cancelled: make(chan *hashedwheel.Timeout, 2)}
		inAdvance, err := tm.NewTimeout(rec, time.Hour)
		require.NoError(t, err)
		inStop, err := tm.NewTimeout(rec, time.Hour)
		require.NoError(t, err)
		pending := mustSchedule(t, tm, time.Hour, func() {})

		other := make(chan struct{})
		go func() { defer close(other); assert.True(t, inAdvance.Cancel()) }()
		<-other
		synctest.Wait()
		assert.Empty(t, rec.cancelled, "no Cancelled call before the owner's next call")
		advance(t, tm)
		require.Len(t, rec.cancelled, 1, "the Advance that takes the cancel in makes the call")
		assert.Same(t, inAdvance, <-rec.cancelled)

		assert.True(t, inStop.Cancel())
		synctest.Wait()
		assert.Empty(t, rec.cancelled)
		stopped := make(chan []*hashedwheel.Timeout)
		go func() {
			got := tm.Stop()
			assert.Len(t, rec.cancelled, 1, "Stop makes the owed call before it returns")
			stopped <- got
		}()
		assert.Equal(t, []*hashedwheel.Timeout{pending}, <-stopped, "a timeout cancelled earlier is not returned")
		assert.Same(t, inStop, <-rec.cancelled)
		_, err = tm.Advance(time.Now())
		assert.ErrorIs(t, err, hashedwheel.ErrTimerStopped)
		assert.Empty(t, rec.cancelled, "each Cancelled call is made once")
		assert.Zero(t, rec.ran.Load())
	})
}

func TestGuarantee20StopFromATaskCancelsTheRestAsAdvanceReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, _ := ownedTimer(t)
		var fromTask []*hashedwheel.Timeout
		var ranAfter atomic.Bool
		mustSchedule(t, tm, 0, func() { fromTask = tm.Stop() })
		later := mustSchedule(t, tm, 15*time.Millisecond, func() { ranAfter.Store(true) })
		pending := mustSchedule(t, tm, time.Hour, func() {})
		time.Sleep(30 * time.Millisecond)
		n, err := tm.Advance(time.Now())
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		assert.Nil(t, fromTask, "Stop from a task returns nil")
		assert.False(t, ranAfter.Load(), "nothing runs after Stop")
		assert.True(t, later.IsCancelled())
		assert.True(t, pending.IsCancelled())
		assert.Zero(t, tm.PendingTimeouts())
		assert.Nil(t, tm.Stop(), "a later Stop returns nothing")
	})
}

func TestGuarantee20ContextIsDoneDuringTheAdvanceThatExpiresIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, start := ownedTimer(t)
		ctx, cancel := tm.WithTimeout(context.Background(), 25*time.Millisecond)
		defer cancel()
		var doneInTask bool
		// In the next tick: the order within a tick is not promised.
		mustSchedule(t, tm, 35*time.Millisecond, func() { doneInTask = ctx.Err() != nil })
		time.Sleep(time.Second)
		assert.NoError(t, ctx.Err(), "no Advance, no deadline")
		advance(t, tm)
		assert.ErrorIs(t, ctx.Err(), context.DeadlineExceeded)
		assert.True(t, doneInTask, "the context is done when a later task in the same Advance runs")
		deadline, _ := ctx.Deadline()
		assert.Equal(t, start.Add(25*time.Millisecond), deadline)

		// Stop keeps a pending context's deadline on the runtime's timers.
		ctx2, cancel2 := tm.WithTimeout(context.Background(), time.Second)
		defer cancel2()
		tm.Stop()
		<-ctx2.Done()
		assert.True(t, errors.Is(ctx2.Err(), context.DeadlineExceeded))
	})
}

// TestGuarantee20GoexitInACancelledCallOfTheTakeInLosesNothing: the owner's
// take-in (of NextDeadline, or of Advance) makes the Cancelled call of a
// timeout cancelled while queued, which calls runtime.Goexit, ending the
// owner's goroutine there; the timeouts taken from the queues after it and
// not yet placed are taken in by the owner's next call, and run at their
// deadlines.
func TestGuarantee20GoexitInACancelledCallOfTheTakeInLosesNothing(t *testing.T) {
	calls := map[string]func(tm *hashedwheel.Timer){
		"NextDeadline": func(tm *hashedwheel.Timer) { tm.NextDeadline() },
		"Advance":      func(tm *hashedwheel.Timer) { _, _ = tm.Advance(time.Now()) },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tm, _ := ownedTimer(t)
				// One 8KB object, so in one shard's queue, in this order:
				// the Goexit comes before the others are placed.
				timeouts := new([128]hashedwheel.Timeout)
				task := &goexitOnCancel{}
				require.NoError(t, tm.Schedule(&timeouts[0], task, time.Hour))
				require.True(t, timeouts[0].Cancel()) // still queued, its call owed
				var ran atomic.Int32
				count := hashedwheel.TimerFunc(func(*hashedwheel.Timeout) { ran.Add(1) })
				const n = 64
				for i := range n {
					require.NoError(t, tm.Schedule(&timeouts[1+i], count, 20*time.Millisecond))
				}
				done := make(chan struct{})
				go func() {
					defer close(done)
					call(tm)
				}()
				<-done
				require.Equal(t, int32(1), task.calls.Load(), "Cancelled calls")
				at, ok := tm.NextDeadline()
				require.True(t, ok, "NextDeadline with %d pending", tm.PendingTimeouts())
				assert.False(t, at.After(time.Now().Add(time.Second)), "NextDeadline %v ahead with %d pending",
					time.Until(at), tm.PendingTimeouts())
				time.Sleep(time.Second)
				advance(t, tm)
				assert.Equal(t, int32(n), ran.Load(), "runs after a second")
			})
		})
	}
}

func TestGuarantee20StatsCountAdvanceWork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, _ := ownedTimer(t)
		mustSchedule(t, tm, 0, func() {})
		mustSchedule(t, tm, time.Hour, func() {}).Cancel()
		time.Sleep(10 * time.Millisecond)
		advance(t, tm)
		s := tm.Stats()
		assert.Equal(t, uint64(1), s.Expired)
		assert.Equal(t, uint64(1), s.Cancelled)
		assert.Equal(t, uint64(1), s.Ticks)
		assert.Zero(t, s.Pending)
	})
}

// TestGuarantee20StatsAreAtMostOneCallBehind: on an owned Timer the owner's
// calls are the worker's ticks, so Stats may lag by one call, not more. A
// cancel that NextDeadline takes in is counted in Stats by the owner's next
// call, an Advance or a NextDeadline, even one with nothing to do; nothing
// else is pending, so no later call has anything to do either.
func TestGuarantee20StatsAreAtMostOneCallBehind(t *testing.T) {
	cancels := map[string]func(t *testing.T, tm *hashedwheel.Timer){
		"cancelled in a bucket": func(t *testing.T, tm *hashedwheel.Timer) {
			to := mustSchedule(t, tm, time.Hour, func() {})
			advance(t, tm) // linked now
			require.True(t, to.Cancel())
		},
		"cancelled while queued": func(t *testing.T, tm *hashedwheel.Timer) {
			require.True(t, mustSchedule(t, tm, time.Hour, func() {}).Cancel())
		},
		"a CancelledTask cancelled in a bucket": func(t *testing.T, tm *hashedwheel.Timer) {
			to, err := tm.NewTimeout(&countingCancel{}, time.Hour)
			require.NoError(t, err)
			advance(t, tm)
			require.True(t, to.Cancel())
		},
	}
	nextCalls := map[string]func(t *testing.T, tm *hashedwheel.Timer){
		"Advance":      func(t *testing.T, tm *hashedwheel.Timer) { assert.Zero(t, advance(t, tm)) },
		"NextDeadline": func(t *testing.T, tm *hashedwheel.Timer) { tm.NextDeadline() },
	}
	for kind, cancel := range cancels {
		for next, call := range nextCalls {
			t.Run(kind+"/then "+next, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					tm, _ := ownedTimer(t)
					cancel(t, tm)
					_, ok := tm.NextDeadline() // takes the cancel in
					require.False(t, ok, "nothing is pending")
					call(t, tm)
					assert.Equal(t, uint64(1), tm.Stats().Cancelled, "Stats.Cancelled after the call that took the cancel in and one more")
					for range 500 {
						time.Sleep(jobTick)
						call(t, tm)
					}
					assert.Equal(t, uint64(1), tm.Stats().Cancelled, "Stats.Cancelled 500 ticks later")
				})
			})
		}
	}
}

// TestGuarantee18AdvanceJumpsADayAcrossLevels: on a Timer made WithoutWorker
// with a 1ms tick and 8 buckets, where levels 1 to 4 have slots of 8ms,
// 512ms, 32.768s and 34m57s, one Advance a day after the start runs, across
// the starts of all those slots, every timeout due by then, each once,
// tick by tick in the order of their deadlines, none early, in time that
// grows with what is due; the ones due later stay pending. NextDeadline,
// before and after, is never later than the end of the tick of the next
// run, and an owner that follows it runs the later ones at their ticks,
// with a call per level at most in between.
func TestGuarantee18AdvanceJumpsADayAcrossLevels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ms = time.Millisecond
		const day = 24 * time.Hour
		tm := newTimer(t, hashedwheel.WithoutWorker(), hashedwheel.WithTickDuration(ms),
			hashedwheel.WithTicksPerWheel(8))
		start := time.Now()
		rng := rand.New(rand.NewPCG(5, 6))
		var deadlines []time.Duration
		for _, span := range []time.Duration{8 * ms, 512 * ms, 32768 * ms, 1 << 21 * ms, 1 << 27 * ms} {
			deadlines = append(deadlines, span-ms, span, span+ms, span*64-ms, span*64, span*3+ms/2)
		}
		for range 100 {
			deadlines = append(deadlines, time.Duration(rng.Int64N(int64(day))))
		}
		deadlines = append(deadlines, time.Hour, day-ms, day-1, day, day+ms, 2*day, 365*day)
		var order []int
		ranAt := make([][]time.Duration, len(deadlines))
		first := time.Duration(math.MaxInt64)
		for i, d := range deadlines {
			mustSchedule(t, tm, d, func() {
				order = append(order, i)
				ranAt[i] = append(ranAt[i], time.Since(start))
			})
			first = min(first, d)
		}
		at, ok := tm.NextDeadline()
		require.True(t, ok)
		assert.False(t, at.After(start.Add(runEnd1ms(first))), "NextDeadline %v, later than the first run", at.Sub(start))

		time.Sleep(day)
		n := advance(t, tm)
		var want []int
		for i, d := range deadlines {
			if runEnd1ms(d) <= day {
				want = append(want, i)
			}
		}
		assert.Equal(t, len(want), n, "runs that Advance reports")
		assert.ElementsMatch(t, want, order, "the timeouts due by the day")
		tickOf := func(ids []int) []time.Duration {
			var ts []time.Duration
			for _, id := range ids {
				ts = append(ts, deadlines[id]/ms)
			}
			return ts
		}
		assert.True(t, slices.IsSorted(tickOf(order)), "runs in the order of their ticks: %v", tickOf(order))
		for _, i := range want {
			assert.Equal(t, []time.Duration{day}, ranAt[i], "timeout %d, due at %v", i, deadlines[i])
		}
		s := tm.Stats()
		t.Logf("ticks processed for a day: %d, for %d runs", s.Ticks, n)
		assert.Less(t, s.Ticks, uint64(4*len(deadlines)), "ticks processed for a day of 1ms ticks")

		// The rest, in the order of their deadlines, following NextDeadline.
		var rest []int
		for i, d := range deadlines {
			if runEnd1ms(d) > day {
				rest = append(rest, i)
			}
		}
		slices.SortFunc(rest, func(a, b int) int { return int(deadlines[a] - deadlines[b]) })
		calls := 0
		for _, i := range rest {
			d := deadlines[i]
			for len(ranAt[i]) == 0 {
				at, ok := tm.NextDeadline()
				require.True(t, ok, "nothing pending, but timeout %d (due at %v) has not run", i, d)
				require.False(t, at.After(start.Add(runEnd1ms(d))), "NextDeadline %v, later than the run of "+
					"timeout %d at %v", at.Sub(start), i, runEnd1ms(d))
				time.Sleep(time.Until(at))
				advance(t, tm)
				calls++
			}
			assert.Equal(t, []time.Duration{runEnd1ms(d)}, ranAt[i], "timeout %d, due at %v", i, d)
		}
		t.Logf("calls of Advance for the %d later ones: %d", len(rest), calls)
		assert.LessOrEqual(t, calls, 7*len(rest), "calls of Advance: a move down per level and a run each, at most")
		_, ok = tm.NextDeadline()
		assert.False(t, ok, "nothing pending")
	})
}

// runEnd1ms returns when a timeout with deadline d, since the timer started,
// runs on a Timer of 1ms ticks.
func runEnd1ms(d time.Duration) time.Duration { return (d/time.Millisecond + 1) * time.Millisecond }
