package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hashedwheel/hashedwheel/benchmarks/internal/machine"
	"github.com/hashedwheel/hashedwheel/benchmarks/internal/report"
	"github.com/hashedwheel/hashedwheel/benchmarks/internal/stats"
)

// variant is one way of doing a scenario's job.
type variant struct {
	ID    string `json:"id"`    // the -variants flag
	Label string `json:"label"` // in tables and charts
	API   string `json:"api"`   // the calls it makes, for the tables
	// Base marks the standard-library variant the ratios are taken against.
	Base bool `json:"base,omitempty"`
}

// scenario is one program shape: its variants, its cases (the session
// counts; one case elsewhere) and how to run one variant on one case.
type scenario struct {
	Name     string    `json:"name"`
	Title    string    `json:"title"`
	Variants []variant `json:"variants"`
	Cases    []int     `json:"cases"`

	run func(p params, v variant, c int) (outcome, error)
}

// outcome is what one run of one variant measured.
type outcome struct {
	Metrics map[string]float64 `json:"metrics"`
	// Violations are failed hard checks: an early kick, an active
	// connection closed before its limit, an idle deadline run early.
	Violations []string `json:"violations,omitempty"`
}

// Result holds every round of one variant on one case of a scenario.
type Result struct {
	Scenario string `json:"scenario"`
	Case     int    `json:"case"`
	Variant  string `json:"variant"`
	// Reps are the figures of each round, in the order they ran; Rounds
	// holds the round number (from 1) of each, and Positions where in its
	// round the variant ran (0: first). A round that failed has no Rep.
	Reps      []map[string]float64 `json:"reps,omitempty"`
	Rounds    []int                `json:"rounds,omitempty"`
	Positions []int                `json:"positions,omitempty"`
	// Median, Min and Max of each figure over the rounds.
	Median     map[string]float64 `json:"median,omitempty"`
	Min        map[string]float64 `json:"min,omitempty"`
	Max        map[string]float64 `json:"max,omitempty"`
	Violations []string           `json:"violations,omitempty"`
	Errors     []string           `json:"errors,omitempty"`
}

// Report is everything scenarios.json holds.
type Report struct {
	Meta      Meta        `json:"meta"`
	Params    params      `json:"params"`
	Scenarios []*scenario `json:"scenarios"`
	Results   []*Result   `json:"results"`
	// Ratios are the per-round ratios the tables and the README quote.
	Ratios []*Ratio `json:"ratios,omitempty"`
}

// Meta describes the run: the machine, then this program's own fields.
type Meta struct {
	machine.Info
	FileLimit uint64  `json:"file_limit"`
	Commit    string  `json:"commit,omitempty"`
	Quick     bool    `json:"quick"`
	Seconds   float64 `json:"seconds"`
	// Load averages (1 minute) read from /proc/loadavg before the first
	// run, before every run (its lowest and highest), and at the end.
	LoadStart string  `json:"load_start"`
	LoadMin   float64 `json:"load_min"`
	LoadMax   float64 `json:"load_max"`
	LoadEnd   string  `json:"load_end"`
}

// scenarios lists the scenarios in the order of the report.
func scenarios(p params) []*scenario {
	return []*scenario{
		sessionsScenario(p),
		eventLoopScenario(p, regimeBusy),
		eventLoopScenario(p, regimeIdle),
		goroutineScenario(p),
		httpScenario(p),
		rpcScenario(p),
		sizeClassScenario(p),
	}
}

func scenarioNames() []string {
	var s []string
	for _, sc := range scenarios(fullParams()) {
		s = append(s, sc.Name)
	}
	return s
}

// drive runs the chosen scenarios and writes the report. It returns the
// number of failed hard checks.
func drive(out, readme, section string, quick bool, p params, names, variants []string) (int, error) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return 0, err
	}
	all := scenarios(p)
	for _, n := range names {
		if !slices.ContainsFunc(all, func(s *scenario) bool { return s.Name == n }) {
			return 0, fmt.Errorf("-run: no scenario %q (have %s)", n, strings.Join(scenarioNames(), ", "))
		}
	}
	rep := &Report{Meta: meta(quick), Params: p}
	for _, sc := range all {
		if len(names) > 0 && !slices.Contains(names, sc.Name) {
			continue
		}
		if len(variants) > 0 {
			sc.Variants = slices.DeleteFunc(sc.Variants, func(v variant) bool { return !slices.Contains(variants, v.ID) })
			if len(sc.Variants) == 0 {
				continue
			}
		}
		rep.Scenarios = append(rep.Scenarios, sc)
	}
	if len(rep.Scenarios) == 0 {
		return 0, fmt.Errorf("nothing to run")
	}
	start := time.Now()
	rep.Meta.LoadMin, rep.Meta.LoadMax = 1e9, 0
	for _, sc := range rep.Scenarios {
		for _, c := range sc.Cases {
			byVariant := map[string]*Result{}
			for _, v := range sc.Variants {
				r := &Result{Scenario: sc.Name, Case: c, Variant: v.ID}
				byVariant[v.ID] = r
				rep.Results = append(rep.Results, r)
			}
			for k := range p.Rounds {
				// Interleave: every variant runs once per round, and the
				// order turns each round, so that no variant always runs
				// first (or right after the same one), and each round's
				// ratios compare runs minutes apart at most.
				for j := range sc.Variants {
					v := sc.Variants[(j+k)%len(sc.Variants)]
					r := byVariant[v.ID]
					if l, err := strconv.ParseFloat(machine.LoadAverage(), 64); err == nil {
						rep.Meta.LoadMin, rep.Meta.LoadMax = min(rep.Meta.LoadMin, l), max(rep.Meta.LoadMax, l)
					}
					t0 := time.Now()
					o, err := sc.run(p, v, c)
					status := "ok"
					switch {
					case err != nil:
						r.Errors = append(r.Errors, fmt.Sprintf("round %d: %v", k+1, err))
						status = "FAILED: " + err.Error()
					default:
						r.Reps = append(r.Reps, o.Metrics)
						r.Rounds = append(r.Rounds, k+1)
						r.Positions = append(r.Positions, j)
						for _, viol := range o.Violations {
							r.Violations = append(r.Violations, fmt.Sprintf("round %d: %s", k+1, viol))
						}
						if len(o.Violations) > 0 {
							status = "HARD CHECK FAILED: " + strings.Join(o.Violations, "; ")
						}
					}
					fmt.Fprintf(os.Stderr, "round %d/%d  %-15s %-9s %-40s %6.1fs  %s\n",
						k+1, p.Rounds, sc.Name, caseName(sc.Name, c), v.Label, time.Since(t0).Seconds(), status)
				}
			}
		}
	}
	rep.Meta.Seconds = time.Since(start).Seconds()
	rep.Meta.LoadEnd = machine.LoadAverage()
	rep.deriveSizeClass()
	failed := 0
	for _, r := range rep.Results {
		summarize(r)
		failed += len(r.Violations)
	}
	rep.computeRatios()
	if readme != "" {
		if err := rep.updateReadme(readme); err != nil {
			return failed, err
		}
	}
	if section != "" {
		if err := rep.updateSections(section); err != nil {
			return failed, err
		}
	}
	return failed, report.Save(out, "scenarios", rep)
}

// summarize takes the median, minimum and maximum of each figure over the
// rounds.
func summarize(r *Result) {
	if len(r.Reps) == 0 {
		return
	}
	r.Median, r.Min, r.Max = map[string]float64{}, map[string]float64{}, map[string]float64{}
	for name, vals := range stats.ByName(r.Reps) {
		r.Median[name] = stats.Median(vals)
		r.Min[name], r.Max[name] = slices.Min(vals), slices.Max(vals)
	}
}

// caseName is how a scenario's case reads in tables and progress.
func caseName(scenario string, c int) string {
	if scenario == "sessions" {
		return "n=" + count(c)
	}
	return ""
}

// count writes 1000 as 1e3, and numbers that are no power of ten (or
// less than 1000) in full.
func count(n int) string { return report.Count(n, 3) }

func meta(quick bool) Meta {
	var lim syscall.Rlimit
	_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	return Meta{
		Info:      machine.Describe("cd benchmarks && go run ./scenarios"),
		FileLimit: lim.Cur,
		Quick:     quick,
		LoadStart: machine.LoadAverage(),
		Commit:    machine.Commit(),
	}
}

// rerender writes the tables and charts of the report in file under out,
// with its per-round ratios computed again, the README's summary table if
// readme is not empty, and the sections of the file section if it is not.
func rerender(file, out, readme, section string) error {
	var rep Report
	if err := report.Load(file, &rep); err != nil {
		return err
	}
	rep.computeRatios()
	if err := report.Save(out, "scenarios", &rep); err != nil {
		return err
	}
	if readme != "" {
		if err := rep.updateReadme(readme); err != nil {
			return err
		}
	}
	if section != "" {
		return rep.updateSections(section)
	}
	return nil
}

// Files written to the output directory besides scenarios.json and
// scenarios.md.
const (
	sessionsChart  = "scenarios-sessions.png"
	eventLoopChart = "scenarios-eventloop.png"
	deadlinesChart = "scenarios-deadlines.png"
)
