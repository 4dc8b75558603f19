package hashedwheel_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hashedwheel/hashedwheel"
)

// periodicModes are the three ways a Timer runs tasks: on its worker, on a
// WithTaskWorkers pool, and through a WithTaskExecutor.
var periodicModes = map[string][]hashedwheel.Option{
	"worker":   nil,
	"pool":     {hashedwheel.WithTaskWorkers(2)},
	"executor": {hashedwheel.WithTaskExecutor(func(task func()) { go task() })},
}

// TestGuarantee12PeriodicDeadlineIsTheRunInProgressWhileItRuns holds guarantee 12:
// Deadline is the due time of the run in progress while its task runs, so a
// task measuring its own lateness never sees a negative one, and of the next
// run once the run has returned.
func TestGuarantee12PeriodicDeadlineIsTheRunInProgressWhileItRuns(t *testing.T) {
	for name, opts := range periodicModes {
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

// TestGuarantee12PooledPeriodicCanBeResetOnceItsRunReturned holds guarantees 11 and 12
// on a pool: a periodic timeout whose run has returned is pending and idle,
// so Reset moves its next run and returns true, whether or not the worker
// has taken it back yet. Tasks that contend on a mutex vary the order in
// which runs return; each bubble draws its own timing.
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

// TestGuarantee12PooledPeriodicRunIsNeverBackToBack holds guarantee 12 on a pool: a run
// that waits for a free pool goroutine until it is more than a period
// behind starts as the latest run due, and the next run is a period after
// that, never at once.
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
