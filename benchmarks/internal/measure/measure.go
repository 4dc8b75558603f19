// Package measure reads what a benchmark process costs: the CPU time and
// voluntary context switches of the whole process (getrusage), the CPU time
// of one thread, allocations and garbage collections over a window, and
// live memory. It runs on Linux only, as the benchmarks' README says.
package measure

import (
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Usage is what getrusage(RUSAGE_SELF) says of the whole process: every
// thread, so the timers' own goroutines, the goroutines they start and the
// garbage collector are all counted.
type Usage struct {
	CPU time.Duration // user plus system
	// Nvcsw counts the times a thread of the process gave up its CPU
	// voluntarily: it went to sleep, to be woken again later.
	Nvcsw int64
}

// ReadUsage returns the process's usage so far.
func ReadUsage() Usage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err) // Linux only, as the README says
	}
	return Usage{
		CPU:   time.Duration(ru.Utime.Nano() + ru.Stime.Nano()),
		Nvcsw: ru.Nvcsw,
	}
}

// ThreadCPU returns the CPU time of the calling OS thread; the goroutine
// must be locked to it (runtime.LockOSThread) for the difference of two
// readings to mean anything.
func ThreadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		panic(err)
	}
	return time.Duration(ts.Nano())
}

// Window measures the process's CPU, wall time, voluntary context switches,
// allocations and garbage collections between Begin and End. The figures
// are set by End.
type Window struct {
	u0       Usage
	t0       time.Time
	mallocs0 uint64
	bytes0   uint64
	gcs0     uint32

	CPU, Wall time.Duration
	Nvcsw     int64  // voluntary context switches: see Usage
	Mallocs   uint64 // heap objects allocated
	Bytes     uint64 // heap bytes allocated
	GCs       uint32 // garbage collections completed
}

// Begin starts the window.
func (w *Window) Begin() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	w.mallocs0, w.bytes0, w.gcs0 = ms.Mallocs, ms.TotalAlloc, ms.NumGC
	w.t0 = time.Now()
	w.u0 = ReadUsage()
}

// End ends the window and sets its figures.
func (w *Window) End() {
	u := ReadUsage()
	w.Wall = time.Since(w.t0)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	w.CPU = u.CPU - w.u0.CPU
	w.Nvcsw = u.Nvcsw - w.u0.Nvcsw
	w.Mallocs = ms.Mallocs - w.mallocs0
	w.Bytes = ms.TotalAlloc - w.bytes0
	w.GCs = ms.NumGC - w.gcs0
}

// Elapsed returns the wall time since Begin, before End.
func (w *Window) Elapsed() time.Duration { return time.Since(w.t0) }

// Cores is the CPU the window used per second of wall time.
func (w *Window) Cores() float64 { return w.CPU.Seconds() / w.Wall.Seconds() }

// LiveMemory returns the bytes of heap objects reachable after a full GC,
// and the bytes of goroutine stacks in use.
func LiveMemory() (heap, stacks uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc, ms.StackInuse
}

// Millis returns d in milliseconds.
func Millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
