package main

import (
	"fmt"
	"math"

	"github.com/hashedwheel/hashedwheel/benchmarks/internal/paired"
)

// Ratio is one implementation's figure over the standard library's (or over
// Against's), repetition by repetition: in each repetition, the
// implementation's value over the value the other measured in the same
// repetition (the implementations take turns within a repetition), so that a
// slow repetition for the machine moves both. Repetitions in which either
// has no such figure, or the other's is 0, are left out. The other's figure
// is of the same workload, parameter and tick, unless AgainstWorkload names
// another (a reused timer's schedule and cancel against a new one's, say),
// with AgainstParam and AgainstTickMS (the mixed-horizon workload with its
// far timeouts against the same without them, say).
type Ratio struct {
	Impl            string  `json:"impl"`
	Against         string  `json:"against"`
	AgainstWorkload string  `json:"against_workload,omitempty"`
	AgainstParam    int     `json:"against_param,omitempty"`
	AgainstTickMS   float64 `json:"against_tick_ms,omitempty"`
	Workload        string  `json:"workload"`
	Param           int     `json:"param"`
	TickMS          float64 `json:"tick_ms,omitempty"`
	Metric          string  `json:"metric"`
	// Reps are the repetition numbers (from 1) of Values.
	Reps []int `json:"reps"`
	// The ratios, their median and range, and the verdict.
	paired.Summary
}

// baseline is the implementation, workload, parameter and tick a ratio is
// taken against.
type baseline struct {
	// impl is "" for the standard library, ownImpl for the implementation
	// whose ratio it is, or an implementation's id.
	impl     string
	workload string
	param    int
	tickMS   float64
}

// ownImpl, as a baseline's impl, takes a ratio against the implementation's
// own figure in another workload or parameter.
const ownImpl = "(own)"

// key returns the baseline's workload, parameter and tick.
func (b baseline) key() planned {
	return planned{Workload: b.workload, Param: b.param, TickMS: b.tickMS}
}

// ratioTo computes impl's figure in p over the figure of base, repetition
// by repetition, and its verdict. Result.Reps[i] is repetition i+1: a result
// that fails is not run again. It reports false when no repetition has
// both.
func (rep *Report) ratioTo(impl string, p planned, metric string, base baseline) (*Ratio, bool) {
	against := base.impl
	switch against {
	case "":
		against = stdlibID
	case ownImpl:
		against = impl
	}
	r, b := rep.at(impl, p), rep.at(against, base.key())
	if r == nil || b == nil {
		return nil, false
	}
	q := &Ratio{Impl: impl, Against: against, Workload: p.Workload, Param: p.Param, TickMS: p.TickMS, Metric: metric}
	if base.key() != p {
		q.AgainstWorkload, q.AgainstParam, q.AgainstTickMS = base.workload, base.param, base.tickMS
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
	"mixed":                {"cpu_ms_per_s"},
}

// crossRatio is a figure whose ratio to another baseline than the standard
// library's in the same workload, parameter and tick the tables print.
type crossRatio struct {
	base   baseline
	metric string
}

// crossRatios lists the cross ratios of the workload and parameter p, for
// every implementation the standard library included: a reused timer's
// schedule and cancel against time.AfterFunc and Stop, a new timer each
// time; the heartbeats beside far timeouts against the same
// implementation's, and hashedwheel's, heartbeats alone at that tick.
func crossRatios(p planned) []crossRatio {
	switch {
	case p.Workload == "schedcancel-reused":
		return []crossRatio{{baseline{workload: "schedcancel"}, "cpu_ns_op"}}
	case p.Workload == "mixed" && p.Param > 0:
		return []crossRatio{
			{mixedWithout(ownImpl, p.TickMS), "cpu_ms_per_s"},
			{mixedWithout(hashedwheelID, p.TickMS), "cpu_ms_per_s"},
		}
	}
	return nil
}

// mixedWithout is impl's mixed-horizon workload at the tick without far
// timeouts.
func mixedWithout(impl string, tickMS float64) baseline {
	return baseline{impl: impl, workload: "mixed", tickMS: tickMS}
}

// computeRatios fills rep.Ratios, so that benchmarks.json holds every
// ratio the tables and the README quote, repetition by repetition.
func (rep *Report) computeRatios() {
	rep.Ratios = nil
	for _, p := range rep.Plan {
		for _, im := range rep.Impls {
			if im.ID != stdlibID {
				for _, m := range ratioMetrics[p.Workload] {
					if q, ok := rep.ratioTo(im.ID, p, m, baseline{workload: p.Workload, param: p.Param, tickMS: p.TickMS}); ok {
						rep.Ratios = append(rep.Ratios, q)
					}
				}
			}
			for _, c := range crossRatios(p) {
				if c.base.impl == im.ID {
					continue // its own, which ownImpl gives
				}
				if q, ok := rep.ratioTo(im.ID, p, c.metric, c.base); ok {
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
