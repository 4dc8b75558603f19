package hashedwheel_test

import (
	"fmt"
	"log/slog"
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

// These tests check the worker from outside: the tick, round and wheel
// arithmetic (guarantee 1), the transfer cap and the catch-up after a
// blocked task (guarantee 8), and its sleeps. They run on synctest's fake
// clock, where the worker wakes exactly at tick boundaries, so every run
// time is exact.
//
// Tick k covers deadlines in [k*tick, (k+1)*tick) since the timer started and
// is processed when it ends, at (k+1)*tick. A timeout is placed in bucket
// max(deadline/tick, current tick) mod wheel length, and is due at the visit
// to that bucket when Netty's remainingRounds,
// (deadline/tick - current tick) / wheel length, has run down to zero.

func TestGuarantee1TimeoutRunsAtTheEndOfItsDeadlineTick(t *testing.T) {
	const tick = 100 * time.Millisecond
	// The run time does not depend on the wheel: with one bucket every
	// timeout is visited every tick, with eight a turn is 800ms, with 512
	// nothing here needs a second turn.
	for _, wheel := range []int{1, 8, 512} {
		t.Run(fmt.Sprint("wheel=", wheel), func(t *testing.T) {
			testRunTimes(t, tick, wheel)
		})
	}
}

func testRunTimes(t *testing.T, tick time.Duration, wheel int) {
	tests := []struct {
		name  string
		at    time.Duration // when NewTimeout is called, since Start
		delay time.Duration
		want  time.Duration // when the task runs, since Start
	}{
		{"zero delay", 0, 0, 100 * time.Millisecond},
		{"negative delay", 0, -time.Second, 100 * time.Millisecond},
		{"most negative delay", 0, -1 << 63, 100 * time.Millisecond},
		{"1ns", 0, time.Nanosecond, 100 * time.Millisecond},
		{"just under a tick", 0, tick - time.Nanosecond, 100 * time.Millisecond},
		{"exactly a tick", 0, tick, 200 * time.Millisecond},
		{"two and a half ticks", 0, 250 * time.Millisecond, 300 * time.Millisecond},
		{"last bucket of the first turn", 0, 799 * time.Millisecond, 800 * time.Millisecond},
		{"first bucket, one round", 0, 800 * time.Millisecond, 900 * time.Millisecond},
		{"three rounds and a bit", 0, 2500 * time.Millisecond, 2600 * time.Millisecond},
		{"eight rounds exactly", 0, 6400 * time.Millisecond, 6500 * time.Millisecond},
		{"mid-tick, zero delay", 150 * time.Millisecond, 0, 200 * time.Millisecond},
		{"mid-tick, one tick", 150 * time.Millisecond, tick, 300 * time.Millisecond},
		{"on a boundary", 300 * time.Millisecond, 50 * time.Millisecond, 400 * time.Millisecond},
		{"later turn, many rounds", 5 * time.Second, 10 * time.Second, 15100 * time.Millisecond},
		{"after an hour parked", time.Hour + 37*time.Millisecond, 250 * time.Millisecond,
			time.Hour + 300*time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tm := newTimer(t, hashedwheel.WithTickDuration(tick), hashedwheel.WithTicksPerWheel(wheel))
				start := time.Now()
				require.NoError(t, tm.Start())
				time.Sleep(tt.at)

				ranAt := make(chan time.Duration, 1)
				to := mustSchedule(t, tm, tt.delay, func() { ranAt <- time.Since(start) })
				assert.Equal(t, start.Add(tt.at+max(tt.delay, 0)), to.Deadline())
				assert.Equal(t, tt.want, <-ranAt)
				assert.True(t, to.IsExpired())
			})
		})
	}
}

func TestGuarantee1TimeoutsDueInOneTickRunTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t, hashedwheel.WithTickDuration(200*time.Millisecond))
		start := time.Now()
		ranAt := make(chan time.Duration, 2)
		// A bucket is not sorted: what is due in one tick runs in that
		// tick, however far apart the deadlines within it are.
		mustSchedule(t, tm, 150*time.Millisecond, func() { ranAt <- time.Since(start) })
		mustSchedule(t, tm, 20*time.Millisecond, func() { ranAt <- time.Since(start) })
		assert.Equal(t, 200*time.Millisecond, <-ranAt)
		assert.Equal(t, 200*time.Millisecond, <-ranAt)
	})
}

// TestGuarantee1RandomScheduleMatchesTheArithmetic schedules and cancels
// timeouts at random moments, with delays spanning many turns of a small
// wheel, and checks each run time against the formula. It exercises the
// worker's skipped visits, parking and wake-ups together.
func TestGuarantee1RandomScheduleMatchesTheArithmetic(t *testing.T) {
	const tick = 10 * time.Millisecond
	for seed := range uint64(5) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 42))
				// A one-bucket wheel visits every timeout every tick.
				wheel := []int{1, 8}[seed%2]
				tm := newTimer(t, hashedwheel.WithTickDuration(tick), hashedwheel.WithTicksPerWheel(wheel))
				require.NoError(t, tm.Start())
				start := time.Now()

				type record struct {
					want      time.Duration
					ranAt     atomic.Int64
					cancelled bool
				}
				records := make([]*record, 600)
				var timeouts []*hashedwheel.Timeout
				for i := range records {
					if rng.IntN(4) == 0 {
						// Sometimes a long quiet spell, so the worker parks
						// or sleeps through many ticks.
						time.Sleep(time.Duration(rng.IntN(3000)) * time.Millisecond)
					} else {
						time.Sleep(time.Duration(rng.IntN(15)) * time.Millisecond)
					}
					// Whole milliseconds, so that deadlines often fall on a
					// tick's first instant.
					delay := time.Duration(rng.IntN(3000)) * time.Millisecond
					deadline := time.Since(start) + delay
					r := &record{want: (deadline/tick + 1) * tick}
					records[i] = r
					timeouts = append(timeouts, mustSchedule(t, tm, delay, func() {
						r.ranAt.Store(int64(time.Since(start)))
					}))
					if rng.IntN(5) == 0 { // cancel a random earlier one
						j := rng.IntN(len(timeouts))
						if timeouts[j].Cancel() {
							records[j].cancelled = true
						}
					}
				}
				time.Sleep(5 * time.Second)
				synctest.Wait()
				for i, r := range records {
					if r.cancelled {
						assert.Zero(t, r.ranAt.Load(), "timeout %d ran after Cancel", i)
						continue
					}
					assert.Equal(t, r.want, time.Duration(r.ranAt.Load()), "timeout %d", i)
				}
				assert.Zero(t, tm.PendingTimeouts())
			})
		})
	}
}

func TestGuarantee1SleepingWorkerWakesForASoonerTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// With one timeout 10s away, the worker sleeps through the empty
		// buckets between its visits to that timeout's bucket. Timeouts
		// scheduled meanwhile still run at their own tick.
		tm := newTimer(t, hashedwheel.WithTickDuration(100*time.Millisecond), hashedwheel.WithTicksPerWheel(8))
		start := time.Now()
		var ranAt [3]atomic.Int64
		mustSchedule(t, tm, 10*time.Second, func() { ranAt[0].Store(int64(time.Since(start))) })

		time.Sleep(1050 * time.Millisecond)
		mustSchedule(t, tm, 200*time.Millisecond, func() { ranAt[1].Store(int64(time.Since(start))) })
		time.Sleep(2280 * time.Millisecond)
		mustSchedule(t, tm, 0, func() { ranAt[2].Store(int64(time.Since(start))) })
		time.Sleep(10 * time.Second)

		assert.Equal(t, 10100*time.Millisecond, time.Duration(ranAt[0].Load()))
		assert.Equal(t, 1300*time.Millisecond, time.Duration(ranAt[1].Load()))
		assert.Equal(t, 3400*time.Millisecond, time.Duration(ranAt[2].Load()))
	})
}

func TestWorkerIsNotWokenForEachTimeoutArrivingSlowly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// One new timeout a millisecond: the worker takes them in early
		// drains a tick apart, and is not woken for each.
		tm := newTimer(t, hashedwheel.WithTickDuration(100*time.Millisecond))
		mustSchedule(t, tm, time.Hour, func() {})
		synctest.Wait()
		before := tm.Stats().Wakeups
		for range 300 {
			time.Sleep(time.Millisecond)
			mustSchedule(t, tm, time.Hour, func() {})
		}
		synctest.Wait()
		woken := tm.Stats().Wakeups - before
		assert.LessOrEqual(t, woken, uint64(10), "woken %d times in 300ms for 300 timeouts", woken)
	})
}

func TestGuarantee8AtMost100000TimeoutsAreTransferredPerTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t, hashedwheel.WithTickDuration(100*time.Millisecond))
		record, ranPerTick := countRunsPerTick(100 * time.Millisecond)
		for range 250_001 {
			mustSchedule(t, tm, 0, record)
		}
		time.Sleep(350 * time.Millisecond)

		assert.Zero(t, ranPerTick[0].Load())
		assert.Equal(t, int64(100_000), ranPerTick[1].Load(), "ran at the end of tick 0")
		assert.Equal(t, int64(100_000), ranPerTick[2].Load(), "ran at the end of tick 1")
		assert.Equal(t, int64(50_001), ranPerTick[3].Load(), "ran at the end of tick 2")
		assert.Zero(t, tm.PendingTimeouts())
	})
}

func TestGuarantee8TimeoutsOverTheTransferCapAreTransferredInTheNextTicks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Two ticks' transfers and more, due in an hour, then one due in a
		// second: a worker out of budget takes the rest at the next ticks,
		// rather than sleeping until the first timeout in its wheel is due.
		tm := newTimer(t, hashedwheel.WithTickDuration(100*time.Millisecond))
		start := time.Now()
		for range 200_001 {
			mustSchedule(t, tm, time.Hour, func() {})
		}
		ranAt := make(chan time.Duration, 1)
		mustSchedule(t, tm, time.Second, func() { ranAt <- time.Since(start) })
		assert.Equal(t, 1100*time.Millisecond, <-ranAt, "ran after the end of its deadline's tick")
		assert.Len(t, tm.Stop(), 200_001)
	})
}

func TestGuarantee8CancelledTimeoutsCountAgainstTheTransferCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// As in Netty, timeouts cancelled while queued take a share of the
		// tick's 100,000 transfers when the worker drops them. (Here they
		// are charged after the live ones of their shard, and the timeouts
		// spread over all the shards, so the live ones in other shards wait.)
		tm := newTimer(t, hashedwheel.WithTickDuration(100*time.Millisecond))
		record, ranPerTick := countRunsPerTick(100 * time.Millisecond)
		for range 100_000 {
			mustSchedule(t, tm, 0, record)
			mustSchedule(t, tm, 0, record).Cancel()
			mustSchedule(t, tm, 0, record).Cancel()
		}
		time.Sleep(350 * time.Millisecond)

		assert.Less(t, ranPerTick[1].Load(), int64(100_000),
			"all live timeouts ran in the first tick: the cancelled ones took no transfers")
		assert.Equal(t, int64(100_000), ranPerTick[1].Load()+ranPerTick[2].Load()+ranPerTick[3].Load())
		assert.Zero(t, tm.PendingTimeouts())
	})
}

func TestGuarantee8GoexitInATaskKeepsTheTransferCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t, hashedwheel.WithTickDuration(100*time.Millisecond),
			hashedwheel.WithLogger(slog.New(slog.DiscardHandler)))
		record, ranPerTick := countRunsPerTick(100 * time.Millisecond)
		var exited atomic.Bool
		for range 200_000 {
			mustSchedule(t, tm, 0, func() {
				record()
				if exited.CompareAndSwap(false, true) {
					runtime.Goexit()
				}
			})
		}
		time.Sleep(250 * time.Millisecond)
		assert.Equal(t, int64(100_000), ranPerTick[1].Load(), "ran at the end of tick 0")
		assert.Equal(t, int64(100_000), ranPerTick[2].Load(), "ran at the end of tick 1")
	})
}

// TestGuarantee8WorkerCatchesUpInTimeThatGrowsWithWhatIsDue: a worker that a
// task held up for an hour at a 1ms tick catches up, when released, by
// visiting the ticks at which something is due, not the 3.6 million it missed;
// every timeout due meanwhile runs once, at the release, in the order of its
// deadline's tick, and none early. Periodic timeouts run once, as the latest
// run due.
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

// TestGuarantee8GoexitInACatchingUpWorkerRunsTheRestOfTheTick: a task that
// calls runtime.Goexit cuts the walk of its tick's bucket short; the worker's
// next goroutine must walk the rest of it before it catches up past that tick.
func TestGuarantee8GoexitInACatchingUpWorkerRunsTheRestOfTheTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t, hashedwheel.WithTickDuration(time.Millisecond),
			hashedwheel.WithLogger(slog.New(slog.DiscardHandler)))
		start := time.Now()
		release := make(chan struct{})
		// The first holds the worker from 1ms, the end of tick 0, to 9ms.
		// The other two are due in tick 1, which the worker walks as it
		// catches up at 9ms. (Within a tick the order is not promised: the
		// first is a tick ahead so that it always runs before the others.)
		mustSchedule(t, tm, 0, func() { <-release })
		mustSchedule(t, tm, time.Millisecond, runtime.Goexit)
		ranAt := make(chan time.Duration, 1)
		mustSchedule(t, tm, time.Millisecond, func() { ranAt <- time.Since(start) })
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

// levelOf returns the level above the wheel in which a timeout due d ticks
// ahead waits, as docs/design.md describes the levels: 0 (the wheel) within
// a turn of a wheel of the given buckets, else the lowest level k whose
// span, buckets*64^k ticks, exceeds d.
func levelOf(d, buckets int64) int {
	k := 0
	for span := buckets; d > buckets && d >= span; k++ {
		if span > math.MaxInt64/64 {
			return k + 1
		}
		span *= 64
	}
	return k
}

// TestGuarantee1FarTimeoutRunsAtItsTickAfterALookPerLevel: a timeout an
// hour or a year ahead runs at the end of its deadline's tick, not a
// nanosecond before, and the worker processes a tick for it once as it takes
// it in, at most once per level it starts in above the wheel (as it moves
// down; it may skip levels) and once as it runs, waking about as often: 5
// to 8 ticks, not the tens of millions of a 1ms tick, nor one per turn of
// the wheel.
func TestGuarantee1FarTimeoutRunsAtItsTickAfterALookPerLevel(t *testing.T) {
	const year = 365 * 24 * time.Hour
	for _, tt := range []struct {
		buckets int
		delay   time.Duration
		level   int
	}{
		{512, time.Hour, 3},
		{512, year, 5},
		{8, time.Hour, 4},
		{8, 30 * 24 * time.Hour, 5},
		{8, year, 6},
		{1, year, 6},
	} {
		t.Run(fmt.Sprintf("%v on %d buckets", tt.delay, tt.buckets), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tm := newTimer(t, hashedwheel.WithTickDuration(time.Millisecond),
					hashedwheel.WithTicksPerWheel(tt.buckets))
				require.NoError(t, tm.Start())
				start := time.Now()
				require.Equal(t, tt.level, levelOf(int64(tt.delay/time.Millisecond), int64(tt.buckets)))
				ranAt := make(chan time.Duration, 2)
				// In the middle of its tick: it runs at that tick's end.
				deadline := tt.delay + 500*time.Microsecond
				mustSchedule(t, tm, deadline, func() { ranAt <- time.Since(start) })
				want := tt.delay + time.Millisecond

				time.Sleep(want - time.Nanosecond)
				synctest.Wait()
				require.Empty(t, ranAt, "ran before the end of its deadline's tick")
				looks := tm.Stats()
				time.Sleep(time.Nanosecond)
				synctest.Wait()
				require.Len(t, ranAt, 1)
				assert.Equal(t, want, <-ranAt)
				s := tm.Stats()
				t.Logf("ticks processed %d (%d before the run), wake-ups %d", s.Ticks, looks.Ticks, s.Wakeups)
				assert.LessOrEqual(t, s.Ticks, uint64(tt.level+2),
					"ticks processed: the take-in, a move down per level and the run")
				assert.LessOrEqual(t, s.Wakeups, uint64(tt.level+3), "wake-ups")
				assert.Equal(t, uint64(1), s.Expired)
			})
		})
	}
}

// TestGuarantee8WorkerCatchesUpAcrossLevels: a task holds the worker for
// two days at a 1ms tick on a wheel of 8 buckets, across the starts of
// every slot of levels 1 to 3 and of a few of level 4, where the timeouts
// due meanwhile wait to move down. Once released, the worker runs every one
// of them once, at the release, in the order of their deadlines' ticks, none
// early, in a few ticks per timeout; a Cancel and a Reset made while it was
// held are kept; those due after the release run at their ticks.
func TestGuarantee8WorkerCatchesUpAcrossLevels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const held = 48 * time.Hour
		tm := newTimer(t, hashedwheel.WithTickDuration(time.Millisecond), hashedwheel.WithTicksPerWheel(8))
		require.NoError(t, tm.Start())
		start := time.Now()
		var mu sync.Mutex
		ran := make(map[int][]time.Duration)
		var order []int
		record := func(id int) func() {
			return func() {
				mu.Lock()
				defer mu.Unlock()
				ran[id] = append(ran[id], time.Since(start))
				order = append(order, id)
			}
		}
		// Holds the worker from 1ms, the end of tick 0, to 48h+1ms.
		release := make(chan struct{})
		mustSchedule(t, tm, 0, func() { <-release })
		// Around each level's span (8, 512, 32768 and 2^21 ms, a slot of
		// level 1, 2, 3 and 4) and its slots' starts, an hour, a day, and
		// after the release.
		ms := time.Millisecond
		var deadlines []time.Duration
		for _, span := range []time.Duration{512 * ms, 32768 * ms, 1 << 21 * ms, 1 << 27 * ms} {
			deadlines = append(deadlines, span-ms, span, span+ms, span/64*3, span/64*3-ms/2)
		}
		deadlines = append(deadlines, time.Hour, 24*time.Hour, 24*time.Hour-ms, held-ms, held, held+ms,
			held+time.Hour, 30*24*time.Hour)
		tos := make([]*hashedwheel.Timeout, len(deadlines))
		for i, d := range deadlines {
			tos[i] = mustSchedule(t, tm, d, record(i))
		}
		// While the worker is held: a Cancel of one due in the meantime,
		// and a Reset of another to a day later than its deadline, past the
		// release (from level 2 to level 4).
		time.Sleep(time.Hour + 30*time.Minute)
		cancelled, moved := 7, 6
		require.True(t, tos[cancelled].Cancel())
		require.True(t, tos[moved].Reset(held))
		deadlines[moved] = time.Hour + 30*time.Minute + held

		time.Sleep(held + ms - time.Hour - 30*time.Minute)
		synctest.Wait()
		mu.Lock()
		require.Empty(t, ran, "ran while the worker was held")
		mu.Unlock()
		before := tm.Stats()
		close(release)
		synctest.Wait()
		releasedAt := held + ms
		after := tm.Stats()

		mu.Lock()
		var want []int
		for i, d := range deadlines {
			if i != cancelled && d/ms < held/ms+1 {
				want = append(want, i)
			}
		}
		assert.ElementsMatch(t, want, order, "the timeouts due by the release")
		for _, i := range order {
			assert.Equal(t, []time.Duration{releasedAt}, ran[i], "timeout %d, due at %v", i, deadlines[i])
		}
		tickOf := func(ids []int) []time.Duration {
			var ts []time.Duration
			for _, id := range ids {
				ts = append(ts, deadlines[id]/ms)
			}
			return ts
		}
		assert.True(t, slices.IsSorted(tickOf(order)), "runs in the order of their ticks: %v", tickOf(order))
		mu.Unlock()
		t.Logf("ticks processed to catch up: %d, for %d runs", after.Ticks-before.Ticks, len(want))
		assert.Less(t, after.Ticks-before.Ticks, uint64(5*len(deadlines)), "ticks processed to catch up two days")

		// The rest run at their ticks.
		time.Sleep(31 * 24 * time.Hour)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		for i, d := range deadlines {
			switch {
			case i == cancelled:
				assert.Empty(t, ran[i], "cancelled while the worker was held")
			case d/ms > held/ms:
				assert.Equal(t, []time.Duration{(d/ms + 1) * ms}, ran[i], "timeout %d, due at %v", i, d)
			}
		}
		assert.Zero(t, tm.PendingTimeouts())
	})
}
