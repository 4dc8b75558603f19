package hashedwheel_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hashedwheel/hashedwheel"
)

// BenchmarkScheduleFromTask runs tasks that each schedule their own Timeout
// again from inside their run, a tick later, as a connection's timeout does
// when it looks at the connection and decides when to look again: up to
// fromTaskTimeouts of them on one Timer, b.N runs in all, an op being one
// run. It reports the process CPU per run (cpu-ns/op, the worker included)
// and the allocations per run (allocs/op, the runtime's count, which
// includes whatever else the process allocates meanwhile); ns/op is the wall
// time per run, which the tick sets, not the cost.
//
//   - hashedwheel.Schedule: the task calls Schedule on its own Timeout, a
//     field of the struct that is also the task, and allocates nothing.
//   - hashedwheel: the task makes a new Timeout with NewTimeout, as it had to
//     before Schedule (a Timeout that ran could not be armed again).
//   - time.AfterFunc: the function re-arms its own timer with Reset; each
//     fire runs it on a goroutine of its own.
func BenchmarkScheduleFromTask(b *testing.B) {
	b.Run("hashedwheel.Schedule", func(b *testing.B) {
		tm := newBenchTimer(b, benchTick)
		defer tm.Stop()
		runs := newFromTaskRuns(b)
		tasks := make([]scheduleFromTask, runs.timeouts)
		for i := range tasks {
			tasks[i] = scheduleFromTask{tm: tm, runs: runs}
		}
		runs.measure(b, func() {
			for i := range tasks {
				require.NoError(b, tm.Schedule(&tasks[i].to, &tasks[i], fromTaskDelay(i, len(tasks))))
			}
		})
	})
	b.Run("hashedwheel", func(b *testing.B) {
		tm := newBenchTimer(b, benchTick)
		defer tm.Stop()
		runs := newFromTaskRuns(b)
		var task hashedwheel.TimerFunc
		task = func(*hashedwheel.Timeout) {
			if runs.next() {
				if _, err := tm.NewTimeout(task, benchTick); err != nil {
					runs.fail(err)
				}
			}
		}
		runs.measure(b, func() {
			for i := range runs.timeouts {
				_, err := tm.NewTimeout(task, fromTaskDelay(i, runs.timeouts))
				require.NoError(b, err)
			}
		})
	})
	b.Run("time.AfterFunc", func(b *testing.B) {
		runs := newFromTaskRuns(b)
		timers := make([]*time.Timer, runs.timeouts)
		defer stopAll(timers)
		runs.measure(b, func() {
			for i := range timers {
				var t *time.Timer
				t = time.AfterFunc(time.Hour, func() {
					if runs.next() {
						t.Reset(benchTick)
					}
				})
				timers[i] = t
				// Reset orders the write of t above before the runs.
				t.Reset(fromTaskDelay(i, len(timers)))
			}
		})
	})
}

// fromTaskTimeouts is how many timeouts BenchmarkScheduleFromTask keeps
// re-arming, at most: about a million runs a second at a 10ms tick.
const fromTaskTimeouts = 10_000

// fromTaskDelay is the first delay of the i-th of n timeouts: spread over
// two ticks, where their runs keep them, each due a tick after it ran.
func fromTaskDelay(i, n int) time.Duration {
	return time.Duration(i) * 2 * benchTick / time.Duration(n)
}

// scheduleFromTask is a task that schedules its own Timeout, to, again from
// its run, until runs says stop.
type scheduleFromTask struct {
	to   hashedwheel.Timeout
	tm   *hashedwheel.Timer
	runs *fromTaskRuns
}

func (t *scheduleFromTask) Run(*hashedwheel.Timeout) {
	if t.runs.next() {
		if err := t.tm.Schedule(&t.to, t, benchTick); err != nil {
			t.runs.fail(err)
		}
	}
}

// fromTaskRuns counts the runs of one round of BenchmarkScheduleFromTask,
// b.N of them, and ends the round at the last.
type fromTaskRuns struct {
	timeouts int // re-armed: fromTaskTimeouts, or b.N if fewer
	left     atomic.Int64
	done     chan struct{}
	once     sync.Once
	err      error // set before done is closed
}

func newFromTaskRuns(b *testing.B) *fromTaskRuns {
	r := &fromTaskRuns{timeouts: min(b.N, fromTaskTimeouts), done: make(chan struct{})}
	r.left.Store(int64(b.N))
	return r
}

// next counts a run and reports whether its task is to re-arm: false for
// the b.N-th run, which ends the round, and for any run after it.
func (r *fromTaskRuns) next() bool {
	n := r.left.Add(-1)
	if n == 0 {
		r.end(nil)
	}
	return n > 0
}

// fail ends the round with err: a task could not re-arm.
func (r *fromTaskRuns) fail(err error) { r.end(err) }

func (r *fromTaskRuns) end(err error) {
	r.once.Do(func() {
		r.err = err
		close(r.done)
	})
}

// measure starts the timeouts with start and times the runs until the b.N-th,
// or the first failure.
func (r *fromTaskRuns) measure(b *testing.B, start func()) {
	b.ReportAllocs()
	var cpu cpuMeter
	b.ResetTimer()
	cpu.start()
	start()
	<-r.done
	b.StopTimer()
	cpu.stop()
	require.NoError(b, r.err, "a task could not schedule its timeout again")
	cpu.report(b, "cpu-ns/op", time.Nanosecond, float64(b.N))
}
