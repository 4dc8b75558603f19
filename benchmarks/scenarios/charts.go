package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/hashedwheel/hashedwheel/benchmarks/internal/chart"
)

// Charts draws the charts of scenarios.md into out, as PNG.
func (rep *Report) Charts(out string) error {
	if sc := rep.scenario("sessions"); sc != nil {
		if err := sessionsCoresChart(filepath.Join(out, sessionsChart), rep, sc); err != nil {
			return fmt.Errorf("%s: %w", sessionsChart, err)
		}
	}
	if rep.scenario("eventloop-busy") != nil || rep.scenario("eventloop-idle") != nil {
		if err := eventLoopCPUChart(filepath.Join(out, eventLoopChart), rep); err != nil {
			return fmt.Errorf("%s: %w", eventLoopChart, err)
		}
	}
	if rep.scenario("http") != nil || rep.scenario("rpc") != nil {
		if err := deadlinesCPUChart(filepath.Join(out, deadlinesChart), rep); err != nil {
			return fmt.Errorf("%s: %w", deadlinesChart, err)
		}
	}
	return nil
}

func caption(rep *Report) string {
	return chart.Caption(rep.Meta.Info, fmt.Sprintf("; medians of %d rounds, a dot per round", rep.Params.Rounds), rep.Meta.Quick)
}

// roundPoints draws a hollow dot for each round's value, shifted off
// points to the right of its x (to sit on a bar drawn with that offset).
type roundPoints struct {
	xys   plotter.XYs
	off   vg.Length
	color color.Color
}

// newRoundPoints returns the dots of r's figure in each round it ran, at x.
func newRoundPoints(r *Result, metric string, x float64, off vg.Length, c color.Color) *roundPoints {
	rp := &roundPoints{off: off, color: c}
	for _, m := range r.Reps {
		if y, ok := m[metric]; ok && !math.IsNaN(y) {
			rp.xys = append(rp.xys, plotter.XY{X: x, Y: y})
		}
	}
	return rp
}

func (rp *roundPoints) Plot(c draw.Canvas, plt *plot.Plot) {
	tx, ty := plt.Transforms(&c)
	sty := draw.GlyphStyle{Color: rp.color, Radius: vg.Points(3), Shape: draw.RingGlyph{}}
	for _, xy := range rp.xys {
		pt := vg.Point{X: tx(xy.X) + rp.off, Y: ty(xy.Y)}
		if c.Contains(pt) {
			c.DrawGlyph(sty, pt)
		}
	}
}

// DataRange makes the plot's axes hold every round.
func (rp *roundPoints) DataRange() (xmin, xmax, ymin, ymax float64) {
	if len(rp.xys) == 0 {
		return math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	}
	return plotter.XYRange(rp.xys)
}

// sessionsCoresChart draws the cores used against the number of sessions,
// one line per variant through the medians, both axes logarithmic, with a
// dot for each round and the range over the rounds as error bars.
func sessionsCoresChart(path string, rep *Report, sc *scenario) error {
	p := chart.New(fmt.Sprintf("Sessions: CPU used, heartbeat every %v, idle deadline re-armed every %v", dur(rep.Params.Period), dur(rep.Params.Activity)),
		"sessions (log scale)\n"+caption(rep), "cores used (log scale)")
	chart.LogLog(p, chart.OneTwoFive{})
	ymin, ymax := math.Inf(1), 0.0
	var over plotter.XYs // overloaded variants: no line, a cross and a note
	var overNotes []string
	for i, v := range sc.Variants {
		var xys plotter.XYs
		var errs plotter.YErrors
		for _, n := range sc.Cases {
			r := rep.get(sc.Name, n, v.ID)
			if r == nil || r.Median == nil || r.Median["cores"] <= 0 {
				continue
			}
			y := r.Median["cores"]
			ymin, ymax = math.Min(ymin, r.Min["cores"]), math.Max(ymax, r.Max["cores"])
			if r.overloaded() {
				over = append(over, plotter.XY{X: float64(n), Y: y})
				overNotes = append(overNotes, fmt.Sprintf("%s fell behind: %s of %s heartbeats/s",
					v.Label, num(r.Median["beats_per_s"], 0), num(r.Median["expected_beats"], 0)))
				continue
			}
			xys = append(xys, plotter.XY{X: float64(n), Y: y})
			errs = append(errs, struct{ Low, High float64 }{y - r.Min["cores"], r.Max["cores"] - y})
		}
		// Every round, those that fell behind too.
		for _, n := range sc.Cases {
			if r := rep.get(sc.Name, n, v.ID); r != nil {
				p.Add(newRoundPoints(r, "cores", float64(n), 0, plotutil.Color(i)))
			}
		}
		if len(xys) == 0 {
			continue
		}
		line, points, err := chart.LinePoints(xys, i)
		if err != nil {
			return err
		}
		eb, err := chart.ErrorBars(xys, errs)
		if err != nil {
			return err
		}
		eb.Color = plotutil.Color(i)
		p.Add(line, points, eb)
		p.Legend.Add(v.Label+": "+v.API, line, points)
	}
	if len(over) > 0 {
		sc, err := plotter.NewScatter(over)
		if err != nil {
			return err
		}
		sc.GlyphStyle.Shape = draw.CrossGlyph{}
		sc.GlyphStyle.Radius = vg.Points(6)
		p.Add(sc)
		ls, err := chart.Labels(plotter.XYLabels{XYs: over, Labels: overNotes}, 9, draw.XRight,
			vg.Point{X: -vg.Points(10), Y: -vg.Points(3)})
		if err != nil {
			return err
		}
		p.Add(ls)
		p.Legend.Add("overloaded: could not keep up, line not drawn", sc)
	}
	if ymax > 0 {
		p.Y.Min, p.Y.Max = math.Max(ymin/1.5, 1e-4), ymax*6 // room above the lines for the legend
	}
	return p.Save(11*vg.Inch, 6.5*vg.Inch, path)
}

// eventLoopCPUChart draws the server's cores per variant in each regime,
// the timers' share (from the profile) as the darker part of each bar.
func eventLoopCPUChart(path string, rep *Report) error {
	p := chart.New("Event loop (gnet): server CPU, the timers' share darker",
		caption(rep), "server cores")
	p.Y.Tick.Marker = chart.Plain{}
	var groups []*scenario
	var names []string
	for _, r := range []regime{regimeBusy, regimeIdle} {
		if sc := rep.scenario("eventloop-" + string(r)); sc != nil {
			groups = append(groups, sc)
			conns := rep.conns(sc, sc.base())
			names = append(names, fmt.Sprintf("%s: %s connections", r, num(conns, 0)))
		}
	}
	variants := groups[0].Variants
	width := vg.Points(40)
	for i, v := range variants {
		var labels plotter.XYLabels
		timer := make(plotter.Values, len(groups))
		rest := make(plotter.Values, len(groups))
		for g, sc := range groups {
			cores, ok := rep.value(sc.Name, 0, v.ID, "cores")
			if !ok {
				continue
			}
			share, _ := rep.value(sc.Name, 0, v.ID, "timer_share")
			timer[g], rest[g] = cores*share, cores*(1-share)
			labels.XYs = append(labels.XYs, plotter.XY{X: float64(g), Y: cores})
			labels.Labels = append(labels.Labels, fmt.Sprintf("%s\n%.0f%% timers", num(cores, 2), 100*share))
		}
		tb, err := plotter.NewBarChart(timer, width)
		if err != nil {
			return err
		}
		rb, err := plotter.NewBarChart(rest, width)
		if err != nil {
			return err
		}
		c := plotutil.Color(i)
		tb.Color, rb.Color = darker(c), lighter(c)
		tb.LineStyle.Width, rb.LineStyle.Width = 0, 0
		off := (vg.Length(i) - vg.Length(len(variants)-1)/2) * (width + vg.Points(4))
		tb.Offset, rb.Offset = off, off
		rb.StackOn(tb)
		p.Add(tb, rb)
		p.Legend.Add(v.Label, rb)
		ls, err := chart.Labels(labels, 8, draw.XCenter, vg.Point{X: off, Y: vg.Points(4)})
		if err != nil {
			return err
		}
		p.Add(ls)
		for g, sc := range groups {
			if r := rep.get(sc.Name, 0, v.ID); r != nil {
				p.Add(newRoundPoints(r, "cores", float64(g), off, color.Black))
			}
		}
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.6, float64(len(groups))-0.4
	p.Legend.Top = true
	p.Legend.Left = true
	p.Y.Min = 0
	p.Y.Max *= 1.35
	return p.Save(10*vg.Inch, 6*vg.Inch, path)
}

// deadlinesCPUChart draws the CPU per request of every variant of the
// request scenarios, the server's and the client's side by side, with the
// range over the rounds as error bars, so that a difference within the
// noise looks like one.
func deadlinesCPUChart(path string, rep *Report) error {
	var plots []*plot.Plot
	for _, s := range []struct {
		scenario, metric, title, unit string
	}{
		{"http", "cpu_us_req", "net/http server: server CPU per request", "µs per request"},
		{"rpc", "cpu_ns_req", "pipelining client: client CPU per request", "ns per request"},
	} {
		sc := rep.scenario(s.scenario)
		if sc == nil {
			continue
		}
		p := chart.New(s.title, caption(rep)+"\nerror bars from the lowest round to the highest", s.unit)
		p.Title.TextStyle.Font.Size = vg.Points(12)
		p.X.Label.TextStyle.Font.Size = vg.Points(8)
		p.Y.Tick.Marker = chart.Plain{}
		var names []string
		wheel := make(plotter.Values, len(sc.Variants))
		std := make(plotter.Values, len(sc.Variants))
		var xys plotter.XYs
		var errs plotter.YErrors
		var labels plotter.XYLabels
		var rounds []plot.Plotter
		for i, v := range sc.Variants {
			names = append(names, v.Label)
			r := rep.get(sc.Name, 0, v.ID)
			if r == nil || r.Median == nil {
				continue
			}
			y := r.Median[s.metric]
			if v.ID == "wheel" || v.ID == "wheelctx" {
				wheel[i] = y
			} else {
				std[i] = y
			}
			xys = append(xys, plotter.XY{X: float64(i), Y: y})
			errs = append(errs, struct{ Low, High float64 }{y - r.Min[s.metric], r.Max[s.metric] - y})
			rounds = append(rounds, newRoundPoints(r, s.metric, float64(i), 0, color.Black))
			labels.XYs = append(labels.XYs, plotter.XY{X: float64(i), Y: r.Max[s.metric]})
			labels.Labels = append(labels.Labels, num(y, map[bool]int{true: 1, false: 0}[s.metric == "cpu_us_req"]))
		}
		width := vg.Points(30)
		for i, vals := range []plotter.Values{wheel, std} {
			bc, err := plotter.NewBarChart(vals, width)
			if err != nil {
				return err
			}
			bc.Color = plotutil.Color(i)
			bc.LineStyle.Width = 0
			p.Add(bc)
			p.Legend.Add([]string{"hashedwheel", "standard library, or none"}[i], bc)
		}
		if len(xys) > 0 {
			eb, err := chart.ErrorBars(xys, errs)
			if err != nil {
				return err
			}
			p.Add(eb)
			ls, err := chart.Labels(labels, 9, draw.XCenter, vg.Point{Y: vg.Points(3)})
			if err != nil {
				return err
			}
			p.Add(ls)
		}
		p.Add(rounds...)
		p.NominalX(names...)
		p.X.Tick.Label.Font.Size = vg.Points(8)
		p.Legend.Top = true
		p.Legend.TextStyle.Font.Size = vg.Points(9)
		p.Y.Min = 0
		p.Y.Max *= 1.3
		plots = append(plots, p)
	}
	if len(plots) == 0 {
		return nil
	}
	w, h := 7*vg.Inch*vg.Length(len(plots)), 5.5*vg.Inch
	img := vgimg.New(w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: len(plots), PadX: vg.Points(20), PadTop: vg.Points(5), PadBottom: vg.Points(5), PadLeft: vg.Points(5), PadRight: vg.Points(5)}
	canvases := plot.Align([][]*plot.Plot{plots}, tiles, dc)
	for i, p := range plots {
		p.Draw(canvases[0][i])
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func darker(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	return color.RGBA{R: uint8(r >> 9), G: uint8(g >> 9), B: uint8(b >> 9), A: 255}
}

func lighter(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	f := func(v uint32) uint8 { return uint8(255 - (255-v>>8)/2) }
	return color.RGBA{R: f(r), G: f(g), B: f(b), A: 255}
}
