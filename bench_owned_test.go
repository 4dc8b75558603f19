package hashedwheel_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hashedwheel/hashedwheel"
)

// BenchmarkAdvance measures the owner's calls when nothing is due, with 1e4
// timeouts pending an hour away: Advance with the owner's reading of the
// clock, and NextDeadline, as an event loop makes them at each turn.
func BenchmarkAdvance(b *testing.B) {
	tm, err := hashedwheel.NewTimer(hashedwheel.WithoutWorker(), hashedwheel.WithTickDuration(benchTick))
	require.NoError(b, err)
	defer tm.Stop()
	for i := range 10_000 {
		_, err := tm.NewTimeout(nopTask, time.Hour+time.Duration(i)*time.Millisecond)
		require.NoError(b, err)
	}
	_, err = tm.Advance(time.Now())
	require.NoError(b, err)
	b.Run("nothing-due", func(b *testing.B) {
		b.ReportAllocs()
		now := time.Now()
		for b.Loop() {
			if n, err := tm.Advance(now); n != 0 || err != nil {
				b.Fatal(n, err)
			}
		}
	})
	b.Run("NextDeadline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := tm.NextDeadline(); !ok {
				b.Fatal("nothing pending")
			}
		}
	})
}

// BenchmarkOwnedScheduleCancel is BenchmarkScheduleCancel's single goroutine
// case for a Timer with a worker and one made WithoutWorker, whose owner
// calls Advance every 1024 operations, as an event loop between two polls.
// cpu-ns/op is the process's CPU, the worker's included.
func BenchmarkOwnedScheduleCancel(b *testing.B) {
	b.Run("hashedwheel", func(b *testing.B) {
		tm := newBenchTimer(b, benchTick)
		defer tm.Stop()
		benchOps(b, tm, 1, newTimeoutCancel(tm))
	})
	b.Run("hashedwheel.WithoutWorker", func(b *testing.B) {
		tm, err := hashedwheel.NewTimer(hashedwheel.WithoutWorker(), hashedwheel.WithTickDuration(benchTick),
			hashedwheel.WithTicksPerWheel(benchTicksPerWheel))
		require.NoError(b, err)
		defer tm.Stop()
		op := newTimeoutCancel(tm)
		calls := 0
		benchOps(b, nil, 1, func() error {
			if calls++; calls%1024 == 0 {
				if _, err := tm.Advance(time.Now()); err != nil {
					return err
				}
			}
			return op()
		})
	})
}

// BenchmarkOwnedReset is BenchmarkReset's mixed case at 1e5 live timeouts
// for a Timer with a worker and one made WithoutWorker, whose owner calls
// Advance every 1024 resets.
func BenchmarkOwnedReset(b *testing.B) {
	for _, owned := range []bool{false, true} {
		name := "hashedwheel"
		opts := []hashedwheel.Option{hashedwheel.WithTickDuration(benchTick), hashedwheel.WithTicksPerWheel(benchTicksPerWheel)}
		if owned {
			name += ".WithoutWorker"
			opts = append(opts, hashedwheel.WithoutWorker())
		}
		b.Run(name, func(b *testing.B) {
			tm, err := hashedwheel.NewTimer(opts...)
			require.NoError(b, err)
			defer tm.Stop()
			handles := make([]*hashedwheel.Timeout, 100_000)
			for i := range handles {
				handles[i], err = tm.NewTimeout(nopTask, resetInitial+farDelay(i, len(handles))-time.Hour)
				require.NoError(b, err)
			}
			if owned {
				_, err = tm.Advance(time.Now())
				require.NoError(b, err)
			} else {
				drain(b, tm, len(handles), time.Second)
			}
			var next, calls int
			benchResets(b, nil, func(n int) {
				for range n {
					if !handles[next].Reset(resetMixedDelay(b, calls)) {
						b.Fatalf("Reset of live timeout %d returned false", next)
					}
					if next++; next == len(handles) {
						next = 0
					}
					if calls++; owned && calls%1024 == 0 {
						if _, err := tm.Advance(time.Now()); err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		})
	}
}

// BenchmarkOwnedRearm runs ownedBeats timeouts every ownedPeriod on a Timer
// made WithoutWorker, an op being one run, as an event loop keeps a
// heartbeat per connection. The sides:
//
//   - Every: a periodic timeout each, its first run moved with Reset so that
//     the runs spread over the period;
//   - ScheduleAt: a Timeout in the connection, which its task arms again
//     from its run at its last deadline plus the period (no clock read, and
//     no drift);
//   - Schedule: the same, armed again after the period (a clock read, and
//     the lateness of each run added to the next).
//
// In clock, the owner sleeps until NextDeadline and calls Advance with the
// clock's reading, as an event loop does; ns/op is then the wall time per
// run, which the period sets, not the cost. In ahead, the owner moves its
// now a tick at a time, ahead of the clock (Advance takes the owner's
// reading), so that only the runs take time: the CPU per run without the
// noise of sleeping and waking. Schedule is left out there: its deadlines,
// taken from the clock, would all have passed.
//
// The first period of runs is not counted. It reports the process CPU per
// run (cpu-ns/op: all of the work, as no other goroutine runs) and the
// allocations per run.
func BenchmarkOwnedRearm(b *testing.B) {
	for _, mode := range []string{"clock", "ahead"} {
		for _, side := range []string{"Every", "ScheduleAt", "Schedule"} {
			if mode == "ahead" && side == "Schedule" {
				continue
			}
			b.Run(mode+"/"+side, func(b *testing.B) { benchOwnedRearm(b, side, mode == "ahead") })
		}
	}
}

func benchOwnedRearm(b *testing.B, side string, ahead bool) {
	tm, err := hashedwheel.NewTimer(hashedwheel.WithoutWorker(), hashedwheel.WithTickDuration(benchTick),
		hashedwheel.WithTicksPerWheel(benchTicksPerWheel))
	require.NoError(b, err)
	defer tm.Stop()
	start := time.Now()
	beats := make([]ownedBeat, ownedBeats)
	for i := range beats {
		first := ownedPeriod * time.Duration(i+1) / ownedBeats // spread over the first period
		switch side {
		case "Every":
			var to *hashedwheel.Timeout
			if to, err = tm.Every(ownedPeriod, nop); err == nil {
				to.Reset(first)
			}
		case "ScheduleAt":
			beats[i].at = true
			err = tm.ScheduleAt(&beats[i].to, &beats[i], start.Add(first))
		default:
			err = tm.Schedule(&beats[i].to, &beats[i], first)
		}
		require.NoError(b, err)
	}
	sleep := time.NewTimer(time.Hour)
	defer sleep.Stop()
	now, runs := start, 0
	owner := func(until int) {
		for runs < until {
			if ahead {
				now = now.Add(benchTick)
			} else {
				if at, ok := tm.NextDeadline(); ok {
					sleep.Reset(time.Until(at))
					<-sleep.C
				}
				now = time.Now()
			}
			n, err := tm.Advance(now)
			if err != nil {
				b.Fatal(err)
			}
			runs += n
		}
	}
	owner(ownedBeats) // the first period
	b.ReportAllocs()
	var cpu cpuMeter
	b.ResetTimer()
	cpu.start()
	runs = 0
	owner(b.N)
	b.StopTimer()
	cpu.stop()
	cpu.report(b, "cpu-ns/op", time.Nanosecond, float64(runs))
	for i := range beats {
		if err := beats[i].err; err != nil {
			b.Fatalf("beat %d: %v", i, err)
		}
	}
}

const (
	ownedBeats  = 20_000
	ownedPeriod = 100 * time.Millisecond
)

// ownedBeat is a connection's heartbeat, its Timeout in it: each run arms
// it again a period later, at its last deadline plus the period (at) or
// after the period from now.
type ownedBeat struct {
	to  hashedwheel.Timeout
	at  bool
	err error
}

func (o *ownedBeat) Run(to *hashedwheel.Timeout) {
	var err error
	if o.at {
		err = to.Timer().ScheduleAt(to, o, to.Deadline().Add(ownedPeriod))
	} else {
		err = to.Timer().Schedule(to, o, ownedPeriod)
	}
	if err != nil {
		o.err = err
	}
}
