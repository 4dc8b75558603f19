package hashedwheel_test

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
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

// These tests hold guarantee 21: Timer.Schedule arms a Timeout the caller
// owns. Each sentence of the guarantee has a test, and each test runs in
// every driver: the worker goroutine, a WithTaskWorkers pool, a
// WithTaskExecutor, and a Timer made WithoutWorker that the test drives with
// Advance. Most run on synctest's fake clock with the 10ms tick of the other
// job tests: a deadline D, since the timer started, runs at runEnd(D).

// scheduleDrivers are the four ways a Timer runs what Schedule arms.
var scheduleDrivers = []struct {
	name string
	opts []hashedwheel.Option
}{
	{"worker", nil},
	{"pool", []hashedwheel.Option{hashedwheel.WithTaskWorkers(2)}},
	{"executor", []hashedwheel.Option{hashedwheel.WithTaskExecutor(func(f func()) { go f() })}},
	{"owned", []hashedwheel.Option{hashedwheel.WithoutWorker()}},
}

// rig is a Timer of one driver on the fake clock, with a 10ms tick and an
// 8-bucket wheel.
type rig struct {
	t     *testing.T
	tm    *hashedwheel.Timer
	start time.Time
	owned bool
}

// forEachDriver runs f in a synctest bubble for each driver, on a rig made
// with the driver's options and opts.
func forEachDriver(t *testing.T, f func(t *testing.T, r *rig), opts ...hashedwheel.Option) {
	for _, d := range scheduleDrivers {
		t.Run(d.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f(t, newRig(t, d.name == "owned", append(append([]hashedwheel.Option(nil), d.opts...), opts...)...))
			})
		})
	}
}

func newRig(t *testing.T, owned bool, opts ...hashedwheel.Option) *rig {
	t.Helper()
	tm, start := startedTimer(t, opts...)
	return &rig{t: t, tm: tm, start: start, owned: owned}
}

// sleep lets d pass on the fake clock and waits for the bubble to settle. On
// an owned Timer it plays the owner's loop: it sleeps until NextDeadline and
// calls Advance, until d has passed, and calls Advance once more at the end.
func (r *rig) sleep(d time.Duration) {
	r.t.Helper()
	end := time.Now().Add(d)
	for r.owned {
		at, ok := r.tm.NextDeadline()
		if !ok || at.After(end) {
			break
		}
		if !at.After(time.Now()) {
			// Due now, but the last Advance, at this instant, ran it:
			// step a tick (NextDeadline may be early, never late).
			at = time.Now().Add(min(jobTick, time.Until(end)))
		}
		time.Sleep(time.Until(at))
		advance(r.t, r.tm)
		if !time.Now().Before(end) {
			break
		}
	}
	time.Sleep(time.Until(end))
	if r.owned {
		advance(r.t, r.tm)
	}
	synctest.Wait()
}

// since returns the time since the rig's Timer started.
func (r *rig) since() time.Duration { return time.Since(r.start) }

// probe is a TimerTask that records its runs: when, since start, and the
// Timeout each got. then, if set, is called inside each run.
type probe struct {
	start time.Time
	then  func(to *hashedwheel.Timeout)

	mu  sync.Mutex
	at  []time.Duration
	got []*hashedwheel.Timeout
}

func newProbe(start time.Time) *probe { return &probe{start: start} }

func (p *probe) Run(to *hashedwheel.Timeout) {
	p.mu.Lock()
	p.at = append(p.at, time.Since(p.start))
	p.got = append(p.got, to)
	p.mu.Unlock()
	if p.then != nil {
		p.then(to)
	}
}

func (p *probe) runs() []time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]time.Duration(nil), p.at...)
}

func (p *probe) timeouts() []*hashedwheel.Timeout {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*hashedwheel.Timeout(nil), p.got...)
}

// cancelProbe is a probe that is a CancelledTask: it counts its Cancelled
// calls, and calls onCancelled, if set, inside each.
type cancelProbe struct {
	probe
	cancelled   atomic.Int32
	onCancelled func(to *hashedwheel.Timeout)
}

func (c *cancelProbe) Cancelled(to *hashedwheel.Timeout) {
	c.cancelled.Add(1)
	if c.onCancelled != nil {
		c.onCancelled(to)
	}
}

// armState is what a Timeout's methods report of its latest arm.
type armState struct {
	deadline           time.Time
	task               hashedwheel.TimerTask
	timer              *hashedwheel.Timer
	expired, cancelled bool
}

func stateOf(to *hashedwheel.Timeout) armState {
	return armState{to.Deadline(), to.Task(), to.Timer(), to.IsExpired(), to.IsCancelled()}
}

func (s armState) String() string {
	return fmt.Sprintf("{deadline %v task %p timer %p expired %v cancelled %v}",
		s.deadline, s.task, s.timer, s.expired, s.cancelled)
}

// equal reports whether s and o are the same, tasks by identity.
func (s armState) equal(o armState) bool {
	return s.deadline == o.deadline && s.timer == o.timer && s.expired == o.expired &&
		s.cancelled == o.cancelled && sameTask(s.task, o.task)
}

// sameTask reports whether a and b are the same task: equal pointers, or
// funcs with the same code.
func sameTask(a, b hashedwheel.TimerTask) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	switch {
	case va.Type() != vb.Type():
		return false
	case va.Comparable():
		return a == b
	case va.Kind() == reflect.Func:
		return va.Pointer() == vb.Pointer()
	}
	return false
}

// assertUnchanged checks that to reports what it reported in before.
func assertUnchanged(t *testing.T, before armState, to *hashedwheel.Timeout, what string) {
	t.Helper()
	after := stateOf(to)
	assert.True(t, before.equal(after), "%s changed the Timeout: %v, was %v", what, after, before)
}

// assertState checks that to reports want. (assert.Equal would compare
// distinct tasks by their contents.)
func assertState(t *testing.T, want armState, to *hashedwheel.Timeout) {
	t.Helper()
	got := stateOf(to)
	assert.True(t, want.equal(got), "the Timeout reports %v, want %v", got, want)
}

// session is a caller's struct with a Timeout in it, the way Schedule is
// meant to be used.
type session struct {
	timeout hashedwheel.Timeout
}

func TestGuarantee21ScheduleZeroTimeoutHasNeverBeenArmed(t *testing.T) {
	var s session
	to := &s.timeout
	assert.False(t, to.Cancel(), "Cancel")
	assert.False(t, to.Reset(time.Second), "Reset")
	assert.False(t, to.IsExpired(), "IsExpired")
	assert.False(t, to.IsCancelled(), "IsCancelled")
	assert.True(t, to.Deadline().IsZero(), "Deadline: %v", to.Deadline())
	assert.Nil(t, to.Timer(), "Timer")
	assert.Nil(t, to.Task(), "Task")
	assert.NotPanics(t, func() { _ = to.String() })
	assertState(t, armState{}, to)
}

func TestGuarantee21ScheduleRunsTheTaskOnceAtItsDeadline(t *testing.T) {
	forEachDriver(t, func(t *testing.T, r *rig) {
		var s session
		p := newProbe(r.start)
		r.sleep(5 * time.Millisecond)
		require.NoError(t, r.tm.Schedule(&s.timeout, p, 25*time.Millisecond))
		assert.Equal(t, r.start.Add(30*time.Millisecond), s.timeout.Deadline())
		assert.Same(t, r.tm, s.timeout.Timer())
		assert.Same(t, p, s.timeout.Task())
		assert.False(t, s.timeout.IsExpired())
		assert.False(t, s.timeout.IsCancelled())
		assert.Equal(t, int64(1), r.tm.PendingTimeouts())

		r.sleep(runEnd(30*time.Millisecond) - r.since() - time.Nanosecond)
		assert.Empty(t, p.runs(), "ran before the end of its deadline's tick")
		r.sleep(time.Second)
		assert.Equal(t, []time.Duration{runEnd(30 * time.Millisecond)}, p.runs(), "runs")
		assert.Equal(t, []*hashedwheel.Timeout{&s.timeout}, p.timeouts(), "Run got another *Timeout")
		assert.True(t, s.timeout.IsExpired())
		assert.False(t, s.timeout.Cancel(), "Cancel after the run")
		assert.Zero(t, r.tm.PendingTimeouts())
	})
}

func TestGuarantee21ScheduleEdgeDelays(t *testing.T) {
	forEachDriver(t, func(t *testing.T, r *rig) {
		var zero, negative, huge hashedwheel.Timeout
		p := newProbe(r.start)
		r.sleep(13 * time.Millisecond)
		now := time.Now()
		require.NoError(t, r.tm.Schedule(&zero, p, 0))
		require.NoError(t, r.tm.Schedule(&negative, p, -time.Second))
		require.NoError(t, r.tm.Schedule(&huge, p, math.MaxInt64))
		assert.Equal(t, now, zero.Deadline(), "a zero delay is due now")
		assert.Equal(t, now, negative.Deadline(), "a negative delay is due now")
		assert.True(t, huge.Deadline().After(now.Add(100*365*24*time.Hour)), "a huge delay saturates: %v", huge.Deadline())

		r.sleep(100 * time.Millisecond)
		assert.Equal(t, []time.Duration{runEnd(13 * time.Millisecond), runEnd(13 * time.Millisecond)}, p.runs(),
			"delays <= 0 run at the next tick")
		r.sleep(time.Hour)
		assert.Len(t, p.runs(), 2, "the huge delay ran")
		assert.False(t, huge.IsExpired())
		assert.Equal(t, int64(1), r.tm.PendingTimeouts())
		assert.True(t, huge.Cancel())
	})
}

// lookAgain is a caller's struct that is its own task: each run schedules its
// Timeout again, period later, from inside the run, while left lasts. A
// *lookAgain fits in a TimerTask without an allocation.
type lookAgain struct {
	timeout hashedwheel.Timeout
	period  time.Duration
	looks   atomic.Int64
	left    atomic.Int64
	err     atomic.Pointer[error]
}

func (l *lookAgain) Run(to *hashedwheel.Timeout) {
	l.looks.Add(1)
	if l.left.Add(-1) <= 0 {
		return
	}
	if err := to.Timer().Schedule(to, l, l.period); err != nil {
		l.fail(err)
	}
}

// fail keeps err; apart from Run, so that Run's err does not escape.
func (l *lookAgain) fail(err error) { l.err.Store(&err) }

func TestGuarantee21ScheduleFromItsOwnTaskArmsItAgain(t *testing.T) {
	forEachDriver(t, func(t *testing.T, r *rig) {
		type look struct {
			at                          time.Duration
			expiredBefore, expiredAfter bool
			err                         error
			deadline                    time.Duration
		}
		var s session
		var mu sync.Mutex // the runs never overlap, but an executor's goroutines end
		var looks []look
		p := newProbe(r.start)
		p.then = func(to *hashedwheel.Timeout) {
			mu.Lock()
			defer mu.Unlock()
			l := look{at: r.since(), expiredBefore: to.IsExpired()}
			if len(looks) < 3 {
				l.err = r.tm.Schedule(to, p, 30*time.Millisecond)
			}
			l.expiredAfter = to.IsExpired()
			l.deadline = to.Deadline().Sub(r.start)
			looks = append(looks, l)
		}
		require.NoError(t, r.tm.Schedule(&s.timeout, p, 30*time.Millisecond))
		r.sleep(time.Second)
		mu.Lock()
		defer mu.Unlock()
		// Due at 30ms, run at 40ms; then due 30ms after each run.
		assert.Equal(t, []look{
			{40 * time.Millisecond, true, false, nil, 70 * time.Millisecond},
			{80 * time.Millisecond, true, false, nil, 110 * time.Millisecond},
			{120 * time.Millisecond, true, false, nil, 150 * time.Millisecond},
			{160 * time.Millisecond, true, true, nil, 150 * time.Millisecond},
		}, looks)
		assert.True(t, s.timeout.IsExpired())
		assert.Zero(t, r.tm.PendingTimeouts())
		stats := r.tm.Stats()
		assert.Equal(t, uint64(4), stats.Expired, "Stats.Expired counts each run")
		assert.Zero(t, stats.Cancelled)
	})
}

func TestGuarantee21ScheduleOnAPendingTimeoutChangesNothing(t *testing.T) {
	forEachDriver(t, func(t *testing.T, r *rig) {
		first, second := newProbe(r.start), newProbe(r.start)
		var scheduled hashedwheel.Timeout
		require.NoError(t, r.tm.Schedule(&scheduled, first, 50*time.Millisecond))
		made, err := r.tm.NewTimeout(first, 50*time.Millisecond)
		require.NoError(t, err)
		var reset hashedwheel.Timeout
		require.NoError(t, r.tm.Schedule(&reset, first, time.Hour))
		require.True(t, reset.Reset(50*time.Millisecond))
		periodic, err := r.tm.NewPeriodicTimeout(first, 30*time.Millisecond)
		require.NoError(t, err)

		pending := map[string]*hashedwheel.Timeout{
			"scheduled": &scheduled, "NewTimeout": made, "reset": &reset, "periodic": periodic,
		}
		try := func(when string) {
			t.Helper()
			for name, to := range pending {
				before := stateOf(to)
				err := r.tm.Schedule(to, second, 10*time.Millisecond)
				assert.ErrorIs(t, err, hashedwheel.ErrTimeoutPending, "%s, %s", name, when)
				assertUnchanged(t, before, to, "Schedule on a pending Timeout ("+name+", "+when+")")
			}
			assert.Equal(t, int64(4), r.tm.PendingTimeouts(), when)
		}
		try("queued")
		r.sleep(45 * time.Millisecond) // the periodic one ran at 40ms
		try("linked, and the periodic one between runs")

		r.sleep(time.Second)
		assert.Empty(t, second.runs(), "the task of a failed Schedule ran")
		assert.Subset(t, first.runs(), []time.Duration{runEnd(50 * time.Millisecond)})
		for _, to := range []*hashedwheel.Timeout{&scheduled, made, &reset} {
			assert.True(t, to.IsExpired())
		}
		assert.True(t, periodic.Cancel())
	})
}

// overlapCounter counts the runs of a task that are in progress at once.
type overlapCounter struct{ now, max atomic.Int32 }

func (c *overlapCounter) enter() {
	n := c.now.Add(1)
	for m := c.max.Load(); n > m && !c.max.CompareAndSwap(m, n); m = c.max.Load() {
	}
}

func (c *overlapCounter) leave() { c.now.Add(-1) }

func TestGuarantee21ScheduleRunsOfOneTimeoutNeverOverlap(t *testing.T) {
	// The task's first run blocks until the test releases it; meanwhile its
	// Timeout is scheduled again with delay 0, from inside that run or from
	// the test. The second run must wait for the first to return. (On an
	// owned Timer the task runs inside Advance, which it would block: an
	// owned Timer runs one task at a time.)
	drivers := map[string][]hashedwheel.Option{
		"worker":   nil,
		"pool":     {hashedwheel.WithTaskWorkers(2)},
		"executor": {hashedwheel.WithTaskExecutor(func(f func()) { go f() })},
	}
	for name, opts := range drivers {
		for _, fromInside := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/from inside %v", name, fromInside), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					r := newRig(t, false, opts...)
					var inFlight overlapCounter
					var runs atomic.Int32
					running, release := make(chan struct{}), make(chan struct{})
					var again error
					p := newProbe(r.start)
					p.then = func(to *hashedwheel.Timeout) {
						inFlight.enter()
						defer inFlight.leave()
						if runs.Add(1) == 1 {
							if fromInside {
								again = r.tm.Schedule(to, p, 0)
							}
							close(running)
							<-release
						}
					}
					var s session
					require.NoError(t, r.tm.Schedule(&s.timeout, p, 0))
					r.sleep(jobTick)
					<-running
					if !fromInside {
						again = r.tm.Schedule(&s.timeout, p, 0)
					}
					require.NoError(t, again, "Schedule while the first run blocks")
					deadline := s.timeout.Deadline()
					assert.Equal(t, r.start.Add(jobTick), deadline)
					assert.False(t, s.timeout.IsExpired(), "the latest arm is pending")

					r.sleep(100 * time.Millisecond)
					assert.Equal(t, int32(1), runs.Load(), "the second run started while the first ran")
					released := r.since()
					close(release)
					r.sleep(100 * time.Millisecond)
					require.Equal(t, int32(2), runs.Load(), "runs after the first returned")
					assert.Equal(t, int32(1), inFlight.max.Load(), "runs in progress at once")
					second := p.runs()[1]
					assert.GreaterOrEqual(t, second, released, "the second run started before the first returned")
					assert.False(t, r.start.Add(second).Before(deadline), "the second run was early")
					assert.True(t, s.timeout.IsExpired())
				})
			})
		}
	}
}

func TestGuarantee21ScheduleLatestArmIsWhatTheTimeoutReports(t *testing.T) {
	// While the first arm's run is in progress, the Timeout is scheduled
	// again, reset, cancelled and scheduled again in place; its methods act
	// on, and report, each latest arm. On the owned driver the run is inside
	// Advance, so the task itself does this; on the others the test does it
	// while the run blocks.
	forEachDriver(t, func(t *testing.T, r *rig) {
		first, second, third := newProbe(r.start), newProbe(r.start), newProbe(r.start)
		rearm := func(to *hashedwheel.Timeout) {
			now := time.Now()
			assert.True(t, to.IsExpired(), "the first arm is expired once handed out")
			assert.False(t, to.Reset(time.Second), "Reset of the expired first arm")
			assert.False(t, to.Cancel(), "Cancel of the expired first arm")

			assert.NoError(t, r.tm.Schedule(to, second, 50*time.Millisecond))
			assertState(t, armState{now.Add(50 * time.Millisecond), second, r.tm, false, false}, to)
			assert.True(t, to.Reset(70*time.Millisecond), "Reset while the latest arm is pending and an earlier run runs")
			assert.Equal(t, now.Add(70*time.Millisecond), to.Deadline())
			assert.True(t, to.Cancel(), "Cancel of the latest arm")
			assertState(t, armState{now.Add(70 * time.Millisecond), second, r.tm, false, true}, to)
			assert.False(t, to.Reset(time.Millisecond), "Reset of the cancelled latest arm")

			assert.NoError(t, r.tm.Schedule(to, third, 20*time.Millisecond), "Schedule after Cancel, same Timer")
			assertState(t, armState{now.Add(20 * time.Millisecond), third, r.tm, false, false}, to)
		}
		running, release := make(chan struct{}), make(chan struct{})
		first.then = func(to *hashedwheel.Timeout) {
			if r.owned {
				rearm(to)
				return
			}
			close(running)
			<-release
		}
		var s session
		require.NoError(t, r.tm.Schedule(&s.timeout, first, 0))
		if !r.owned {
			<-running
			rearm(&s.timeout)
			close(release)
		}
		r.sleep(time.Second)
		assert.Equal(t, []time.Duration{jobTick}, first.runs())
		assert.Empty(t, second.runs(), "the cancelled arm ran")
		assert.Equal(t, []time.Duration{runEnd(jobTick + 20*time.Millisecond)}, third.runs())
		assertState(t, armState{r.start.Add(jobTick + 20*time.Millisecond), third, r.tm, true, false}, &s.timeout)
		assert.Zero(t, r.tm.PendingTimeouts())
	})
}

func TestGuarantee21ScheduleRacingCallsArmOnce(t *testing.T) {
	// Real goroutines on the real clock: several Schedule calls on one ended
	// Timeout (zero, cancelled or expired) at once arm it once; the others
	// return ErrTimeoutPending.
	iterations := 200
	if raceEnabled {
		iterations = 50
	}
	const goroutines = 4
	for _, d := range scheduleDrivers {
		t.Run(d.name, func(t *testing.T) {
			tm := newTimer(t, append([]hashedwheel.Option{hashedwheel.WithTickDuration(time.Millisecond)}, d.opts...)...)
			owned := d.name == "owned"
			ran := make(chan struct{}, 1)
			task := hashedwheel.TimerFunc(func(*hashedwheel.Timeout) { ran <- struct{}{} })
			var to hashedwheel.Timeout
			for i := range iterations {
				// Odd iterations end with expiry, even ones with Cancel; the
				// race itself arms it an hour ahead, so that no arm ends in it.
				expire := i%2 == 1
				var won, lost atomic.Int32
				start := make(chan struct{})
				var wg sync.WaitGroup
				for range goroutines {
					wg.Go(func() {
						<-start
						switch err := tm.Schedule(&to, task, time.Hour); {
						case err == nil:
							won.Add(1)
						case errors.Is(err, hashedwheel.ErrTimeoutPending):
							lost.Add(1)
						default:
							t.Errorf("iteration %d: Schedule: %v", i, err)
						}
					})
				}
				close(start)
				wg.Wait()
				require.Equal(t, int32(1), won.Load(), "iteration %d: Schedule calls that armed it", i)
				require.Equal(t, int32(goroutines-1), lost.Load(), "iteration %d: ErrTimeoutPending", i)
				require.Equal(t, int64(1), tm.PendingTimeouts())
				if !expire {
					require.True(t, to.Cancel(), "iteration %d", i)
					continue
				}
				require.True(t, to.Reset(0), "iteration %d", i)
				if owned {
					// A now ahead of the clock runs what is due by then.
					_, err := tm.Advance(time.Now().Add(time.Duration(i+1) * time.Second))
					require.NoError(t, err)
				}
				select {
				case <-ran:
				case <-time.After(lateBound):
					t.Fatalf("iteration %d: not run after %v", i, lateBound)
				}
				require.True(t, to.IsExpired())
			}
		})
	}
}

func TestGuarantee21ScheduleRacingCancelArmsOncePerCancel(t *testing.T) {
	// "... unless a Cancel ended that arm first": with Cancel calls in the
	// race, each Schedule that armed the Timeout after the first needs a
	// Cancel that ended the arm before it.
	iterations := 200
	if raceEnabled {
		iterations = 50
	}
	for _, d := range scheduleDrivers {
		t.Run(d.name, func(t *testing.T) {
			tm := newTimer(t, append([]hashedwheel.Option{hashedwheel.WithTickDuration(time.Millisecond)}, d.opts...)...)
			var to hashedwheel.Timeout
			for i := range iterations {
				var armed, cancelled atomic.Int32
				start := make(chan struct{})
				var wg sync.WaitGroup
				for range 3 {
					wg.Go(func() {
						<-start
						err := tm.Schedule(&to, nopTask, time.Hour)
						if err == nil {
							armed.Add(1)
						} else if !errors.Is(err, hashedwheel.ErrTimeoutPending) {
							t.Errorf("iteration %d: Schedule: %v", i, err)
						}
					})
				}
				wg.Go(func() {
					<-start
					for range 3 {
						if to.Cancel() {
							cancelled.Add(1)
						}
					}
				})
				close(start)
				wg.Wait()
				a, c := armed.Load(), cancelled.Load()
				require.GreaterOrEqual(t, a, int32(1), "iteration %d: no Schedule armed it", i)
				require.Contains(t, []int32{c, c + 1}, a, "iteration %d: %d arms, %d cancelled", i, a, c)
				if a == c {
					require.True(t, to.IsCancelled(), "iteration %d", i)
					require.Zero(t, tm.PendingTimeouts())
				} else {
					require.False(t, to.IsCancelled() || to.IsExpired(), "iteration %d: the last arm is pending", i)
					require.Equal(t, int64(1), tm.PendingTimeouts())
					require.True(t, to.Cancel())
				}
			}
		})
	}
}

func TestGuarantee21ScheduleAfterCancelOnTheSameTimerAtOnce(t *testing.T) {
	forEachDriver(t, func(t *testing.T, r *rig) {
		old, fresh := newProbe(r.start), newProbe(r.start)
		var queued, linked session
		require.NoError(t, r.tm.Schedule(&linked.timeout, old, 50*time.Millisecond))
		r.sleep(15 * time.Millisecond) // linked now
		require.True(t, linked.timeout.Cancel())
		require.NoError(t, r.tm.Schedule(&linked.timeout, fresh, 30*time.Millisecond), "linked")
		assertState(t, armState{r.start.Add(45 * time.Millisecond), fresh, r.tm, false, false}, &linked.timeout)

		require.NoError(t, r.tm.Schedule(&queued.timeout, old, 50*time.Millisecond))
		require.True(t, queued.timeout.Cancel())
		require.NoError(t, r.tm.Schedule(&queued.timeout, fresh, 30*time.Millisecond), "queued")
		// Cancelled and revived ten times more, at once.
		for i := range 10 {
			require.True(t, queued.timeout.Cancel(), "Cancel %d", i)
			require.NoError(t, r.tm.Schedule(&queued.timeout, fresh, 30*time.Millisecond), "Schedule %d", i)
		}
		assert.Equal(t, int64(2), r.tm.PendingTimeouts())

		r.sleep(time.Second)
		assert.Empty(t, old.runs(), "a cancelled arm ran")
		assert.Equal(t, []time.Duration{runEnd(45 * time.Millisecond), runEnd(45 * time.Millisecond)}, fresh.runs())
		assert.True(t, linked.timeout.IsExpired())
		assert.True(t, queued.timeout.IsExpired())
		assert.Zero(t, r.tm.PendingTimeouts())
	})
}

// onTheWorker runs f on the worker goroutine of tm, a Timer with a worker,
// inside the Cancelled call of a Timeout it cancels for the purpose, and
// returns once f has returned. Until then the worker takes nothing in.
func onTheWorker(t *testing.T, tm *hashedwheel.Timer, f func()) {
	t.Helper()
	done := make(chan struct{})
	task := &cancelProbe{onCancelled: func(*hashedwheel.Timeout) {
		defer close(done)
		f()
	}}
	to, err := tm.NewTimeout(task, time.Hour)
	require.NoError(t, err)
	require.True(t, to.Cancel())
	<-done
}

func TestGuarantee21ScheduleOnAnotherTimer(t *testing.T) {
	forEachDriver(t, func(t *testing.T, r *rig) {
		other, _ := startedTimer(t)
		p, q := newProbe(r.start), newProbe(r.start)

		// One that ran: at once.
		var ran hashedwheel.Timeout
		require.NoError(t, r.tm.Schedule(&ran, p, 0))
		r.sleep(15 * time.Millisecond)
		require.True(t, ran.IsExpired())
		require.NoError(t, other.Schedule(&ran, q, 10*time.Millisecond), "one that ran, on another Timer")
		assert.Same(t, other, ran.Timer())
		assert.Same(t, q, ran.Task())

		// One that was cancelled: once its Timer took the cancel in.
		takeIns := map[string]func(){
			"NextDeadline": func() { r.tm.NextDeadline() },
			"Advance":      func() { advance(t, r.tm) },
		}
		if !r.owned {
			takeIns = map[string]func(){"the worker": func() { time.Sleep(2 * jobTick); synctest.Wait() }}
		}
		for name, takeIn := range takeIns {
			var cancelled hashedwheel.Timeout
			require.NoError(t, r.tm.Schedule(&cancelled, p, time.Hour))
			r.sleep(15 * time.Millisecond)
			var cancelledIt bool
			var before armState
			var err error
			cancelThenSchedule := func() {
				cancelledIt = cancelled.Cancel()
				before = stateOf(&cancelled)
				err = other.Schedule(&cancelled, q, 10*time.Millisecond)
			}
			if r.owned {
				// Nothing takes the cancel in before the owner's next call.
				cancelThenSchedule()
			} else {
				// The worker alone takes a cancel in: nothing does while
				// the worker is in a call of its own.
				onTheWorker(t, r.tm, cancelThenSchedule)
			}
			require.True(t, cancelledIt, "Cancel")
			require.ErrorIs(t, err, hashedwheel.ErrTimeoutPending, "before %s took the cancel in", name)
			assertUnchanged(t, before, &cancelled, "Schedule on another Timer before the cancel was taken in")
			takeIn()
			require.NoError(t, other.Schedule(&cancelled, q, 10*time.Millisecond), "after %s took the cancel in", name)
			assert.Same(t, other, cancelled.Timer())
			assert.False(t, cancelled.IsCancelled())
		}

		// Or once its Timer stopped.
		var stopped, zero hashedwheel.Timeout
		require.NoError(t, r.tm.Schedule(&stopped, p, time.Hour))
		require.True(t, stopped.Cancel())
		assert.Empty(t, r.tm.Stop(), "a cancelled Timeout is not among those Stop returns")
		require.NoError(t, other.Schedule(&stopped, q, 10*time.Millisecond), "after its Timer stopped")
		assert.ErrorIs(t, r.tm.Schedule(&zero, p, 0), hashedwheel.ErrTimerStopped)

		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, []time.Duration{jobTick}, p.runs(), "runs on the first Timer")
		assert.Len(t, q.runs(), 2+len(takeIns), "runs on the other Timer")
		assert.Zero(t, other.PendingTimeouts())
	})
}

func TestGuarantee21ScheduleOnAnotherTimerWaitsForTheRun(t *testing.T) {
	// A Timeout whose run on one Timer has not returned is armed on another
	// only once it has: until then its run's goroutine, not that Timer,
	// holds it, and the other Timer's Stop could not return the arm.
	synctest.Test(t, func(t *testing.T) {
		ranOn, _ := startedTimer(t, hashedwheel.WithTaskWorkers(1))
		other, _ := startedTimer(t)
		var to hashedwheel.Timeout
		running, release := make(chan struct{}), make(chan struct{})
		require.NoError(t, ranOn.Schedule(&to, hashedwheel.TimerFunc(func(*hashedwheel.Timeout) {
			close(running)
			<-release
		}), 0))
		<-running
		before := stateOf(&to)
		require.ErrorIs(t, other.Schedule(&to, nopTask, time.Hour), hashedwheel.ErrTimeoutPending)
		assertUnchanged(t, before, &to, "Schedule on another Timer while the run is out")
		close(release)
		synctest.Wait()
		require.NoError(t, other.Schedule(&to, nopTask, time.Hour), "once the run returned")
		assert.Equal(t, []*hashedwheel.Timeout{&to}, other.Stop(), "Stop returns the arm")
	})
}

func TestGuarantee21ScheduleExecutorRunReturningAfterStopMakesTheCancelledCall(t *testing.T) {
	// Stop does not wait for a run on an executor's goroutine. A Timeout
	// that run schedules again, and that Cancel cancels before Stop, gets its
	// Cancelled call when the run returns, on that goroutine.
	testExecutorArmAsStopComes(t, true)
}

func TestGuarantee21ScheduleExecutorRunReturningAfterStopEndsAPendingArmWithItsCancelledCall(t *testing.T) {
	// The same, with an arm nobody cancelled: Stop did not return it (it
	// was held by the run), so it ends cancelled as the run returns, is
	// counted, and gets its Cancelled call, the only news of its end.
	testExecutorArmAsStopComes(t, false)
}

// testExecutorArmAsStopComes arms a Timeout again while its run is out on an
// executor, cancels that arm if cancel, and stops the Timer before the run
// returns: the arm ends cancelled as the run returns, with its Cancelled
// call, and is counted once.
func testExecutorArmAsStopComes(t *testing.T, cancel bool) {
	synctest.Test(t, func(t *testing.T) {
		tm, _ := startedTimer(t, hashedwheel.WithTaskExecutor(func(f func()) { go f() }))
		var to hashedwheel.Timeout
		c := &cancelRecorder{cancelled: make(chan *hashedwheel.Timeout, 2)}
		running, release, returned := make(chan struct{}), make(chan struct{}), make(chan struct{})
		require.NoError(t, tm.Schedule(&to, hashedwheel.TimerFunc(func(*hashedwheel.Timeout) {
			defer close(returned)
			close(running)
			<-release
		}), 0))
		<-running
		require.NoError(t, tm.Schedule(&to, c, time.Hour), "from outside, while the run is out")
		if cancel {
			require.True(t, to.Cancel())
		}
		assert.Empty(t, tm.Stop(), "Stop returned an arm its run still held")
		close(release)
		<-returned
		synctest.Wait()
		require.Len(t, c.cancelled, 1, "Cancelled calls")
		assert.Same(t, &to, <-c.cancelled)
		assert.Zero(t, c.ran.Load())
		assert.True(t, to.IsCancelled())
		assert.Equal(t, uint64(1), tm.Stats().Cancelled)
		assert.Zero(t, tm.PendingTimeouts())
	})
}

func TestGuarantee21ScheduleErrorsLeaveTheTimeoutAsItWas(t *testing.T) {
	forEachDriver(t, func(t *testing.T, r *rig) {
		p, q := newProbe(r.start), newProbe(r.start)
		// Ended Timeouts of every kind, and a zero one.
		var zero, expired, cancelled hashedwheel.Timeout
		require.NoError(t, r.tm.Schedule(&expired, p, 0))
		require.NoError(t, r.tm.Schedule(&cancelled, p, time.Hour))
		require.True(t, cancelled.Cancel())
		made, err := r.tm.NewTimeout(p, 0)
		require.NoError(t, err)
		r.sleep(15 * time.Millisecond)
		ended := map[string]*hashedwheel.Timeout{
			"zero": &zero, "expired": &expired, "cancelled": &cancelled, "NewTimeout, expired": made,
		}

		check := func(what string, want error, schedule func(to *hashedwheel.Timeout) error) {
			t.Helper()
			for name, to := range ended {
				before, pending := stateOf(to), r.tm.PendingTimeouts()
				assert.ErrorIs(t, schedule(to), want, "%s, %s", what, name)
				assertUnchanged(t, before, to, what+" ("+name+")")
				assert.Equal(t, pending, r.tm.PendingTimeouts(), "%s, %s: pending", what, name)
			}
		}
		check("nil task", hashedwheel.ErrNilTask, func(to *hashedwheel.Timeout) error {
			return r.tm.Schedule(to, nil, 10*time.Millisecond)
		})
		pending := r.tm.PendingTimeouts()
		assert.ErrorIs(t, r.tm.Schedule(nil, q, 10*time.Millisecond), hashedwheel.ErrNilTimeout)
		assert.Equal(t, pending, r.tm.PendingTimeouts(), "nil Timeout: pending")

		limited := newTimer(t, hashedwheel.WithMaxPendingTimeouts(1), hashedwheel.WithTickDuration(jobTick))
		_, err = limited.NewTimeout(q, time.Hour)
		require.NoError(t, err)
		check("the pending limit", hashedwheel.ErrTooManyPendingTimeouts, func(to *hashedwheel.Timeout) error {
			return limited.Schedule(to, q, 10*time.Millisecond)
		})

		stopped := newTimer(t, hashedwheel.WithTickDuration(jobTick))
		stopped.Stop()
		check("a stopped Timer", hashedwheel.ErrTimerStopped, func(to *hashedwheel.Timeout) error {
			return stopped.Schedule(to, q, 10*time.Millisecond)
		})

		// Nothing was left half done: each is scheduled as if nothing had
		// happened.
		for name, to := range ended {
			require.NoError(t, r.tm.Schedule(to, q, 10*time.Millisecond), name)
		}
		r.sleep(time.Second)
		assert.Len(t, q.runs(), len(ended), "runs after the failed calls")
		assert.Len(t, limited.Stop(), 1, "a failed Schedule left a Timeout pending at the limit")
	})
}

func TestGuarantee21ScheduleTimeoutsOfNewTimeoutAndAfterFunc(t *testing.T) {
	forEachDriver(t, func(t *testing.T, r *rig) {
		p := newProbe(r.start)
		var funcRuns atomic.Int32
		expired, err := r.tm.NewTimeout(p, 0)
		require.NoError(t, err)
		cancelled, err := r.tm.AfterFunc(time.Hour, func() { funcRuns.Add(1) })
		require.NoError(t, err)
		pending, err := r.tm.AfterFunc(time.Hour, func() { funcRuns.Add(1) })
		require.NoError(t, err)
		r.sleep(15 * time.Millisecond)
		require.True(t, expired.IsExpired())
		require.True(t, cancelled.Cancel())

		require.NoError(t, r.tm.Schedule(expired, p, 10*time.Millisecond), "NewTimeout's, expired")
		require.NoError(t, r.tm.Schedule(cancelled, p, 10*time.Millisecond), "AfterFunc's, cancelled")
		assert.ErrorIs(t, r.tm.Schedule(pending, p, 10*time.Millisecond), hashedwheel.ErrTimeoutPending, "AfterFunc's, pending")
		assert.Same(t, p, cancelled.Task())
		r.sleep(100 * time.Millisecond)
		assert.Equal(t, []time.Duration{jobTick, runEnd(25 * time.Millisecond), runEnd(25 * time.Millisecond)}, p.runs())
		assert.Zero(t, funcRuns.Load(), "AfterFunc's function ran")
		assert.True(t, cancelled.IsExpired())
		assert.True(t, pending.Cancel())
	})
}

func TestGuarantee21ScheduleCancelledPeriodicTimeoutAsAOneShot(t *testing.T) {
	// A periodic Timeout cancelled during its run can be scheduled again
	// once its run returned and its Timer took it back: from inside the run
	// Schedule returns ErrTimeoutPending.
	forEachDriver(t, func(t *testing.T, r *rig) {
		periodicRuns := newProbe(r.start)
		fromInside := make(chan error, 1)
		periodicRuns.then = func(to *hashedwheel.Timeout) {
			if len(periodicRuns.runs()) == 2 {
				assert.True(t, to.Cancel(), "Cancel from inside the run")
				fromInside <- r.tm.Schedule(to, nopTask, 0)
			}
		}
		inRun, err := r.tm.NewPeriodicTimeout(periodicRuns, 20*time.Millisecond)
		require.NoError(t, err)
		idle, err := r.tm.NewPeriodicTimeout(newProbe(r.start), 20*time.Millisecond)
		require.NoError(t, err)
		r.sleep(55 * time.Millisecond) // runs due at 20ms and 40ms
		require.Equal(t, []time.Duration{30 * time.Millisecond, 50 * time.Millisecond}, periodicRuns.runs())
		require.Len(t, fromInside, 1)
		assert.ErrorIs(t, <-fromInside, hashedwheel.ErrTimeoutPending, "Schedule from inside the run it cancelled")
		require.True(t, idle.Cancel(), "Cancel between runs")
		r.sleep(2 * jobTick)

		oneShot := newProbe(r.start)
		due := r.since() + 10*time.Millisecond
		for name, to := range map[string]*hashedwheel.Timeout{"cancelled in its run": inRun, "cancelled between runs": idle} {
			require.NoError(t, r.tm.Schedule(to, oneShot, 10*time.Millisecond), name)
			assert.Same(t, oneShot, to.Task(), name)
		}
		r.sleep(time.Second)
		assert.Equal(t, []time.Duration{runEnd(due), runEnd(due)}, oneShot.runs(), "one run each")
		assert.Len(t, periodicRuns.runs(), 2, "the periodic task ran after Cancel")
		assert.True(t, inRun.IsExpired(), "one-shot now")
		assert.True(t, idle.IsExpired(), "one-shot now")
		assert.Zero(t, r.tm.PendingTimeouts())
	})
}

// TestGuarantee21ScheduleCancelledPeriodicTimeoutBeforeItsTimerTookItsRunBack:
// a periodic Timeout whose run has returned, cancelled before its Timer took
// it back for its next run, is no longer "cancelled during a run that has not
// returned": Schedule on its own Timer arms it at once. On the pool and the
// executor the run returns off the worker, which takes it back at its next
// tick (or when woken); on an owned Timer it returns inside Advance, and the
// owner's next call takes it back.
func TestGuarantee21ScheduleCancelledPeriodicTimeoutBeforeItsTimerTookItsRunBack(t *testing.T) {
	drivers := map[string][]hashedwheel.Option{
		"pool":     {hashedwheel.WithTaskWorkers(2)},
		"executor": {hashedwheel.WithTaskExecutor(func(f func()) { go f() })},
		"owned":    {hashedwheel.WithoutWorker()},
	}
	for name, opts := range drivers {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t, name == "owned", opts...)
				var runs atomic.Int32
				running, release := make(chan struct{}), make(chan struct{})
				periodic, err := r.tm.Every(20*time.Millisecond, func() {
					if runs.Add(1) == 1 && !r.owned {
						close(running)
						<-release
					}
				})
				require.NoError(t, err)
				if r.owned {
					// The run due at 20ms is handed out, and returns, in
					// this Advance; the next call takes it back.
					time.Sleep(35 * time.Millisecond)
					require.Equal(t, 1, advance(t, r.tm))
				} else {
					<-running // handed out at 30ms
					time.Sleep(5 * time.Millisecond)
					// A timeout due in the current tick keeps the worker
					// from sleeping past it, so nothing wakes it before the
					// tick ends, at 40ms, and the fake clock stays at 35ms.
					mustSchedule(t, r.tm, 0, func() {})
					synctest.Wait()
					close(release)
					synctest.Wait() // the run has returned
				}
				require.Equal(t, int32(1), runs.Load())
				require.True(t, periodic.Cancel(), "Cancel after the run returned")

				oneShot := newProbe(r.start)
				require.NoError(t, r.tm.Schedule(periodic, oneShot, 10*time.Millisecond),
					"Schedule of a periodic Timeout cancelled after its run returned")
				assert.Same(t, oneShot, periodic.Task())
				assert.False(t, periodic.IsCancelled())

				r.sleep(time.Second)
				assert.Equal(t, []time.Duration{runEnd(45 * time.Millisecond)}, oneShot.runs(), "runs of the one-shot arm")
				assert.Equal(t, int32(1), runs.Load(), "the periodic task ran after Cancel")
				assert.True(t, periodic.IsExpired(), "one-shot now")
				assert.Zero(t, r.tm.PendingTimeouts())
			})
		})
	}
}

func TestGuarantee21ScheduleCancelledTaskGetsOneCallPerArm(t *testing.T) {
	forEachDriver(t, func(t *testing.T, r *rig) {
		task := &cancelProbe{probe: probe{start: r.start}}
		var s session
		for arm := 1; arm <= 3; arm++ {
			require.NoError(t, r.tm.Schedule(&s.timeout, task, time.Hour), "arm %d", arm)
			if arm == 2 {
				r.sleep(15 * time.Millisecond) // linked when cancelled
			}
			require.True(t, s.timeout.Cancel())
			before := stateOf(&s.timeout)
			// Until Cancelled has been called, Schedule returns
			// ErrTimeoutPending, even on the same Timer.
			err := r.tm.Schedule(&s.timeout, task, time.Hour)
			calls := task.cancelled.Load()
			if r.owned {
				assert.ErrorIs(t, err, hashedwheel.ErrTimeoutPending, "arm %d: before the owner's next call", arm)
			}
			if err != nil {
				assert.ErrorIs(t, err, hashedwheel.ErrTimeoutPending, "arm %d", arm)
				assertUnchanged(t, before, &s.timeout, "Schedule before Cancelled was called")
			} else {
				assert.Equal(t, int32(arm), calls, "arm %d: Schedule succeeded before Cancelled was called", arm)
				require.True(t, s.timeout.Cancel())
				arm++ // that was another arm, cancelled
			}
			r.sleep(2 * jobTick)
			assert.Equal(t, int32(arm), task.cancelled.Load(), "Cancelled calls after arm %d", arm)
		}
		r.sleep(time.Second)
		assert.Empty(t, task.runs(), "a cancelled arm ran")

		// From inside Cancelled, Schedule arms it again.
		fromCancelled := make(chan error, 2)
		reviver := &cancelProbe{probe: probe{start: r.start}}
		rerun := newProbe(r.start)
		reviver.onCancelled = func(to *hashedwheel.Timeout) { fromCancelled <- r.tm.Schedule(to, rerun, 20*time.Millisecond) }
		var revived session
		require.NoError(t, r.tm.Schedule(&revived.timeout, reviver, time.Hour))
		require.True(t, revived.timeout.Cancel())
		cancelledAt := r.since()
		r.sleep(time.Second)
		require.Equal(t, int32(1), reviver.cancelled.Load(), "Cancelled calls")
		require.Len(t, fromCancelled, 1)
		assert.NoError(t, <-fromCancelled, "Schedule from inside Cancelled")
		require.Len(t, rerun.runs(), 1, "runs of the arm scheduled from Cancelled")
		assert.GreaterOrEqual(t, rerun.runs()[0], cancelledAt+20*time.Millisecond)
		assert.Empty(t, reviver.runs())
		assert.True(t, revived.timeout.IsExpired())
	})
}

// TestGuarantee21ScheduleFromInsideCancelledThatStopMakesOnAnotherTimer: a
// Timeout cancelled while linked in a bucket, on a Timer stopped before it
// took the cancel in, gets its Cancelled call from Stop (guarantee 13). From
// inside that call it may be scheduled on any Timer: Stop has let go of it.
func TestGuarantee21ScheduleFromInsideCancelledThatStopMakesOnAnotherTimer(t *testing.T) {
	forEachDriver(t, func(t *testing.T, r *rig) {
		other, _ := startedTimer(t)
		rerun := newProbe(r.start)
		fromCancelled := make(chan error, 2)
		task := &cancelProbe{probe: probe{start: r.start}}
		task.onCancelled = func(to *hashedwheel.Timeout) {
			fromCancelled <- other.Schedule(to, rerun, 20*time.Millisecond)
		}
		var s session
		require.NoError(t, r.tm.Schedule(&s.timeout, task, time.Hour))
		r.sleep(15 * time.Millisecond) // linked now
		require.True(t, s.timeout.Cancel())
		// No time passes: the Timer has not taken the cancel in (its worker
		// does at the end of the tick, an owner at its next call), so the
		// call is Stop's to make.
		stoppedAt := r.since()
		assert.Empty(t, r.tm.Stop(), "a Timeout cancelled earlier is not among those Stop returns")
		require.Equal(t, int32(1), task.cancelled.Load(), "Cancelled calls once Stop returned")
		require.Len(t, fromCancelled, 1)
		require.NoError(t, <-fromCancelled, "Schedule on another Timer from inside the Cancelled call Stop made")
		assert.Same(t, other, s.timeout.Timer())
		assert.Same(t, rerun, s.timeout.Task())
		assert.False(t, s.timeout.IsCancelled())

		time.Sleep(time.Second)
		synctest.Wait()
		require.Len(t, rerun.runs(), 1, "runs of the arm on the other Timer")
		assert.GreaterOrEqual(t, rerun.runs()[0], stoppedAt+20*time.Millisecond, "the run was early")
		assert.Empty(t, task.runs(), "the cancelled arm ran")
		assert.True(t, s.timeout.IsExpired())
		assert.Zero(t, other.PendingTimeouts())
	})
}

func TestGuarantee21ScheduleStatsCountEveryArm(t *testing.T) {
	forEachDriver(t, func(t *testing.T, r *rig) {
		p := newProbe(r.start)
		var s session
		require.NoError(t, r.tm.Schedule(&s.timeout, p, 0))
		r.sleep(15 * time.Millisecond)
		require.Len(t, p.runs(), 1)
		// Two cancels, each revived in place at once.
		for range 2 {
			require.NoError(t, r.tm.Schedule(&s.timeout, p, time.Hour))
			require.True(t, s.timeout.Cancel())
		}
		require.NoError(t, r.tm.Schedule(&s.timeout, p, 25*time.Millisecond)) // due at 40ms
		r.sleep(20 * time.Millisecond)                                        // 35ms: two ticks ended since
		stats := r.tm.Stats()
		assert.Equal(t, uint64(1), stats.Expired, "Expired")
		assert.Equal(t, uint64(2), stats.Cancelled, "Cancelled: cancels revived in place count too")
		assert.Equal(t, int64(1), stats.Pending, "Pending")

		r.sleep(time.Second)
		stats = r.tm.Stats()
		assert.Equal(t, uint64(2), stats.Expired, "Expired")
		assert.Equal(t, uint64(2), stats.Cancelled, "Cancelled")
		assert.Zero(t, stats.Pending, "Pending")
		assert.Len(t, p.runs(), 2)
	})
}

func TestGuarantee21ScheduleStopReturnsPendingArms(t *testing.T) {
	forEachDriver(t, func(t *testing.T, r *rig) {
		p := newProbe(r.start)
		var scheduled, revived, ran, cancelled hashedwheel.Timeout
		require.NoError(t, r.tm.Schedule(&scheduled, p, time.Hour))
		require.NoError(t, r.tm.Schedule(&revived, p, time.Hour))
		require.NoError(t, r.tm.Schedule(&ran, p, 0))
		require.NoError(t, r.tm.Schedule(&cancelled, p, time.Hour))
		made, err := r.tm.NewTimeout(p, time.Hour)
		require.NoError(t, err)
		r.sleep(15 * time.Millisecond)
		require.True(t, revived.Cancel())
		require.NoError(t, r.tm.Schedule(&revived, p, 2*time.Hour))
		require.True(t, cancelled.Cancel())

		assert.ElementsMatch(t, []*hashedwheel.Timeout{&scheduled, &revived, made}, r.tm.Stop())
		for _, to := range []*hashedwheel.Timeout{&scheduled, &revived, made, &cancelled} {
			assert.True(t, to.IsCancelled())
		}
		assert.True(t, ran.IsExpired())
		assert.Zero(t, r.tm.PendingTimeouts())
		// Two by Cancel, three by Stop.
		assert.Equal(t, uint64(5), r.tm.Stats().Cancelled, "Stats.Cancelled after Stop")
		before := stateOf(&scheduled)
		assert.ErrorIs(t, r.tm.Schedule(&scheduled, p, 0), hashedwheel.ErrTimerStopped)
		assertUnchanged(t, before, &scheduled, "Schedule after Stop")
		assert.Len(t, p.runs(), 1)
	})
}

// indexTask counts the runs of the i-th Timeout of a test.
type indexTask struct {
	i    int
	runs *atomic.Int32
	ran  chan<- int
}

func (x *indexTask) Run(*hashedwheel.Timeout) {
	x.runs.Add(1)
	x.ran <- x.i
}

func TestGuarantee21ScheduleRacingStopLeavesNoneInLimbo(t *testing.T) {
	// Real goroutines on the real clock: Schedule calls race Stop. Each
	// either fails with ErrTimerStopped, leaving its Timeout as it was, or
	// its Timeout ends expired (run once) or cancelled (never run).
	iterations := 100
	if raceEnabled {
		iterations = 25
	}
	const n = 32
	for _, d := range scheduleDrivers {
		t.Run(d.name, func(t *testing.T) {
			for iter := range iterations {
				tm, err := hashedwheel.NewTimer(append([]hashedwheel.Option{hashedwheel.WithTickDuration(time.Millisecond)}, d.opts...)...)
				require.NoError(t, err)
				tos := new([n]hashedwheel.Timeout)
				var runs [n]atomic.Int32
				ran := make(chan int, n)
				// Half of them start cancelled, half zero.
				for i := 0; i < n; i += 2 {
					require.NoError(t, tm.Schedule(&tos[i], nopTask, time.Hour))
					require.True(t, tos[i].Cancel())
				}
				var before [n]armState
				for i := range n {
					before[i] = stateOf(&tos[i])
				}
				var errs [n]error
				var stopped []*hashedwheel.Timeout
				start := make(chan struct{})
				var wg sync.WaitGroup
				for g := range 2 {
					wg.Go(func() {
						<-start
						for i := g; i < n; i += 2 {
							delay := time.Duration(0)
							if i%4 >= 2 {
								delay = time.Hour
							}
							errs[i] = tm.Schedule(&tos[i], &indexTask{i, &runs[i], ran}, delay)
						}
					})
				}
				wg.Go(func() {
					<-start
					stopped = tm.Stop()
				})
				close(start)
				wg.Wait()

				inStop := map[*hashedwheel.Timeout]bool{}
				for _, to := range stopped {
					inStop[to] = true
				}
				expired := 0
				for i := range n {
					to := &tos[i]
					if errs[i] != nil {
						assert.ErrorIs(t, errs[i], hashedwheel.ErrTimerStopped, "iteration %d, timeout %d", iter, i)
						assertUnchanged(t, before[i], to, "a failed Schedule")
						assert.False(t, inStop[to], "iteration %d, timeout %d: Stop returned a Timeout Schedule failed to arm", iter, i)
						continue
					}
					switch {
					case to.IsExpired():
						expired++
						assert.False(t, inStop[to], "iteration %d, timeout %d: Stop returned an expired one", iter, i)
					case to.IsCancelled():
						assert.True(t, inStop[to], "iteration %d, timeout %d: cancelled, and not returned by Stop", iter, i)
					default:
						t.Errorf("iteration %d, timeout %d: neither expired nor cancelled after Stop", iter, i)
					}
				}
				// An executor's runs may still be on their way.
				for range expired {
					select {
					case <-ran:
					case <-time.After(lateBound):
						t.Fatalf("iteration %d: an expired Timeout did not run within %v", iter, lateBound)
					}
				}
				for i := range n {
					want := int32(0)
					if errs[i] == nil && tos[i].IsExpired() {
						want = 1
					}
					assert.Equal(t, want, runs[i].Load(), "iteration %d, timeout %d: runs", iter, i)
				}
				assert.Zero(t, tm.PendingTimeouts())
			}
		})
	}
}

func TestGuarantee21ScheduleAllocatesNothing(t *testing.T) {
	// testing.AllocsPerRun counts the allocations of the whole process, so
	// the worker's and the pool's share is included. The executor here runs
	// the task on the goroutine that hands it out: `go f()` would allocate a
	// goroutine per run of its own.
	drivers := map[string][]hashedwheel.Option{
		"worker":   nil,
		"pool":     {hashedwheel.WithTaskWorkers(2)},
		"executor": {hashedwheel.WithTaskExecutor(func(f func()) { f() })},
		"owned":    {hashedwheel.WithoutWorker()},
	}
	for name, opts := range drivers {
		t.Run(name+"/schedule and cancel", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t, name == "owned", opts...)
				var s session
				scheduleCancel := func() {
					if err := r.tm.Schedule(&s.timeout, nopTask, time.Hour); err != nil {
						t.Fatal(err)
					}
					if !s.timeout.Cancel() {
						t.Fatal("Cancel returned false")
					}
				}
				assert.Zero(t, testing.AllocsPerRun(1000, scheduleCancel), "allocations per Schedule+Cancel, back to back")
				assert.Zero(t, testing.AllocsPerRun(100, func() {
					scheduleCancel()
					r.sleep(jobTick) // the Timer takes each cancel in
				}), "allocations per Schedule+Cancel, a tick apart")
			})
		})
		t.Run(name+"/a task that schedules itself again", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t, name == "owned", opts...)
				const n, period = 100, 100 * time.Millisecond
				tasks := make([]*lookAgain, n)
				for i := range tasks {
					tasks[i] = &lookAgain{period: period}
					tasks[i].left.Store(math.MaxInt64)
					require.NoError(t, r.tm.Schedule(&tasks[i].timeout, tasks[i], period))
				}
				looks := func() (sum int) {
					for _, l := range tasks {
						sum += int(l.looks.Load())
					}
					return sum
				}
				// Look k is due at k periods and a tick after each run:
				// each iteration, a period long, holds exactly one of each.
				r.sleep(period / 2)
				periods := 0
				allocs := testing.AllocsPerRun(50, func() {
					before := looks()
					r.sleep(period + jobTick)
					periods++
					if got := looks() - before; got != n {
						t.Fatalf("period %d: %d looks, want %d", periods, got, n)
					}
				})
				if name == "executor" {
					// Each one-shot run handed to an executor carries a
					// token of its own (two small objects), so that a func
					// the executor calls late or twice does nothing.
					assert.Equal(t, float64(2*n), allocs, "allocations per period of %d tasks that schedule themselves again", n)
				} else {
					assert.Zero(t, allocs, "allocations per period of %d tasks that schedule themselves again", n)
				}
				for i, l := range tasks {
					if err := l.err.Load(); err != nil {
						t.Errorf("task %d: Schedule from its run: %v", i, *err)
					}
				}
				assert.Equal(t, int64(n), r.tm.PendingTimeouts())
			})
		})
	}
}

func TestGuarantee21ScheduleGoVetReportsACopiedTimeout(t *testing.T) {
	// "A Timeout must not be copied once armed (go vet reports a copy)":
	// go vet's copylocks check reports a tiny package that copies one.
	if testing.Short() {
		t.Skip("runs go vet")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	root, err := os.Getwd()
	require.NoError(t, err)
	dir := t.TempDir()
	goMod := "module vetcopy\n\ngo 1.25\n\nrequire github.com/hashedwheel/hashedwheel v0.0.0\n\n" +
		"replace github.com/hashedwheel/hashedwheel => " + root + "\n"
	src := `package vetcopy

import "github.com/hashedwheel/hashedwheel"

type conn struct{ idle hashedwheel.Timeout }

func copied(c *conn) bool {
	idle := c.idle
	return idle.IsExpired()
}
`
	goSum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	require.NoError(t, err)
	for name, text := range map[string]string{"go.mod": goMod, "go.sum": string(goSum), "copy.go": src} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	cmd := exec.Command(goCmd, "vet", "-copylocks", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "go vet found nothing:\n%s", out)
	assert.Contains(t, string(out), "copy.go:8", "go vet:\n%s", out)
	assert.Contains(t, string(out), "copies lock value", "go vet:\n%s", out)
	assert.Contains(t, string(out), "hashedwheel.Timeout", "go vet:\n%s", out)
}

// The tests of guarantee 22: Timer.ScheduleAt arms a Timeout, as Schedule
// does, to run at an absolute deadline. On the fake clock, where no time has
// a monotonic reading, every deadline is taken on the (fake) wall clock;
// TestGuarantee22ScheduleAtOnTheRealClock holds the deadlines that carry one.

// rearmAt is a caller's struct that is its own task: each run arms its
// Timeout again with ScheduleAt, period after the deadline it ran for, while
// left lasts, and records that deadline and when it ran.
type rearmAt struct {
	timeout hashedwheel.Timeout
	period  time.Duration
	start   time.Time
	left    atomic.Int64
	err     atomic.Pointer[error]

	mu        sync.Mutex // the runs never overlap, but an executor's goroutines end
	ran, dues []time.Duration
}

func (a *rearmAt) Run(to *hashedwheel.Timeout) {
	a.mu.Lock()
	a.ran = append(a.ran, time.Since(a.start))
	a.dues = append(a.dues, to.Deadline().Sub(a.start))
	a.mu.Unlock()
	if a.left.Add(-1) <= 0 {
		return
	}
	if err := to.Timer().ScheduleAt(to, a, to.Deadline().Add(a.period)); err != nil {
		a.fail(err)
	}
}

// fail keeps err; apart from Run, so that Run's err does not escape.
func (a *rearmAt) fail(err error) { a.err.Store(&err) }

func (a *rearmAt) runs() (ran, dues []time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.ran), slices.Clone(a.dues)
}

func TestGuarantee22ScheduleAtRunsAtTheFirstTickAtOrAfterItsDeadline(t *testing.T) {
	forEachDriver(t, func(t *testing.T, r *rig) {
		r.sleep(5 * time.Millisecond)
		// Inside a tick, at a tick's start, a nanosecond before a tick's
		// end, and more than a turn of the 8-bucket wheel (80ms) ahead.
		deadlines := []time.Duration{25 * time.Millisecond, 40 * time.Millisecond,
			60*time.Millisecond - time.Nanosecond, 135 * time.Millisecond}
		sessions := make([]session, len(deadlines))
		probes := make([]*probe, len(deadlines))
		for i, d := range deadlines {
			probes[i] = newProbe(r.start)
			to := &sessions[i].timeout
			require.NoError(t, r.tm.ScheduleAt(to, probes[i], r.start.Add(d)))
			assert.True(t, to.Deadline().Equal(r.start.Add(d)), "Deadline %v, want start + %v", to.Deadline(), d)
			assert.Same(t, r.tm, to.Timer())
			assert.Same(t, probes[i], to.Task())
			assert.False(t, to.IsExpired() || to.IsCancelled(), "ended as it was armed")
		}
		assert.Equal(t, int64(len(deadlines)), r.tm.PendingTimeouts())
		for i, d := range deadlines {
			r.sleep(runEnd(d) - r.since() - time.Nanosecond)
			assert.Empty(t, probes[i].runs(), "deadline %v: ran before the end of its tick", d)
			r.sleep(time.Nanosecond)
			assert.Equal(t, []time.Duration{runEnd(d)}, probes[i].runs(), "deadline %v: runs", d)
		}
		r.sleep(time.Second)
		for i, d := range deadlines {
			assert.Len(t, probes[i].runs(), 1, "deadline %v: runs", d)
			assert.True(t, sessions[i].timeout.IsExpired(), "deadline %v: IsExpired", d)
		}
		assert.Zero(t, r.tm.PendingTimeouts())
	})
}

func TestGuarantee22ScheduleAtPassedDeadlineRunsAtTheNextTick(t *testing.T) {
	forEachDriver(t, func(t *testing.T, r *rig) {
		r.sleep(43 * time.Millisecond)
		now := time.Now()
		cases := []struct {
			name           string
			deadline, want time.Time // want: what Deadline reports
		}{
			{"earlier in this tick", r.start.Add(41 * time.Millisecond), r.start.Add(41 * time.Millisecond)},
			{"now", now, now},
			{"ticks ago", r.start.Add(12 * time.Millisecond), r.start.Add(12 * time.Millisecond)},
			{"before the Timer started", r.start.Add(-time.Hour), r.start},
			{"the zero time", time.Time{}, r.start},
		}
		sessions := make([]session, len(cases))
		p := newProbe(r.start)
		for i, c := range cases {
			require.NoError(t, r.tm.ScheduleAt(&sessions[i].timeout, p, c.deadline), c.name)
			assert.True(t, sessions[i].timeout.Deadline().Equal(c.want), "%s: Deadline %v, want %v",
				c.name, sessions[i].timeout.Deadline(), c.want)
		}
		if !r.owned {
			r.sleep(runEnd(43*time.Millisecond) - r.since() - time.Nanosecond)
			assert.Empty(t, p.runs(), "ran before the end of the tick they were armed in")
			r.sleep(time.Second)
			want := slices.Repeat([]time.Duration{runEnd(43 * time.Millisecond)}, len(cases))
			assert.Equal(t, want, p.runs(), "passed deadlines run at the next tick, as delays <= 0 do")
			return
		}
		// The owner processes the ticks in order, and places a passed
		// deadline in the first it has not processed: that may be one
		// that ended before its last call, if nothing was due in it. Then
		// its next Advance runs it, before the end of the tick it was
		// armed in. Each runs once, by the end of that tick.
		r.sleep(runEnd(43*time.Millisecond) - r.since())
		runs := p.runs()
		assert.Len(t, runs, len(cases), "runs by the end of the tick they were armed in")
		for _, at := range runs {
			assert.True(t, at >= 43*time.Millisecond && at <= runEnd(43*time.Millisecond), "ran at %v", at)
		}
		r.sleep(time.Second)
		assert.Len(t, p.runs(), len(cases), "runs")
	})
}

func TestGuarantee22ScheduleAtPassedDeadlineFromItsOwnRunRunsOncePerTick(t *testing.T) {
	// A task that arms its Timeout again at the deadline it ran for, which
	// has passed, runs again at the next tick: never twice in one tick, nor
	// twice in one Advance on an owned Timer.
	forEachDriver(t, func(t *testing.T, r *rig) {
		a := &rearmAt{start: r.start} // period 0: at its own deadline
		a.left.Store(5)
		require.NoError(t, r.tm.ScheduleAt(&a.timeout, a, r.start.Add(25*time.Millisecond)))
		r.sleep(time.Second)
		ran, dues := a.runs()
		ms := time.Millisecond
		assert.Equal(t, []time.Duration{30 * ms, 40 * ms, 50 * ms, 60 * ms, 70 * ms}, ran, "runs")
		assert.Equal(t, slices.Repeat([]time.Duration{25 * ms}, 5), dues, "the deadlines the runs were for")
		if err := a.err.Load(); err != nil {
			t.Errorf("ScheduleAt from the run: %v", *err)
		}
	})
}

func TestGuarantee22ScheduleAtFromItsOwnTaskKeepsThePeriod(t *testing.T) {
	// Re-armed at Deadline().Add(period) from inside each run, run k is
	// due at k periods, to the nanosecond, and runs at the end of that
	// deadline's tick: the lateness of each run (up to a tick) does not
	// add up. A period that is not a multiple of the tick shows it: re-armed
	// at the run's time plus the period, as Schedule would be, the runs
	// would fall a tick behind every few periods.
	const n, period = 300, 35 * time.Millisecond
	forEachDriver(t, func(t *testing.T, r *rig) {
		a := &rearmAt{start: r.start, period: period}
		a.left.Store(n)
		require.NoError(t, r.tm.ScheduleAt(&a.timeout, a, r.start.Add(period)))
		r.sleep(n*period + time.Second)
		ran, dues := a.runs()
		require.Len(t, ran, n, "runs")
		for k := 1; k <= n; k++ {
			if due := time.Duration(k) * period; dues[k-1] != due || ran[k-1] != runEnd(due) {
				t.Fatalf("run %d: due at %v, ran at %v; want due at %v, run at %v", k, dues[k-1], ran[k-1], due, runEnd(due))
			}
		}
		if err := a.err.Load(); err != nil {
			t.Errorf("ScheduleAt from the run: %v", *err)
		}
		assert.Zero(t, r.tm.PendingTimeouts())
	})
}

func TestGuarantee22ScheduleAtWallClockDeadlines(t *testing.T) {
	// time.Unix, time.Date and a parse give the same instant, in any
	// location: a deadline without a monotonic reading is taken on the
	// wall clock.
	forEachDriver(t, func(t *testing.T, r *rig) {
		r.sleep(3 * time.Millisecond)
		at := r.start.Add(25 * time.Millisecond)
		u := at.UTC()
		parsed, err := time.Parse(time.RFC3339Nano, at.Format(time.RFC3339Nano))
		require.NoError(t, err)
		cases := map[string]time.Time{
			"time.Unix":           time.Unix(0, at.UnixNano()),
			"time.Date, UTC":      time.Date(u.Year(), u.Month(), u.Day(), u.Hour(), u.Minute(), u.Second(), u.Nanosecond(), time.UTC),
			"time.Date, UTC+5:30": at.In(time.FixedZone("IST", 5*3600+1800)),
			"time.Parse":          parsed,
		}
		sessions := make([]session, len(cases))
		p := newProbe(r.start)
		i := 0
		for name, deadline := range cases {
			require.NoError(t, r.tm.ScheduleAt(&sessions[i].timeout, p, deadline), name)
			assert.True(t, sessions[i].timeout.Deadline().Equal(at), "%s: Deadline %v, want %v", name,
				sessions[i].timeout.Deadline(), at)
			i++
		}
		r.sleep(runEnd(25*time.Millisecond) - r.since() - time.Nanosecond)
		assert.Empty(t, p.runs(), "ran before the end of the deadline's tick")
		r.sleep(time.Second)
		assert.Equal(t, slices.Repeat([]time.Duration{runEnd(25 * time.Millisecond)}, len(cases)), p.runs())
	})
}

func TestGuarantee22ScheduleAtHugeDeadlinesSaturate(t *testing.T) {
	forEachDriver(t, func(t *testing.T, r *rig) {
		var huge session
		require.NoError(t, r.tm.Schedule(&huge.timeout, nopTask, math.MaxInt64))
		saturated := huge.timeout.Deadline()
		cases := map[string]time.Time{
			"start + math.MaxInt64": r.start.Add(math.MaxInt64),
			"time.Unix(1<<62, 0)":   time.Unix(1<<62, 0),
			"year 9999":             time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
		}
		sessions := make([]session, len(cases))
		p := newProbe(r.start)
		i := 0
		for name, deadline := range cases {
			require.NoError(t, r.tm.ScheduleAt(&sessions[i].timeout, p, deadline), name)
			assert.True(t, sessions[i].timeout.Deadline().Equal(saturated), "%s: Deadline %v, want %v (saturated)",
				name, sessions[i].timeout.Deadline(), saturated)
			i++
		}
		r.sleep(time.Hour)
		assert.Empty(t, p.runs(), "a saturated deadline ran")
		assert.Equal(t, int64(len(cases)+1), r.tm.PendingTimeouts())
		for i := range sessions {
			assert.True(t, sessions[i].timeout.Cancel(), "Cancel of a saturated deadline")
		}
	})
}

func TestGuarantee22ScheduleAtFollowsTheRulesOfSchedule(t *testing.T) {
	// The rules of guarantee 21, through ScheduleAt: a cancelled Timeout is
	// armed again at once on its Timer, and runs at the new deadline only;
	// Reset moves an arm of ScheduleAt; the Timeout reports its latest arm.
	forEachDriver(t, func(t *testing.T, r *rig) {
		var s session
		p, q := newProbe(r.start), newProbe(r.start)
		require.NoError(t, r.tm.ScheduleAt(&s.timeout, p, r.start.Add(55*time.Millisecond)))
		r.sleep(5 * time.Millisecond)
		require.True(t, s.timeout.Cancel())
		require.NoError(t, r.tm.ScheduleAt(&s.timeout, q, r.start.Add(25*time.Millisecond)), "armed again at once")
		assertState(t, armState{deadline: r.start.Add(25 * time.Millisecond), task: q, timer: r.tm}, &s.timeout)
		require.True(t, s.timeout.Reset(30*time.Millisecond), "Reset of an arm of ScheduleAt")
		assert.True(t, s.timeout.Deadline().Equal(r.start.Add(35*time.Millisecond)), "Deadline after Reset: %v", s.timeout.Deadline())
		r.sleep(time.Second)
		assert.Empty(t, p.runs(), "the cancelled arm ran")
		assert.Equal(t, []time.Duration{runEnd(35 * time.Millisecond)}, q.runs(), "the latest arm's runs")
		assert.Equal(t, uint64(1), r.tm.Stats().Cancelled, "Stats.Cancelled counts the cancelled arm")
	})
}

func TestGuarantee22ScheduleAtErrorsLeaveTheTimeoutAsItWas(t *testing.T) {
	// A deadline of the real clock, which has a monotonic reading, given to
	// a Timer of a bubble, whose clock has none.
	realDeadline := time.Now().Add(time.Hour)
	forEachDriver(t, func(t *testing.T, r *rig) {
		p, q := newProbe(r.start), newProbe(r.start)
		var zero, expired, cancelled, pending hashedwheel.Timeout
		require.NoError(t, r.tm.ScheduleAt(&expired, p, r.start))
		require.NoError(t, r.tm.ScheduleAt(&cancelled, p, r.start.Add(time.Hour)))
		require.True(t, cancelled.Cancel())
		require.NoError(t, r.tm.ScheduleAt(&pending, p, r.start.Add(time.Hour)))
		r.sleep(15 * time.Millisecond)
		timeouts := map[string]*hashedwheel.Timeout{
			"zero": &zero, "expired": &expired, "cancelled": &cancelled, "pending": &pending,
		}
		deadline := time.Now().Add(10 * time.Millisecond)

		check := func(what string, want error, scheduleAt func(to *hashedwheel.Timeout) error) {
			t.Helper()
			for name, to := range timeouts {
				before, pendingBefore := stateOf(to), r.tm.PendingTimeouts()
				err := scheduleAt(to)
				if name == "pending" {
					assert.Error(t, err, "%s, %s", what, name) // ErrTimeoutPending, or the error checked first
				} else {
					assert.ErrorIs(t, err, want, "%s, %s", what, name)
				}
				assertUnchanged(t, before, to, what+" ("+name+")")
				assert.Equal(t, pendingBefore, r.tm.PendingTimeouts(), "%s, %s: pending", what, name)
			}
		}
		check("nil task", hashedwheel.ErrNilTask, func(to *hashedwheel.Timeout) error {
			return r.tm.ScheduleAt(to, nil, deadline)
		})
		check("nil TimerFunc", hashedwheel.ErrNilTask, func(to *hashedwheel.Timeout) error {
			return r.tm.ScheduleAt(to, hashedwheel.TimerFunc(nil), deadline)
		})
		check("a deadline of another clock", hashedwheel.ErrClockMismatch, func(to *hashedwheel.Timeout) error {
			return r.tm.ScheduleAt(to, q, realDeadline)
		})
		pendingBefore := r.tm.PendingTimeouts()
		assert.ErrorIs(t, r.tm.ScheduleAt(nil, q, deadline), hashedwheel.ErrNilTimeout)
		assert.Equal(t, pendingBefore, r.tm.PendingTimeouts(), "nil Timeout: pending")
		before := stateOf(&pending)
		err := r.tm.ScheduleAt(&pending, q, deadline)
		assert.ErrorIs(t, err, hashedwheel.ErrTimeoutPending, "a pending Timeout")
		assert.Contains(t, fmt.Sprint(err), "Reset moves its deadline", "the error says why")
		assertUnchanged(t, before, &pending, "ScheduleAt of a pending Timeout")

		delete(timeouts, "pending") // the checks below come after the one for a pending Timeout
		limited := newTimer(t, hashedwheel.WithMaxPendingTimeouts(1), hashedwheel.WithTickDuration(jobTick))
		_, err = limited.NewTimeout(q, time.Hour)
		require.NoError(t, err)
		check("the pending limit", hashedwheel.ErrTooManyPendingTimeouts, func(to *hashedwheel.Timeout) error {
			return limited.ScheduleAt(to, q, deadline)
		})
		stopped := newTimer(t, hashedwheel.WithTickDuration(jobTick))
		stopped.Stop()
		check("a stopped Timer", hashedwheel.ErrTimerStopped, func(to *hashedwheel.Timeout) error {
			return stopped.ScheduleAt(to, q, deadline)
		})
		check("a Timer not made by NewTimer", hashedwheel.ErrNotCreated, func(to *hashedwheel.Timeout) error {
			return new(hashedwheel.Timer).ScheduleAt(to, q, deadline)
		})

		// Nothing was left half done: each is armed as if nothing had
		// happened.
		for name, to := range timeouts {
			require.NoError(t, r.tm.ScheduleAt(to, q, deadline), name)
		}
		r.sleep(time.Second)
		assert.Len(t, q.runs(), len(timeouts), "runs after the failed calls")
		assert.Len(t, limited.Stop(), 1, "a failed ScheduleAt left a Timeout pending at the limit")
	})
}

func TestGuarantee22ScheduleAtAcrossABubblesBorderFails(t *testing.T) {
	// A Timer of the real clock used in a bubble, with the bubble's time;
	// a Timer of a bubble used outside it, with a wall-clock time: each
	// call reads the clock and finds another than its Timer's.
	realTimer := newTimer(t)
	require.NoError(t, realTimer.Start())
	var s session
	synctest.Test(t, func(t *testing.T) {
		assert.ErrorIs(t, realTimer.ScheduleAt(&s.timeout, nopTask, time.Now().Add(time.Second)),
			hashedwheel.ErrClockMismatch, "a Timer of the real clock in a bubble")
	})
	assertState(t, armState{}, &s.timeout)

	outside := make(chan *hashedwheel.Timer)
	results := make(chan error)
	go func() {
		tm := <-outside
		var s session
		results <- tm.ScheduleAt(&s.timeout, nopTask, time.Now().Round(0).Add(time.Second))
	}()
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t)
		require.NoError(t, tm.Start())
		outside <- tm
		assert.ErrorIs(t, <-results, hashedwheel.ErrClockMismatch, "a Timer of a bubble outside it")
		assert.Zero(t, tm.PendingTimeouts())
	})
}

func TestGuarantee22ScheduleAtAllocatesNothing(t *testing.T) {
	// As TestGuarantee21ScheduleAllocatesNothing, with ScheduleAt; the
	// executor runs the task on the goroutine that hands it out.
	drivers := map[string][]hashedwheel.Option{
		"worker":   nil,
		"pool":     {hashedwheel.WithTaskWorkers(2)},
		"executor": {hashedwheel.WithTaskExecutor(func(f func()) { f() })},
		"owned":    {hashedwheel.WithoutWorker()},
	}
	for name, opts := range drivers {
		t.Run(name+"/schedule at and cancel", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t, name == "owned", opts...)
				var s session
				scheduleAtCancel := func() {
					if err := r.tm.ScheduleAt(&s.timeout, nopTask, time.Now().Add(time.Hour)); err != nil {
						t.Fatal(err)
					}
					if !s.timeout.Cancel() {
						t.Fatal("Cancel returned false")
					}
				}
				assert.Zero(t, testing.AllocsPerRun(1000, scheduleAtCancel), "allocations per ScheduleAt+Cancel, back to back")
				assert.Zero(t, testing.AllocsPerRun(100, func() {
					scheduleAtCancel()
					r.sleep(jobTick) // the Timer takes each cancel in
				}), "allocations per ScheduleAt+Cancel, a tick apart")
			})
		})
		t.Run(name+"/tasks that re-arm at their deadline plus a period", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t, name == "owned", opts...)
				const n, period = 100, 100 * time.Millisecond
				tasks := make([]*rearmAt, n)
				for i := range tasks {
					tasks[i] = &rearmAt{start: r.start, period: period}
					tasks[i].left.Store(math.MaxInt64)
					tasks[i].ran = make([]time.Duration, 0, 64) // the records must not allocate
					tasks[i].dues = make([]time.Duration, 0, 64)
					require.NoError(t, r.tm.ScheduleAt(&tasks[i].timeout, tasks[i], r.start.Add(period)))
				}
				runs := func() (sum int) {
					for _, a := range tasks {
						a.mu.Lock()
						sum += len(a.ran)
						a.mu.Unlock()
					}
					return sum
				}
				r.sleep(period / 2)
				periods := 0
				allocs := testing.AllocsPerRun(50, func() {
					before := runs()
					r.sleep(period)
					periods++
					if got := runs() - before; got != n {
						t.Fatalf("period %d: %d runs, want %d", periods, got, n)
					}
				})
				if name == "executor" {
					// Each one-shot run handed to an executor carries a
					// token of its own (two small objects), so that a func
					// the executor calls late or twice does nothing.
					assert.Equal(t, float64(2*n), allocs, "allocations per period of %d tasks that re-arm", n)
				} else {
					assert.Zero(t, allocs, "allocations per period of %d tasks that re-arm", n)
				}
				for i, a := range tasks {
					if err := a.err.Load(); err != nil {
						t.Errorf("task %d: ScheduleAt from its run: %v", i, *err)
					}
				}
				assert.Equal(t, int64(n), r.tm.PendingTimeouts())
			})
		})
	}
}

// TestGuarantee22ScheduleAtOnTheRealClock holds what the fake clock cannot
// show: deadlines with a monotonic reading, from time.Now and from
// Deadline. None runs before its deadline, by the monotonic clock, strictly;
// a chain re-armed at Deadline().Add(period) is due at whole periods to the
// nanosecond; a passed deadline runs; ScheduleAt and Cancel allocate nothing.
// How late they run is bounded loosely, for loaded machines.
func TestGuarantee22ScheduleAtOnTheRealClock(t *testing.T) {
	for name, opts := range runModes {
		t.Run(name, func(t *testing.T) {
			tm := newTimer(t, append([]hashedwheel.Option{hashedwheel.WithTickDuration(time.Millisecond)}, opts...)...)
			const n, period = 20, 3 * time.Millisecond
			type run struct {
				at, due time.Time
			}
			runs := make(chan run, n+2)
			var left atomic.Int32
			left.Store(n)
			var chain, passed session
			first := time.Now().Add(5 * time.Millisecond)
			require.NoError(t, tm.ScheduleAt(&chain.timeout, hashedwheel.TimerFunc(func(to *hashedwheel.Timeout) {
				runs <- run{time.Now(), to.Deadline()}
				if left.Add(-1) > 0 {
					if err := to.Timer().ScheduleAt(to, to.Task(), to.Deadline().Add(period)); err != nil {
						t.Error(err)
					}
				}
			}), first))
			assert.True(t, chain.timeout.Deadline().Equal(first), "Deadline %v, want %v", chain.timeout.Deadline(), first)
			ranPassed := make(chan time.Time, 1)
			armed := time.Now()
			require.NoError(t, tm.ScheduleAt(&passed.timeout, hashedwheel.TimerFunc(func(*hashedwheel.Timeout) {
				ranPassed <- time.Now()
			}), armed.Add(-time.Hour)))

			timeout := time.After(lateBound)
			for k := range n {
				select {
				case r := <-runs:
					due := first.Add(time.Duration(k) * period)
					assert.True(t, r.due.Equal(due), "run %d: due at %v after the first deadline, want %v", k,
						r.due.Sub(first), due.Sub(first))
					assert.False(t, r.at.Before(due), "run %d: ran %v before its deadline", k, due.Sub(r.at))
				case <-timeout:
					t.Fatalf("%d runs of %d after %v", k, n, lateBound)
				}
			}
			select {
			case at := <-ranPassed:
				assert.False(t, at.Before(armed), "a passed deadline ran before it was armed")
			case <-timeout:
				t.Fatalf("a passed deadline did not run in %v", lateBound)
			}

			var s session
			assert.Zero(t, testing.AllocsPerRun(1000, func() {
				if err := tm.ScheduleAt(&s.timeout, nopTask, first.Add(time.Hour)); err != nil {
					t.Fatal(err)
				}
				s.timeout.Cancel()
			}), "allocations per ScheduleAt+Cancel with a monotonic deadline")
		})
	}
}

// heldCancelledRun is a heldRun whose task is a CancelledTask: its
// Cancelled call notes whether a run was in flight, then schedules the
// Timeout on another Timer.
type heldCancelledRun struct {
	*heldRun
	other        *hashedwheel.Timer
	calls        atomic.Int32
	runOutAtCall atomic.Bool
	scheduled    chan error
}

func (h *heldCancelledRun) Cancelled(to *hashedwheel.Timeout) {
	h.calls.Add(1)
	if h.inFlight.Load() != 0 {
		h.runOutAtCall.Store(true)
	}
	h.scheduled <- h.other.Schedule(to, h.heldRun.other(), 0)
}

// TestGuarantee21ScheduleFromInsideTheCancelledCallOfARunOutAsStopComes: a
// periodic Timeout cancelled by Cancel during its run on a pool or an
// executor, then by Stop, is held by that run until it returns: its
// Cancelled call comes once the run has returned, and an arm on another
// Timer made from inside the call never runs beside it.
func TestGuarantee21ScheduleFromInsideTheCancelledCallOfARunOutAsStopComes(t *testing.T) {
	for name, opt := range runOffTheWorker {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tm, _ := startedTimer(t, opt)
				tm2, _ := startedTimer(t)
				h := &heldCancelledRun{heldRun: newHeldRun(), other: tm2, scheduled: make(chan error, 1)}
				p, err := tm.NewPeriodicTimeout(h, jobTick)
				require.NoError(t, err)
				<-h.started
				require.True(t, p.Cancel())
				stopped := make(chan []*hashedwheel.Timeout)
				go func() { stopped <- tm.Stop() }()
				synctest.Wait()
				time.Sleep(5 * jobTick)
				assert.Zero(t, h.calls.Load(), "the Cancelled call came while the run was out")

				close(h.release)
				assert.Empty(t, <-stopped, "a Timeout Cancel cancelled is not among those Stop returns")
				synctest.Wait() // the run has returned, and the call come
				require.Equal(t, int32(1), h.calls.Load(), "Cancelled calls")
				assert.False(t, h.runOutAtCall.Load(), "the Cancelled call came while the run was out")
				require.NoError(t, <-h.scheduled, "Schedule on another Timer from inside the Cancelled call")
				time.Sleep(5 * jobTick)
				assert.Zero(t, h.overlaps.Load(), "the arm on the other Timer ran beside the run")
				assert.True(t, p.IsExpired(), "the arm on the other Timer did not run")
			})
		})
	}
}
