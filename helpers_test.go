package hashedwheel_test

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/hashedwheel/hashedwheel"
)

// This file holds what the package's external tests share: TestMain, the
// timers they make, the fake-clock conventions of the 10ms-tick tests, the
// real-clock bound, loggers, recorders and the context helpers.

// TestMain fails the package's tests if a goroutine outlives them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newTimer returns a timer with opts that is stopped when the test ends.
func newTimer(t *testing.T, opts ...hashedwheel.Option) *hashedwheel.Timer {
	t.Helper()
	tm, err := hashedwheel.NewTimer(opts...)
	require.NoError(t, err)
	t.Cleanup(func() { tm.Stop() })
	return tm
}

// mustSchedule schedules f after delay and fails the test on error.
func mustSchedule(t *testing.T, tm *hashedwheel.Timer, delay time.Duration, f func()) *hashedwheel.Timeout {
	t.Helper()
	to, err := tm.AfterFunc(delay, f)
	require.NoError(t, err)
	return to
}

// The tests of guarantees 11-15 (Reset, periodic timeouts, cancel
// callbacks, the task pool, Stats) and 18-20 run on synctest's fake clock,
// exact to the tick. With a 10ms tick, a deadline D (since the timer
// started) runs at the end of its tick: (D/10ms + 1) * 10ms.

const jobTick = 10 * time.Millisecond

// runEnd returns when a timeout with deadline d, since the timer started, runs.
func runEnd(d time.Duration) time.Duration { return (d/jobTick + 1) * jobTick }

// startedTimer returns a started timer with a 10ms tick and a small wheel,
// and the time it started.
func startedTimer(t *testing.T, opts ...hashedwheel.Option) (*hashedwheel.Timer, time.Time) {
	t.Helper()
	opts = append([]hashedwheel.Option{hashedwheel.WithTickDuration(jobTick), hashedwheel.WithTicksPerWheel(8)}, opts...)
	tm := newTimer(t, opts...)
	require.NoError(t, tm.Start())
	return tm, time.Now()
}

// runModes are the three ways a Timer runs tasks: on its worker, on a
// WithTaskWorkers pool, and through a WithTaskExecutor.
var runModes = map[string][]hashedwheel.Option{
	"worker":   nil,
	"pool":     {hashedwheel.WithTaskWorkers(2)},
	"executor": {hashedwheel.WithTaskExecutor(func(task func()) { go task() })},
}

// runLog records when a task ran, in time since start.
type runLog struct {
	start time.Time
	mu    sync.Mutex
	at    []time.Duration
}

func (l *runLog) record() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.at = append(l.at, time.Since(l.start))
}

func (l *runLog) runs() []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Duration(nil), l.at...)
}

// countRunsPerTick returns a task that counts its runs by the tick, since
// now, in which they happen, and the counts of the first four ticks.
func countRunsPerTick(tick time.Duration) (record func(), ranPerTick *[4]atomic.Int64) {
	start := time.Now()
	ranPerTick = new([4]atomic.Int64)
	return func() { ranPerTick[time.Since(start)/tick].Add(1) }, ranPerTick
}

// Tests on the real clock assert "never early" strictly and "not too late"
// loosely, so that a loaded machine cannot fail them.

// lateBound is how late a task may run before a test calls it a failure. A
// tick plus scheduling noise is the norm; a busy CI machine running the race
// detector can stall a goroutine for far longer.
const lateBound = 5 * time.Second

// logBuffer is an io.Writer for a test logger that goroutines may share.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// newLogger returns a logger for a Timer and what it writes.
func newLogger() (*slog.Logger, *logBuffer) {
	var lb logBuffer
	return slog.New(slog.NewTextHandler(&lb, nil)), &lb
}

// cancelRecorder is a CancelledTask that records its calls.
type cancelRecorder struct {
	ran       atomic.Int32
	cancelled chan *hashedwheel.Timeout
}

func (c *cancelRecorder) Run(*hashedwheel.Timeout)          { c.ran.Add(1) }
func (c *cancelRecorder) Cancelled(to *hashedwheel.Timeout) { c.cancelled <- to }

// processCPU returns the CPU time, user plus system, that all threads of the
// process have used, and false where the platform cannot tell; then the
// benchmarks report no CPU metrics. rusage_test.go sets it on Unix.
var processCPU = func() (time.Duration, bool) { return 0, false }

// nopTask is the task of timeouts that never run or whose runs do not
// matter, shared so that no test or benchmark allocates one per timeout.
var nopTask = hashedwheel.TimerFunc(func(*hashedwheel.Timeout) {})

// ctxTick is the tick of the timers of the context tests.
const ctxTick = 10 * time.Millisecond

// withTimeoutFunc is the signature of context.WithTimeout and of
// Timer.WithTimeout.
type withTimeoutFunc = func(context.Context, time.Duration) (context.Context, context.CancelFunc)

// otherContext hides the type of the context it wraps, as a context made by
// another package would.
type otherContext struct{ context.Context }

// isDone reports whether ctx.Done() is closed, without waiting.
func isDone(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return true
	default:
		return false
	}
}

// waitDone waits for ctx to be done, on the real clock, and fails the test
// if it takes more than lateBound.
func waitDone(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	timer := time.NewTimer(lateBound)
	defer timer.Stop()
	select {
	case <-ctx.Done():
	case <-timer.C:
		t.Fatalf("%s: not done after %v", name, lateBound)
	}
}

// requireDoneWith checks that ctx is done, now, with err and cause.
func requireDoneWith(t *testing.T, ctx context.Context, err, cause error) {
	t.Helper()
	require.True(t, isDone(ctx), "context not done")
	assert.Equal(t, err, ctx.Err(), "Err")
	assert.Equal(t, cause, context.Cause(ctx), "Cause")
}

// ctxKey1 and ctxKey2 are context keys of two types, so that keys of equal
// value do not match.
type (
	ctxKey1 int
	ctxKey2 int
)
