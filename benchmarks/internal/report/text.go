package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Grouped writes v with prec decimals and its thousands separated by
// commas: 1234567.8 as 1,234,567.8. A negative v that does not round to
// zero starts with minus, which the caller chooses ("-" or "−"). NaN and
// the infinities are the caller's to write.
func Grouped(v float64, prec int, minus string) string {
	s := fmt.Sprintf("%.*f", prec, math.Abs(v))
	intPart, frac, _ := strings.Cut(s, ".")
	var out []byte
	for i := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, intPart[i])
	}
	s = string(out)
	if frac != "" {
		s += "." + frac
	}
	if v < 0 && strings.Trim(s, "0.,") != "" {
		s = minus + s
	}
	return s
}

// Count writes a count that is a power of ten, from 10^minExp up, as 1e3,
// and any other count in full.
func Count(n, minExp int) string {
	e, m := 0, n
	for m >= 10 && m%10 == 0 {
		m /= 10
		e++
	}
	if m == 1 && e >= minExp {
		return fmt.Sprintf("1e%d", e)
	}
	return strconv.Itoa(n)
}
