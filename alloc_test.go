package hashedwheel_test

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hashedwheel/hashedwheel"
)

// Allocation tests (guarantees 11 and 12): Reset never allocates, and runs
// of a periodic timeout allocate nothing after the first. testing.AllocsPerRun
// counts the allocations of the whole process, so the worker's (and the
// pool's) share is included.

// TestGuarantee11AllocsPerReset resets a pending timeout to later and earlier
// deadlines. On the real clock the calls come back to back, so most earlier
// ones find the timeout already queued for the worker; on the fake clock
// every call is followed by a tick, so the worker moves the timeout to its
// new bucket each time.
func TestGuarantee11AllocsPerReset(t *testing.T) {
	const runs = 1000
	resets := func(t *testing.T, to *hashedwheel.Timeout, advance func()) {
		t.Helper()
		later := 2 * time.Hour
		assert.Zero(t, testing.AllocsPerRun(runs, func() {
			later += time.Second
			if !to.Reset(later) {
				t.Fatal("Reset to a later deadline returned false")
			}
			advance()
		}), "allocations per Reset to a later deadline")
		earlier := time.Hour
		assert.Zero(t, testing.AllocsPerRun(runs, func() {
			earlier -= time.Second
			if !to.Reset(earlier) {
				t.Fatal("Reset to an earlier deadline returned false")
			}
			advance()
		}), "allocations per Reset to an earlier deadline")
	}

	t.Run("real clock", func(t *testing.T) {
		tm := newTimer(t)
		to, err := tm.NewTimeout(nopTask, time.Hour)
		require.NoError(t, err)
		resets(t, to, func() {})
	})
	t.Run("fake clock", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			tm := newTimer(t, hashedwheel.WithTickDuration(10*time.Millisecond))
			to, err := tm.NewTimeout(nopTask, time.Hour)
			require.NoError(t, err)
			resets(t, to, func() {
				time.Sleep(tm.TickDuration())
				synctest.Wait()
			})
			assert.False(t, to.IsExpired())
		})
	})
}

// TestGuarantee12AllocsPerPeriodicRun runs 100 periodic timeouts on the fake
// clock, one period per AllocsPerRun iteration (whose warm-up run holds the
// first runs), on the worker, on a WithTaskWorkers pool and through an
// executor.
func TestGuarantee12AllocsPerPeriodicRun(t *testing.T) {
	const (
		n      = 100
		period = 100 * time.Millisecond
	)
	for _, c := range []struct {
		name string
		opt  []hashedwheel.Option
	}{
		{"worker", nil},
		{"pool", []hashedwheel.Option{hashedwheel.WithTaskWorkers(2)}},
		{"executor", []hashedwheel.Option{hashedwheel.WithTaskExecutor(func(task func()) { task() })}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tm := newTimer(t, append(c.opt, hashedwheel.WithTickDuration(10*time.Millisecond))...)
				var runs atomic.Int64
				for range n {
					_, err := tm.Every(period, func() { runs.Add(1) })
					require.NoError(t, err)
				}
				// Run k is handed out at the end of the tick of its
				// deadline, k*period+tick: each iteration below, from
				// (k-1/2)*period to (k+1/2)*period, holds exactly one.
				time.Sleep(period / 2)
				periods := 0
				allocs := testing.AllocsPerRun(50, func() {
					before := runs.Load()
					time.Sleep(period)
					synctest.Wait()
					periods++
					if got := runs.Load() - before; got != n {
						t.Fatalf("period %d: %d runs, want %d", periods, got, n)
					}
				})
				assert.Zero(t, allocs, "allocations per period of %d periodic timeouts", n)
				assert.Equal(t, int64(n), tm.PendingTimeouts())
			})
		})
	}
}

// TestEveryIsOneAllocation: a periodic timeout, its task and its period are
// one object of 96 bytes (two allocations with a WithTaskExecutor: the func
// it is given for each run is made once).
func TestEveryIsOneAllocation(t *testing.T) {
	for name, c := range map[string]struct {
		opt    []hashedwheel.Option
		allocs float64
	}{
		"worker":   {nil, 1},
		"executor": {[]hashedwheel.Option{hashedwheel.WithTaskExecutor(func(task func()) { task() })}, 2},
	} {
		t.Run(name, func(t *testing.T) {
			tm := newTimer(t, c.opt...)
			require.NoError(t, tm.Start())
			f := func() {}
			allocs := testing.AllocsPerRun(1000, func() {
				to, err := tm.Every(time.Hour, f)
				if err != nil {
					panic(err)
				}
				to.Cancel()
			})
			assert.Equal(t, c.allocs, allocs, "allocations of Every")
		})
	}
}
