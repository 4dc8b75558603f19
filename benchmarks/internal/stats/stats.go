// Package stats summarizes the repetitions of a benchmark: the values of
// each figure over them, their medians and quantiles.
package stats

import (
	"math"
	"slices"
)

// ByName returns, for each figure of the first repetition, its values over
// the repetitions that have it, in their order.
func ByName(reps []map[string]float64) map[string][]float64 {
	if len(reps) == 0 {
		return nil
	}
	out := make(map[string][]float64, len(reps[0]))
	for name := range reps[0] {
		var vals []float64
		for _, m := range reps {
			if v, ok := m[name]; ok {
				vals = append(vals, v)
			}
		}
		out[name] = vals
	}
	return out
}

// Median returns the middle value; of an even count, the mean of the two
// middle ones.
func Median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// LowerMedian returns the middle value; of an even count, the lower middle
// one, so that it is a value that was measured.
func LowerMedian(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// Quantile returns the q-quantile of sorted values (nearest rank), NaN if
// there are none.
func Quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
