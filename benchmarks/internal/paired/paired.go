// Package paired holds the project's rule for comparing two programs that
// ran in turns, round by round: in each round, one's figure over the
// other's from the same round, so that a slow round for the machine moves
// both; the median of those ratios, their range, and a verdict that calls
// a difference only when every round agrees on it.
package paired

import (
	"fmt"
	"math"
	"slices"

	"github.com/hashedwheel/hashedwheel/benchmarks/internal/stats"
)

// MinRounds is the fewest rounds whose ratios must all fall on one side of
// 1 before a difference is called a win or a cost. With 5, rounds that
// only scatter around an even result all fall on one side in 2 runs of 32
// (a sign test at 6%); with 3, in 1 of 4.
const MinRounds = 5

// EvenWithin is the ratio's distance from 1 under which a difference is
// even whatever the rounds say: this machine's noise from one run to the
// next.
const EvenWithin = 0.05

// Summary is what the ratios of the rounds say.
type Summary struct {
	// Values are the ratios, one per round, in the rounds' order.
	Values []float64 `json:"values"`
	// Median, Min and Max of Values.
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	// Verdict is "less" or "more" when every round's ratio is on that side
	// of 1, there are at least MinRounds of them and the median is
	// EvenWithin or more from 1; "few" when they agree but are fewer; and
	// "even" otherwise.
	Verdict string `json:"verdict"`
}

// Summarize returns the summary of the ratios of one or more rounds.
func Summarize(values []float64) Summary {
	s := Summary{
		Values: values,
		Median: stats.Median(values),
		Min:    slices.Min(values),
		Max:    slices.Max(values),
	}
	s.Verdict = "even"
	switch below, above := s.Max < 1, s.Min > 1; {
	case !below && !above, math.Abs(s.Median-1) < EvenWithin:
	case len(values) < MinRounds:
		s.Verdict = "few"
	case below:
		s.Verdict = "less"
	default:
		s.Verdict = "more"
	}
	return s
}

// String writes "0.22× [0.09–0.26]" (no range from one round).
func (s Summary) String() string {
	out := fmt.Sprintf("%.2f×", s.Median)
	if len(s.Values) > 1 {
		out += fmt.Sprintf(" [%.2f–%.2f]", s.Min, s.Max)
	}
	return out
}

// Cell writes the ratio for a markdown table cell: "0.22× <sub>0.09–0.26</sub>",
// followed by "even" when the rounds disagree.
func (s Summary) Cell() string {
	out := fmt.Sprintf("%.2f×", s.Median)
	if len(s.Values) > 1 {
		out += fmt.Sprintf(" <sub>%.2f–%.2f</sub>", s.Min, s.Max)
	}
	if s.Verdict == "even" {
		out += " even"
	}
	return out
}

// NoVerdictYet says why rounds that agree are not yet a verdict (Verdict
// "few").
func (s Summary) NoVerdictYet() string {
	if len(s.Values) == 1 {
		return fmt.Sprintf("no verdict yet: 1 round, %d needed", MinRounds)
	}
	return fmt.Sprintf("no verdict yet: %d rounds agree, %d needed", len(s.Values), MinRounds)
}
