package main

import (
	"fmt"
	"math"
	"slices"

	"github.com/hashedwheel/hashedwheel/benchmarks/internal/stats"
)

// minVerdictRounds is the fewest rounds whose ratios must all fall on one
// side of 1 before a difference is called a win or a cost. With 5, rounds
// that only scatter around an even result all fall on one side in 2 runs
// of 32 (a sign test at 6%); with 3, in 1 of 4.
const minVerdictRounds = 5

// evenWithin is the ratio's distance from 1 under which a difference is even
// whatever the rounds say: this machine's noise from one run to the next.
const evenWithin = 0.05

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
	Rounds []int     `json:"rounds"`
	Values []float64 `json:"values"`
	// Median, Min and Max of Values.
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	// Verdict is "less" or "more" when every round's ratio is on that side
	// of 1, there are at least minVerdictRounds of them and the median is
	// evenWithin or more from 1; "few" when they agree but are fewer; and
	// "even" otherwise.
	Verdict string `json:"verdict"`
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
	for _, k := range q.Rounds {
		q.Values = append(q.Values, va[k]/vb[k])
	}
	q.Median, q.Min, q.Max = stats.Median(q.Values), slices.Min(q.Values), slices.Max(q.Values)
	q.Verdict = "even"
	switch below, above := q.Max < 1, q.Min > 1; {
	case !below && !above, math.Abs(q.Median-1) < evenWithin:
	case len(q.Values) < minVerdictRounds:
		q.Verdict = "few"
	case below:
		q.Verdict = "less"
	default:
		q.Verdict = "more"
	}
	return q, true
}

// String writes "0.22× [0.09–0.26]" (no range from one round).
func (q *Ratio) String() string {
	s := fmt.Sprintf("%.2f×", q.Median)
	if len(q.Values) > 1 {
		s += fmt.Sprintf(" [%.2f–%.2f]", q.Min, q.Max)
	}
	return s
}

// ratioPairs lists, per scenario, the variants each variant's figures are
// compared with besides the scenario's base, and the figures compared: the
// ratio columns of the tables and the comparisons of the summaries.
var ratioPairs = map[string]struct {
	against []string
	metrics []string
}{
	"sessions":       {[]string{"goroutine"}, []string{"cores", "cpu_ns_beat", "rearm_ns_caller", "mem_per_session"}},
	"eventloop-busy": {[]string{"heap"}, []string{"cores", "cpu_us_msg", "heap_per_conn"}},
	"eventloop-idle": {[]string{"heap"}, []string{"cores", "cpu_us_msg", "heap_per_conn"}},
	"goroutine":      {nil, []string{"cpu_us_msg"}},
	"http":           {nil, []string{"cpu_us_req", "allocs_req"}},
	"rpc":            {[]string{"context"}, []string{"cpu_ns_req"}},
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
		}
	}
}
