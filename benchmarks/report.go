package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/hashedwheel/hashedwheel/benchmarks/internal/paired"
	"github.com/hashedwheel/hashedwheel/benchmarks/internal/report"
)

// Files written next to benchmarks.json.
const (
	costChart     = "benchmarks-cost-per-op.png"
	latenessChart = "benchmarks-lateness.png"
	idleChart     = "benchmarks-idle.png"
)

// The README's summary sits between these markers; -readme rewrites it.
const (
	readmeBegin = "<!-- benchmarks summary: begin (written by benchmarks/, do not edit) -->"
	readmeEnd   = "<!-- benchmarks summary: end -->"
)

// get returns the result of impl on the workload with param at the
// harness's tick, or nil.
func (rep *Report) get(impl, workload string, param int) *Result {
	return rep.at(impl, planned{Workload: workload, Param: param})
}

// at returns the result of impl on p, or nil.
func (rep *Report) at(impl string, p planned) *Result {
	for _, r := range rep.Results {
		if r.Impl == impl && r.Workload == p.Workload && r.Param == p.Param && r.TickMS == p.TickMS {
			return r
		}
	}
	return nil
}

// value returns a median figure, and false if there is none.
func (rep *Report) value(impl, workload string, param int, metric string) (float64, bool) {
	r := rep.get(impl, workload, param)
	if r == nil || r.Median == nil {
		return 0, false
	}
	v, ok := r.Median[metric]
	return v, ok
}

func (rep *Report) param(workload string) int {
	for _, p := range rep.Plan {
		if p.Workload == workload {
			return p.Param
		}
	}
	return 0
}

func (rep *Report) has(workload string) bool {
	for _, p := range rep.Plan {
		if p.Workload == workload {
			return true
		}
	}
	return false
}

// column is one column of a table: a median figure, or its ratio to the
// standard library's.
type column struct {
	title  string
	metric string
	param  int
	tickMS float64 // the tick, for a workload that runs at several
	// ratio makes the column the figure's ratio to the standard library's,
	// repetition by repetition: their median, their range in small print,
	// and "even" if they do not all fall on one side of 1.
	ratio bool
	// against, with ratio, takes the ratio to another baseline: the
	// standard library's figure in another workload, or another
	// implementation's, or the implementation's own in another parameter;
	// for the standard library's row too.
	against *baseline
	prec    int
}

// key returns the workload, parameter and tick of the column's figure.
func (c column) key(workload string) planned {
	return planned{Workload: workload, Param: c.param, TickMS: c.tickMS}
}

// ratioOf returns impl's ratio in column c of the workload: to c.against,
// or to the standard library's figure of the same workload, parameter and
// tick.
func (rep *Report) ratioOf(impl, workload string, c column) (*Ratio, bool) {
	base := baseline{workload: workload, param: c.param, tickMS: c.tickMS}
	if c.against != nil {
		base = *c.against
	}
	return rep.ratioTo(impl, c.key(workload), c.metric, base)
}

// table writes one row per implementation. A row whose result failed or has
// no API says so instead.
func (rep *Report) table(b *strings.Builder, workload string, cols []column, api func(ImplInfo) string) {
	head := []report.Column{{Title: "implementation"}}
	if api != nil {
		head = append(head, report.Column{Title: "API"})
	}
	for _, c := range cols {
		head = append(head, report.Column{Title: c.title, Right: true})
	}
	report.TableHead(b, head...)
	var notes []string
	for _, im := range rep.Impls {
		row := []string{im.Label}
		if api != nil {
			a := api(im)
			if a == "" {
				a = "no API"
			}
			row = append(row, a)
		}
		// A row that did not run says why once, not in every column.
		if why := rep.whyNot(im.ID, workload, cols); why != "" {
			switch {
			case why == errNoTick.Error():
				// says so in its first cell
			case why != errNoAPI.Error():
				notes = append(notes, fmt.Sprintf("%s: %s.", im.Label, why))
				why = "failed, see below"
			case api != nil:
				why = "–"
			}
			row = append(row, why)
			row = append(row, make([]string, len(cols)-1)...) // empty cells
			report.TableRow(b, row...)
			continue
		}
		for _, c := range cols {
			row = append(row, rep.cell(im.ID, workload, c))
		}
		report.TableRow(b, row...)
		// A repetition that failed after others ran: the medians are of
		// fewer repetitions, and the later ones were not tried.
		seen := map[planned]bool{}
		for _, c := range cols {
			if r := rep.at(im.ID, c.key(workload)); r != nil && r.Median != nil && r.Error != "" && !seen[c.key(workload)] {
				seen[c.key(workload)] = true
				what := ""
				if !sameParam(cols) {
					what = " (" + paramName(c.key(workload)) + ")"
				}
				notes = append(notes, fmt.Sprintf("%s%s: the median of %d of %d repetitions; the next %s.",
					im.Label, what, len(r.Reps), rep.Meta.Reps, r.Error))
			}
		}
	}
	for _, n := range notes {
		b.WriteString("\n" + n + "\n")
	}
}

// sameParam reports whether all columns show one parameter of the workload,
// at one tick.
func sameParam(cols []column) bool {
	for _, c := range cols[1:] {
		if c.param != cols[0].param || c.tickMS != cols[0].tickMS {
			return false
		}
	}
	return true
}

// whyNot returns why impl has no figures for the workload in any of the
// columns, if it has none in all of them for one reason: "no API", "no such
// tick", the error, or "not run"; "" if it has figures.
func (rep *Report) whyNot(impl, workload string, cols []column) string {
	why := ""
	for i, c := range cols {
		w := "not run"
		if r := rep.at(impl, c.key(workload)); r != nil {
			if r.Median != nil {
				return ""
			}
			w = r.Error
		}
		if i > 0 && w != why {
			return ""
		}
		why = w
	}
	return why
}

func (rep *Report) cell(impl, workload string, c column) string {
	r := rep.at(impl, c.key(workload))
	if r == nil {
		return "not run"
	}
	if r.Median == nil {
		switch r.Error {
		case errNoAPI.Error():
			return "no API"
		case errNoTick.Error():
			return r.Error
		}
		return "failed"
	}
	v, ok := r.Median[c.metric]
	if !ok {
		return "n/a"
	}
	if !c.ratio {
		return num(v, c.prec)
	}
	if impl == stdlibID && c.against == nil {
		return "1"
	}
	q, ok := rep.ratioOf(impl, workload, c)
	if !ok {
		return "n/a"
	}
	return q.Cell()
}

// num formats v with prec decimals, with thousands separated by commas, a
// minus sign (−) before a negative value, and "n/a" for NaN.
func num(v float64, prec int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a"
	}
	return report.Grouped(v, prec, "−")
}

// summary is the short table of the README and of the top of
// benchmarks.md: one row per implementation, the figures users notice, and
// a caption that says what each column measures.
func (rep *Report) summary(captions bool) string {
	var b strings.Builder
	sz := rep.Sizes
	// Each column, and the caption's words for it; the summary mixes
	// workloads, so each column names its own.
	type summaryColumn struct {
		column
		workload string
		// verdict makes the column the verdict of the ratio before it.
		verdict bool
		caption string
	}
	var cols []summaryColumn
	if rep.has("schedcancel") {
		cols = append(cols,
			summaryColumn{column: column{title: "schedule+cancel, CPU ns/op", metric: "cpu_ns_op"}, workload: "schedcancel",
				caption: fmt.Sprintf("**schedule+cancel**: the process's CPU time (user and system, ns) per schedule and cancel of a timeout %v away, %s of them on one goroutine",
					cancelDelay, num(float64(sz.Ops), 0))},
			summaryColumn{column: column{title: "÷ time.AfterFunc, per round: median [range]", metric: "cpu_ns_op", ratio: true}, workload: "schedcancel",
				caption: "**÷ time.AfterFunc**: that CPU time over time.AfterFunc's, taken round by round (each round's run over time.AfterFunc's run in the same round): the median of the rounds' ratios, and the lowest and highest"},
			summaryColumn{column: column{title: "verdict", metric: "cpu_ns_op"}, workload: "schedcancel", verdict: true,
				caption: "**verdict**: *costs less* or *costs more* when the rounds agree, *even* when they do not (below)"})
	}
	if rep.has("memory") {
		p := rep.param("memory")
		cols = append(cols, summaryColumn{column: column{title: "live bytes per pending timeout", metric: "bytes_per_timeout", param: p}, workload: "memory",
			caption: fmt.Sprintf("**live bytes**: the heap after a GC per pending timeout, with %s pending an hour away", count(p))})
	}
	if rep.has("burst") {
		cols = append(cols, summaryColumn{column: column{title: fmt.Sprintf("%s due at once: last run after, ms", count(sz.Burst)), metric: "ms_to_last", param: rep.param("burst")}, workload: "burst",
			caption: fmt.Sprintf("**due at once**: the time, ms, from the deadline of %s timeouts all due at one moment to the run of the last", count(sz.Burst))})
	}
	if rep.has("idle") {
		cols = append(cols, summaryColumn{column: column{title: "idle: wake-ups/s", metric: "wakeups_per_s", prec: 1}, workload: "idle",
			caption: fmt.Sprintf("**idle**: the process's voluntary context switches (wake-ups) per second over %v with nothing pending", msDur(sz.IdleWindowMS))})
	}
	if rep.has("lateness") {
		p := rep.param("lateness")
		cols = append(cols,
			summaryColumn{column: column{title: "lateness p99, ms", metric: "p99_ms", param: p, prec: 1}, workload: "lateness",
				caption: fmt.Sprintf("**lateness p99**: the 99th percentile, ms, of the time each of %s timeouts spread over %v ran minus the time it was due", num(float64(p), 0), msDur(sz.LateSpreadMS))},
			summaryColumn{column: column{title: fmt.Sprintf("early runs of %s", num(float64(p), 0)), metric: "early", param: p}, workload: "lateness",
				caption: "**early runs**: how many of them ran before their delay had passed"})
	}
	if rep.has("mixed") {
		far, tick := sz.MixedFar, rep.mixedTicks()[0]
		cols = append(cols,
			summaryColumn{column: column{title: fmt.Sprintf("heartbeats beside %s far timeouts, %s tick: CPU ms/s", count(far), msDur(tick)),
				metric: "cpu_ms_per_s", param: far, tickMS: tick}, workload: "mixed",
				caption: fmt.Sprintf("**heartbeats beside far timeouts**: the process's CPU, ms per second, of %s heartbeats every %v, started evenly over the period, with %s timeouts pending 1h..2h away, at a %s tick (%s)",
					num(float64(sz.Heartbeats), 0), msDur(sz.PeriodMS), count(far), msDur(tick), mixedTickNote)},
			summaryColumn{column: column{title: "÷ the same without them, per round: median [range]", metric: "cpu_ms_per_s", param: far, tickMS: tick,
				ratio: true, against: ptr(mixedWithout(ownImpl, tick))}, workload: "mixed",
				caption: "**÷ the same without them**: that CPU over the same implementation's with the heartbeats alone, round by round: what the far timeouts cost it"})
	}
	head := []report.Column{{Title: "implementation"}}
	for _, c := range cols {
		head = append(head, report.Column{Title: c.title, Right: !c.verdict})
	}
	report.TableHead(&b, head...)
	for _, im := range rep.Impls {
		row := []string{im.Label}
		for _, c := range cols {
			row = append(row, rep.summaryCell(im.ID, c.workload, c.column, c.verdict))
		}
		report.TableRow(&b, row...)
	}
	if !captions {
		fmt.Fprintf(&b, "\nLess is better in every column; what each measures, and how the %s are paired: [docs/benchmarks.md](docs/benchmarks.md#summary).\n",
			rounds(rep.Meta.Reps))
		return b.String()
	}
	b.WriteString("\nLess is better in every column:\n\n")
	for _, c := range cols {
		b.WriteString("- " + c.caption + ".\n")
	}
	fmt.Fprintf(&b, "\nFrom %s: in each, every workload ran on every implementation, each run a fresh process, the implementations taking turns in an order that turned every round. The figures are the medians of the rounds; the ratios are paired within a round. %s\n",
		rounds(rep.Meta.Reps), rep.ratioNote())
	return b.String()
}

// summaryCell is a cell of the summary: a median figure, the ratio to the
// standard library's as "0.77× [0.70–0.81]", or that ratio's verdict.
func (rep *Report) summaryCell(impl, workload string, c column, verdict bool) string {
	if !c.ratio && !verdict {
		return rep.cell(impl, workload, c)
	}
	if impl == stdlibID && c.against == nil {
		if verdict {
			return "–"
		}
		return "1"
	}
	q, ok := rep.ratioOf(impl, workload, c)
	if !ok {
		return rep.cell(impl, workload, column{metric: c.metric, param: c.param, tickMS: c.tickMS}) // why there is none
	}
	if !verdict {
		return q.String()
	}
	if w := q.word(); q.Verdict == "less" || q.Verdict == "more" {
		return "**" + w + "**"
	}
	return q.word()
}

// Markdown returns benchmarks.md.
func (rep *Report) Markdown() string {
	var b strings.Builder
	m := rep.Meta
	sz := rep.Sizes
	b.WriteString("# Benchmarks: hashedwheel, the standard library and other Go timer wheels\n\n")
	b.WriteString("Written by the command below from one run of the current code; nothing here is edited by hand.\n")
	b.WriteString("Every figure, with each repetition, is in [benchmarks.json](benchmarks.json).\n\n")
	fmt.Fprintf(&b, "```sh\n%s\n```\n\n", m.Command)
	fmt.Fprintf(&b, "- Date: %s; the run took %.0f s.\n", m.Date, m.Seconds)
	loadNote := "the machine was otherwise quiet, but tails (p99, max) and wall times still move between runs"
	if m.busy() {
		loadNote = "other programs ran beside it, so tails (p99, max) and wall times are noisy"
	}
	fmt.Fprintf(&b, "- Machine: %s, %d cores (GOMAXPROCS %d), %s. Load average (1 min) %s at the start, %s at the end: %s; compare rows within a table, not runs.\n",
		m.CPU, m.Cores, m.GOMAXPROCS, m.OSArch, m.LoadStart, m.LoadEnd, loadNote)
	fmt.Fprintf(&b, "- Go: %s.", m.Go)
	if m.Commit != "" {
		fmt.Fprintf(&b, " hashedwheel at commit %s.", m.Commit)
	}
	b.WriteString("\n")
	if m.Quick {
		b.WriteString("- **Quick mode**: tiny sizes, to check that everything runs. These figures mean little.\n")
	}
	fmt.Fprintf(&b, "- Each figure is the median of %d repetitions (rounds). Each repetition of each workload on each implementation ran in a fresh process, and the implementations took turns: each workload ran on all of them before the next, in an order that turned every repetition.\n", m.Reps)
	fmt.Fprintf(&b, "- A ratio (×) is taken repetition by repetition: the implementation's figure over the standard library's in the same repetition. A cell shows the median of those ratios, their lowest and highest in small print, and *even* when they do not all fall on one side of 1 or their median is within %.0f%% of it; benchmarks.json holds every repetition's ratio (`ratios`).\n",
		100*paired.EvenWithin)
	fmt.Fprintf(&b, "- Every wheel ran with a %v tick and, where it has the setting, %d buckets (antlabs/timer's tick is fixed at 10ms)", msDur(sz.TickMS), sz.Buckets)
	if rep.has("mixed") {
		b.WriteString(", except in the mixed-horizon workload, which runs at each of its ticks")
	}
	b.WriteString(".\n\n")

	b.WriteString("## Summary\n\n")
	b.WriteString(rep.summary(true))
	b.WriteString("\n")

	b.WriteString("## Implementations\n\n")
	b.WriteString("| implementation | module | version | tick | re-arm | heartbeat | request-deadline context |\n|---|---|---|---|---|---|---|\n")
	for _, im := range rep.Impls {
		mod := im.Module
		switch {
		case im.ID == compareID:
			mod = "hashedwheel, as another build of this command links it"
		case mod == "":
			mod = "standard library"
		}
		tick := "–"
		if im.TickAPI != "" {
			tick = "`" + im.TickAPI + "`"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", im.Label, mod, im.Version,
			tick, apiOr(im.RearmAPI), apiOr(im.HeartbeatAPI), apiOr(im.ContextAPI))
	}
	b.WriteString("\nHow each is driven (benchmarks/impls.go): schedule is the implementation's one-shot call with a function " +
		"(hashedwheel `AfterFunc`, `time.AfterFunc`, RussellLuo `AfterFunc`, go-zero `SetTimer`, antlabs `AfterFunc`, " +
		"rfyiamcool `Add`) and cancel its counterpart (`Cancel`, `Stop`, `Stop`, `RemoveTimer`, `Stop`, `Remove`). " +
		"go-zero needs a comparable key per timer: the harness uses a pointer to a 16-byte struct holding the function, " +
		"which its figures include; it rejects delays <= 0, which the harness passes as 1ns (go-zero raises every delay " +
		"under a tick to one tick). rfyiamcool/go-timewheel starts a default wheel with a 1s tick in its package init; " +
		"the harness stops it in every process, so it adds nothing to anyone's figures.\n\n")

	b.WriteString("## Method\n\n")
	b.WriteString("- **CPU** is getrusage(RUSAGE_SELF), user plus system, of the whole process: it counts the implementation's own goroutines, the goroutines it starts, and the garbage collector. Where an implementation hands calls to a goroutine of its own (hashedwheel's worker, go-zero's loop), the timed region ends only once that goroutine has processed them.\n")
	b.WriteString("- **Wake-ups** are the process's voluntary context switches (getrusage ru_nvcsw): each time one of its threads went to sleep, which it does once per wake-up. The measuring goroutine's own sleep adds a few per window; the standard library's row, a process with nothing to do, shows that floor. hashedwheel also reports its worker's own count (`Stats().Wakeups`) where it has it.\n")
	b.WriteString("- **Live bytes** are `runtime.MemStats.HeapAlloc` after a forced GC, with the timeouts pending minus before them; the handles are kept in a slice made before the baseline. **GC** is the wall and CPU time of one more `runtime.GC()` with them pending.\n")
	b.WriteString("- **Lateness** is the time a task ran minus the time it was meant for: `time.Now()` just before it was scheduled, plus its delay. A negative lateness is an **early run**: the task ran before the delay it was given had passed.\n\n")

	if rep.has("schedcancel") || rep.has("schedcancel-parallel") || rep.has("schedcancel-reused") {
		fmt.Fprintf(&b, "## Schedule and cancel\n\nA timeout %v away, scheduled and cancelled %s times, on one goroutine and on %d goroutines (the machine has %d cores).\n\n",
			cancelDelay, num(float64(sz.Ops), 0), sz.Goroutines, m.Cores)
		for _, w := range []string{"schedcancel", "schedcancel-parallel"} {
			if !rep.has(w) {
				continue
			}
			p := rep.param(w)
			if w == "schedcancel" {
				b.WriteString("One goroutine:\n\n")
			} else {
				fmt.Fprintf(&b, "\n%d goroutines:\n\n", p)
			}
			rep.table(&b, w, []column{
				{title: "CPU ns/op", metric: "cpu_ns_op", param: p},
				{title: "× stdlib", metric: "cpu_ns_op", param: p, ratio: true},
				{title: "wall ns/op", metric: "wall_ns_op", param: p},
				{title: "× stdlib", metric: "wall_ns_op", param: p, ratio: true},
				{title: "allocs/op", metric: "allocs_op", param: p, prec: 1},
				{title: "bytes/op", metric: "bytes_op", param: p},
			}, nil)
		}
		if rep.has("schedcancel-reused") {
			newTimer := &baseline{workload: "schedcancel"}
			b.WriteString("\nInto a reused timer, one goroutine: the same timer scheduled and cancelled every time, made once " +
				"(hashedwheel: a `Timeout` the caller keeps, armed with `Timer.Schedule`; the standard library: one `time.AfterFunc` " +
				"timer, stopped, re-armed with `Reset` and stopped with `Stop`). *× time.AfterFunc + Stop* is against the standard " +
				"library's one-goroutine figure above, a new timer each time; *× reused time.Timer* against its row here; both in the same round. " +
				"The wall time includes the wait for hashedwheel's worker to take in the last cancel, a tick or two.\n\n")
			rep.table(&b, "schedcancel-reused", []column{
				{title: "CPU ns/op", metric: "cpu_ns_op"},
				{title: "× time.AfterFunc + Stop", metric: "cpu_ns_op", ratio: true, against: newTimer},
				{title: "× reused time.Timer", metric: "cpu_ns_op", ratio: true},
				{title: "wall ns/op", metric: "wall_ns_op"},
				{title: "allocs/op", metric: "allocs_op", prec: 1},
				{title: "bytes/op", metric: "bytes_op"},
			}, func(im ImplInfo) string { return im.ReuseAPI })
		}
		b.WriteString("\n")
	}

	if rep.has("pending") {
		fmt.Fprintf(&b, "## Cost per operation against pending count\n\nThe schedule-and-cancel of above, %s times on one goroutine, with that many timeouts already pending an hour away (spread over every bucket). CPU ns per operation, and its ratio to `time.AfterFunc` at the same count.\n\n",
			num(float64(sz.PendingOps), 0))
		var cols []column
		for _, n := range sz.Pendings {
			cols = append(cols,
				column{title: count(n), metric: "cpu_ns_op", param: n},
				column{title: "×", metric: "cpu_ns_op", param: n, ratio: true})
		}
		rep.table(&b, "pending", cols, nil)
		fmt.Fprintf(&b, "\n![CPU per schedule-and-cancel against pending count](%s)\n\n", costChart)
	}

	if rep.has("memory") {
		p := rep.param("memory")
		fmt.Fprintf(&b, "## Memory and garbage collection\n\n%s timeouts pending an hour away.\n\n", count(p))
		rep.table(&b, "memory", []column{
			{title: "live bytes per timeout", metric: "bytes_per_timeout", param: p},
			{title: "× stdlib", metric: "bytes_per_timeout", param: p, ratio: true},
			{title: "one forced GC, ms", metric: "gc_ms", param: p, prec: 1},
			{title: "× stdlib", metric: "gc_ms", param: p, ratio: true},
			{title: "its CPU, ms", metric: "gc_cpu_ms", param: p, prec: 1},
		}, nil)
		b.WriteString("\n")
	}

	if rep.has("burst") {
		p := rep.param("burst")
		fmt.Fprintf(&b, "## A burst due at once\n\n%s timeouts, all due at one moment %v after the first was scheduled. Times from that deadline; a negative one is before it.\n\n",
			count(p), msDur(sz.BurstLeadMS))
		rep.table(&b, "burst", []column{
			{title: "to the last run, ms", metric: "ms_to_last", param: p, prec: 1},
			{title: "× stdlib", metric: "ms_to_last", param: p, ratio: true},
			{title: "to the first run, ms", metric: "ms_to_first", param: p, prec: 1},
			{title: "early runs", metric: "early", param: p},
			{title: "CPU ns per timeout", metric: "cpu_ns_timeout", param: p},
			{title: "lead, ms", metric: "lead_ms", param: p},
		}, nil)
		b.WriteString("\nThe lead is tripled, at most twice, for an implementation whose scheduling of the burst outlasted it.\n")
		b.WriteString("\n")
	}

	if rep.has("idle") {
		fmt.Fprintf(&b, "## Idle\n\nA started implementation with nothing due for %v: first with nothing pending, then with %s timeouts pending an hour away. CPU of the whole process per second, and wake-ups per second (see Method).\n\n",
			msDur(sz.IdleWindowMS), count(sz.IdlePending))
		cols := []column{
			{title: "CPU ms/s, pending 0", metric: "cpu_ms_per_s", prec: 2},
			{title: "wake-ups/s, pending 0", metric: "wakeups_per_s", prec: 1},
			{title: "CPU ms/s, pending " + count(sz.IdlePending), metric: "cpu_ms_per_s", param: sz.IdlePending, prec: 2},
			{title: "wake-ups/s, pending " + count(sz.IdlePending), metric: "wakeups_per_s", param: sz.IdlePending, prec: 1},
		}
		if _, ok := rep.value(hashedwheelID, "idle", 0, "stats_wakeups_per_s"); ok {
			cols = append(cols,
				column{title: "Stats().Wakeups/s, pending 0", metric: "stats_wakeups_per_s", prec: 1},
				column{title: "Stats().Wakeups/s, pending " + count(sz.IdlePending), metric: "stats_wakeups_per_s", param: sz.IdlePending, prec: 1})
		}
		rep.table(&b, "idle", cols, nil)
		fmt.Fprintf(&b, "\n![Idle CPU per second](%s)\n\n", idleChart)
	}

	if rep.has("lateness") {
		p := rep.param("lateness")
		fmt.Fprintf(&b, "## Lateness\n\n%s timeouts with delays spread evenly over %v, all scheduled from one goroutine as fast as it can. Lateness in ms (negative: early); early runs are those that ran before their delay had passed.\n\n",
			num(float64(p), 0), msDur(sz.LateSpreadMS))
		rep.table(&b, "lateness", []column{
			{title: "p50", metric: "p50_ms", param: p, prec: 2},
			{title: "p99", metric: "p99_ms", param: p, prec: 2},
			{title: "max", metric: "max_ms", param: p, prec: 2},
			{title: "min", metric: "min_ms", param: p, prec: 2},
			{title: "early runs", metric: "early", param: p},
		}, nil)
		fmt.Fprintf(&b, "\n![Lateness distribution, early runs marked](%s)\n\n", latenessChart)
	}

	if rep.has("rearm") {
		p := rep.param("rearm")
		fmt.Fprintf(&b, "## Re-arm per activity\n\n%s connections each keep an idle timer %v away; each activity re-arms one of them to %v from now, %s times, on one goroutine, with the implementation's call that moves a pending timer (no API: it has none; cancel and schedule again is the schedule-and-cancel above).\n\n",
			num(float64(p), 0), cancelDelay, cancelDelay, num(float64(sz.Ops), 0))
		rep.table(&b, "rearm", []column{
			{title: "CPU ns/op", metric: "cpu_ns_op", param: p},
			{title: "× time.Timer.Reset", metric: "cpu_ns_op", param: p, ratio: true},
			{title: "wall ns/op", metric: "wall_ns_op", param: p},
			{title: "allocs/op", metric: "allocs_op", param: p, prec: 1},
		}, func(im ImplInfo) string { return im.RearmAPI })
		b.WriteString("\nhashedwheel's `Reset` to a later deadline only rewrites it; its worker moves the timeout to its new bucket when it next visits the old one, once per timeout and turn of the wheel rather than once per `Reset`, which falls outside the timed region. rfyiamcool's `Timer.Reset` marks the old task stopped and schedules a new one, so the stopped ones stay in the wheel until it next reaches their bucket.\n\n")
	}

	if rep.has("heartbeat") {
		p := rep.param("heartbeat")
		fmt.Fprintf(&b, "## Heartbeat\n\n%s periodic tasks every %v, started evenly over one period, measured for %v after two periods; each run only counts itself.\n\n",
			num(float64(p), 0), msDur(sz.PeriodMS), msDur(sz.HeartbeatMS))
		rep.table(&b, "heartbeat", []column{
			{title: "CPU ms/s", metric: "cpu_ms_per_s", param: p, prec: 1},
			{title: "× stdlib", metric: "cpu_ms_per_s", param: p, ratio: true},
			{title: "CPU ns per run", metric: "cpu_ns_run", param: p},
			{title: "runs/s", metric: "runs_per_s", param: p},
			{title: "expected runs/s", metric: "expected_runs_per_s", param: p},
		}, func(im ImplInfo) string { return im.HeartbeatAPI })
		b.WriteString("\n")
	}

	if rep.has("context") {
		fmt.Fprintf(&b, "## Request-deadline contexts\n\nA context with a deadline %v away, made and cancelled %s times on one goroutine: from `context.Background()`, and as in a server, from a cancellable parent with `Done()` read once (a select with a default case) before cancel.\n\n",
			cancelDelay, num(float64(sz.Ops), 0))
		for _, v := range []struct {
			param int
			name  string
		}{{0, "From context.Background():"}, {1, "From a cancellable parent, Done read once:"}} {
			if rep.get(stdlibID, "context", v.param) == nil {
				continue
			}
			b.WriteString(v.name + "\n\n")
			rep.table(&b, "context", []column{
				{title: "CPU ns/op", metric: "cpu_ns_op", param: v.param},
				{title: "× context.WithTimeout", metric: "cpu_ns_op", param: v.param, ratio: true},
				{title: "wall ns/op", metric: "wall_ns_op", param: v.param},
				{title: "allocs/op", metric: "allocs_op", param: v.param, prec: 1},
				{title: "bytes/op", metric: "bytes_op", param: v.param},
			}, func(im ImplInfo) string { return im.ContextAPI })
			b.WriteString("\n")
		}
	}

	if rep.has("mixed") {
		rep.mixedSection(&b)
	}
	return b.String()
}

// mixedTickNote says which implementations have no figures at some ticks.
const mixedTickNote = "antlabs/timer's tick is fixed at 10ms: *no such tick* at the others"

// mixedTicks returns the ticks, ms, the mixed-horizon workload ran at, in
// the order of the plan.
func (rep *Report) mixedTicks() []float64 {
	var ticks []float64
	for _, p := range rep.Plan {
		if p.Workload == "mixed" && !slices.Contains(ticks, p.TickMS) {
			ticks = append(ticks, p.TickMS)
		}
	}
	return ticks
}

// mixedSection writes the mixed-horizon workload's tables, one per tick.
func (rep *Report) mixedSection(b *strings.Builder) {
	sz := rep.Sizes
	far := sz.MixedFar
	fmt.Fprintf(b, "## Mixed horizons: heartbeats beside far timeouts\n\n"+
		"%s heartbeats every %v, each re-armed for its next run by the implementation's periodic API (*heartbeat* in the "+
		"Implementations table: time.AfterFunc's is re-armed by its own function with Reset), heartbeat i started i/%s of "+
		"a period after the first (to within a millisecond), so that something is due at nearly every tick; beside %s "+
		"timeouts pending 1h..2h away, spread evenly, scheduled before the heartbeats start; and, for the figures *without*, alone. "+
		"The process's CPU per second over %v, after two periods of warm-up and a settle. "+
		"One table per tick: each wheel takes it as the Implementations table says (*tick*); time.AfterFunc has none, "+
		"and runs again at each, a run of its own; %s.\n\n",
		num(float64(sz.Heartbeats), 0), msDur(sz.PeriodMS), num(float64(sz.Heartbeats), 0), count(far),
		msDur(sz.MixedWindowMS), mixedTickNote)
	b.WriteString("*× without* is an implementation's CPU with the far timeouts over its own with the heartbeats alone, " +
		"what the far timeouts cost it; *× time.AfterFunc* over time.AfterFunc's with them; *× hashedwheel without* over " +
		"hashedwheel's with the heartbeats alone, the reference. Each is taken round by round, paired within a round. " +
		"Where none is skipped, the heartbeats run " + num(float64(sz.Heartbeats)*1000/sz.PeriodMS, 0) + " times a second in all.\n\n")
	for _, tick := range rep.mixedTicks() {
		fmt.Fprintf(b, "Tick %s:\n\n", msDur(tick))
		rep.table(b, "mixed", []column{
			{title: "CPU ms/s, with " + count(far) + " far", metric: "cpu_ms_per_s", param: far, tickMS: tick, prec: 1},
			{title: "CPU ms/s, without", metric: "cpu_ms_per_s", tickMS: tick, prec: 1},
			{title: "× without", metric: "cpu_ms_per_s", param: far, tickMS: tick, ratio: true, against: ptr(mixedWithout(ownImpl, tick))},
			{title: "× time.AfterFunc", metric: "cpu_ms_per_s", param: far, tickMS: tick, ratio: true},
			{title: "× hashedwheel without", metric: "cpu_ms_per_s", param: far, tickMS: tick, ratio: true, against: ptr(mixedWithout(hashedwheelID, tick))},
			{title: "runs/s, with", metric: "runs_per_s", param: far, tickMS: tick},
			{title: "runs/s, without", metric: "runs_per_s", tickMS: tick},
			{title: "GCs/s, with", metric: "gcs_per_s", param: far, tickMS: tick, prec: 1},
		}, func(im ImplInfo) string { return im.HeartbeatAPI })
		b.WriteString("\n")
	}
}

func ptr[T any](v T) *T { return &v }

func apiOr(api string) string {
	if api == "" {
		return "no API"
	}
	return "`" + api + "`"
}

// msDur writes milliseconds as a duration: 1000 as 1s, 10 as 10ms.
func msDur(v float64) string {
	if v >= 1000 && math.Mod(v, 1000) == 0 {
		return fmt.Sprintf("%gs", v/1000)
	}
	return fmt.Sprintf("%gms", v)
}

// updateReadme replaces the summary between the markers in the README at
// path with the run's summary table and its date, machine and command.
func updateReadme(path string, rep *Report) error {
	m := rep.Meta
	from := ""
	if m.busy() {
		from = " from other programs"
	}
	quick := ""
	if m.Quick {
		quick = " **Quick mode: tiny sizes, the figures mean nothing.**"
	}
	body := fmt.Sprintf("%s\nRun on %s, %d cores, %s, %s, with a load average of %s to %s%s; `%s`.%s\n",
		rep.summary(false), m.CPU, m.Cores, m.Go, m.Date, m.LoadStart, m.LoadEnd, from, m.Command, quick)
	return report.ReplaceBetween(path, readmeBegin, readmeEnd, body)
}

// busy reports whether other programs loaded the machine: a 1-minute load
// average of 1 or more when the run started, before any of its own
// processes had run.
func (m Meta) busy() bool {
	v, err := strconv.ParseFloat(m.LoadStart, 64)
	return err != nil || v >= 1
}
