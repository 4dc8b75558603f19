package main

import (
	"fmt"
	"math"

	"github.com/hashedwheel/hashedwheel/benchmarks/internal/paired"
)

// Ratio is one implementation's figure over the standard library's,
// repetition by repetition: in each repetition, the implementation's value
// over the value the standard library measured in the same repetition (the
// implementations take turns within a repetition), so that a slow
// repetition for the machine moves both. Repetitions in which either has
// no such figure, or the standard library's is 0, are left out. The
// standard library's figure is of the same workload and parameter, unless
// AgainstWorkload names another (a reused timer's schedule and cancel
// against a new one's, say).
type Ratio struct {
	Impl            string `json:"impl"`
	Against         string `json:"against"`
	AgainstWorkload string `json:"against_workload,omitempty"`
	AgainstParam    int    `json:"against_param,omitempty"`
	Workload        string `json:"workload"`
	Param           int    `json:"param"`
	Metric          string `json:"metric"`
	// Reps are the repetition numbers (from 1) of Values.
	Reps []int `json:"reps"`
	// The ratios, their median and range, and the verdict.
	paired.Summary
}

// ratio computes impl's figure over the standard library's, repetition by
// repetition, and its verdict. Result.Reps[i] is repetition i+1: a result
// that fails is not run again. It reports false when no repetition has
// both.
func (rep *Report) ratio(impl, workload string, param int, metric string) (*Ratio, bool) {
	return rep.ratioTo(impl, workload, param, metric, baseline{workload, param})
}

// baseline is the standard library's workload and parameter a ratio is
// taken against.
type baseline struct {
	workload string
	param    int
}

// ratioTo is ratio against the standard library's figure in base.
func (rep *Report) ratioTo(impl, workload string, param int, metric string, base baseline) (*Ratio, bool) {
	r, b := rep.get(impl, workload, param), rep.get(stdlibID, base.workload, base.param)
	if r == nil || b == nil {
		return nil, false
	}
	q := &Ratio{Impl: impl, Against: stdlibID, Workload: workload, Param: param, Metric: metric}
	if base.workload != workload || base.param != param {
		q.AgainstWorkload, q.AgainstParam = base.workload, base.param
	}
	var values []float64
	for i := range min(len(r.Reps), len(b.Reps)) {
		x, okx := r.Reps[i][metric]
		y, oky := b.Reps[i][metric]
		if !okx || !oky || y == 0 || math.IsNaN(x/y) || math.IsInf(x/y, 0) {
			continue
		}
		q.Reps = append(q.Reps, i+1)
		values = append(values, x/y)
	}
	if len(values) == 0 {
		return nil, false
	}
	q.Summary = paired.Summarize(values)
	return q, true
}

// word is the ratio's verdict for the reader, where less is better:
// "costs less", "costs more", "even", or not yet one.
func (q *Ratio) word() string {
	switch q.Verdict {
	case "less":
		return "costs less"
	case "more":
		return "costs more"
	case "few":
		return q.NoVerdictYet()
	}
	return "even"
}

// ratioMetrics lists, per workload, the figures whose ratio to the
// standard library's the tables print.
var ratioMetrics = map[string][]string{
	"schedcancel":          {"cpu_ns_op", "wall_ns_op"},
	"schedcancel-parallel": {"cpu_ns_op", "wall_ns_op"},
	"schedcancel-reused":   {"cpu_ns_op"},
	"pending":              {"cpu_ns_op"},
	"memory":               {"bytes_per_timeout", "gc_ms"},
	"burst":                {"ms_to_last"},
	"rearm":                {"cpu_ns_op"},
	"heartbeat":            {"cpu_ms_per_s"},
	"context":              {"cpu_ns_op"},
}

// crossRatios lists, per workload, the figures whose ratio to the standard
// library's in another workload the tables print, for every implementation
// the standard library included: a reused timer's schedule and cancel
// against time.AfterFunc and Stop, a new timer each time.
var crossRatios = map[string][]struct {
	base   baseline
	metric string
}{
	"schedcancel-reused": {{baseline{"schedcancel", 0}, "cpu_ns_op"}},
}

// computeRatios fills rep.Ratios, so that benchmarks.json holds every
// ratio the tables and the README quote, repetition by repetition.
func (rep *Report) computeRatios() {
	rep.Ratios = nil
	for _, p := range rep.Plan {
		for _, im := range rep.Impls {
			if im.ID != stdlibID {
				for _, m := range ratioMetrics[p.Workload] {
					if q, ok := rep.ratio(im.ID, p.Workload, p.Param, m); ok {
						rep.Ratios = append(rep.Ratios, q)
					}
				}
			}
			for _, c := range crossRatios[p.Workload] {
				if q, ok := rep.ratioTo(im.ID, p.Workload, p.Param, c.metric, c.base); ok {
					rep.Ratios = append(rep.Ratios, q)
				}
			}
		}
	}
}

// ratioNote is the sentence under a table or summary that says how the
// ratios are taken and what their verdicts need.
func (rep *Report) ratioNote() string {
	s := fmt.Sprintf("A verdict needs the ratios of at least %d rounds all on one side of 1 and their median %.0f%% or more from it; where the rounds disagree the ratio is *even*.",
		paired.MinRounds, 100*paired.EvenWithin)
	if rep.Meta.Reps < paired.MinRounds {
		s += fmt.Sprintf(" This run had %s, fewer than a verdict needs: no verdict yet; its figures are to be measured again with the default %d.",
			rounds(rep.Meta.Reps), paired.MinRounds)
	}
	return s
}

// rounds writes "1 round" or "3 rounds".
func rounds(n int) string {
	if n == 1 {
		return "1 round"
	}
	return fmt.Sprintf("%d rounds", n)
}
