package hashedwheel

import (
	"strings"
	"testing"
	"time"
)

// checkTickTimer returns a Timer without a worker, with a 1ms tick and 8
// buckets, whose worker stands at tick and whose clock is at clockTick.
func checkTickTimer(t *testing.T, tick, clockTick int64) *Timer {
	t.Helper()
	tm, err := NewTimer(WithoutWorker(), WithTickDuration(time.Millisecond), WithTicksPerWheel(8))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tm.Stop() })
	tm.wheel.tick, tm.wheel.clockTick = tick, clockTick
	return tm
}

// TestCheckTickOf pins where the worker places a timeout, in ticks of a 1ms
// wheel of 8 buckets: level 1 has slots of 8 ticks (span 512), level 2 of
// 512 (span 32768), level 3 of 32768, level 4 of 2^21.
func TestCheckTickOf(t *testing.T) {
	const ms = int64(time.Millisecond)
	for _, tt := range []struct {
		name            string
		tick, clockTick int64 // where the worker and the clock stand
		due             int64 // the deadline's tick (deadline = due ms + 0.5ms)
		want            int64
		level           int
	}{
		{name: "due this tick", tick: 100, clockTick: 100, due: 100, want: 100},
		{name: "due within a turn", tick: 100, clockTick: 100, due: 105, want: 105},
		{name: "due exactly a turn ahead", tick: 100, clockTick: 100, due: 108, want: 108},
		{name: "deadline passed: the worker's tick", tick: 100, clockTick: 100, due: 40, want: 100},
		{name: "a turn and one ahead: level 1, its slot's start", tick: 100, clockTick: 100, due: 109, want: 104, level: 1},
		{name: "511 ahead: still level 1", tick: 0, clockTick: 0, due: 511, want: 504, level: 1},
		{name: "512 ahead: level 2", tick: 0, clockTick: 0, due: 512, want: 512, level: 2},
		{name: "800 ahead: level 2", tick: 0, clockTick: 0, due: 800, want: 512, level: 2},
		{name: "an hour ahead: level 4", tick: 0, clockTick: 0, due: 3_600_000, want: 1 << 21, level: 4},
		{
			name: "catching up, due by the clock: its own tick, in the wheel",
			tick: 100, clockTick: 1000, due: 990, want: 990,
		},
		{
			name: "catching up, due within a turn of the clock: its own tick",
			tick: 100, clockTick: 1000, due: 1005, want: 1005,
		},
		{
			name: "catching up, due later: the level counted from the worker",
			tick: 100, clockTick: 1000, due: 1800, want: 1536, level: 2,
		},
		{
			name: "across 2^32",
			tick: 1<<32 + 10, clockTick: 1<<32 + 10, due: 1<<32 + 900, want: 1<<32 + 512, level: 2,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tm := checkTickTimer(t, tt.tick, tt.clockTick)
			deadline := tt.due*ms + ms/2
			got, level := tm.checkTickOf(deadline)
			if got != tt.want || level != tt.level {
				t.Fatalf("checkTickOf = %d at level %d, want %d at level %d", got, level, tt.want, tt.level)
			}
			if got < tt.tick || got > max(tt.due, tt.tick) {
				t.Fatalf("check tick %d breaks the invariant: before the worker's tick %d "+
					"or after the deadline's %d", got, tt.tick, tt.due)
			}
			tm.assertCheckTick(newTimeoutOn(tm), deadline, got, level)
		})
	}
}

// TestBeforeCheck pins when a Reset to an earlier deadline must tell the
// worker: only when the new deadline is in a tick before the check tick, of
// the wheel's bucket or of the level's slot the timeout waits in.
func TestBeforeCheck(t *testing.T) {
	const ms = int64(time.Millisecond)
	for _, tt := range []struct {
		name          string
		level         int
		check         int64 // the true check tick
		oldTick, tick int64 // the old and the new deadline's ticks
		want          bool
	}{
		{name: "same tick as the check tick", check: 500, oldTick: 500, tick: 500, want: false},
		{name: "a tick before the check tick", check: 500, oldTick: 500, tick: 499, want: true},
		{name: "level 2, after its slot's start", level: 2, check: 1536, oldTick: 1800, tick: 1600, want: false},
		{name: "level 2, at its slot's start", level: 2, check: 1536, oldTick: 1800, tick: 1536, want: false},
		{name: "level 2, before its slot's start", level: 2, check: 1536, oldTick: 1800, tick: 1535, want: true},
		{name: "a check tick of 0", check: 0, oldTick: 5, tick: 0, want: false},
		{
			name:  "across 2^32, before the check tick",
			check: 1<<32 + 10, oldTick: 1<<32 + 50, tick: 1<<32 + 5, want: true,
		},
		{
			name:  "across 2^32, after the check tick",
			check: 1<<32 + 10, oldTick: 1<<32 + 50, tick: 1<<32 + 20, want: false,
		},
		{
			name:  "level 2, across 2^32 slots, before the slot's start",
			level: 2, check: (1<<32 + 3) << 9, oldTick: (1<<32+3)<<9 + 100, tick: (1<<32+3)<<9 - 1, want: true,
		},
		{
			name:  "level 2, across 2^32 slots, after the slot's start",
			level: 2, check: (1<<32 + 3) << 9, oldTick: (1<<32+3)<<9 + 100, tick: (1<<32+3)<<9 + 5, want: false,
		},
		{
			// Read back as 2^32+5: told without need, never missed.
			name:  "check tick 2^32 or more before the old deadline's",
			check: 5, oldTick: 1<<32 + 50, tick: 100, want: true,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tm := checkTickTimer(t, 0, 0)
			to := newTimeoutOn(tm)
			to.checkTick = uint32(tt.check)
			if tt.level > 0 {
				to.checkTick = uint32(tt.check >> tm.levelShift(tt.level))
			}
			got := tm.beforeCheck(to, tt.level, tt.oldTick*ms+ms/2, tt.tick*ms+ms/2)
			if got != tt.want {
				t.Fatalf("beforeCheck = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestAssertCheckTickPanicsOnABrokenInvariant checks that the assertion the
// fuzz targets run with (build tag hashedwheel_assert) fires on each way the
// invariant can break, and not on a check tick that keeps it.
func TestAssertCheckTickPanicsOnABrokenInvariant(t *testing.T) {
	const ms = int64(time.Millisecond)
	for _, tt := range []struct {
		name        string
		due, check  int64
		level       int
		shouldPanic bool
	}{
		{"due within a turn, at its tick", 105, 105, 0, false},
		{"far, at its level's slot start", 900, 512, 2, false},
		{"before the worker's tick", 105, 99, 0, true},
		{"after the deadline's tick", 900, 901, 0, true},
		{"due within a turn, early", 105, 104, 0, true},
		{"due within a turn, in a level", 105, 104, 1, true},
		{"due beyond a turn, in the wheel", 900, 900, 0, true},
		{"not at its slot's start", 900, 520, 2, true},
		{"a level too low for it", 900, 896, 1, true},
		{"a level higher than it needs", 150, 0, 2, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tm := checkTickTimer(t, 100, 100)
			to := newTimeoutOn(tm)
			var got any
			func() {
				defer func() { got = recover() }()
				tm.assertCheckTick(to, tt.due*ms, tt.check, tt.level)
			}()
			if tt.shouldPanic != (got != nil) {
				t.Fatalf("panic %v, want a panic: %v", got, tt.shouldPanic)
			}
			if got != nil && !strings.Contains(got.(string), "checktick.go") {
				t.Fatalf("panic %q does not name the invariant", got)
			}
		})
	}
}
