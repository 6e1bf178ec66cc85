package bench

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// Row is what the report says of one workload.
type Row struct {
	Workload string `json:"workload"`
	File     string `json:"file,omitempty"` // where the program came from
	// ProgramHash is the program's canonical hash (every op, shape and
	// dtype): a row is compared only with a row of the same program.
	ProgramHash string `json:"program_hash,omitempty"`
	// ConfigHash is the hash of the configuration the workload was
	// searched with (the preset and the program's restrictions, and the
	// run's options that narrow a search).
	ConfigHash    string  `json:"config_hash,omitempty"`
	Seconds       float64 `json:"search_seconds"`
	States        int64   `json:"states"`
	StatesPerCore float64 `json:"states_per_core_second"` // states / seconds / workers
	PrunedShare   float64 `json:"pruned_absexpr_share"`   // of candidate ops past the canonical order
	Complete      int64   `json:"complete"`               // candidates the enumeration completed, before verification
	Verified      int     `json:"verified"`
	Fused         bool    `json:"fused"` // the best answer has a graph-defined kernel
	BestKernels   int     `json:"best_kernels"`
	BestUs        float64 `json:"best_estimated_us"`
	UnfusedUs     float64 `json:"unfused_estimated_us"`
	Speedup       float64 `json:"speedup"`
	// Measured is the best answer's measured time, when a profile has it.
	Measured      *Measured `json:"measured,omitempty"`
	Stopped       string    `json:"stopped,omitempty"` // why the search stopped early, if it did
	Err           string    `json:"error,omitempty"`
	FirstFusedSec float64   `json:"first_fused_seconds"`
}

// Measured is a time from a profile: the median of the timed runs and
// their spread.
type Measured struct {
	MedianUs float64 `json:"median_us"`
	// SpreadUs is half the distance from the 10th to the 90th percentile
	// of the runs; 0 when the profile does not say.
	SpreadUs float64 `json:"spread_us"`
}

// WriteMarkdown writes the rows as a markdown table, with a header saying
// what produced them.
func WriteMarkdown(w io.Writer, title string, rows []Row) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", title)
	b.WriteString("| workload | search s | first fused s | states | states/s/core | pruned by absexpr | complete | verified | best: kernels | best: est. µs | unfused: est. µs | speedup | note |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range rows {
		note := r.Err
		if note == "" && r.Stopped != "" {
			note = "stopped: " + r.Stopped
		}
		if r.Verified == 0 {
			fmt.Fprintf(&b, "| %s | %.1f | - | %d | %.0f | %.1f%% | %d | 0 | - | - | %.1f | - | %s |\n",
				r.Workload, r.Seconds, r.States, r.StatesPerCore, 100*r.PrunedShare, r.Complete, r.UnfusedUs, note)
			continue
		}
		first := "-"
		if r.FirstFusedSec >= 0 {
			first = fmt.Sprintf("%.1f", r.FirstFusedSec)
		}
		fmt.Fprintf(&b, "| %s | %.1f | %s | %d | %.0f | %.1f%% | %d | %d | %d | %.1f | %.1f | %.2fx | %s |\n",
			r.Workload, r.Seconds, first, r.States, r.StatesPerCore, 100*r.PrunedShare, r.Complete, r.Verified, r.BestKernels, r.BestUs, r.UnfusedUs, r.Speedup, note)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteSVG draws the estimated speedups as a horizontal bar chart, with a
// line at 1x (the unfused program).
func WriteSVG(w io.Writer, title string, rows []Row) error {
	const (
		left, right, top, barH, gap = 160.0, 40.0, 40.0, 22.0, 8.0
		width                       = 640.0
	)
	maxS := 1.0
	for _, r := range rows {
		maxS = math.Max(maxS, r.Speedup)
	}
	maxS = math.Ceil(maxS*2) / 2 // a round axis end
	plotW := width - left - right
	height := top + float64(len(rows))*(barH+gap) + 30
	x := func(s float64) float64 { return left + plotW*s/maxS }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%.0f" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", left, html.EscapeString(title))
	for i, r := range rows {
		y := top + float64(i)*(barH+gap)
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-8, y+barH*0.7, html.EscapeString(r.Workload))
		if r.Speedup > 0 {
			fmt.Fprintf(&b, `<rect x="%.0f" y="%.1f" width="%.1f" height="%.0f" fill="#4878a8"/>`+"\n", left, y, x(r.Speedup)-left, barH)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%.2fx</text>`+"\n", x(r.Speedup)+4, y+barH*0.7, r.Speedup)
		} else {
			fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" fill="#a00">no candidate</text>`+"\n", left+4, y+barH*0.7)
		}
	}
	bottom := top + float64(len(rows))*(barH+gap)
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.0f" stroke="#c33" stroke-dasharray="4 3"/>`+"\n", x(1), top-6, x(1), bottom)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle" fill="#c33">1x (unfused)</text>`+"\n", x(1), bottom+16)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="end">%.1fx</text>`+"\n", x(maxS), bottom+16, maxS)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
