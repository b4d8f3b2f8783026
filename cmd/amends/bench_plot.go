package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/amends-dev/amends/cmd/amends/internal/bench"
)

// maxPlotPath bounds --plot.
const maxPlotPath = 4096

// checkPlotPath validates --plot before the run: an .svg or .png file in
// a directory that exists.
func checkPlotPath(path string) error {
	if path == "" {
		return nil
	}
	if len(path) > maxPlotPath {
		return usageErrorf("--plot must be a path of at most %d bytes, got %d", maxPlotPath, len(path))
	}
	if ext := strings.ToLower(filepath.Ext(path)); ext != ".svg" && ext != ".png" {
		return usageErrorf("--plot must name an .svg or .png file, got %q", path)
	}
	if st, err := os.Stat(filepath.Dir(path)); err != nil || !st.IsDir() {
		return usageErrorf("--plot must be in a directory that exists, got %q", path)
	}
	return nil
}

// plotCols is the number of scenarios per row of the plot.
const plotCols = 3

// writePlot draws one small plot per scenario, each side's throughput
// against the number of workers, and writes it as SVG or PNG by the
// extension of path.
func writePlot(path string, results []bench.Result) error {
	plots, err := scenarioPlots(results)
	if err != nil {
		return err
	}
	rows := (len(plots) + plotCols - 1) / plotCols
	grid := make([][]*plot.Plot, rows)
	for r := range grid {
		grid[r] = make([]*plot.Plot, plotCols)
		for c := range plotCols {
			if k := r*plotCols + c; k < len(plots) {
				grid[r][c] = plots[k]
			}
		}
	}
	w, h := vg.Length(plotCols)*3.4*vg.Inch, vg.Length(rows)*2.6*vg.Inch
	tiles := draw.Tiles{Rows: rows, Cols: plotCols, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	var canvas vg.CanvasWriterTo
	if strings.EqualFold(filepath.Ext(path), ".svg") {
		canvas = vgsvg.New(w, h)
	} else {
		canvas = vgimg.PngCanvas{Canvas: vgimg.New(w, h)}
	}
	dc := draw.New(canvas)
	canvases := plot.Align(grid, tiles, dc)
	for r := range grid {
		for c, p := range grid[r] {
			if p != nil {
				p.Draw(canvases[r][c])
			}
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--plot: %w", err)
	}
	if _, err := canvas.WriteTo(f); err != nil {
		_ = f.Close()
		return fmt.Errorf("--plot %s: %w", path, err)
	}
	return f.Close()
}

// scenarioPlots makes a plot per scenario, in the order of the results,
// with a line per side; a side has the same colour and marks in every
// plot (raw, peer, amends, floor), whatever the scenario names it.
func scenarioPlots(results []bench.Result) ([]*plot.Plot, error) {
	type line struct {
		name string
		xys  plotter.XYs
	}
	var order []string
	lines := map[string]*[4]line{}
	for _, r := range results {
		if lines[r.Scenario] == nil {
			lines[r.Scenario] = &[4]line{}
			order = append(order, r.Scenario)
		}
		for slot, m := range []*bench.Measurement{r.Raw, r.Peer, &r.Amends, r.Floor} {
			if m != nil {
				l := &lines[r.Scenario][slot]
				l.name = m.Side
				l.xys = append(l.xys, plotter.XY{X: float64(r.Concurrency), Y: m.PerSec})
			}
		}
	}
	plots := make([]*plot.Plot, 0, len(order))
	for _, name := range order {
		p := plot.New()
		p.Title.Text = name
		p.X.Label.Text = "workers per side"
		p.Y.Label.Text = "per second"
		p.Y.Min = 0
		p.Y.Tick.Marker = plainTicks{}
		p.Legend.Top = true
		p.Legend.Left = true
		var xTicks []plot.Tick
		top := 0.0
		for slot, l := range lines[name] {
			if l.xys == nil {
				continue
			}
			for _, xy := range l.xys {
				top = max(top, xy.Y)
				if !slices.ContainsFunc(xTicks, func(t plot.Tick) bool { return t.Value == xy.X }) {
					xTicks = append(xTicks, plot.Tick{Value: xy.X, Label: strconv.FormatFloat(xy.X, 'f', -1, 64)})
				}
			}
			lp, pts, err := plotter.NewLinePoints(l.xys)
			if err != nil {
				return nil, fmt.Errorf("plot of %s: %w", name, err)
			}
			lp.Color, lp.Dashes = plotutil.Color(slot), plotutil.Dashes(slot)
			pts.Color, pts.Shape = plotutil.Color(slot), plotutil.Shape(slot)
			p.Add(lp, pts)
			p.Legend.Add(l.name, lp, pts)
		}
		p.X.Tick.Marker = plot.ConstantTicks(xTicks)
		p.Y.Max = top * 1.35 // room for the legend above the lines
		plots = append(plots, p)
	}
	return plots, nil
}

// plainTicks are gonum's default ticks labelled without trailing zeros
// ("2500", not "2500.00").
type plainTicks struct{}

func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = strconv.FormatFloat(ticks[i].Value, 'f', -1, 64)
		}
	}
	return ticks
}
