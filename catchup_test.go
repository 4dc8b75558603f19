package hashedwheel_test

import (
	"log/slog"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hashedwheel/hashedwheel"
)

// TestGuarantee8WorkerCatchesUpInTimeThatGrowsWithWhatIsDue holds guarantee 8: a
// worker that a task held up for an hour at a 1ms tick catches up, when
// released, by visiting the ticks at which something is due, not the 3.6
// million it missed; every timeout due meanwhile runs once, at the release,
// in the order of its deadline's tick, and none early. Periodic timeouts run
// once, as the latest run due.
func TestGuarantee8WorkerCatchesUpInTimeThatGrowsWithWhatIsDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t, hashedwheel.WithTickDuration(time.Millisecond), hashedwheel.WithTicksPerWheel(512))
		require.NoError(t, tm.Start())
		start := time.Now()
		rng := rand.New(rand.NewPCG(1, 2))

		var mu sync.Mutex
		type run struct {
			id int
			at time.Duration
		}
		var runs []run
		record := func(id int) func() {
			return func() {
				mu.Lock()
				runs = append(runs, run{id, time.Since(start)})
				mu.Unlock()
			}
		}
		// Blocks the worker from 1ms (the end of tick 0) to 1h+1ms.
		mustSchedule(t, tm, 0, func() { time.Sleep(time.Hour) })
		// 200 timeouts due during the hour, 20 due after it.
		deadlines := make([]time.Duration, 220)
		for i := range deadlines {
			d := time.Duration(rng.Int64N(int64(time.Hour)))
			if i >= 200 {
				d = time.Hour + time.Duration(i)*time.Minute
			}
			deadlines[i] = d
			mustSchedule(t, tm, d, record(i))
		}
		periodic, err := tm.Every(10*time.Minute, record(-1))
		require.NoError(t, err)

		cpuBefore, _ := processCPU()
		time.Sleep(time.Hour + 2*time.Millisecond)
		synctest.Wait()
		cpuAfter, _ := processCPU()
		t.Logf("the hour and the catch-up took %v of process CPU", cpuAfter-cpuBefore)
		release := time.Hour + time.Millisecond
		after := tm.Stats()

		mu.Lock()
		got := slices.Clone(runs)
		mu.Unlock()
		var want []int
		for i, d := range deadlines {
			if d < time.Hour {
				want = append(want, i)
			}
		}
		slices.SortStableFunc(want, func(a, b int) int {
			return int(deadlines[a]/time.Millisecond - deadlines[b]/time.Millisecond)
		})
		var ids []int
		periodicRuns := 0
		for _, r := range got {
			assert.Equal(t, release, r.at, "run of %d: not at the release", r.id)
			if r.id < 0 {
				periodicRuns++
				continue
			}
			ids = append(ids, r.id)
		}
		// Within one tick the order is not promised: compare ticks.
		tickOf := func(ids []int) []time.Duration {
			var ts []time.Duration
			for _, id := range ids {
				ts = append(ts, deadlines[id]/time.Millisecond)
			}
			return ts
		}
		assert.Equal(t, tickOf(want), tickOf(ids), "the due timeouts, in the order of their ticks")
		assert.ElementsMatch(t, want, ids)
		assert.Equal(t, 1, periodicRuns, "a periodic timeout runs once when the worker catches up")
		assert.Equal(t, start.Add(time.Hour+10*time.Minute), periodic.Deadline(),
			"its next run is the first one due after the release")
		// About one visit per tick with something due, not 3.6 million.
		assert.Less(t, after.Ticks, uint64(1000), "ticks processed to catch up an hour")
	})
}

// TestGuarantee8GoexitInACatchingUpWorkerRunsTheRestOfTheTick: a task that calls
// runtime.Goexit cuts the walk of its tick's bucket short; the worker's next
// goroutine must walk the rest of it before it catches up past that tick.
func TestGuarantee8GoexitInACatchingUpWorkerRunsTheRestOfTheTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t, hashedwheel.WithTickDuration(time.Millisecond),
			hashedwheel.WithLogger(slog.New(slog.DiscardHandler)))
		start := time.Now()
		release := make(chan struct{})
		// All three are due in tick 0, and run in this order at its end.
		mustSchedule(t, tm, 0, func() { <-release })
		mustSchedule(t, tm, 0, runtime.Goexit)
		ranAt := make(chan time.Duration, 1)
		mustSchedule(t, tm, 0, func() { ranAt <- time.Since(start) })
		mustSchedule(t, tm, time.Hour, func() {}) // something to catch up to

		time.Sleep(9 * time.Millisecond)
		close(release)
		synctest.Wait()
		select {
		case at := <-ranAt:
			assert.Equal(t, 9*time.Millisecond, at)
		default:
			t.Fatal("the timeout behind the Goexit did not run when the worker was released")
		}
	})
}
