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

// TestCheckTickOf pins the check tick the worker gives a timeout, in ticks of
// a 1ms wheel of 8 buckets.
func TestCheckTickOf(t *testing.T) {
	const ms = int64(time.Millisecond)
	for _, tt := range []struct {
		name            string
		tick, clockTick int64 // where the worker and the clock stand
		due             int64 // the deadline's tick (deadline = due ms + 0.5ms)
		linked          bool
		stored          uint32 // the checkTick of a linked timeout
		want            int64
	}{
		{name: "due this tick", tick: 100, clockTick: 100, due: 100, want: 100},
		{name: "due within a turn", tick: 100, clockTick: 100, due: 105, want: 105},
		{name: "due exactly a turn ahead", tick: 100, clockTick: 100, due: 108, want: 108},
		{name: "deadline passed: the worker's tick", tick: 100, clockTick: 100, due: 40, want: 100},
		{name: "a turn and one ahead: an eighth early", tick: 100, clockTick: 100, due: 109, want: 108},
		{name: "800 ticks ahead: 100 early", tick: 0, clockTick: 0, due: 800, want: 700},
		{
			name: "catching up, due by the clock: its own tick, not early",
			tick: 100, clockTick: 1000, due: 990, want: 990,
		},
		{
			name: "catching up, due within a turn of the clock: its own tick",
			tick: 100, clockTick: 1000, due: 1005, want: 1005,
		},
		{
			name: "catching up, due later: early, counted from the clock",
			tick: 100, clockTick: 1000, due: 1800, want: 1700,
		},
		{
			name: "linked, check tick still ahead: kept",
			tick: 100, clockTick: 100, due: 900, linked: true, stored: 500, want: 500,
		},
		{
			name: "linked, check tick reached: placed again",
			tick: 500, clockTick: 500, due: 900, linked: true, stored: 500, want: 850,
		},
		{
			name: "linked, check tick after the deadline's (a Reset earlier): placed again",
			tick: 100, clockTick: 100, due: 400, linked: true, stored: 500, want: 363,
		},
		{
			name: "linked, across 2^32: the full tick read back",
			tick: 1<<32 + 10, clockTick: 1<<32 + 10, due: 1<<32 + 900, linked: true,
			stored: 100, want: 1<<32 + 100,
		},
		{
			name: "linked, check tick more than 2^32 ahead: read back early, kept",
			tick: 10, clockTick: 10, due: 1<<33 + 100, linked: true,
			stored: 20, want: 20, // set as 2^32+20
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tm := checkTickTimer(t, tt.tick, tt.clockTick)
			to := newTimeoutOn(tm)
			to.checkTick = tt.stored
			deadline := tt.due*ms + ms/2
			got := tm.checkTickOf(to, deadline, tt.linked)
			if got != tt.want {
				t.Fatalf("checkTickOf = %d, want %d", got, tt.want)
			}
			if got < tt.tick || got > max(tt.due, tt.tick) {
				t.Fatalf("check tick %d breaks the invariant: before the worker's tick %d "+
					"or after the deadline's %d", got, tt.tick, tt.due)
			}
		})
	}
}

// TestBeforeCheck pins when a Reset to an earlier deadline must tell the
// worker: only when the new deadline is in a tick before the check tick.
func TestBeforeCheck(t *testing.T) {
	const ms = int64(time.Millisecond)
	for _, tt := range []struct {
		name          string
		check         int64 // the true check tick
		oldTick, tick int64 // the old and the new deadline's ticks
		want          bool
	}{
		{name: "same tick as the check tick", check: 500, oldTick: 500, tick: 500, want: false},
		{name: "a tick before the check tick", check: 500, oldTick: 500, tick: 499, want: true},
		{name: "far timeout, after its early check tick", check: 700, oldTick: 800, tick: 750, want: false},
		{name: "far timeout, at its early check tick", check: 700, oldTick: 800, tick: 700, want: false},
		{name: "far timeout, before its early check tick", check: 700, oldTick: 800, tick: 699, want: true},
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
			// Read back as 2^32+5: told without need, never missed.
			name:  "check tick 2^32 or more before the old deadline's",
			check: 5, oldTick: 1<<32 + 50, tick: 100, want: true,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tm := checkTickTimer(t, 0, 0)
			to := newTimeoutOn(tm)
			to.checkTick = uint32(tt.check)
			got := tm.beforeCheck(to, tt.oldTick*ms+ms/2, tt.tick*ms+ms/2)
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
		shouldPanic bool
	}{
		{"due within a turn, at its tick", 105, 105, false},
		{"far, an eighth early", 900, 800, false},
		{"before the worker's tick", 105, 99, true},
		{"after the deadline's tick", 900, 901, true},
		{"due within a turn, early", 105, 104, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tm := checkTickTimer(t, 100, 100)
			to := newTimeoutOn(tm)
			var got any
			func() {
				defer func() { got = recover() }()
				tm.assertCheckTick(to, tt.due*ms, tt.check)
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
