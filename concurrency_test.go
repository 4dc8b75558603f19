package hashedwheel_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hashedwheel/hashedwheel"
)

// recordingTask counts its runs and whether any was early.
type recordingTask struct {
	runs  atomic.Int32
	early atomic.Bool
}

func (r *recordingTask) Run(to *hashedwheel.Timeout) {
	if time.Now().Before(to.Deadline()) {
		r.early.Store(true)
	}
	r.runs.Add(1)
}

// TestGuarantee2ConcurrentScheduleCancelAndStopAccountForEveryTimeout runs
// producers, cancellers and a Stop at once on the real clock, then checks that
// every timeout ended in exactly one way: its task ran exactly once and not
// early, or it was cancelled by one Cancel, or it was returned by Stop.
// Nothing is lost and nothing runs twice.
func TestGuarantee2ConcurrentScheduleCancelAndStopAccountForEveryTimeout(t *testing.T) {
	const producers, perProducer = 8, 3000
	tm, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(time.Millisecond), hashedwheel.WithTicksPerWheel(64))
	require.NoError(t, err)

	type scheduled struct {
		to   *hashedwheel.Timeout
		task *recordingTask
	}
	var (
		mu            sync.Mutex
		created       []scheduled
		userCancelled atomic.Int64
		rejected      atomic.Int64
	)
	toCancel := make(chan *hashedwheel.Timeout, 1024)
	var producersWG, cancellersWG sync.WaitGroup
	halfway := make(chan struct{})
	var made atomic.Int64
	for p := range producers {
		producersWG.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(p), 1))
			for range perProducer {
				task := &recordingTask{}
				to, err := tm.NewTimeout(task, time.Duration(rng.IntN(20_000))*time.Microsecond)
				if err != nil {
					if !assert.ErrorIs(t, err, hashedwheel.ErrTimerStopped) {
						return
					}
					rejected.Add(1)
					continue
				}
				mu.Lock()
				created = append(created, scheduled{to, task})
				mu.Unlock()
				if rng.IntN(2) == 0 {
					toCancel <- to
				}
				if made.Add(1) == producers*perProducer/2 {
					close(halfway)
				}
			}
		})
	}
	for range 2 {
		cancellersWG.Go(func() {
			for to := range toCancel {
				if to.Cancel() {
					userCancelled.Add(1)
				}
			}
		})
	}

	<-halfway
	stopped := tm.Stop()
	producersWG.Wait()
	close(toCancel)
	cancellersWG.Wait()

	stoppedSet := make(map[*hashedwheel.Timeout]bool, len(stopped))
	for _, to := range stopped {
		stoppedSet[to] = true
	}
	var expired, cancelled int64
	for _, s := range created {
		runs := s.task.runs.Load()
		switch {
		case s.to.IsExpired():
			expired++
			assert.Equal(t, int32(1), runs, "an expired timeout's task must run exactly once")
			assert.False(t, stoppedSet[s.to], "Stop returned an expired timeout")
		case s.to.IsCancelled():
			cancelled++
			assert.Zero(t, runs, "a cancelled timeout's task ran")
		default:
			t.Errorf("timeout neither expired nor cancelled after Stop: %v", s.to)
		}
		assert.False(t, s.task.early.Load(), "a task ran before its deadline")
	}
	assert.Equal(t, int64(len(created)), expired+cancelled)
	assert.Equal(t, cancelled, userCancelled.Load()+int64(len(stopped)),
		"every cancelled timeout was cancelled by exactly one Cancel or by Stop")
	assert.Equal(t, int64(producers*perProducer), int64(len(created))+rejected.Load())
	assert.Zero(t, tm.PendingTimeouts())
	t.Logf("created %d: expired %d, cancelled %d by Cancel and %d by Stop; rejected after Stop %d",
		len(created), expired, userCancelled.Load(), len(stopped), rejected.Load())
}

// TestGuarantee9EveryMethodIsSafeForConcurrentUse calls every method of a
// Timer, of its Timeouts and of its contexts from many goroutines at once, on
// the real clock, each goroutine on the timeouts of the others as well as on
// its own, with two Stops racing the last calls; -race checks the accesses.
// Every one-shot timeout then ended expired, its task run once, or
// cancelled, its task never run; every periodic one is cancelled.
func TestGuarantee9EveryMethodIsSafeForConcurrentUse(t *testing.T) {
	tm, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(time.Millisecond), hashedwheel.WithTicksPerWheel(64))
	require.NoError(t, err)
	type entry struct {
		to       *hashedwheel.Timeout
		periodic bool
		runs     atomic.Int32
	}
	const goroutines, each = 8, 500
	var (
		mu    sync.Mutex // guards all
		all   []*entry
		made  atomic.Int64
		wg    sync.WaitGroup
		stops sync.WaitGroup
	)
	for g := range goroutines {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			for i := range each {
				e := &entry{periodic: i%4 >= 2}
				delay := time.Duration(rng.IntN(5)) * time.Millisecond
				var err error
				switch i % 4 {
				case 0:
					e.to, err = tm.AfterFunc(delay, func() { e.runs.Add(1) })
				case 1:
					e.to, err = tm.NewTimeout(hashedwheel.TimerFunc(func(*hashedwheel.Timeout) { e.runs.Add(1) }), delay)
				case 2:
					e.to, err = tm.Every(delay+time.Millisecond, func() { e.runs.Add(1) })
				case 3:
					e.to, err = tm.NewPeriodicTimeout(hashedwheel.TimerFunc(func(*hashedwheel.Timeout) {}), time.Hour)
				}
				if errors.Is(err, hashedwheel.ErrTimerStopped) {
					continue
				}
				require.NoError(t, err)
				mu.Lock()
				all = append(all, e)
				other := all[rng.IntN(len(all))]
				mu.Unlock()
				if made.Add(1) == goroutines*each/2 {
					stops.Go(func() { tm.Stop() })
					stops.Go(func() { tm.Stop() })
				}
				for _, to := range []*hashedwheel.Timeout{e.to, other.to} {
					switch rng.IntN(4) {
					case 0:
						to.Reset(time.Duration(rng.IntN(5)) * time.Millisecond)
					case 1:
						to.Cancel()
					case 2:
						_, _, _, _ = to.IsExpired(), to.IsCancelled(), to.Deadline(), to.String()
						_, _ = to.Timer(), to.Task()
					}
				}
				_, _, _, _ = tm.PendingTimeouts(), tm.Stats(), tm.TickDuration(), tm.TicksPerWheel()
				_ = tm.Start()
				ctx, cancel := tm.WithTimeout(context.Background(), delay)
				ctx2, cancel2 := tm.WithDeadline(ctx, time.Now().Add(time.Hour))
				go cancel()
				<-ctx2.Done()
				cancel2()
			}
		})
	}
	wg.Wait()
	stops.Wait()
	assert.Nil(t, tm.Stop(), "a Stop after Stop returned timeouts")
	for i, e := range all {
		switch runs := e.runs.Load(); {
		case e.periodic:
			assert.True(t, e.to.IsCancelled() && !e.to.IsExpired(), "periodic timeout %d not cancelled after Stop", i)
		case e.to.IsExpired():
			assert.Equal(t, int32(1), runs, "timeout %d expired but ran %d times", i, runs)
		case e.to.IsCancelled():
			assert.Zero(t, runs, "timeout %d cancelled but ran", i)
		default:
			t.Errorf("timeout %d neither expired nor cancelled after Stop", i)
		}
	}
	assert.Zero(t, tm.PendingTimeouts())
}

// TestGuarantee9TaskAndStringAreSafeWhileTheTimeoutIsArmedAgain: a
// Timeout that its own task schedules again, with another task each time,
// while other goroutines log it (String, as %v does) and read its Task: the
// race detector checks the accesses, and Task is always one of the arms'
// tasks.
func TestGuarantee9TaskAndStringAreSafeWhileTheTimeoutIsArmedAgain(t *testing.T) {
	for name, opts := range map[string][]hashedwheel.Option{
		"worker": nil,
		"pool":   {hashedwheel.WithTaskWorkers(2)},
	} {
		t.Run(name, func(t *testing.T) {
			tm := newTimer(t, append([]hashedwheel.Option{hashedwheel.WithTickDuration(time.Millisecond)}, opts...)...)
			var s session
			var runs atomic.Int32
			done := make(chan struct{})
			var tasks [2]hashedwheel.TimerFunc
			for i := range tasks {
				tasks[i] = func(to *hashedwheel.Timeout) {
					if runs.Add(1) == 200 {
						close(done)
						return
					}
					if err := tm.Schedule(to, tasks[1-i], 0); err != nil {
						t.Errorf("re-arm from its own run: %v", err)
					}
				}
			}
			require.NoError(t, tm.Schedule(&s.timeout, tasks[0], 0))
			var wg sync.WaitGroup
			for range 2 {
				wg.Go(func() {
					for {
						select {
						case <-done:
							return
						default:
						}
						_ = s.timeout.String()
						task, ok := s.timeout.Task().(hashedwheel.TimerFunc)
						if !ok || !sameTask(task, tasks[0]) && !sameTask(task, tasks[1]) {
							t.Errorf("Task returned %v, not an arm's task", s.timeout.Task())
							return
						}
					}
				})
			}
			wg.Wait()
		})
	}
}
