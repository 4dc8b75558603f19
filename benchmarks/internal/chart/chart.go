// Package chart holds what the benchmark programs' charts share: a plot in
// their style, their caption, their axes' ticks, and styled lines, labels
// and error bars, all with gonum.org/v1/plot.
package chart

import (
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/hashedwheel/hashedwheel/benchmarks/internal/machine"
)

// New returns a plot with a title, axis labels and a grid.
func New(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(14)
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Legend.TextStyle.Font.Size = vg.Points(11)
	p.Add(plotter.NewGrid())
	return p
}

// Caption says where a chart's figures come from: the machine's CPU and
// cores, the Go version and the date, then note, and whether the run was
// a quick one.
func Caption(m machine.Info, note string, quick bool) string {
	s := fmt.Sprintf("%s, %d cores, %s, %s%s", m.CPU, m.Cores, m.Go, m.Date, note)
	if quick {
		s += " (quick mode: tiny sizes)"
	}
	return s
}

// LogLog makes both axes of p logarithmic, the x axis ticked at each power
// of ten and the y axis with yTicks, and puts the legend top left.
func LogLog(p *plot.Plot, yTicks plot.Ticker) {
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = PowersOfTen{}
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = yTicks
	p.Legend.Top = true
	p.Legend.Left = true
}

// LinePoints returns a line through xys with a mark at each point, in the
// i-th color and mark of plotutil's palette.
func LinePoints(xys plotter.XYs, i int) (*plotter.Line, *plotter.Scatter, error) {
	line, points, err := plotter.NewLinePoints(xys)
	if err != nil {
		return nil, nil, err
	}
	line.Color = plotutil.Color(i)
	line.Width = vg.Points(2)
	points.Color = plotutil.Color(i)
	points.Shape = plotutil.Shape(i)
	points.Radius = vg.Points(3.5)
	return line, points, nil
}

// Labels returns labels in a font of size points, aligned on their points
// as align says and moved from them by offset.
func Labels(l plotter.XYLabels, size float64, align draw.XAlignment, offset vg.Point) (*plotter.Labels, error) {
	ls, err := plotter.NewLabels(l)
	if err != nil {
		return nil, err
	}
	for i := range ls.TextStyle {
		ls.TextStyle[i].Font.Size = vg.Points(size)
		ls.TextStyle[i].XAlign = align
	}
	ls.Offset = offset
	return ls, nil
}

// ErrorBars returns vertical error bars at xys, errs[i] below and above
// the i-th point.
func ErrorBars(xys plotter.XYs, errs plotter.YErrors) (*plotter.YErrorBars, error) {
	return plotter.NewYErrorBars(struct {
		plotter.XYs
		plotter.YErrors
	}{xys, errs})
}

// PowersOfTen ticks a log axis at each power of ten, written 1e3.
type PowersOfTen struct{}

// Ticks implements plot.Ticker.
func (PowersOfTen) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(lo)); math.Pow(10, e) <= hi; e++ {
		if v := math.Pow(10, e); v >= lo {
			ticks = append(ticks, plot.Tick{Value: v, Label: fmt.Sprintf("1e%d", int(e))})
		}
	}
	return ticks
}

// OneTwoFive ticks a log axis at 1, 2 and 5 times each power of ten,
// labelled by Label, or as %g if Label is nil.
type OneTwoFive struct {
	Label func(float64) string
}

// Ticks implements plot.Ticker.
func (t OneTwoFive) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(lo)); math.Pow(10, e) <= hi; e++ {
		for _, m := range []float64{1, 2, 5} {
			if v := m * math.Pow(10, e); v >= lo && v <= hi {
				label := fmt.Sprintf("%g", v)
				if t.Label != nil {
					label = t.Label(v)
				}
				ticks = append(ticks, plot.Tick{Value: v, Label: label})
			}
		}
	}
	return ticks
}

// Plain ticks a linear axis as the default does, labelled without needless
// decimals.
type Plain struct{}

// Ticks implements plot.Ticker.
func (Plain) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = fmt.Sprintf("%g", ticks[i].Value)
		}
	}
	return ticks
}
