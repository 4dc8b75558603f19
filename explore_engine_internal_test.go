//go:build hashedwheel_explore

package hashedwheel

import (
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// Tests of the explorer itself, on goroutines that call explorePoint
// directly rather than on the Timer.

// exDFSCount runs every schedule of bodies within bound and returns how
// many there were and the explorer's first failure.
func exDFSCount(t *testing.T, bound int, bodies func() []func()) (int, string) {
	t.Helper()
	failure := ""
	runs, _, nondet := exDFS(bound, 10_000, func(choose exChooser) (bool, string) {
		b := bodies()
		names := make([]string, len(b))
		for i := range names {
			names[i] = "g"
		}
		res := runSchedule(names, b, choose, 1_000, nil)
		if res.err != "" {
			failure = res.err
			return true, ""
		}
		return false, ""
	})
	if nondet != "" {
		t.Fatal(nondet)
	}
	return runs, failure
}

// TestExploreEngineCountsSchedules: two goroutines of k points each take k+1
// steps each: C(2k+2, k+1) interleavings in all; with at most one
// preemption, 2(k+1) (who starts, and after how many of its steps it is
// preempted, if at all); with none, 2.
func TestExploreEngineCountsSchedules(t *testing.T) {
	const k = 3
	bodies := func() []func() {
		b := make([]func(), 2)
		for i := range b {
			b[i] = func() {
				for range k {
					explorePoint("x")
				}
			}
		}
		return b
	}
	for _, c := range []struct{ bound, want int }{{0, 2}, {1, 2 * (k + 1)}, {100, 70}} {
		if got, fail := exDFSCount(t, c.bound, bodies); got != c.want || fail != "" {
			t.Errorf("bound %d: %d schedules (%s), want %d", c.bound, got, fail, c.want)
		}
	}
}

// TestExploreEngineFindsALostUpdate: two goroutines add one to a counter by
// a load and a store, not atomically; some schedule loses an update.
func TestExploreEngineFindsALostUpdate(t *testing.T) {
	var counter atomic.Int32
	lost := 0
	runs, _, _ := exDFS(1, 1_000, func(choose exChooser) (bool, string) {
		counter.Store(0)
		add := func() {
			explorePoint("counter load")
			n := counter.Load()
			explorePoint("counter store")
			counter.Store(n + 1)
		}
		if res := runSchedule([]string{"a", "b"}, []func(){add, add}, choose, 100, nil); res.err != "" {
			t.Fatal(res.err)
		}
		if counter.Load() != 2 {
			lost++
		}
		return false, ""
	})
	if lost == 0 {
		t.Errorf("%d schedules, none lost an update", runs)
	}
}

// TestExploreEngineLockWaits: two goroutines take a lock held by
// compare-and-swap, reporting "lock-wait" when it is taken; the search ends
// (a waiter is not chosen again until the holder writes), and no schedule
// loses an update made under the lock.
func TestExploreEngineLockWaits(t *testing.T) {
	var lock, counter atomic.Int32
	runs, _, _ := exDFS(3, 10_000, func(choose exChooser) (bool, string) {
		lock.Store(0)
		counter.Store(0)
		add := func() {
			for {
				explorePoint("lock cas")
				if lock.CompareAndSwap(0, 1) {
					break
				}
				explorePoint("lock-wait")
			}
			explorePoint("counter load")
			n := counter.Load()
			explorePoint("counter store")
			counter.Store(n + 1)
			explorePoint("unlock store")
			lock.Store(0)
		}
		if res := runSchedule([]string{"a", "b"}, []func(){add, add}, choose, 100, nil); res.err != "" {
			t.Fatal(res.err)
		}
		if counter.Load() != 2 {
			t.Fatalf("an update under the lock was lost")
		}
		return false, ""
	})
	if runs < 2 {
		t.Errorf("%d schedules", runs)
	}
}

// TestExploreEngineFindsADeadlock: a goroutine that waits for a lock its
// holder never releases is a deadlock once the holder has returned.
func TestExploreEngineFindsADeadlock(t *testing.T) {
	var lock atomic.Int32
	_, fail := exDFSCount(t, 2, func() []func() {
		lock.Store(0)
		take := func() {
			for {
				explorePoint("lock cas")
				if lock.CompareAndSwap(0, 1) {
					return // and never releases it
				}
				explorePoint("lock-wait")
			}
		}
		return []func(){take, take}
	})
	if !strings.HasPrefix(fail, "deadlock") {
		t.Errorf("the explorer reported %q, want a deadlock", fail)
	}
}

// TestExploreEngineSchedulesRoundTrip: a schedule printed is the schedule
// replayed.
func TestExploreEngineSchedulesRoundTrip(t *testing.T) {
	choices := []int{0, 0, 0, 1, 2, 2, 0, 1, 1}
	steps := make([]exStep, len(choices))
	for i, c := range choices {
		steps[i].chosen = c
	}
	s := exFormatSchedule(steps)
	if s != "0x3,1,2x2,0,1x2" {
		t.Errorf("printed %q", s)
	}
	got, err := exParseSchedule(s)
	if err != nil || !slices.Equal(got, choices) {
		t.Errorf("%q read back as %v, %v", s, got, err)
	}
	if _, err := exParseSchedule("0x0"); err == nil {
		t.Error("0x0 read without an error")
	}
}
