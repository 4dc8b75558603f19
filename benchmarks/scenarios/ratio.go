package main

import (
	"math"
	"slices"

	"github.com/hashedwheel/hashedwheel/benchmarks/internal/paired"
)

// minVerdictRounds and evenWithin are the project's rule for a verdict
// (see package paired).
const (
	minVerdictRounds = paired.MinRounds
	evenWithin       = paired.EvenWithin
)

// Ratio is one variant's figure over another's, round by round: in each
// round, the variant's value over the value the other measured in the same
// round (the variants of a scenario take turns within a round), so that a
// slow round for the machine moves both. Rounds in which either was
// overloaded, failed or has no such figure are left out.
type Ratio struct {
	Scenario string `json:"scenario"`
	Case     int    `json:"case"`
	Variant  string `json:"variant"`
	Against  string `json:"against"`
	Metric   string `json:"metric"`
	// Rounds are the round numbers (from 1) of Values.
	Rounds []int `json:"rounds"`
	// The ratios, their median and range, and the verdict.
	paired.Summary
}

// roundOf returns the round number (from 1) of each of r's repetitions.
// Reports written before Result.Rounds existed ran every round of every
// variant without error, so their i-th repetition is round i+1.
func (r *Result) roundOf() []int {
	if len(r.Rounds) == len(r.Reps) {
		return r.Rounds
	}
	out := make([]int, len(r.Reps))
	for i := range out {
		out[i] = i + 1
	}
	return out
}

// byRound returns r's figure in each round it has one and was not
// overloaded in.
func (r *Result) byRound(metric string) map[int]float64 {
	out := map[int]float64{}
	for i, k := range r.roundOf() {
		m := r.Reps[i]
		x, ok := m[metric]
		if !ok || math.IsNaN(x) || math.IsInf(x, 0) || m["overloaded"] != 0 {
			continue
		}
		out[k] = x
	}
	return out
}

// ratio computes a's figure over b's, round by round, and its verdict. It
// reports false when no round has both.
func (rep *Report) ratio(scenario string, c int, a, b, metric string) (*Ratio, bool) {
	ra, rb := rep.get(scenario, c, a), rep.get(scenario, c, b)
	if ra == nil || rb == nil {
		return nil, false
	}
	va, vb := ra.byRound(metric), rb.byRound(metric)
	q := &Ratio{Scenario: scenario, Case: c, Variant: a, Against: b, Metric: metric}
	for k := range va {
		if y, ok := vb[k]; ok && y != 0 {
			q.Rounds = append(q.Rounds, k)
		}
	}
	if len(q.Rounds) == 0 {
		return nil, false
	}
	slices.Sort(q.Rounds)
	var values []float64
	for _, k := range q.Rounds {
		values = append(values, va[k]/vb[k])
	}
	q.Summary = paired.Summarize(values)
	return q, true
}

// ratioPairs lists, per scenario, the variants each variant's figures are
// compared with besides the scenario's base, pairs of one variant against
// another (a variant against the one it improves on), and the figures
// compared: the ratio columns of the tables and the comparisons of the
// summaries.
var ratioPairs = map[string]struct {
	against []string
	pairs   [][2]string
	metrics []string
}{
	"sessions":       {[]string{"goroutine"}, [][2]string{{"wheel-schedule", "wheel"}}, []string{"cores", "cpu_ns_beat", "rearm_ns_caller", "mem_per_session"}},
	"eventloop-busy": {[]string{"heap"}, [][2]string{{"wheel-schedule", "wheel-lazy"}}, []string{"cores", "cpu_us_msg", "heap_per_conn"}},
	"eventloop-idle": {[]string{"heap"}, [][2]string{{"wheel-schedule", "wheel-lazy"}}, []string{"cores", "cpu_us_msg", "heap_per_conn"}},
	"goroutine":      {nil, nil, []string{"cpu_us_msg"}},
	"http":           {nil, nil, []string{"cpu_us_req", "allocs_req"}},
	"rpc":            {[]string{"context"}, nil, []string{"cpu_ns_req"}},
	"sizeclass":      {nil, [][2]string{{"embedded", "pointer"}}, []string{"mem_per_session", "mem_beyond"}},
}

// computeRatios fills rep.Ratios, so that scenarios.json holds every ratio
// the tables and the README quote, round by round.
func (rep *Report) computeRatios() {
	rep.Ratios = nil
	for _, sc := range rep.Scenarios {
		pairs := ratioPairs[sc.Name]
		against := append([]string{sc.base()}, pairs.against...)
		for _, c := range sc.Cases {
			for _, b := range against {
				for _, v := range sc.Variants {
					if v.ID == b {
						continue
					}
					for _, m := range pairs.metrics {
						if q, ok := rep.ratio(sc.Name, c, v.ID, b, m); ok {
							rep.Ratios = append(rep.Ratios, q)
						}
					}
				}
			}
			for _, pair := range pairs.pairs {
				for _, m := range pairs.metrics {
					if q, ok := rep.ratio(sc.Name, c, pair[0], pair[1], m); ok {
						rep.Ratios = append(rep.Ratios, q)
					}
				}
			}
		}
	}
}
