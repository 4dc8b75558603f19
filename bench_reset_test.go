package hashedwheel_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hashedwheel/hashedwheel"
)

// BenchmarkReset moves the deadline of one of n live timeouts per call, the
// next one each time (round-robin), as a server re-arms the idle deadline of
// the connection that just received a message; time.Timer.Reset on n live
// time.AfterFunc timers does the same. The wheel's timed region ends once its
// worker has processed every reset (the changes queue, which takes a reset
// to a deadline before the timeout's check tick); moving a deadline later,
// or earlier by less than an eighth of the time left on a timeout due more
// than a turn ahead (all of them here), leaves the worker nothing to do
// until the timeout's check tick comes round, weeks away here, as the
// runtime leaves a modified time.Timer in its heap until then.
//
//   - later: every call moves a deadline later: Reset(resetLater), a constant,
//     moves it by the time since that timeout's last reset.
//   - earlier: every call moves a deadline earlier: the delays decrease by
//     resetEarlierStep a call, n*resetEarlierStep per round of the n
//     timeouts, far more than a round of resets takes, so each deadline is
//     earlier than the one the same timeout got a round before.
//   - mixed: the delays are drawn at random from [resetEarlierFrom,
//     resetLater), so that about half the calls move a deadline earlier and
//     half later, in no order, as idle limits that vary from message to
//     message do; each by less than an eighth of the time left.
//   - near: as mixed, with delays drawn from [resetNearFrom, resetNearTo),
//     within a turn of the wheel (5.12s at benchTick and
//     benchTicksPerWheel), where each timeout is placed at its deadline's
//     tick: a reset to an earlier tick goes through the changes queue, about
//     half of them. A round of resets takes milliseconds, so none is due.
//
// Both start from timeouts due resetInitial from now (spread over a turn of
// the wheel), later than any earlier reset and earlier than any later one.
func BenchmarkReset(b *testing.B) {
	for _, dir := range []struct {
		name  string
		delay func(b *testing.B, call int) time.Duration
	}{
		{"later", func(*testing.B, int) time.Duration { return resetLater }},
		{"earlier", resetEarlierDelay},
		{"mixed", resetMixedDelay},
		{"near", resetNearDelay},
	} {
		for _, p := range []struct {
			name string
			n    int
		}{
			{"live=1e3", 1e3},
			{"live=1e5", 1e5},
		} {
			b.Run(dir.name+"/"+p.name, func(b *testing.B) {
				// The live timeouts are made once here, not in every round
				// in which the testing package sizes b.N; each side's are
				// gone before the other side runs. next and calls carry the
				// round-robin and the decreasing delays from round to round.
				tm := newBenchTimer(b, benchTick)
				defer tm.Stop()
				handles := make([]*hashedwheel.Timeout, p.n)
				for i := range handles {
					to, err := tm.NewTimeout(nopTask, resetInitial+farDelay(i, p.n)-time.Hour)
					require.NoError(b, err)
					handles[i] = to
				}
				drain(b, tm, p.n, time.Second)
				var next, calls int
				b.Run("hashedwheel", func(b *testing.B) {
					benchResets(b, tm, func(n int) {
						for range n {
							if !handles[next].Reset(dir.delay(b, calls)) {
								b.Fatalf("Reset of live timeout %d returned false", next)
							}
							if next++; next == len(handles) {
								next = 0
							}
							calls++
						}
					})
				})
				tm.Stop()
				clear(handles)

				timers := make([]*time.Timer, p.n)
				defer stopAll(timers)
				for i := range timers {
					timers[i] = time.AfterFunc(resetInitial+farDelay(i, p.n)-time.Hour, nop)
				}
				next, calls = 0, 0
				b.Run("time.Timer", func(b *testing.B) {
					benchResets(b, nil, func(n int) {
						for range n {
							if !timers[next].Reset(dir.delay(b, calls)) {
								b.Fatalf("Reset of live timer %d returned false", next)
							}
							if next++; next == len(timers) {
								next = 0
							}
							calls++
						}
					})
				})
			})
		}
	}
}

const (
	// resetInitial is the delay of the live timeouts BenchmarkReset starts
	// from, and resetLater the delay of its later resets.
	resetInitial = 1001 * time.Hour
	resetLater   = 1002 * time.Hour

	// The earlier resets' delays go down from resetEarlierFrom by
	// resetEarlierStep a call. With 1e3 timeouts a round of resets moves
	// each deadline 100ms earlier less the round's duration (about 0.1ms,
	// plus the pause between the testing package's rounds, tens of ms), and
	// the delays last 36 billion calls, far more than any -benchtime makes.
	resetEarlierFrom = 1000 * time.Hour
	resetEarlierStep = 100 * time.Microsecond

	// The near resets' delays.
	resetNearFrom = 1 * time.Second
	resetNearTo   = 3 * time.Second
)

// resetEarlierDelay returns the delay of the earlier reset number call.
func resetEarlierDelay(b *testing.B, call int) time.Duration {
	d := resetEarlierFrom - time.Duration(call)*resetEarlierStep
	if d < time.Minute {
		b.Fatalf("reset %d: the decreasing delays are used up", call)
	}
	return d
}

// randomDelays returns 2^16 delays drawn at random from [from, to) with the
// given seed.
func randomDelays(seed uint64, from, to time.Duration) []time.Duration {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	d := make([]time.Duration, 1<<16)
	for i := range d {
		d[i] = from + time.Duration(rng.Int64N(int64(to-from)))
	}
	return d
}

// The delays of the mixed and the near resets, drawn once.
var (
	resetMixedDelays = randomDelays(1, resetEarlierFrom, resetLater)
	resetNearDelays  = randomDelays(3, resetNearFrom, resetNearTo)
)

// resetMixedDelay returns the delay of the mixed reset number call.
func resetMixedDelay(_ *testing.B, call int) time.Duration {
	return resetMixedDelays[call&(len(resetMixedDelays)-1)]
}

// resetNearDelay returns the delay of the near reset number call.
func resetNearDelay(_ *testing.B, call int) time.Duration {
	return resetNearDelays[call&(len(resetNearDelays)-1)]
}

// benchResets times loop(b.N) and reports the process CPU per call; with a
// wheel, tm, the timed region ends only once its worker has processed the
// changes the calls queued.
func benchResets(b *testing.B, tm *hashedwheel.Timer, loop func(n int)) {
	b.ReportAllocs()
	var cpu cpuMeter
	b.ResetTimer()
	cpu.start()
	loop(b.N)
	if tm != nil {
		drain(b, tm, 0, 0)
	}
	b.StopTimer()
	cpu.stop()
	cpu.report(b, "cpu-ns/op", time.Nanosecond, float64(b.N))
}
