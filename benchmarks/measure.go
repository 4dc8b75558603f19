package main

import (
	"runtime"
	"runtime/debug"
	"sync"
	"syscall"
	"time"
)

// usage is what getrusage(RUSAGE_SELF) says of the whole process: every
// thread, so the wheels' own goroutines, the goroutines they start and the
// garbage collector are all counted.
type usage struct {
	cpu time.Duration // user plus system
	// nvcsw counts the times a thread of the process gave up its CPU
	// voluntarily: it went to sleep, to be woken again later.
	nvcsw int64
}

func readUsage() usage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err) // Linux only; the harness says so in its README
	}
	return usage{
		cpu:   time.Duration(ru.Utime.Nano() + ru.Stime.Nano()),
		nvcsw: ru.Nvcsw,
	}
}

// region measures the CPU, wall time, context switches and allocations
// between begin and end.
type region struct {
	u0       usage
	t0       time.Time
	mallocs0 uint64
	bytes0   uint64

	cpu, wall     time.Duration
	nvcsw         int64
	mallocs, byts uint64
}

func (r *region) begin() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r.mallocs0, r.bytes0 = ms.Mallocs, ms.TotalAlloc
	r.t0 = time.Now()
	r.u0 = readUsage()
}

func (r *region) end() {
	u := readUsage()
	r.wall = time.Since(r.t0)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r.cpu = u.cpu - r.u0.cpu
	r.nvcsw = u.nvcsw - r.u0.nvcsw
	r.mallocs = ms.Mallocs - r.mallocs0
	r.byts = ms.TotalAlloc - r.bytes0
}

// perOp returns the region's figures per operation.
func (r *region) perOp(ops int) map[string]float64 {
	n := float64(ops)
	return map[string]float64{
		"cpu_ns_op":  float64(r.cpu.Nanoseconds()) / n,
		"wall_ns_op": float64(r.wall.Nanoseconds()) / n,
		"allocs_op":  float64(r.mallocs) / n,
		"bytes_op":   float64(r.byts) / n,
	}
}

// liveHeap returns the bytes of heap objects reachable after a full GC.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// settle collects garbage, returns freed memory to the OS, makes every P run
// its scheduler once (the runtime deletes stopped time.Timers lazily, when
// their P next schedules) and waits, for at most half a second, until the
// process uses almost no CPU. A wheel that works every tick never gets
// there; that is what the idle figures then show.
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
		before := readUsage()
		time.Sleep(20 * time.Millisecond)
		if readUsage().cpu-before.cpu < time.Millisecond {
			return
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
