// Command benchmarks compares hashedwheel with the standard library's timers
// and with other Go timer wheels, and writes the figures, tables and charts
// under an output directory:
//
//	cd benchmarks && go run . -out ../docs
//
// Each workload runs on each implementation in a fresh process: the command
// runs itself again with -child and reads the figures back as JSON, so that
// no implementation's heap, goroutines or garbage collector state is left
// for the next. CPU time is the whole process's (getrusage), so the work of
// the implementations' own goroutines and of the garbage collector is
// counted. It runs on Linux.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashedwheel/hashedwheel/benchmarks/internal/machine"
	"github.com/hashedwheel/hashedwheel/benchmarks/internal/measure"
	"github.com/hashedwheel/hashedwheel/benchmarks/internal/paired"
	"github.com/hashedwheel/hashedwheel/benchmarks/internal/report"
	"github.com/hashedwheel/hashedwheel/benchmarks/internal/stats"
)

func main() {
	var (
		out       = flag.String("out", "../docs", "directory to write benchmarks.json, benchmarks.md and the charts to")
		quick     = flag.Bool("quick", false, "tiny sizes and one repetition, to check that everything runs")
		reps      = flag.Int("reps", 0, "repetitions of every run (default 5, 1 with -quick); tables show medians, and ratios to the standard library repetition by repetition")
		only      = flag.String("impl", "", "comma-separated implementations to run (default all): "+implIDs())
		workloads = flag.String("workload", "", "comma-separated workloads to run (default all): "+workloadIDs())
		child     = flag.Bool("child", false, "run one workload on one implementation and print JSON (used by the driver)")
		param     = flag.Int("param", 0, "the workload's parameter, in -child mode")
		readme    = flag.String("readme", "", "a README whose summary table, between its markers, to rewrite")
		render    = flag.String("render", "", "write the tables and charts of an existing benchmarks.json again, without running anything")
		lead      = flag.Duration("lead", 0, "the burst's lead, in -child mode (default the size's)")
		ticks     = flag.String("ticks", "1ms,10ms", "comma-separated ticks the mixed-horizon workload runs at, each with every implementation that takes it")
		tick      = flag.Duration("tick", benchTick, "the wheels' tick, in -child mode")
		cmpExe    = flag.String("compare-exe", "", "another build of this command (say, with go.mod's replace pointing at an older commit of hashedwheel): its hashedwheel runs as one more implementation, "+compareID)
		cmpLabel  = flag.String("compare-label", "hashedwheel, other build", "the label of -compare-exe's hashedwheel in tables and charts")
	)
	flag.Parse()
	sz := fullSizes
	if *quick {
		sz = quickSizes
	}
	if *lead > 0 {
		sz.burstLead = *lead
	}
	if *child {
		os.Exit(runChild(*only, *workloads, *param, *tick, sz))
	}
	var err error
	if sz.mixedTicks, err = parseTicks(*ticks); err != nil {
		fmt.Fprintln(os.Stderr, "benchmarks: -ticks:", err)
		os.Exit(2)
	}
	if *render != "" {
		if err := rerender(*render, *out, *readme); err != nil {
			fmt.Fprintln(os.Stderr, "benchmarks:", err)
			os.Exit(1)
		}
		return
	}
	if *reps <= 0 {
		*reps = paired.MinRounds // what a verdict needs
		if *quick {
			*reps = 1
		}
	}
	var extra []impl
	if *cmpExe != "" {
		extra = append(extra, compareImpl(*cmpExe, *cmpLabel))
	}
	if err := drive(*out, *readme, *quick, *reps, *only, *workloads, extra, sz); err != nil {
		fmt.Fprintln(os.Stderr, "benchmarks:", err)
		os.Exit(1)
	}
}

// parseTicks reads -ticks: durations, comma-separated.
func parseTicks(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range strings.Split(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		if d <= 0 || d%time.Microsecond != 0 {
			return nil, fmt.Errorf("%v: a tick is a positive whole number of microseconds", d)
		}
		out = append(out, d)
	}
	return out, nil
}

// runChild runs one workload and prints its childResult as JSON. A workload
// the implementation has no API for prints an error "no API".
func runChild(implID, workload string, param int, tick time.Duration, sz sizes) int {
	stopDefaultTimeWheel()
	im, err := implByID(implID)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	type outcome struct {
		res childResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := runWorkload(im, workload, param, tick, sz)
		done <- outcome{res, err}
	}()
	var o outcome
	select {
	case o = <-done:
	case <-time.After(watchdogFor(workload, sz)):
		// A deadlocked implementation never returns; say so, and where
		// the workload's goroutine is stuck, and exit.
		o.err = fmt.Errorf("did not finish within %v%s", watchdogFor(workload, sz), stuckAt())
	}
	res, err := o.res, o.err
	out := struct {
		childResult
		Error string `json:"error,omitempty"`
	}{childResult: res}
	if err != nil {
		out.Error = err.Error()
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// watchdogFor is how long a workload may take in a child before the child
// reports it stuck: the burst waits for its lead first.
func watchdogFor(workload string, sz sizes) time.Duration {
	if workload == "burst" {
		return sz.watchdog + sz.burstLead + time.Minute
	}
	return sz.watchdog
}

// stuckAt describes where the goroutine running the workload waits: its
// state and the calls nearest the top of its stack outside the runtime and
// the standard library.
func stuckAt() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		if !strings.Contains(g, "main.runWorkload(") {
			continue
		}
		lines := strings.Split(g, "\n")
		state := lines[0]
		if i, j := strings.IndexByte(state, '['), strings.IndexByte(state, ']'); i >= 0 && j > i {
			state = state[i+1 : j]
		}
		var calls []string
		for _, l := range lines[1:] {
			if strings.HasPrefix(l, "\t") || !strings.Contains(l, ".") {
				continue
			}
			fn := l[:max(0, strings.LastIndexByte(l, '('))]
			if strings.HasPrefix(fn, "main.") {
				break
			}
			if first, _, ok := strings.Cut(fn, "/"); ok && strings.Contains(first, ".") { // a module, not the standard library
				calls = append(calls, fn)
			}
		}
		if len(calls) > 0 {
			return fmt.Sprintf(": its goroutine waits (%s) in %s", state, strings.Join(calls, ", called by "))
		}
		return fmt.Sprintf(": its goroutine waits (%s)", state)
	}
	return ""
}

// planned is one workload, with its parameter, in the order of the report.
type planned struct {
	Workload string `json:"workload"`
	Param    int    `json:"param"`
	// TickMS is the wheels' tick, ms, for a workload that runs at several
	// (mixed); 0 for benchTick.
	TickMS float64 `json:"tick_ms,omitempty"`
}

// tick returns the wheels' tick for p.
func (p planned) tick() time.Duration {
	if p.TickMS == 0 {
		return benchTick
	}
	return time.Duration(p.TickMS * float64(time.Millisecond))
}

func plan(sz sizes) []planned {
	p := []planned{{Workload: "schedcancel"}, {Workload: "schedcancel-parallel", Param: sz.goroutines}, {Workload: "schedcancel-reused"}}
	for _, n := range sz.pendings {
		p = append(p, planned{Workload: "pending", Param: n})
	}
	return append(append(p,
		planned{Workload: "memory", Param: sz.memory},
		planned{Workload: "burst", Param: sz.burst},
		planned{Workload: "idle", Param: 0},
		planned{Workload: "idle", Param: sz.idlePending},
		planned{Workload: "lateness", Param: sz.late},
		planned{Workload: "rearm", Param: sz.conns},
		planned{Workload: "heartbeat", Param: sz.heartbeats},
		planned{Workload: "context", Param: 0},
		planned{Workload: "context", Param: 1},
	), mixedPlan(sz)...)
}

// mixedPlan is the mixed-horizon workload at each tick: the heartbeats alone,
// then beside the far timeouts.
func mixedPlan(sz sizes) []planned {
	var p []planned
	for _, tick := range sz.mixedTicks {
		ms := measure.Millis(tick)
		p = append(p, planned{Workload: "mixed", TickMS: ms}, planned{Workload: "mixed", Param: sz.mixedFar, TickMS: ms})
	}
	return p
}

// Result holds every repetition of one workload on one implementation, and
// the median of each figure.
type Result struct {
	Impl     string  `json:"impl"`
	Workload string  `json:"workload"`
	Param    int     `json:"param"`
	TickMS   float64 `json:"tick_ms,omitempty"` // as planned's
	// Reps are the figures of each repetition, in the order they ran:
	// Reps[i] is repetition i+1, since a result that fails is not run
	// again.
	Reps   []map[string]float64 `json:"reps,omitempty"`
	Median map[string]float64   `json:"median,omitempty"`
	// Quantiles of the lateness, ms, at 0, 0.001, ..., 1, from the
	// repetition whose p99 is the median.
	Quantiles []float64 `json:"quantiles,omitempty"`
	// Error is "no API" where the implementation has none for the
	// workload, or why the run failed.
	Error string `json:"error,omitempty"`

	quantiles [][]float64
}

// Report is everything benchmarks.json holds.
type Report struct {
	Meta    Meta       `json:"meta"`
	Impls   []ImplInfo `json:"impls"`
	Plan    []planned  `json:"plan"`
	Sizes   SizesInfo  `json:"sizes"`
	Results []*Result  `json:"results"`
	// Ratios are the ratios to the standard library that the tables and
	// the README quote, repetition by repetition.
	Ratios []*Ratio `json:"ratios,omitempty"`
}

// Meta describes the run: the machine, then this program's own fields.
type Meta struct {
	machine.Info
	Commit    string  `json:"commit,omitempty"`
	Quick     bool    `json:"quick"`
	Reps      int     `json:"reps"`
	Seconds   float64 `json:"seconds"`
	LoadStart string  `json:"load_start"` // 1-minute load average, /proc/loadavg
	LoadEnd   string  `json:"load_end"`
}

// ImplInfo describes one implementation as run.
type ImplInfo struct {
	ID           string `json:"id"`
	Label        string `json:"label"`
	Module       string `json:"module,omitempty"`
	Version      string `json:"version"`
	RearmAPI     string `json:"rearm_api,omitempty"`
	ReuseAPI     string `json:"reuse_api,omitempty"`
	HeartbeatAPI string `json:"heartbeat_api,omitempty"`
	ContextAPI   string `json:"context_api,omitempty"`
	TickAPI      string `json:"tick_api,omitempty"`
}

// SizesInfo is sizes, for the JSON file.
type SizesInfo struct {
	Ops          int     `json:"ops"`
	Goroutines   int     `json:"goroutines"`
	PendingOps   int     `json:"pending_ops"`
	Pendings     []int   `json:"pendings"`
	Memory       int     `json:"memory"`
	Burst        int     `json:"burst"`
	BurstLeadMS  float64 `json:"burst_lead_ms"`
	IdleWindowMS float64 `json:"idle_window_ms"`
	IdlePending  int     `json:"idle_pending"`
	Late         int     `json:"late"`
	LateSpreadMS float64 `json:"late_spread_ms"`
	Conns        int     `json:"conns"`
	Heartbeats   int     `json:"heartbeats"`
	PeriodMS     float64 `json:"period_ms"`
	HeartbeatMS  float64 `json:"heartbeat_window_ms"`
	TickMS       float64 `json:"tick_ms"`
	Buckets      int     `json:"buckets"`
	// The mixed-horizon workload: the far timeouts, the window and the
	// ticks (its heartbeats are Heartbeats, every PeriodMS).
	MixedFar      int       `json:"mixed_far,omitempty"`
	MixedWindowMS float64   `json:"mixed_window_ms,omitempty"`
	MixedTicksMS  []float64 `json:"mixed_ticks_ms,omitempty"`
}

// drive runs the workloads on the implementations chosen by only, and on
// extra, reps times, and writes the report.
func drive(out, readme string, quick bool, reps int, only, workloads string, extra []impl, sz sizes) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	chosen, err := chooseImpls(only)
	if err != nil {
		return err
	}
	chosen = append(chosen, extra...)
	var steps []planned
	for _, p := range plan(sz) {
		if workloads == "" || slices.Contains(strings.Split(workloads, ","), p.Workload) {
			steps = append(steps, p)
		}
	}
	rep := &Report{Meta: meta(quick, reps), Plan: steps, Sizes: sizesInfo(sz)}
	for _, im := range chosen {
		rep.Impls = append(rep.Impls, implInfo(im))
	}
	byKey := map[string]*Result{}
	for _, p := range steps {
		for _, im := range chosen {
			r := &Result{Impl: im.id, Workload: p.Workload, Param: p.Param, TickMS: p.TickMS}
			byKey[resultKey(im.id, p)] = r
			rep.Results = append(rep.Results, r)
		}
	}

	leads := map[*Result]time.Duration{} // burst leads raised for an implementation
	start := time.Now()
	for k := range reps {
		for _, p := range steps {
			// Interleave: each workload runs on every implementation before
			// the next, so that a ratio to the standard library compares
			// runs of the same repetition; the order of implementations
			// turns each repetition, so that none always runs first.
			for j := range chosen {
				im := chosen[(j+k)%len(chosen)]
				r := byKey[resultKey(im.id, p)]
				if r.Error != "" {
					continue // no API, or it failed: do not try again
				}
				t0 := time.Now()
				res, err := runOne(exe, im, p, quick, sz, leads[r])
				for try := 0; try < 2 && err != nil && strings.HasPrefix(err.Error(), errSpread); try++ {
					// Scheduling the burst outlasted its lead: give this
					// implementation three times the lead from now on, twice
					// at most.
					leads[r] = 3 * max(leads[r], sz.burstLead)
					fmt.Fprintf(os.Stderr, "rep %d/%d  %-22s %-18s %-24s %s; again with a %v lead\n",
						k+1, reps, p.Workload, paramName(p), im.label, err, leads[r])
					res, err = runOne(exe, im, p, quick, sz, leads[r])
				}
				status := "ok"
				if err != nil {
					r.Error = err.Error()
					status = r.Error
				} else {
					r.Reps = append(r.Reps, res.Metrics)
					if res.Quantiles != nil {
						r.quantiles = append(r.quantiles, res.Quantiles)
					}
					if res.GOMAXPROCS != rep.Meta.GOMAXPROCS {
						return fmt.Errorf("%s ran with GOMAXPROCS %d, the driver has %d", im.id, res.GOMAXPROCS, rep.Meta.GOMAXPROCS)
					}
				}
				fmt.Fprintf(os.Stderr, "rep %d/%d  %-22s %-18s %-24s %6.1fs  %s\n",
					k+1, reps, p.Workload, paramName(p), im.label, time.Since(t0).Seconds(), status)
			}
		}
	}
	rep.Meta.Seconds = time.Since(start).Seconds()
	rep.Meta.LoadEnd = machine.LoadAverage()
	for _, r := range rep.Results {
		summarize(r)
	}
	rep.computeRatios()
	if err := report.Save(out, "benchmarks", rep); err != nil {
		return err
	}
	if readme != "" {
		return updateReadme(readme, rep)
	}
	return nil
}

// runOne runs one workload on one implementation in a child process: exe,
// or the implementation's own program if it has one.
func runOne(exe string, im impl, p planned, quick bool, sz sizes, lead time.Duration) (childResult, error) {
	implID := im.id
	if im.exe != "" {
		exe, implID = im.exe, im.childID
	}
	if lead > 0 {
		sz.burstLead = lead
	}
	// The child's watchdog ends a stuck workload; this ends a stuck child.
	timeout := watchdogFor(p.Workload, sz) + time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	args := []string{"-child", "-impl", implID, "-workload", p.Workload, "-param", strconv.Itoa(p.Param),
		"-tick", p.tick().String()}
	if quick {
		args = append(args, "-quick")
	}
	if lead > 0 {
		args = append(args, "-lead", lead.String())
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		return childResult{}, fmt.Errorf("did not finish within %v", timeout)
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 300 {
			msg = "..." + msg[len(msg)-300:] // the end of a panic's trace names the place
		}
		return childResult{}, fmt.Errorf("child failed: %v: %s", err, msg)
	}
	var res struct {
		childResult
		Error string `json:"error"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		return childResult{}, fmt.Errorf("reading the child's JSON: %v", err)
	}
	if res.Error != "" {
		return childResult{}, errors.New(res.Error)
	}
	return res.childResult, nil
}

// summarize takes the median of each figure over the repetitions, and the
// lateness quantiles of the repetition whose p99 is the median.
func summarize(r *Result) {
	if len(r.Reps) == 0 {
		if r.Error == "" {
			r.Error = "not run"
		}
		return
	}
	r.Median = map[string]float64{}
	for name, vals := range stats.ByName(r.Reps) {
		r.Median[name] = stats.LowerMedian(vals)
	}
	if len(r.quantiles) > 0 {
		idx := make([]int, len(r.Reps))
		for i := range idx {
			idx[i] = i
		}
		slices.SortFunc(idx, func(a, b int) int {
			return cmpFloat(r.Reps[a]["p99_ms"], r.Reps[b]["p99_ms"])
		})
		r.Quantiles = r.quantiles[idx[(len(idx)-1)/2]]
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func resultKey(id string, p planned) string {
	return fmt.Sprintf("%s/%s/%d/%g", id, p.Workload, p.Param, p.TickMS)
}

// paramName is how a workload's parameter reads in tables and progress.
func paramName(p planned) string {
	switch p.Workload {
	case "pending", "idle", "memory", "burst":
		return "pending=" + count(p.Param)
	case "schedcancel-parallel":
		return fmt.Sprintf("goroutines=%d", p.Param)
	case "context":
		return []string{"parent=bg", "serving"}[min(p.Param, 1)]
	case "mixed":
		return fmt.Sprintf("tick=%v,far=%s", p.tick(), count(p.Param))
	}
	return ""
}

// count writes 100 as 1e2, 1000 as 1e3, and numbers that are no power of
// ten in full.
func count(n int) string { return report.Count(n, 2) }

func chooseImpls(only string) ([]impl, error) {
	if only == "" {
		return impls, nil
	}
	var out []impl
	for _, id := range strings.Split(only, ",") {
		im, err := implByID(id)
		if err != nil {
			return nil, err
		}
		out = append(out, im)
	}
	return out, nil
}

func implIDs() string {
	var ids []string
	for _, im := range impls {
		ids = append(ids, im.id)
	}
	return strings.Join(ids, ", ")
}

func workloadIDs() string {
	var ids []string
	for _, p := range plan(fullSizes) {
		if !slices.Contains(ids, p.Workload) {
			ids = append(ids, p.Workload)
		}
	}
	return strings.Join(ids, ", ")
}

func meta(quick bool, reps int) Meta {
	return Meta{
		Info:      machine.Describe("cd benchmarks && go run ."),
		Quick:     quick,
		Reps:      reps,
		LoadStart: machine.LoadAverage(),
		Commit:    machine.Commit(),
	}
}

// implInfo adds the version each module was built at, from the build info.
func implInfo(im impl) ImplInfo {
	info := ImplInfo{
		ID: im.id, Label: im.label, Module: im.module, Version: runtime.Version(),
		RearmAPI: im.rearmAPI, ReuseAPI: im.reuseAPI, HeartbeatAPI: im.heartbeatAPI, ContextAPI: im.contextAPI,
		TickAPI: im.tickAPI,
	}
	if im.id == compareID {
		info.Version = "another build (-compare-exe)"
		return info
	}
	if im.module == "" {
		return info
	}
	info.Version = "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path != im.module {
				continue
			}
			info.Version = d.Version
			if d.Replace != nil {
				info.Version = "this repository"
			}
		}
	}
	return info
}

func sizesInfo(sz sizes) SizesInfo {
	var ticksMS []float64
	for _, t := range sz.mixedTicks {
		ticksMS = append(ticksMS, measure.Millis(t))
	}
	return SizesInfo{
		Ops: sz.ops, Goroutines: sz.goroutines, PendingOps: sz.pendingOps, Pendings: sz.pendings,
		Memory: sz.memory, Burst: sz.burst, BurstLeadMS: measure.Millis(sz.burstLead),
		IdleWindowMS: measure.Millis(sz.idleWindow), IdlePending: sz.idlePending,
		Late: sz.late, LateSpreadMS: measure.Millis(sz.lateSpread), Conns: sz.conns,
		Heartbeats: sz.heartbeats, PeriodMS: measure.Millis(sz.period), HeartbeatMS: measure.Millis(sz.heartbeatWin),
		TickMS: measure.Millis(benchTick), Buckets: benchBuckets,
		MixedFar: sz.mixedFar, MixedWindowMS: measure.Millis(sz.mixedWindow), MixedTicksMS: ticksMS,
	}
}

// rerender writes the tables and charts of the report in file under out.
func rerender(file, out, readme string) error {
	var rep Report
	if err := report.Load(file, &rep); err != nil {
		return err
	}
	rep.computeRatios() // reports written before Ratios existed have none
	if err := report.Save(out, "benchmarks", &rep); err != nil {
		return err
	}
	if readme != "" {
		return updateReadme(readme, &rep)
	}
	return nil
}
