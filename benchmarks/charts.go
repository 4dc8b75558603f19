package main

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/hashedwheel/hashedwheel/benchmarks/internal/chart"
)

// Charts draws the charts of benchmarks.md into out, as PNG.
func (rep *Report) Charts(out string) error {
	if rep.has("pending") {
		if err := costPerOpChart(filepath.Join(out, costChart), rep); err != nil {
			return fmt.Errorf("%s: %w", costChart, err)
		}
	}
	if rep.has("lateness") {
		if err := latenessCDFChart(filepath.Join(out, latenessChart), rep); err != nil {
			return fmt.Errorf("%s: %w", latenessChart, err)
		}
	}
	if rep.has("idle") {
		if err := idleBarChart(filepath.Join(out, idleChart), rep); err != nil {
			return fmt.Errorf("%s: %w", idleChart, err)
		}
	}
	return nil
}

func caption(rep *Report) string { return chart.Caption(rep.Meta.Info, "", rep.Meta.Quick) }

// costPerOpChart draws CPU per schedule-and-cancel against the pending count,
// one line per implementation, both axes logarithmic.
func costPerOpChart(path string, rep *Report) error {
	p := chart.New("CPU per schedule + cancel, against timeouts already pending",
		"timeouts pending (log scale)\n"+caption(rep), "CPU ns per schedule + cancel (log scale)")
	chart.LogLog(p, chart.OneTwoFive{Label: func(v float64) string { return num(v, 0) }})
	ymin, ymax := math.Inf(1), 0.0
	for i, im := range rep.Impls {
		var xys plotter.XYs
		for _, n := range rep.Sizes.Pendings {
			if v, ok := rep.value(im.ID, "pending", n, "cpu_ns_op"); ok && v > 0 {
				xys = append(xys, plotter.XY{X: float64(n), Y: v})
				ymin, ymax = math.Min(ymin, v), math.Max(ymax, v)
			}
		}
		if len(xys) == 0 {
			continue
		}
		line, points, err := chart.LinePoints(xys, i)
		if err != nil {
			return err
		}
		p.Add(line, points)
		p.Legend.Add(im.Label, line, points)
	}
	if ymax > 0 {
		// Room above the lines for the legend.
		p.Y.Min, p.Y.Max = ymin/1.3, ymax*4
		p.Legend.YOffs = -vg.Points(8)
	}
	return p.Save(9*vg.Inch, 6*vg.Inch, path)
}

// latenessCDFChart draws, per implementation, the share of tasks that ran
// within a lateness, with the early side shaded.
func latenessCDFChart(path string, rep *Report) error {
	param := rep.param("lateness")
	xmin, xmax := 0.0, 1.0
	for _, im := range rep.Impls {
		if r := rep.get(im.ID, "lateness", param); r != nil && len(r.Quantiles) == 1001 {
			xmin = math.Min(xmin, r.Quantiles[0])
			xmax = math.Max(xmax, r.Quantiles[995])
		}
	}
	xmin = math.Floor(math.Max(xmin, -4*rep.Sizes.TickMS)) - 1
	xmax = math.Ceil(math.Min(xmax*1.1, 4*rep.Sizes.TickMS))
	p := chart.New(fmt.Sprintf("Lateness of %s timeouts spread over %s, %s tick",
		num(float64(param), 0), msDur(rep.Sizes.LateSpreadMS), msDur(rep.Sizes.TickMS)),
		fmt.Sprintf("lateness, ms: time run minus time due (axis cut at %g ms)\n", xmax)+caption(rep), "share of tasks run by then")

	early, err := plotter.NewPolygon(plotter.XYs{{X: xmin, Y: 0}, {X: 0, Y: 0}, {X: 0, Y: 1}, {X: xmin, Y: 1}})
	if err != nil {
		return err
	}
	early.Color = color.RGBA{R: 255, G: 200, B: 200, A: 255}
	early.LineStyle.Width = 0
	p.Add(early)
	labels, err := plotter.NewLabels(plotter.XYLabels{
		XYs:    []plotter.XY{{X: xmin + (0-xmin)*0.05, Y: 0.04}},
		Labels: []string{"EARLY: ran before its delay had passed"},
	})
	if err != nil {
		return err
	}
	labels.TextStyle[0].Color = color.RGBA{R: 170, A: 255}
	labels.TextStyle[0].Font.Size = vg.Points(11)
	p.Add(labels)

	for i, im := range rep.Impls {
		r := rep.get(im.ID, "lateness", param)
		if r == nil || len(r.Quantiles) != 1001 {
			continue
		}
		xys := make(plotter.XYs, 0, len(r.Quantiles))
		for k, q := range r.Quantiles {
			xys = append(xys, plotter.XY{X: q, Y: float64(k) / 1000}) // the plot clips to its axes
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		line.Color = plotutil.Color(i)
		line.Width = vg.Points(2)
		line.Dashes = plotutil.Dashes(i)
		p.Add(line)
		p.Legend.Add(fmt.Sprintf("%s: %s early", im.Label, num(r.Median["early"], 0)), line)
	}
	// Top left: early runs are few, so the lines stay low there.
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.XOffs = vg.Points(8)
	p.Legend.YOffs = -vg.Points(8)
	// After Add, which widens the axes to the data.
	p.X.Min, p.X.Max = xmin, xmax
	p.Y.Min, p.Y.Max = 0, 1
	return p.Save(10*vg.Inch, 6*vg.Inch, path)
}

// idleBarChart draws the CPU per second of each implementation with nothing
// due: with nothing pending, and with many timeouts pending far away.
func idleBarChart(path string, rep *Report) error {
	p := chart.New(fmt.Sprintf("Idle: CPU per second with nothing due (%s window)", msDur(rep.Sizes.IdleWindowMS)),
		caption(rep), "process CPU, ms per second")
	groups := []struct {
		param int
		name  string
	}{
		{0, "nothing pending"},
		{rep.Sizes.IdlePending, count(rep.Sizes.IdlePending) + " pending an hour away"},
	}
	width := vg.Points(22)
	var names []string
	for _, im := range rep.Impls {
		names = append(names, im.Label)
	}
	for g, grp := range groups {
		vals := make(plotter.Values, len(rep.Impls))
		for i, im := range rep.Impls {
			if v, ok := rep.value(im.ID, "idle", grp.param, "cpu_ms_per_s"); ok {
				vals[i] = v
			}
		}
		bars, err := plotter.NewBarChart(vals, width)
		if err != nil {
			return err
		}
		bars.Color = plotutil.Color(g)
		bars.LineStyle.Width = 0
		bars.Offset = (vg.Length(g) - 0.5) * width
		p.Add(bars)
		p.Legend.Add(grp.name, bars)

		labels := make([]string, len(vals))
		xys := make([]plotter.XY, len(vals))
		for i, v := range vals {
			labels[i] = num(v, 2)
			xys[i] = plotter.XY{X: float64(i), Y: v}
		}
		ls, err := chart.Labels(plotter.XYLabels{XYs: xys, Labels: labels}, 9, draw.XCenter,
			vg.Point{X: (vg.Length(g) - 0.5) * width, Y: vg.Points(3)})
		if err != nil {
			return err
		}
		p.Add(ls)
	}
	p.NominalX(names...)
	p.X.Tick.Label.Font.Size = vg.Points(10)
	p.Legend.Top = true
	p.Legend.Left = true
	p.Y.Min = 0
	p.Y.Max *= 1.25 // room for the legend and the labels
	return p.Save(10*vg.Inch, 5.5*vg.Inch, path)
}
