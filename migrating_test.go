package hashedwheel_test

import (
	"os"
	"os/exec"
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hashedwheel/hashedwheel"
)

// These tests hold what docs/migrating.md says of moving a program from the
// time package to a Timer: how a period re-armed from its task keeps time,
// what a tick does to short intervals, a task that panics, a task that waits
// for a lock its canceller holds, and what a Timeout does to a struct's size
// class. They run in every driver on synctest's fake clock (see rig), at the
// default 100ms tick unless they say otherwise.

const theDefaultTick = 100 * time.Millisecond

// rearmRuns arms to on r's Timer for period and re-arms it from each run,
// with Schedule(period) or with ScheduleAt at its deadline plus period, and
// returns the times of the runs in the first span after the Timer started.
func rearmRuns(t *testing.T, r *rig, period, span time.Duration, at bool) []time.Duration {
	t.Helper()
	var to hashedwheel.Timeout
	p := newProbe(r.start)
	p.then = func(to *hashedwheel.Timeout) {
		if at {
			_ = to.Timer().ScheduleAt(to, p, to.Deadline().Add(period))
		} else {
			_ = to.Timer().Schedule(to, p, period)
		}
	}
	require.NoError(t, r.tm.ScheduleAt(&to, p, r.start.Add(period)))
	r.sleep(span)
	to.Cancel()
	return p.runs()
}

func millis(n ...int) []time.Duration {
	d := make([]time.Duration, len(n))
	for i, x := range n {
		d[i] = time.Duration(x) * time.Millisecond
	}
	return d
}

func TestMigratingScheduleFromItsTaskAddsATickAPeriod(t *testing.T) {
	forEachDriver(t, func(t *testing.T, r *rig) {
		// Each run comes at the end of the tick that holds its deadline;
		// Schedule counts the next period from there.
		assert.Equal(t, millis(1100, 2200, 3300, 4400), rearmRuns(t, r, time.Second, 4500*time.Millisecond, false))
	}, hashedwheel.WithTickDuration(theDefaultTick))
}

func TestMigratingScheduleAtFromTheDeadlineKeepsThePeriod(t *testing.T) {
	forEachDriver(t, func(t *testing.T, r *rig) {
		assert.Equal(t, millis(1100, 2100, 3100, 4100), rearmRuns(t, r, time.Second, 4500*time.Millisecond, true))
	}, hashedwheel.WithTickDuration(theDefaultTick))
}

func TestMigratingScheduleFromItsTaskRoundsUpToWholeTicks(t *testing.T) {
	forEachDriver(t, func(t *testing.T, r *rig) {
		// 50ms at a 10ms tick: 60ms apart with Schedule, 50 with ScheduleAt.
		assert.Equal(t, millis(60, 120, 180, 240), rearmRuns(t, r, 50*time.Millisecond, 250*time.Millisecond, false))
	}, hashedwheel.WithTickDuration(10*time.Millisecond))
	forEachDriver(t, func(t *testing.T, r *rig) {
		assert.Equal(t, millis(60, 110, 160, 210), rearmRuns(t, r, 50*time.Millisecond, 250*time.Millisecond, true))
	}, hashedwheel.WithTickDuration(10*time.Millisecond))
	forEachDriver(t, func(t *testing.T, r *rig) {
		// A period of a whole tick, re-armed by Schedule, runs every two.
		assert.Equal(t, millis(200, 400, 600, 800), rearmRuns(t, r, theDefaultTick, 900*time.Millisecond, false))
	}, hashedwheel.WithTickDuration(theDefaultTick))
}

func TestMigratingIntervalShorterThanTheTickRunsOnceATick(t *testing.T) {
	forEachDriver(t, func(t *testing.T, r *rig) {
		// 50ms at the default tick: once a tick, either way. ScheduleAt's
		// deadlines fall behind, 50ms a run (each has passed when it is
		// armed, so it runs at the next tick).
		assert.Equal(t, millis(100, 200, 300, 400, 500), rearmRuns(t, r, 50*time.Millisecond, 550*time.Millisecond, false))
	}, hashedwheel.WithTickDuration(theDefaultTick))
	forEachDriver(t, func(t *testing.T, r *rig) {
		assert.Equal(t, millis(100, 200, 300, 400, 500), rearmRuns(t, r, 50*time.Millisecond, 550*time.Millisecond, true))
	}, hashedwheel.WithTickDuration(theDefaultTick))
}

func TestMigratingOneShotRunsWithinATickAfterItsDeadline(t *testing.T) {
	forEachDriver(t, func(t *testing.T, r *rig) {
		// 50ms armed at every 10ms of a 100ms tick: from 50ms (excluded)
		// to 150ms after it was armed.
		var after []time.Duration
		for phase := time.Duration(0); phase < theDefaultTick; phase += 10 * time.Millisecond {
			r.sleep(time.Until(r.start.Add(r.since().Truncate(theDefaultTick) + theDefaultTick + phase)))
			armed := time.Now()
			var to hashedwheel.Timeout
			p := newProbe(armed)
			require.NoError(t, r.tm.Schedule(&to, p, 50*time.Millisecond))
			r.sleep(2 * theDefaultTick)
			after = append(after, p.runs()...)
		}
		assert.Equal(t, millis(100, 90, 80, 70, 60, 150, 140, 130, 120, 110), after)
	}, hashedwheel.WithTickDuration(theDefaultTick))
}

// pingTask is a connection's ping, re-armed from its own run an interval
// after the deadline it ran for, with a ping that may panic.
type pingTask struct {
	interval time.Duration
	ping     func(n int) // panics for some n
	mu       sync.Mutex
	runs     int
}

func (p *pingTask) next() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.runs++
	return p.runs
}

func (p *pingTask) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.runs
}

// rearmAfter pings, then re-arms: a ping that panics leaves it unarmed.
type rearmAfter struct{ pingTask }

func (p *rearmAfter) Run(to *hashedwheel.Timeout) {
	p.ping(p.next())
	_ = to.Timer().ScheduleAt(to, p, to.Deadline().Add(p.interval))
}

// rearmFirst re-arms, then pings.
type rearmFirst struct{ pingTask }

func (p *rearmFirst) Run(to *hashedwheel.Timeout) {
	if err := to.Timer().ScheduleAt(to, p, to.Deadline().Add(p.interval)); err != nil {
		return // the Timer stopped
	}
	p.ping(p.next())
}

// deferredPing re-arms in a defer, which runs when the ping panics too,
// unless the run decided the connection is done.
type deferredPing struct {
	pingTask
	closed bool // set by the run that closes the connection
}

func (p *deferredPing) Run(to *hashedwheel.Timeout) {
	due := to.Deadline()
	defer func() {
		if !p.closed {
			_ = to.Timer().ScheduleAt(to, p, due.Add(p.interval))
		}
	}()
	p.ping(p.next())
}

func TestMigratingPanickingTaskThatRearmsLastIsNeverArmedAgain(t *testing.T) {
	logger, logs := newLogger()
	forEachDriver(t, func(t *testing.T, r *rig) {
		var to hashedwheel.Timeout
		p := &rearmAfter{pingTask{interval: time.Second, ping: func(n int) {
			if n == 2 {
				panic("write on a closed buffer")
			}
		}}}
		require.NoError(t, r.tm.ScheduleAt(&to, p, r.start.Add(time.Second)))
		r.sleep(5 * time.Second)
		assert.Equal(t, 2, p.count(), "the run that panicked was the last")
		assert.False(t, to.IsPending(), "nothing armed it again")
		assert.True(t, to.IsExpired())
		assert.Contains(t, logs.String(), "hashedwheel: task panicked")
		assert.Contains(t, logs.String(), "write on a closed buffer")
	}, hashedwheel.WithTickDuration(theDefaultTick), hashedwheel.WithLogger(logger))
}

func TestMigratingPanickingTaskThatRearmsFirstStaysArmed(t *testing.T) {
	logger, logs := newLogger()
	forEachDriver(t, func(t *testing.T, r *rig) {
		var to hashedwheel.Timeout
		p := &rearmFirst{pingTask{interval: time.Second, ping: func(n int) {
			if n == 2 {
				panic("write on a closed buffer")
			}
		}}}
		require.NoError(t, r.tm.ScheduleAt(&to, p, r.start.Add(time.Second)))
		r.sleep(5500 * time.Millisecond)
		assert.Equal(t, 5, p.count(), "runs 3 to 5 came after the panic")
		assert.True(t, to.IsPending())
		assert.Equal(t, r.start.Add(6*time.Second), to.Deadline(), "the period kept")
		assert.Contains(t, logs.String(), "write on a closed buffer")
		to.Cancel()
	}, hashedwheel.WithTickDuration(theDefaultTick), hashedwheel.WithLogger(logger))
}

func TestMigratingPanickingTaskThatRearmsInADeferStaysArmed(t *testing.T) {
	logger, logs := newLogger()
	forEachDriver(t, func(t *testing.T, r *rig) {
		var to hashedwheel.Timeout
		p := &deferredPing{}
		p.interval = time.Second
		p.ping = func(n int) {
			switch n {
			case 2:
				panic("write on a closed buffer")
			case 4:
				p.closed = true // the connection is done: no re-arm
			}
		}
		require.NoError(t, r.tm.ScheduleAt(&to, p, r.start.Add(time.Second)))
		r.sleep(3500 * time.Millisecond)
		assert.Equal(t, 3, p.count(), "run 3 came after the panic")
		assert.True(t, to.IsPending())
		assert.Equal(t, r.start.Add(4*time.Second), to.Deadline(), "the period kept")
		r.sleep(3 * time.Second)
		assert.Equal(t, 4, p.count(), "the run that closed it was the last")
		assert.False(t, to.IsPending())
		assert.Contains(t, logs.String(), "write on a closed buffer")
	}, hashedwheel.WithTickDuration(theDefaultTick), hashedwheel.WithLogger(logger))
}

// TestMigratingTimeAfterFuncPanicEndsTheProgram holds what the guide says
// time.AfterFunc does with a callback that panics: the panic ends the
// program, as in any goroutine. It runs itself in a process of its own.
func TestMigratingTimeAfterFuncPanicEndsTheProgram(t *testing.T) {
	if os.Getenv("HASHEDWHEEL_AFTERFUNC_PANIC") == "1" {
		time.AfterFunc(0, func() { panic("write on a closed buffer") })
		time.Sleep(time.Minute)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestMigratingTimeAfterFuncPanicEndsTheProgram$", "-test.count=1")
	cmd.Env = append(os.Environ(), "HASHEDWHEEL_AFTERFUNC_PANIC=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "the process ended: %s", out)
	assert.Equal(t, 2, exit.ExitCode(), "a panic's exit status")
	assert.Contains(t, string(out), "panic: write on a closed buffer")
	assert.Contains(t, string(out), "created by time.goFunc")
}

// lockedPing is a task that takes the lock of its connection, as a ping
// that writes into the connection's buffer does. entered is closed as the
// run starts, before it waits for the lock.
type lockedPing struct {
	mu      *sync.Mutex
	entered chan struct{}
	done    chan struct{}
}

func (p *lockedPing) Run(*hashedwheel.Timeout) {
	close(p.entered)
	p.mu.Lock()
	defer p.mu.Unlock()
	close(p.done)
}

func TestMigratingCancelResetAndScheduleDoNotWaitForATaskThatWaitsForTheCallersLock(t *testing.T) {
	forEachDriver(t, func(t *testing.T, r *rig) {
		var mu sync.Mutex
		var to hashedwheel.Timeout
		p := &lockedPing{mu: &mu, entered: make(chan struct{}), done: make(chan struct{})}
		mu.Lock() // the connection's Close holds it
		require.NoError(t, r.tm.Schedule(&to, p, 0))
		if r.owned {
			// The owner's loop, on a goroutine of its own here: the run
			// waits for mu inside Advance.
			go func() {
				time.Sleep(time.Until(r.start.Add(jobTick)))
				_, _ = r.tm.Advance(time.Now())
			}()
		}
		<-p.entered // the run is out, and waits (or is about to) for mu
		// No synctest.Wait while the run waits for mu: a goroutine blocked
		// on a sync.Mutex is not durably blocked.
		assert.False(t, to.Cancel(), "handed to run: too late to cancel")
		assert.False(t, to.Reset(time.Second), "not pending: Reset moves nothing")
		assert.NoError(t, r.tm.Schedule(&to, p, time.Hour), "an ended Timeout can be armed again")
		assert.True(t, to.IsPending())
		assert.True(t, to.Cancel(), "the new arm")
		mu.Unlock()
		<-p.done
	}, hashedwheel.WithTickDuration(jobTick))
}

// A client struct of 6,872 bytes that holds pointers, as nats-server's was
// when issue 34 put its ping Timeout in it, and the same with the Timeout
// embedded and by pointer.
type (
	natsClient struct {
		name string
		rest [6872 - 16]byte
	}
	natsClientEmbedded struct {
		natsClient
		ping hashedwheel.Timeout
	}
	natsClientByPointer struct {
		natsClient
		ping *hashedwheel.Timeout // new(hashedwheel.Timeout), made with the client
	}
)

var allocSink any

// allocated returns how many bytes the runtime allocates for a new T: the
// size class that holds it (and its 8-byte header, for an object over 512
// bytes that holds pointers).
func allocated[T any]() uint64 {
	least := ^uint64(0)
	for range 5 { // another goroutine may allocate in between
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		allocSink = new(T)
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	return least
}

func TestMigratingTimeoutInAStructNearASizeClass(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the figures are those of a 64-bit platform")
	}
	assert.Equal(t, uintptr(64), unsafe.Sizeof(hashedwheel.Timeout{}))
	assert.Equal(t, uintptr(6872), unsafe.Sizeof(natsClient{}))
	assert.Equal(t, uintptr(6936), unsafe.Sizeof(natsClientEmbedded{}))
	assert.Equal(t, uintptr(6880), unsafe.Sizeof(natsClientByPointer{}))
	// The client's own fields first, then the Timeout or its pointer.
	assert.Zero(t, unsafe.Offsetof(natsClientEmbedded{}.name))
	assert.Equal(t, uintptr(16), unsafe.Offsetof(natsClientByPointer{}.rest))
	assert.Equal(t, uintptr(6872), unsafe.Offsetof(natsClientEmbedded{}.ping))
	assert.Equal(t, uintptr(6872), unsafe.Offsetof(natsClientByPointer{}.ping))
	assert.Equal(t, uint64(6912), allocated[natsClient](), "6,872 bytes and a header, in the 6,912-byte class")
	assert.Equal(t, uint64(8192), allocated[natsClientEmbedded](), "6,936 and a header: past 6,912, into 8,192")
	assert.Equal(t, uint64(6912), allocated[natsClientByPointer](), "6,880 and a header: still 6,912")
	assert.Equal(t, uint64(64), allocated[hashedwheel.Timeout](), "and the Timeout apart")
}

func TestMigratingTimeoutByPointerIsArmedLikeAnEmbeddedOne(t *testing.T) {
	forEachDriver(t, func(t *testing.T, r *rig) {
		c := &natsClientByPointer{ping: new(hashedwheel.Timeout)}
		p := newProbe(r.start)
		require.NoError(t, r.tm.ScheduleAt(c.ping, p, r.start.Add(time.Second)))
		assert.True(t, c.ping.IsPending())
		r.sleep(2 * time.Second)
		assert.Equal(t, millis(1010), p.runs())
		assert.Equal(t, []*hashedwheel.Timeout{c.ping}, p.timeouts())
	}, hashedwheel.WithTickDuration(jobTick))
}
