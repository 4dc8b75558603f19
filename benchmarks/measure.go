package main

import (
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/hashedwheel/hashedwheel/benchmarks/internal/measure"
)

// The workloads measure with measure.Window: getrusage(RUSAGE_SELF) of the
// whole process, so the wheels' own goroutines, the goroutines they start
// and the garbage collector are all counted.

// perOp returns the window's figures per operation.
func perOp(r *measure.Window, ops int) map[string]float64 {
	n := float64(ops)
	return map[string]float64{
		"cpu_ns_op":  float64(r.CPU.Nanoseconds()) / n,
		"wall_ns_op": float64(r.Wall.Nanoseconds()) / n,
		"allocs_op":  float64(r.Mallocs) / n,
		"bytes_op":   float64(r.Bytes) / n,
	}
}

// settle collects garbage, returns freed memory to the OS, makes every P run
// its scheduler once (the runtime deletes stopped time.Timers lazily, when
// their P next schedules) and waits, for at most half a second, until the
// process uses almost no CPU. A wheel that works every tick never gets
// there; that is what the idle figures then show. The root module's
// benchmarks have the same settle, in bench_test.go; keep them alike.
func settle() {
	debug.FreeOSMemory()
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for end := time.Now().Add(10 * time.Millisecond); time.Now().Before(end); {
				runtime.Gosched()
			}
		})
	}
	wg.Wait()
	for range 25 {
		before := measure.ReadUsage()
		time.Sleep(20 * time.Millisecond)
		if measure.ReadUsage().CPU-before.CPU < time.Millisecond {
			return
		}
	}
}
