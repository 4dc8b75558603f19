package hashedwheel_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
)

// BenchmarkWithTimeout makes a context with a deadline 30s away and cancels
// it, on one goroutine: Timer.WithTimeout against context.WithTimeout, with a
// Background parent, with a parent from context.WithCancel, and with Done
// called in between (which makes the Done channel, and links the context to
// a cancellable parent). As in ScheduleCancel, the wheel's timed region ends
// once its worker has processed every timeout.
func BenchmarkWithTimeout(b *testing.B) {
	for _, p := range []struct {
		name      string
		cancelled bool // parent from context.WithCancel, not Background
		done      bool // call Done before cancel
	}{
		{"parent=Background", false, false},
		{"parent=WithCancel", true, false},
		{"parent=Background,Done", false, true},
		{"parent=WithCancel,Done", true, true},
	} {
		b.Run(p.name, func(b *testing.B) {
			parent := context.Background()
			if p.cancelled {
				var cancel context.CancelFunc
				parent, cancel = context.WithCancel(parent)
				defer cancel()
			}
			b.Run("hashedwheel.WithTimeout", func(b *testing.B) {
				tm := newBenchTimer(b, benchTick)
				defer tm.Stop()
				benchOps(b, tm, 1, withTimeoutCancel(tm.WithTimeout, parent, p.done))
			})
			b.Run("context.WithTimeout", func(b *testing.B) {
				benchOps(b, nil, 1, withTimeoutCancel(context.WithTimeout, parent, p.done))
			})
		})
	}
}

func withTimeoutCancel(withTimeout withTimeoutFunc, parent context.Context, done bool) func() error {
	return func() error {
		ctx, cancel := withTimeout(parent, cancelDelay)
		if done {
			select {
			case <-ctx.Done():
				cancel()
				return errors.New("a context 30s away was done at once")
			default:
			}
		}
		cancel()
		return nil
	}
}

// BenchmarkLiveContexts holds 1e5 contexts with a deadline an hour away and
// reports the live heap (B/ctx) and the goroutines (goroutines/ctx) per
// context, with a Background parent and, with Done called, with a parent from
// context.WithCancel. Each iteration is one full measurement, on a timer of
// its own, started, like the slices that hold the contexts and cancel
// functions, before the baseline is read; the timed region is making the
// contexts.
func BenchmarkLiveContexts(b *testing.B) {
	const n = 100_000
	for _, p := range []struct {
		name      string
		cancelled bool
	}{
		{"parent=Background", false},
		{"parent=WithCancel,Done", true},
	} {
		b.Run(p.name, func(b *testing.B) {
			parent := context.Background()
			if p.cancelled {
				var cancel context.CancelFunc
				parent, cancel = context.WithCancel(parent)
				defer cancel()
			}
			ctxs := make([]context.Context, n)
			cancels := make([]context.CancelFunc, n)
			pend := func(withTimeout withTimeoutFunc) {
				for i := range n {
					ctxs[i], cancels[i] = withTimeout(parent, farDelay(i, n))
					if p.cancelled {
						ctxs[i].Done()
					}
				}
			}
			cancelAll := func() {
				for i := range n {
					cancels[i]()
				}
				clear(ctxs)
				clear(cancels)
			}
			b.Run("hashedwheel.WithTimeout", func(b *testing.B) {
				liveContexts(b, n, func() (pendAll, stop func()) {
					tm := newBenchTimer(b, benchTick)
					return func() { pend(tm.WithTimeout) }, func() {
						cancelAll()
						tm.Stop()
					}
				})
			})
			b.Run("context.WithTimeout", func(b *testing.B) {
				liveContexts(b, n, func() (pendAll, stop func()) {
					return func() { pend(context.WithTimeout) }, func() {
						cancelAll()
						settle() // let the runtime delete the stopped timers
					}
				})
			})
		})
	}
}

// liveContexts runs b.N measurements of the live heap and the goroutines
// that the n contexts made by the pend of each newRun add. newRun makes what
// the contexts need (a started timer) before the baseline is read, so that
// only the contexts are counted; stop cancels them.
func liveContexts(b *testing.B, n int, newRun func() (pend, stop func())) {
	b.ReportAllocs()
	var heap uint64
	var goroutines int
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		pend, stop := newRun()
		before, g := liveHeap(), runtime.NumGoroutine()
		b.StartTimer()
		pend()
		b.StopTimer()
		heap += liveHeap() - before
		goroutines += runtime.NumGoroutine() - g
		stop()
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(heap)/float64(b.N*n), "B/ctx")
	b.ReportMetric(float64(goroutines)/float64(b.N*n), "goroutines/ctx")
}

func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
