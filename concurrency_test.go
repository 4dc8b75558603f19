package hashedwheel_test

import (
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

// TestGuarantee2ConcurrentScheduleCancelAndStopAccountForEveryTimeout runs producers,
// cancellers and a Stop at once on the real clock, then checks that every
// timeout ended in exactly one way: its task ran exactly once and not early,
// or it was cancelled by one Cancel, or it was returned by Stop. Nothing is
// lost and nothing runs twice.
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
