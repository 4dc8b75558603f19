package hashedwheel_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hashedwheel/hashedwheel"
)

// These tests hold guarantee 17: a context's deadline is never lost, on a
// stopped timer, at the pending limit, when the timer stops while it is
// pending, or when tasks and executors hold up the wheel.

func TestGuarantee17StopKeepsThePendingContextsDeadline(t *testing.T) {
	// Guarantee 17: the context's timeout is pending, Stop cancels and
	// returns it, and the context is still done exactly at its deadline.
	synctest.Test(t, func(t *testing.T) {
		tm, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(ctxTick))
		require.NoError(t, err)
		start := time.Now()
		ctx, cancel := tm.WithTimeout(context.Background(), 95*time.Millisecond)
		defer cancel()
		ctx.Done()
		other, cancelOther := tm.WithTimeout(context.Background(), time.Hour)
		require.Equal(t, int64(2), tm.PendingTimeouts())
		time.Sleep(40 * time.Millisecond)

		stopped := tm.Stop()
		require.Len(t, stopped, 2)
		for _, to := range stopped {
			assert.True(t, to.IsCancelled())
		}
		assert.Zero(t, tm.PendingTimeouts())
		require.False(t, isDone(ctx), "Stop made the context done")

		time.Sleep(55*time.Millisecond - time.Nanosecond)
		synctest.Wait()
		require.False(t, isDone(ctx), "done before its deadline")
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		requireDoneWith(t, ctx, context.DeadlineExceeded, context.DeadlineExceeded)
		assert.Equal(t, 95*time.Millisecond, time.Since(start))

		// A context cancelled after Stop releases its runtime timer: the
		// bubble would not end with it pending an hour.
		cancelOther()
		requireDoneWith(t, other, context.Canceled, context.Canceled)
	})
}

// TestGuarantee17StopHandsAStackOfContextsToTheRuntimesTimer: inside a
// bubble, Stop returns the timeouts of a wheel context and of its wheel
// child, and the child, whose Done a goroutine waits on (a durable block),
// is still done exactly at its deadline.
func TestGuarantee17StopHandsAStackOfContextsToTheRuntimesTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, _ := hashedwheel.NewTimer(hashedwheel.WithTickDuration(ctxTick))
		start := time.Now()
		root, cancelRoot := context.WithCancel(context.Background())
		defer cancelRoot()
		mid, c1 := tm.WithTimeout(root, 2*time.Hour)
		defer c1()
		leaf, c2 := tm.WithTimeout(mid, time.Hour)
		defer c2()
		got := make(chan time.Duration)
		go func() { <-leaf.Done(); got <- time.Since(start) }()
		synctest.Wait()
		if n := len(tm.Stop()); n != 2 {
			t.Errorf("Stop returned %d", n)
		}
		if d := <-got; d != time.Hour {
			t.Errorf("leaf done after %v", d)
		}
	})
}

func TestGuarantee17StoppedTimerKeepsTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(ctxTick))
		require.NoError(t, err)
		tm.Stop()
		start := time.Now()
		ctx, cancel := tm.WithTimeout(context.Background(), 25*time.Millisecond)
		defer cancel()
		dl, _ := ctx.Deadline()
		assert.True(t, dl.Equal(start.Add(25*time.Millisecond)))
		<-ctx.Done()
		assert.Equal(t, 25*time.Millisecond, time.Since(start), "the runtime's timer is exact")
		assert.Equal(t, context.DeadlineExceeded, ctx.Err())

		ctx, cancel = tm.WithDeadline(context.Background(), time.Now().Add(time.Hour))
		cancel()
		assert.Equal(t, context.Canceled, ctx.Err())
	})
}

func TestGuarantee17PendingLimitKeepsTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t, hashedwheel.WithTickDuration(ctxTick), hashedwheel.WithMaxPendingTimeouts(1))
		start := time.Now()
		first, cancelFirst := tm.WithTimeout(context.Background(), time.Hour)
		defer cancelFirst()
		ctx, cancel := tm.WithTimeout(context.Background(), 25*time.Millisecond)
		defer cancel()
		assert.Equal(t, int64(1), tm.PendingTimeouts(), "the second context is kept off the wheel")
		<-ctx.Done()
		assert.Equal(t, 25*time.Millisecond, time.Since(start))
		assert.Equal(t, context.DeadlineExceeded, ctx.Err())
		assert.False(t, isDone(first))
	})
}

func TestGuarantee17StopRacingContexts(t *testing.T) {
	// Contexts made and cancelled while another goroutine stops the timer
	// all end done, with the error they should have, and no timeout is
	// left behind.
	for range 20 {
		tm, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(time.Millisecond))
		require.NoError(t, err)
		var wg sync.WaitGroup
		ctxs := make([]context.Context, 200)
		cancels := make([]context.CancelFunc, len(ctxs))
		wg.Go(func() {
			for i := range ctxs {
				ctxs[i], cancels[i] = tm.WithTimeout(context.Background(), time.Duration(i%5)*time.Millisecond)
				if i%3 == 0 {
					cancels[i]()
				}
			}
		})
		tm.Stop()
		wg.Wait()
		for i, ctx := range ctxs {
			waitDone(t, ctx, fmt.Sprint("context ", i))
			if i%3 != 0 && i%5 != 0 {
				assert.Equal(t, context.DeadlineExceeded, ctx.Err(), "context %d", i)
			}
			cancels[i]()
		}
		assert.Zero(t, tm.PendingTimeouts())
	}
}

// TestGuarantee17ContextIsDoneAtItsDeadlineWhileStopWaitsForThePool: a context
// pending when Stop is called falls back to the runtime's timer at once, and
// is done at its deadline even though Stop waits for a pooled task that runs
// long after it.
func TestGuarantee17ContextIsDoneAtItsDeadlineWhileStopWaitsForThePool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTimer(t, hashedwheel.WithTickDuration(10*time.Millisecond), hashedwheel.WithTaskWorkers(1))
		start := time.Now()
		// Runs on the pool from 100ms to 1.1s.
		mustSchedule(t, tm, 95*time.Millisecond, func() { time.Sleep(time.Second) })
		ctx, cancel := tm.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()

		time.Sleep(200 * time.Millisecond)
		stopped := make(chan []*hashedwheel.Timeout)
		go func() { stopped <- tm.Stop() }()

		<-ctx.Done()
		assert.Equal(t, 300*time.Millisecond, time.Since(start), "when the context was done")
		assert.ErrorIs(t, ctx.Err(), context.DeadlineExceeded)
		require.Len(t, <-stopped, 1, "Stop returns the context's timeout")
		assert.Equal(t, 1100*time.Millisecond, time.Since(start), "Stop returns when the pooled task has")
	})
}

// TestGuarantee17RunningTheTimeoutsStopReturnsEndsNoContext: Stop hands out
// the contexts' timeouts; running their tasks, as one does with Netty's
// unprocessed timeouts, must not end the contexts before their deadlines.
func TestGuarantee17RunningTheTimeoutsStopReturnsEndsNoContext(t *testing.T) {
	tm, err := hashedwheel.NewTimer(hashedwheel.WithTickDuration(ctxTick))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := tm.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	for _, to := range tm.Stop() {
		to.Task().Run(to) // flush what was pending
	}
	if err := ctx.Err(); err != nil {
		dl, _ := ctx.Deadline()
		t.Fatalf("context due in %v is done with %v", time.Until(dl).Round(time.Minute), err)
	}
}

// TestGuarantee17PanickingExecutorDoesNotLoseADeadline: an executor that
// fails once (a closed pool, say) must not lose a context's deadline.
func TestGuarantee17PanickingExecutorDoesNotLoseADeadline(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	exec := func(task func()) {
		if fail.Swap(false) {
			panic("pool closed")
		}
		go task()
	}
	tm := newTimer(t, hashedwheel.WithTickDuration(ctxTick), hashedwheel.WithTaskExecutor(exec))
	ctx, cancel := tm.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	done := ctx.Done()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatalf("20ms context not done after 2s; PendingTimeouts=%d", tm.PendingTimeouts())
	}
}

// TestGuarantee17DeadlineIsNotQueuedBehindAPooledTask: with
// WithTaskWorkers(1), a pooled task that waits for a wheel context must see
// it done; were the deadline a task queued behind it, it would deadlock.
func TestGuarantee17DeadlineIsNotQueuedBehindAPooledTask(t *testing.T) {
	tm := newTimer(t, hashedwheel.WithTickDuration(ctxTick), hashedwheel.WithTaskWorkers(1))
	res := make(chan error, 1)
	_, err := tm.AfterFunc(0, func() {
		ctx, cancel := tm.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		<-ctx.Done() // a write bounded by a deadline, say
		res <- ctx.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-res:
		t.Logf("done with %v", err)
	case <-time.After(3 * time.Second):
		t.Fatal("the pooled task's 50ms context is not done after 3s")
	}
}

// TestGuarantee17DeadlineDoesNotWaitForABusyExecutor: the executor is the
// user's, and may be busy; a context's deadline must not wait for it.
func TestGuarantee17DeadlineDoesNotWaitForABusyExecutor(t *testing.T) {
	sem := make(chan struct{}, 1)
	exec := func(task func()) { sem <- struct{}{}; go func() { defer func() { <-sem }(); task() }() }
	tm := newTimer(t, hashedwheel.WithTickDuration(ctxTick), hashedwheel.WithTaskExecutor(exec))
	res := make(chan error, 1)
	_, err := tm.AfterFunc(0, func() {
		ctx, cancel := tm.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		select {
		case <-ctx.Done():
			res <- ctx.Err()
		case <-time.After(3 * time.Second):
			res <- errors.New("not done after 3s")
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-res; err != context.DeadlineExceeded {
		t.Fatal(err)
	}
}
