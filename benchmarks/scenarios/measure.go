package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/pprof/profile"

	"github.com/hashedwheel/hashedwheel/benchmarks/internal/measure"
	"github.com/hashedwheel/hashedwheel/benchmarks/internal/stats"
)

func nsPer(d time.Duration, n int64) float64 {
	if n <= 0 {
		return math.NaN()
	}
	return float64(d.Nanoseconds()) / float64(n)
}

// latenessFigures summarizes lateness samples (ms) under a name prefix:
// p50, p99 and max, and how many there were.
func latenessFigures(m map[string]float64, prefix string, late []float64) {
	s := slices.Clone(late)
	slices.Sort(s)
	m[prefix+"_n"] = float64(len(s))
	if len(s) == 0 {
		return
	}
	m[prefix+"_p50_ms"] = stats.Quantile(s, 0.5)
	m[prefix+"_p99_ms"] = stats.Quantile(s, 0.99)
	m[prefix+"_max_ms"] = s[len(s)-1]
}

// profiler records a CPU profile of this process in memory.
type profiler struct {
	buf bytes.Buffer
	// name, if set, is the file the profile is also written to, in the
	// directory that -profiles gave (for go tool pprof).
	name string
}

// profilesEnv passes -profiles on to the role processes.
const profilesEnv = "SCENARIOS_PROFILES"

// profileHz is the sampling rate of the scenarios' CPU profiles: twice the
// default, so that a share of a few percent rests on more samples. Not
// more: Linux fires a thread's CPU timer at most once per kernel tick
// (250 Hz here), and at 500 Hz half the samples were lost. Every variant is
// profiled alike, so the profiler's own cost (well under 1% of the CPU) is
// the same for all.
const profileHz = 200

func (p *profiler) start() error {
	// SetCPUProfileRate before StartCPUProfile sets the rate; the runtime
	// then warns once on stderr that it cannot set it again.
	runtime.SetCPUProfileRate(profileHz)
	return pprof.StartCPUProfile(&p.buf)
}

// stop ends the profile and returns the share of its samples, weighted by
// CPU time, that timer code took, the number of samples, and the CPU time
// they stand for.
func (p *profiler) stop() (share float64, samples int, sampled time.Duration, err error) {
	pprof.StopCPUProfile()
	if dir := os.Getenv(profilesEnv); dir != "" && p.name != "" {
		file := filepath.Join(dir, fmt.Sprintf("%s-%d.pprof", p.name, os.Getpid()))
		if err := os.WriteFile(file, p.buf.Bytes(), 0o644); err != nil {
			return 0, 0, 0, err
		}
	}
	prof, err := profile.Parse(&p.buf)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("reading the CPU profile: %w", err)
	}
	var total, timer int64
	cpuIdx := len(prof.SampleType) - 1 // "cpu", nanoseconds
	for _, s := range prof.Sample {
		v := s.Value[cpuIdx]
		total += v
		samples++
		if isTimerWork(s) {
			timer += v
		}
	}
	if total == 0 {
		return 0, samples, 0, nil
	}
	return float64(timer) / float64(total), samples, time.Duration(total), nil
}

// profiledWindow is a measured window with a CPU profile over it: the
// process's figures, and the share of its CPU that timer code took.
type profiledWindow struct {
	measure.Window
	prof    profiler
	share   float64       // of the profile's CPU, timer code's
	samples int           // in the profile
	sampled time.Duration // the CPU time the samples stand for
}

// begin starts the profile, named name (see profiler), sets measuring if
// it is not nil, and starts the window.
func (w *profiledWindow) begin(name string, measuring *atomic.Bool) error {
	w.prof.name = name
	if err := w.prof.start(); err != nil {
		return err
	}
	if measuring != nil {
		measuring.Store(true)
	}
	w.Begin()
	return nil
}

// end ends the window, clears measuring if it is not nil, and stops the
// profile.
func (w *profiledWindow) end(measuring *atomic.Bool) (err error) {
	w.End()
	if measuring != nil {
		measuring.Store(false)
	}
	w.share, w.samples, w.sampled, err = w.prof.stop()
	return err
}

// addProfile adds the profile's figures to m: the timer share, the number
// of samples, and the share of the window's CPU they stand for.
func (w *profiledWindow) addProfile(m map[string]float64) {
	m["timer_share"] = w.share
	m["samples"] = float64(w.samples)
	m["profiled"] = float64(w.sampled) / float64(w.CPU)
}

// isTimerWork reports whether a sample is the timers' work: walking its stack
// from the leaf, the first frame that is either timer code or the I/O of a
// connection (a write, a close) is timer code. So a ping's or a kick's own
// system call counts as I/O, which every variant makes alike, and what the
// timers spend getting to it (a hand-off to the event loop and its wake-up
// included) counts as timer work.
func isTimerWork(s *profile.Sample) bool {
	for _, loc := range s.Location {
		// Inlined calls are listed leaf first within a location too.
		for _, line := range loc.Line {
			if line.Function == nil {
				continue
			}
			fn := line.Function.Name
			if isConnIO(fn) {
				return false
			}
			if isTimerFunc(fn) {
				return true
			}
		}
	}
	return false
}

// isTimerFunc reports whether fn is timer code: this library, the runtime's
// timers and the time package's, read deadlines, the context package's
// deadline contexts, container/heap, and this program's own timer code: the
// functions whose names hold "timers" or "deadline" (the event-loop
// variants' types, the request scenarios' deadline helpers).
func isTimerFunc(fn string) bool {
	switch {
	case strings.HasPrefix(fn, "github.com/hashedwheel/hashedwheel."):
		return true
	case strings.HasPrefix(fn, "runtime.(*timer"), // (*timer) and (*timers)
		strings.HasPrefix(fn, "runtime.newTimer"),
		strings.HasPrefix(fn, "runtime.timeSleep"),
		strings.HasPrefix(fn, "runtime.resetForSleep"),
		strings.HasPrefix(fn, "runtime.blockTimerChan"),
		strings.HasPrefix(fn, "runtime.unblockTimerChan"),
		// Read deadlines: the poller keeps them in runtime timers.
		strings.HasPrefix(fn, "runtime.poll_runtime_pollSetDeadline"),
		strings.HasPrefix(fn, "runtime.netpolldeadlineimpl"),
		strings.HasPrefix(fn, "runtime.netpollReadDeadline"),
		strings.HasPrefix(fn, "internal/poll.setDeadlineImpl"),
		strings.HasPrefix(fn, "internal/poll.(*FD).SetReadDeadline"),
		strings.HasPrefix(fn, "net.(*conn).SetReadDeadline"):
		return true
	case strings.HasPrefix(fn, "time."):
		rest := strings.TrimPrefix(fn, "time.")
		for _, p := range []string{"AfterFunc", "NewTimer", "NewTicker", "After", "Tick", "Sleep",
			"(*Timer).", "(*Ticker).", "goFunc", "sendTime", "newTimer", "stopTimer", "resetTimer"} {
			if strings.HasPrefix(rest, p) {
				return true
			}
		}
		return false
	case strings.HasPrefix(fn, "context.WithDeadline"), strings.HasPrefix(fn, "context.WithTimeout"),
		strings.HasPrefix(fn, "context.(*timerCtx)"):
		return true
	case strings.HasPrefix(fn, "container/heap."):
		return true
	case strings.HasPrefix(fn, "main."):
		lower := strings.ToLower(fn)
		return strings.Contains(lower, "timers") || strings.Contains(lower, "deadline")
	}
	return false
}

// isConnIO reports whether fn is a connection's own I/O in gnet or in the
// net package.
func isConnIO(fn string) bool {
	for _, p := range []string{
		"github.com/panjf2000/gnet/v2.(*conn).write",
		"github.com/panjf2000/gnet/v2.(*conn).Write",
		"github.com/panjf2000/gnet/v2.(*eventloop).close",
		"net.(*conn).Write", "net.(*conn).Close", "net.(*netFD).Write", "net.(*netFD).Close",
	} {
		if strings.HasPrefix(fn, p) {
			return true
		}
	}
	return false
}

// runQueueWait returns how long the threads of this process have waited,
// runnable, for a CPU (the second figure of each thread's schedstat in
// /proc): time the machine gave to other threads, of this process or of
// other programs. Threads that have exited are not counted. It returns 0
// if /proc cannot be read.
func runQueueWait() time.Duration {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0
	}
	var sum int64
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join("/proc/self/task", t.Name(), "schedstat"))
		if err != nil {
			continue // the thread exited meanwhile
		}
		if f := strings.Fields(string(b)); len(f) >= 2 {
			if ns, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				sum += ns
			}
		}
	}
	return time.Duration(sum)
}

// machineBusy returns the CPU time the whole machine has spent busy (every
// state of /proc/stat's first line but idle and iowait), or 0 if /proc
// cannot be read. Less this process's own CPU over a window, it is what
// other programs took of the machine meanwhile.
func machineBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0
	}
	var ticks int64
	// user nice system idle iowait irq softirq steal; guest time is
	// counted in user already.
	for i, v := range f[1:9] {
		if i == 3 || i == 4 {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0
		}
		ticks += n
	}
	// /proc/stat counts in USER_HZ, 100 on every Linux architecture.
	return time.Duration(ticks) * 10 * time.Millisecond
}

// othersCores is how many cores other programs kept busy, on average, over
// a window that began with the machine busy busy0 and whose own CPU was
// w.CPU.
func othersCores(busy0 time.Duration, w *measure.Window) float64 {
	if busy0 == 0 {
		return 0
	}
	return max(0, (machineBusy()-busy0-w.CPU).Seconds()/w.Wall.Seconds())
}
