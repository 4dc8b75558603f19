package hashedwheel_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hashedwheel/hashedwheel"
)

// These tests hold guarantee 23: Timeout.IsPending reports whether the
// latest arm is pending. Each runs in every driver (see forEachDriver), on
// the fake clock.

func TestGuarantee23IsPendingFalseForTheZeroTimeout(t *testing.T) {
	var to hashedwheel.Timeout
	assert.False(t, to.IsPending())
}

func TestGuarantee23IsPendingFollowsEachArmOfAReusedTimeout(t *testing.T) {
	forEachDriver(t, func(t *testing.T, r *rig) {
		var s session
		p := newProbe(r.start)
		require.NoError(t, r.tm.Schedule(&s.timeout, p, 25*time.Millisecond))
		assert.True(t, s.timeout.IsPending(), "armed")
		require.True(t, s.timeout.Reset(35*time.Millisecond))
		assert.True(t, s.timeout.IsPending(), "reset")

		r.sleep(time.Second)
		require.Len(t, p.runs(), 1)
		assert.False(t, s.timeout.IsPending(), "its run was handed out")
		assert.True(t, s.timeout.IsExpired())

		require.NoError(t, r.tm.Schedule(&s.timeout, p, time.Hour))
		assert.True(t, s.timeout.IsPending(), "armed again after its run")
		require.True(t, s.timeout.Cancel())
		assert.False(t, s.timeout.IsPending(), "cancelled")
		assert.True(t, s.timeout.IsCancelled())

		// On its own Timer a cancelled Timeout is armed again at once.
		require.NoError(t, r.tm.ScheduleAt(&s.timeout, p, time.Now().Add(20*time.Millisecond)))
		assert.True(t, s.timeout.IsPending(), "armed again after its cancel")
		r.sleep(time.Second)
		assert.Len(t, p.runs(), 2)
		assert.False(t, s.timeout.IsPending(), "its second run was handed out")
	})
}

func TestGuarantee23IsPendingInsideItsOwnRun(t *testing.T) {
	forEachDriver(t, func(t *testing.T, r *rig) {
		var s session
		var before, after []bool
		p := newProbe(r.start)
		p.then = func(to *hashedwheel.Timeout) {
			before = append(before, to.IsPending())
			if len(before) == 1 {
				assert.NoError(t, to.Timer().Schedule(to, p, 20*time.Millisecond))
			}
			after = append(after, to.IsPending())
		}
		require.NoError(t, r.tm.Schedule(&s.timeout, p, 10*time.Millisecond))
		r.sleep(time.Second)
		require.Len(t, p.runs(), 2)
		assert.Equal(t, []bool{false, false}, before, "a one-shot Timeout is not pending in its run")
		assert.Equal(t, []bool{true, false}, after, "pending once its run armed it again")
		assert.False(t, s.timeout.IsPending())
	})
}

func TestGuarantee23IsPendingStaysTrueForAPeriodicTimeoutUntilCancelled(t *testing.T) {
	forEachDriver(t, func(t *testing.T, r *rig) {
		var mu sync.Mutex
		var inRun []bool
		to, err := r.tm.NewPeriodicTimeout(hashedwheel.TimerFunc(func(to *hashedwheel.Timeout) {
			mu.Lock()
			defer mu.Unlock()
			inRun = append(inRun, to.IsPending())
		}), 10*time.Millisecond)
		require.NoError(t, err)
		assert.True(t, to.IsPending(), "before its first run")
		r.sleep(35 * time.Millisecond) // runs at 20 and 30ms
		assert.True(t, to.IsPending(), "between runs")
		require.True(t, to.Cancel())
		assert.False(t, to.IsPending(), "cancelled")
		r.sleep(time.Second)
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, []bool{true, true}, inRun, "pending inside each run")
	})
}

func TestGuarantee23IsPendingFalseOnceStopCancelledIt(t *testing.T) {
	forEachDriver(t, func(t *testing.T, r *rig) {
		var s session
		require.NoError(t, r.tm.Schedule(&s.timeout, newProbe(r.start), time.Hour))
		made, err := r.tm.AfterFunc(time.Hour, func() {})
		require.NoError(t, err)
		periodic, err := r.tm.Every(time.Hour, func() {})
		require.NoError(t, err)
		r.sleep(50 * time.Millisecond)
		assert.ElementsMatch(t, []*hashedwheel.Timeout{&s.timeout, made, periodic}, r.tm.Stop())
		for _, to := range []*hashedwheel.Timeout{&s.timeout, made, periodic} {
			assert.False(t, to.IsPending(), "%v after Stop", to)
			assert.True(t, to.IsCancelled(), "%v after Stop", to)
		}
	})
}

func TestGuarantee23IsPendingAllocatesNothing(t *testing.T) {
	tm := newTimer(t, hashedwheel.WithoutWorker())
	var s session
	require.NoError(t, tm.Schedule(&s.timeout, nopTask, time.Hour))
	pending := false
	allocs := testing.AllocsPerRun(1000, func() { pending = s.timeout.IsPending() })
	assert.Zero(t, allocs)
	assert.True(t, pending)
}

// TestGuarantee23IsPendingIsSafeBesideArmsAndCancels looks at a Timeout
// while other goroutines arm and cancel it (go test -race checks it), and
// checks that what it reports is one of the states the Timeout went
// through: it is never pending once every arm has been cancelled.
func TestGuarantee23IsPendingIsSafeBesideArmsAndCancels(t *testing.T) {
	tm := newTimer(t)
	var s session
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_ = tm.Schedule(&s.timeout, nopTask, time.Hour)
				s.timeout.Cancel()
			}
		})
	}
	wg.Go(func() {
		for range 10_000 {
			_ = s.timeout.IsPending()
		}
		close(stop)
	})
	wg.Wait()
	s.timeout.Cancel()
	assert.False(t, s.timeout.IsPending(), "pending after the last Cancel")
}
