package hashedwheel_test

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hashedwheel/hashedwheel"
)

// These tests hold guarantee 12: periodic timeouts, made with
// NewPeriodicTimeout and Every. Their allocations are counted in
// alloc_test.go.

func TestGuarantee12PeriodicRunsAtEveryPeriodWithoutDrift(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, start := startedTimer(t)
		log := &runLog{start: start}
		var self []*hashedwheel.Timeout
		var mu sync.Mutex
		to, err := tm.NewPeriodicTimeout(hashedwheel.TimerFunc(func(to *hashedwheel.Timeout) {
			log.record()
			mu.Lock()
			self = append(self, to)
			mu.Unlock()
		}), 25*time.Millisecond)
		require.NoError(t, err)
		// Run k is due at k*25ms and runs at the end of that deadline's tick.
		const periods = 200
		time.Sleep(periods*25*time.Millisecond + time.Millisecond)
		var want []time.Duration
		for k := 1; k <= periods; k++ {
			if at := runEnd(time.Duration(k) * 25 * time.Millisecond); at <= periods*25*time.Millisecond {
				want = append(want, at)
			}
		}
		assert.Equal(t, want, log.runs())
		assert.False(t, to.IsExpired())
		assert.Equal(t, int64(1), tm.PendingTimeouts())
		// Run 200, due at 5000ms, runs at 5010ms: it is the next one.
		assert.Equal(t, start.Add(200*25*time.Millisecond), to.Deadline(), "Deadline is the next run's")
		for _, s := range self {
			require.Same(t, to, s, "Run got another *Timeout")
		}
	})
}

func TestGuarantee12PeriodicWithThePeriodOfATickRunsEveryTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, start := startedTimer(t)
		log := &runLog{start: start}
		_, err := tm.Every(jobTick, log.record)
		require.NoError(t, err)
		time.Sleep(105 * time.Millisecond)
		// Due at 10ms, 20ms, ...: each at the end of its tick, a tick later.
		assert.Equal(t, []time.Duration{20 * time.Millisecond, 30 * time.Millisecond, 40 * time.Millisecond,
			50 * time.Millisecond, 60 * time.Millisecond, 70 * time.Millisecond, 80 * time.Millisecond,
			90 * time.Millisecond, 100 * time.Millisecond}, log.runs())
	})
}

// TestGuarantee12PeriodicDeadlineIsTheRunInProgressWhileItRuns: Deadline is
// the due time of the run in progress while its task runs, so a task measuring
// its own lateness never sees a negative one, and of the next run once the run
// has returned.
func TestGuarantee12PeriodicDeadlineIsTheRunInProgressWhileItRuns(t *testing.T) {
	for name, opts := range runModes {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tm, start := startedTimer(t, opts...)
				type seen struct{ deadline, at time.Time }
				runs := make(chan seen, 100)
				to, err := tm.NewPeriodicTimeout(hashedwheel.TimerFunc(func(to *hashedwheel.Timeout) {
					runs <- seen{to.Deadline(), time.Now()}
				}), 25*time.Millisecond)
				require.NoError(t, err)
				for k := 1; k <= 8; k++ {
					r := <-runs
					due := start.Add(time.Duration(k) * 25 * time.Millisecond)
					assert.Equal(t, due, r.deadline, "run %d: Deadline inside the task", k)
					assert.False(t, r.at.Before(r.deadline), "run %d ran before Deadline()", k)
					synctest.Wait()
					assert.Equal(t, due.Add(25*time.Millisecond), to.Deadline(),
						"run %d: Deadline once the run has returned", k)
				}
				require.True(t, to.Cancel())
			})
		})
	}
}

func TestGuarantee12PeriodicSkipsRunsAfterASlowRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, start := startedTimer(t, hashedwheel.WithTaskWorkers(2))
		log := &runLog{start: start}
		var n atomic.Int32
		_, err := tm.Every(25*time.Millisecond, func() {
			log.record()
			if n.Add(1) == 1 {
				time.Sleep(70 * time.Millisecond) // the first run is slow
			}
		})
		require.NoError(t, err)
		time.Sleep(150 * time.Millisecond)
		// Run 1 starts at 30ms and returns at 100ms. Runs 2 (50ms) and 3
		// (75ms) fell more than a period behind and are skipped; run 4,
		// due at 100ms, runs at once (110ms); run 5 (125ms) at 130ms.
		assert.Equal(t, []time.Duration{30 * time.Millisecond, 110 * time.Millisecond, 130 * time.Millisecond}, log.runs())
	})
}

func TestGuarantee12PeriodicRunsNeverOverlap(t *testing.T) {
	for name, opt := range map[string]hashedwheel.Option{
		"pool":     hashedwheel.WithTaskWorkers(4),
		"executor": hashedwheel.WithTaskExecutor(func(task func()) { go task() }),
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tm, _ := startedTimer(t, opt)
				var inFlight, overlaps, runs atomic.Int32
				_, err := tm.Every(jobTick, func() {
					if inFlight.Add(1) > 1 {
						overlaps.Add(1)
					}
					runs.Add(1)
					time.Sleep(35 * time.Millisecond) // longer than the period
					inFlight.Add(-1)
				})
				require.NoError(t, err)
				time.Sleep(time.Second)
				synctest.Wait()
				assert.Zero(t, overlaps.Load())
				assert.Greater(t, runs.Load(), int32(10))
				tm.Stop()
				// Stop does not wait for a run on an executor's goroutine.
				time.Sleep(time.Second)
			})
		})
	}
}

// TestGuarantee12PeriodicRunsOnceWhenTheWorkerCatchesUp: runs that fall more
// than one period behind are skipped, never run back to back to catch up. A
// periodic timeout already linked for its next run while another task blocks
// the worker must run once when the worker catches up, not twice at the same
// instant.
func TestGuarantee12PeriodicRunsOnceWhenTheWorkerCatchesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t, hashedwheel.WithTickDuration(time.Millisecond), hashedwheel.WithTicksPerWheel(8))
		require.NoError(t, tm.Start())
		start := time.Now()

		var mu sync.Mutex
		var runs []time.Duration
		// Runs at 2ms (due 1.5ms), then is linked for the run due at 3ms.
		_, err := tm.Every(1500*time.Microsecond, func() {
			mu.Lock()
			runs = append(runs, time.Since(start))
			mu.Unlock()
		})
		require.NoError(t, err)
		// Blocks the worker from 3ms (the end of tick 2) to 10ms.
		release := make(chan struct{})
		mustSchedule(t, tm, 2500*time.Microsecond, func() { <-release })

		time.Sleep(10 * time.Millisecond)
		close(release)
		synctest.Wait()

		mu.Lock()
		defer mu.Unlock()
		require.NotEmpty(t, runs)
		assert.Equal(t, 2*time.Millisecond, runs[0])
		for i := 1; i < len(runs); i++ {
			assert.NotEqual(t, runs[i-1], runs[i], "two runs at %v, back to back; all runs: %v", runs[i], runs)
		}
	})
}

// TestGuarantee12PeriodicRunsOnceAfterATaskInItsTickBlockedTheWorker: the skip
// at hand-out must use the time of the hand-out. A periodic timeout due in the
// same tick as a task that blocks the worker, and handed out after it, must
// run once when the worker is released, not twice at the same instant.
func TestGuarantee12PeriodicRunsOnceAfterATaskInItsTickBlockedTheWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t, hashedwheel.WithTickDuration(time.Millisecond), hashedwheel.WithTicksPerWheel(8))
		require.NoError(t, tm.Start())
		start := time.Now()

		// Both are due in tick 1, which ends at 2ms; the blocking task is
		// scheduled first. It blocks the worker from 2ms to 8ms.
		release := make(chan struct{})
		mustSchedule(t, tm, time.Millisecond, func() { <-release })
		var mu sync.Mutex
		var runs []time.Duration
		_, err := tm.Every(time.Millisecond, func() {
			mu.Lock()
			runs = append(runs, time.Since(start))
			mu.Unlock()
		})
		require.NoError(t, err)

		time.Sleep(8 * time.Millisecond)
		close(release)
		synctest.Wait()

		mu.Lock()
		defer mu.Unlock()
		require.NotEmpty(t, runs)
		for i := 1; i < len(runs); i++ {
			assert.NotEqual(t, runs[i-1], runs[i], "two runs at %v, back to back; all runs: %v", runs[i], runs)
		}
	})
}

func TestGuarantee12PeriodicCancelFromItsOwnTaskStopsLaterRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, _ := startedTimer(t)
		var runs atomic.Int32
		cancelled := make(chan bool, 1)
		_, err := tm.NewPeriodicTimeout(hashedwheel.TimerFunc(func(to *hashedwheel.Timeout) {
			if runs.Add(1) == 3 {
				cancelled <- to.Cancel()
			}
		}), 20*time.Millisecond)
		require.NoError(t, err)
		assert.True(t, <-cancelled)
		time.Sleep(time.Second)
		assert.Equal(t, int32(3), runs.Load())
		assert.Zero(t, tm.PendingTimeouts())
	})
}

func TestGuarantee12PeriodicResetMovesTheNextRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, start := startedTimer(t)
		log := &runLog{start: start}
		to, err := tm.Every(100*time.Millisecond, log.record)
		require.NoError(t, err)
		time.Sleep(150 * time.Millisecond) // run 1 at 110ms
		require.True(t, to.Reset(33*time.Millisecond))
		time.Sleep(250 * time.Millisecond)
		// Next due at 183ms, then every 100ms from there: 283ms, 383ms;
		// each runs at the end of its tick.
		assert.Equal(t, []time.Duration{110 * time.Millisecond, 190 * time.Millisecond, 290 * time.Millisecond,
			390 * time.Millisecond}, log.runs())
	})
}

func TestGuarantee12StopReturnsPeriodicTimeouts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, _ := startedTimer(t)
		to, err := tm.Every(20*time.Millisecond, func() {})
		require.NoError(t, err)
		time.Sleep(100 * time.Millisecond)
		assert.Equal(t, []*hashedwheel.Timeout{to}, tm.Stop())
		assert.True(t, to.IsCancelled())
	})
}

// TestGuarantee12PooledPeriodicCanBeResetOnceItsRunReturned holds guarantees
// 11 and 12 on a pool: a periodic timeout whose run has returned is pending
// and idle, so Reset moves its next run and returns true, whether or not the
// worker has taken it back yet. Tasks that contend on a mutex vary the order
// in which runs return; each bubble draws its own timing.
func TestGuarantee12PooledPeriodicCanBeResetOnceItsRunReturned(t *testing.T) {
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 1))
				tm, _ := startedTimer(t, hashedwheel.WithTaskWorkers(4))
				// A mutex made of a channel: inside a bubble, a goroutine
				// waiting for a sync.Mutex would keep the clock from moving.
				lock := make(chan struct{}, 1)
				returned := make(chan struct{}, 1000)
				var timeouts []*hashedwheel.Timeout
				for range 3 {
					// At most 18ms in all: every first run has returned before
					// the second ones are handed out at 40ms.
					hold := time.Duration(rng.IntN(7)) * time.Millisecond
					to, err := tm.Every(15*time.Millisecond, func() {
						lock <- struct{}{}
						time.Sleep(hold)
						<-lock
						returned <- struct{}{}
					})
					require.NoError(t, err)
					timeouts = append(timeouts, to)
				}
				for range 3 {
					<-returned
				}
				synctest.Wait() // the three runs have returned; all is quiet
				for i, to := range timeouts {
					require.True(t, to.Reset(time.Hour), "timeout %d: Reset after its run returned", i)
					assert.Equal(t, time.Now().Add(time.Hour), to.Deadline())
				}
				time.Sleep(30 * time.Minute)
				assert.Empty(t, returned, "a run after Reset moved the next one an hour away")
			})
		})
	}
}

// TestGuarantee12PooledPeriodicRunIsNeverBackToBack on a pool: a run that
// waits for a free pool goroutine until it is more than a period behind starts
// as the latest run due, and the next run is a period after that, never at
// once.
func TestGuarantee12PooledPeriodicRunIsNeverBackToBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, start := startedTimer(t, hashedwheel.WithTaskWorkers(1))
		// Holds the only pool goroutine from 240ms to 310ms, from a tick
		// before the run below is handed out (the order within a tick is
		// not promised).
		mustSchedule(t, tm, 235*time.Millisecond, func() { time.Sleep(70 * time.Millisecond) })
		type run struct {
			at       time.Duration
			deadline time.Duration
		}
		var mu sync.Mutex
		var runs []run
		_, err := tm.NewPeriodicTimeout(hashedwheel.TimerFunc(func(to *hashedwheel.Timeout) {
			mu.Lock()
			defer mu.Unlock()
			runs = append(runs, run{time.Since(start), to.Deadline().Sub(start)})
		}), 15*time.Millisecond)
		require.NoError(t, err)
		time.Sleep(400 * time.Millisecond)
		synctest.Wait()

		mu.Lock()
		defer mu.Unlock()
		// The run due at 240ms is handed out at 250ms and waits for the
		// pool; at 310ms, when it starts, it is the run due at 300ms
		// (the one due at 285ms is more than a period behind).
		require.Contains(t, runs, run{310 * time.Millisecond, 300 * time.Millisecond}, "runs: %v", runs)
		for i, r := range runs {
			assert.False(t, r.at < r.deadline, "run %v started before its deadline", r)
			assert.LessOrEqual(t, r.at-r.deadline, 15*time.Millisecond, "run %v more than a period behind", r)
			if i > 0 {
				assert.Greater(t, r.at, runs[i-1].at, "two runs at %v: back to back; runs: %v", r.at, runs)
				assert.Greater(t, r.deadline, runs[i-1].deadline, "runs: %v", runs)
			}
		}
	})
}

func TestGuarantee12PooledPeriodicRunCancelledBeforeItStartsDoesNotRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, _ := startedTimer(t, hashedwheel.WithTaskWorkers(1))
		release := make(chan struct{})
		// Holds the pool from 10ms: a tick before the run is handed out,
		// as the order within a tick is not promised.
		mustSchedule(t, tm, 5*time.Millisecond, func() { <-release })
		var runs atomic.Int32
		p, err := tm.Every(15*time.Millisecond, func() { runs.Add(1) })
		require.NoError(t, err)
		time.Sleep(25 * time.Millisecond) // the run, handed out at 20ms, waits
		require.True(t, p.Cancel())
		close(release)
		time.Sleep(100 * time.Millisecond)
		assert.Zero(t, runs.Load(), "a run handed out before Cancel started after it")
	})
}

func TestGuarantee12PanickingExecutorDoesNotStrandAPeriodicTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		tm, _ := startedTimer(t, hashedwheel.WithLogger(slog.New(slog.DiscardHandler)),
			hashedwheel.WithTaskExecutor(func(task func()) {
				if calls.Add(1) == 1 {
					panic("executor queue full")
				}
				task()
			}))
		task := &cancelRecorder{cancelled: make(chan *hashedwheel.Timeout, 1)}
		to, err := tm.NewPeriodicTimeout(task, 50*time.Millisecond)
		require.NoError(t, err)
		time.Sleep(time.Second)
		// The run handed out at 60ms was lost with the panic; the timeout
		// came back for the runs due at 100ms, 150ms, ..., 950ms.
		assert.Equal(t, int32(18), task.ran.Load())
		require.True(t, to.Cancel())
		time.Sleep(20 * time.Millisecond)
		assert.Len(t, task.cancelled, 1, "Cancelled not called within a tick")
	})
}

func TestInvalidPeriodIsRejected(t *testing.T) {
	tm := newTimer(t)
	for _, p := range []time.Duration{0, -time.Second} {
		_, err := tm.Every(p, func() {})
		assert.ErrorIs(t, err, hashedwheel.ErrInvalidPeriod)
		assert.ErrorContains(t, err, p.String())
		_, err = tm.NewPeriodicTimeout(hashedwheel.TimerFunc(func(*hashedwheel.Timeout) {}), p)
		assert.ErrorIs(t, err, hashedwheel.ErrInvalidPeriod)
	}
	_, err := tm.Every(time.Second, nil)
	assert.ErrorIs(t, err, hashedwheel.ErrNilTask)
	_, err = tm.NewPeriodicTimeout(nil, time.Second)
	assert.ErrorIs(t, err, hashedwheel.ErrNilTask)
	assert.Zero(t, tm.PendingTimeouts())
}

// runOffTheWorker are the two ways a run goes out to another goroutine: a
// pool of one, and an executor that starts a goroutine a run.
var runOffTheWorker = map[string]hashedwheel.Option{
	"pool":     hashedwheel.WithTaskWorkers(1),
	"executor": hashedwheel.WithTaskExecutor(func(task func()) { go task() }),
}

// heldRun is a periodic task whose first run holds its goroutine until
// released, and that counts the runs of its Timeout in flight.
type heldRun struct {
	started  chan struct{} // closed as the first run starts
	release  chan struct{} // closed by the test to let the first run return
	inFlight atomic.Int32  // runs of the Timeout going on, this task's and others'
	overlaps atomic.Int32  // runs that started while another was in flight
	runs     atomic.Int32
}

func newHeldRun() *heldRun {
	return &heldRun{started: make(chan struct{}), release: make(chan struct{})}
}

func (h *heldRun) Run(*hashedwheel.Timeout) {
	defer h.enter()()
	if h.runs.Add(1) == 1 {
		close(h.started)
		<-h.release
	}
}

// enter counts a run of the Timeout in flight, and returns what ends it.
func (h *heldRun) enter() func() {
	if h.inFlight.Add(1) > 1 {
		h.overlaps.Add(1)
	}
	return func() { h.inFlight.Add(-1) }
}

// other is a task for an arm of the same Timeout on another Timer: its runs
// count in h's.
func (h *heldRun) other() hashedwheel.TimerTask {
	return hashedwheel.TimerFunc(func(*hashedwheel.Timeout) { h.enter()() })
}

// TestGuarantee12StopLeavesAPeriodicRunInProgressToFinish: a periodic
// Timeout whose run is out on a pool or an executor when Stop comes is
// cancelled and returned by Stop, and its run goes on; until the run
// returns, the Timeout is still held by it, so Schedule on another Timer
// returns ErrTimeoutPending rather than start a run beside it (guarantees
// 12 and 21: runs of one Timeout never overlap). Once the run returns it
// may be scheduled anywhere.
func TestGuarantee12StopLeavesAPeriodicRunInProgressToFinish(t *testing.T) {
	for name, opt := range runOffTheWorker {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tm, _ := startedTimer(t, opt)
				tm2, _ := startedTimer(t)
				h := newHeldRun()
				p, err := tm.NewPeriodicTimeout(h, jobTick)
				require.NoError(t, err)
				<-h.started
				stopped := make(chan []*hashedwheel.Timeout)
				go func() { stopped <- tm.Stop() }()
				synctest.Wait() // Stop has cancelled what is pending
				require.True(t, p.IsCancelled(), "Stop did not cancel the periodic Timeout")

				err = tm2.Schedule(p, h.other(), 0)
				assert.ErrorIs(t, err, hashedwheel.ErrTimeoutPending, "Schedule on another Timer while its run is out")
				time.Sleep(5 * jobTick)
				assert.Zero(t, h.overlaps.Load(), "a run started beside the one in progress")

				close(h.release)
				assert.Equal(t, []*hashedwheel.Timeout{p}, <-stopped)
				synctest.Wait() // the run has returned
				require.NoError(t, tm2.Schedule(p, h.other(), 0), "Schedule on another Timer once the run returned")
				time.Sleep(5 * jobTick)
				assert.Zero(t, h.overlaps.Load())
				assert.Equal(t, int32(1), h.runs.Load(), "runs of the periodic task: none after Stop")
				assert.True(t, p.IsExpired(), "the arm on the other Timer did not run")
			})
		})
	}
}
