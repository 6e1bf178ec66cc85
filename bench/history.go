package bench

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// palette colours the workloads' lines, in the order they first appear.
var palette = []string{"#4878a8", "#e0803a", "#5a9e4b", "#c44e52", "#8172b2", "#937860", "#da8bc3", "#8c8c8c", "#ccb974", "#64b5cd"}

// series is one workload's figure over the runs: a value per run, NaN
// where the run lacks it or the workload failed. A run whose program hash
// differs from the previous run's starts a new segment.
type series struct {
	name   string
	values []float64
	breaks []bool // breaks[i]: run i's program differs from the run before's
}

func collect(runs []*Results, value func(*Row) float64) []series {
	var out []series
	index := map[string]int{}
	last := map[string]string{}
	for i, r := range runs {
		for _, row := range r.Rows {
			k, ok := index[row.Workload]
			if !ok {
				k = len(out)
				index[row.Workload] = k
				s := series{name: row.Workload, values: make([]float64, len(runs)), breaks: make([]bool, len(runs))}
				for j := range s.values {
					s.values[j] = math.NaN()
				}
				out = append(out, s)
			}
			if row.Err != "" {
				continue
			}
			out[k].values[i] = value(&row)
			if prev, ok := last[row.Workload]; ok && prev != row.ProgramHash {
				out[k].breaks[i] = true
			}
			last[row.Workload] = row.ProgramHash
		}
	}
	return out
}

// WriteHistorySVG draws runs, oldest first, as one SVG of two panels: each
// workload's estimated speedup and its search seconds, a line per
// workload, a point per run. A line breaks where the workload's program
// changed, since the two sides measure different programs.
func WriteHistorySVG(w io.Writer, runs []*Results) error {
	const (
		left, right, top, panelH, gap, legendW = 70.0, 20.0, 40.0, 220.0, 70.0, 170.0
		width                                  = 900.0
	)
	speedups := collect(runs, func(r *Row) float64 { return r.Speedup })
	seconds := collect(runs, func(r *Row) float64 { return r.Seconds })
	plotW := width - left - right - legendW
	height := top + 2*panelH + gap + 60
	x := func(i int) float64 {
		if len(runs) == 1 {
			return left + plotW/2
		}
		return left + plotW*float64(i)/float64(len(runs)-1)
	}

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%.0f" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", left,
		html.EscapeString(fmt.Sprintf("mirage bench: %d runs, %s to %s (%s)", len(runs),
			runs[0].Time.Format("2006-01-02"), runs[len(runs)-1].Time.Format("2006-01-02"), runs[len(runs)-1].Machine.Target)))
	panel := func(y0 float64, title string, ss []series, format string) {
		hi := 0.0
		for _, s := range ss {
			for _, v := range s.values {
				if !math.IsNaN(v) {
					hi = math.Max(hi, v)
				}
			}
		}
		hi = niceCeiling(hi)
		y := func(v float64) float64 { return y0 + panelH - panelH*v/hi }
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" font-weight="bold">%s</text>`+"\n", left, y0-8, html.EscapeString(title))
		for _, t := range []float64{0, hi / 2, hi} {
			fmt.Fprintf(&b, `<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#ddd"/>`+"\n", left, y(t), left+plotW, y(t))
			fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y(t)+4, fmt.Sprintf(format, t))
		}
		for k, s := range ss {
			colour := palette[k%len(palette)]
			var path strings.Builder
			pen := false
			for i, v := range s.values {
				if math.IsNaN(v) {
					pen = false
					continue
				}
				cmd := "L"
				if !pen || s.breaks[i] {
					cmd = "M"
				}
				fmt.Fprintf(&path, "%s%.1f %.1f ", cmd, x(i), y(v))
				pen = true
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"><title>%s</title></circle>`+"\n", x(i), y(v), colour,
					html.EscapeString(fmt.Sprintf("%s, run %d: "+format, s.name, i+1, v)))
			}
			if path.Len() > 0 {
				fmt.Fprintf(&b, `<path d="%s" fill="none" stroke="%s" stroke-width="1.5"/>`+"\n", strings.TrimSpace(path.String()), colour)
			}
		}
	}
	panel(top+14, "Estimated speedup over the unfused program", speedups, "%.2fx")
	panel(top+14+panelH+gap, "Search seconds", seconds, "%.0f s")

	// The runs along the bottom: date and commit, thinned to fit.
	base := top + 14 + 2*panelH + gap
	step := max(1, len(runs)/8)
	for i := 0; i < len(runs); i += step {
		label := runs[i].Time.Format("01-02")
		if c := runs[i].Commit; c != "" {
			label += " " + c[:min(7, len(c))]
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle">%s</text>`+"\n", x(i), base+16, html.EscapeString(label))
	}
	for k, s := range speedups {
		ly := top + 20 + float64(k)*16
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="12" height="3" fill="%s"/>`+"\n", width-legendW+10, ly-4, palette[k%len(palette)])
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">%s</text>`+"\n", width-legendW+28, ly, html.EscapeString(s.name))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// niceCeiling rounds v up to 1, 2 or 5 times a power of ten (1 for v <= 0).
func niceCeiling(v float64) float64 {
	if !(v > 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}
