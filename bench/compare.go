package bench

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// Tolerances say how much worse a figure may get before Compare calls it
// a regression.
type Tolerances struct {
	// Estimate is the relative growth of the best estimate allowed. The
	// cost model is deterministic, so any growth is a change of the
	// search or the model; 1% leaves room for rounding only.
	Estimate float64
	// Measured is the relative growth of a measured time allowed beyond
	// the spread of its runs.
	Measured float64
	// SearchTime is the ratio of calibrated search times allowed; 0 turns
	// the check off.
	SearchTime float64
}

// DefaultTolerances are mirage bench's defaults.
var DefaultTolerances = Tolerances{Estimate: 0.01, Measured: 0.05, SearchTime: 1.5}

// minSearchSlowdown is the least growth of a search, in seconds of this
// run's machine, that can count as slower: below it, the noise of a
// machine is as large as the search.
const minSearchSlowdown = 1.0

// Verdict is what a comparison says of one workload.
type Verdict string

const (
	Unchanged      Verdict = "unchanged"
	Improved       Verdict = "improved"
	Regressed      Verdict = "REGRESSION"
	ProgramChanged Verdict = "program changed" // not compared: the baseline is of another program
	OnlyBaseline   Verdict = "only in baseline"
	OnlyThisRun    Verdict = "only in this run"
)

// Failing reports whether v fails a comparison: a regression, or a row
// whose baseline no longer describes its program (record a new one).
func (v Verdict) Failing() bool { return v == Regressed || v == ProgramChanged }

// Delta is the comparison of one workload.
type Delta struct {
	Workload string  `json:"workload"`
	Verdict  Verdict `json:"verdict"`
	Before   *Row    `json:"before,omitempty"`
	After    *Row    `json:"after,omitempty"`
	// Reasons say why: each regression and improvement, and notes such
	// as a changed configuration.
	Reasons []string `json:"reasons,omitempty"`
	// TimeRatio is the calibrated search time after over before; 0 when
	// the times were not compared.
	TimeRatio float64 `json:"search_time_ratio,omitempty"`
}

// Comparison is a run compared with a baseline.
type Comparison struct {
	Before *Results `json:"-"`
	After  *Results `json:"-"`
	Deltas []Delta  `json:"workloads"`
}

// Failed reports whether any workload's verdict fails the comparison.
func (c *Comparison) Failed() bool {
	for _, d := range c.Deltas {
		if d.Verdict.Failing() {
			return true
		}
	}
	return false
}

// Count returns how many workloads have verdict v.
func (c *Comparison) Count(v Verdict) int {
	n := 0
	for _, d := range c.Deltas {
		if d.Verdict == v {
			n++
		}
	}
	return n
}

// CheckComparable returns an error if a run for target cannot be compared
// with the baseline: one for another arch estimates other times.
func CheckComparable(baseline *Results, target string) error {
	if baseline.Machine.Target != target {
		return fmt.Errorf("the baseline is for %s, this run for %s: estimates of two archs do not compare (use --arch %s, or record a baseline for %s)",
			baseline.Machine.Target, target, baseline.Machine.Target, target)
	}
	return nil
}

// Compare compares the run after with the baseline before, workload by
// workload (by name): after's in their order, then those only before has.
func Compare(before, after *Results, tol Tolerances) (*Comparison, error) {
	if err := CheckComparable(before, after.Machine.Target); err != nil {
		return nil, err
	}
	c := &Comparison{Before: before, After: after}
	for i := range after.Rows {
		a := &after.Rows[i]
		b := before.Row(a.Workload)
		if b == nil {
			c.Deltas = append(c.Deltas, Delta{Workload: a.Workload, Verdict: OnlyThisRun, After: a})
			continue
		}
		c.Deltas = append(c.Deltas, compareRows(b, a, before.Machine.CalibrationSeconds, after.Machine.CalibrationSeconds, tol))
	}
	for i := range before.Rows {
		if b := &before.Rows[i]; after.Row(b.Workload) == nil {
			c.Deltas = append(c.Deltas, Delta{Workload: b.Workload, Verdict: OnlyBaseline, Before: b})
		}
	}
	return c, nil
}

// compareRows judges one workload; calBefore and calAfter are the runs'
// calibration times.
func compareRows(b, a *Row, calBefore, calAfter float64, tol Tolerances) Delta {
	d := Delta{Workload: a.Workload, Before: b, After: a}
	var worse, better, notes []string
	switch {
	case a.Err != "" && b.Err != "":
		d.Verdict, d.Reasons = Unchanged, []string{"fails, as in the baseline: " + a.Err}
		return d
	case a.Err != "":
		d.Verdict, d.Reasons = Regressed, []string{"fails: " + a.Err}
		return d
	case b.Err != "":
		d.Verdict, d.Reasons = Improved, []string{"runs now (the baseline failed: " + b.Err + ")"}
		return d
	case a.ProgramHash != b.ProgramHash:
		d.Verdict = ProgramChanged
		d.Reasons = []string{fmt.Sprintf("program hash %s, the baseline's %s: not compared; record a new baseline", a.ProgramHash, b.ProgramHash)}
		return d
	}
	if a.ConfigHash != b.ConfigHash {
		notes = append(notes, "configuration changed")
	}

	switch {
	case b.Fused && !a.Fused:
		worse = append(worse, "lost its fused result")
	case !b.Fused && a.Fused:
		better = append(better, "fused now")
	}
	if b.Verified > 0 && a.Verified == 0 {
		worse = append(worse, "no verified candidates")
	}
	switch r := a.BestUs / b.BestUs; {
	case r > 1+tol.Estimate:
		worse = append(worse, fmt.Sprintf("best estimate %.1f → %.1f µs (%+.1f%%)", b.BestUs, a.BestUs, 100*(r-1)))
	case r < 1-tol.Estimate:
		better = append(better, fmt.Sprintf("best estimate %.1f → %.1f µs (%+.1f%%)", b.BestUs, a.BestUs, 100*(r-1)))
	}
	if b.Measured != nil && a.Measured != nil {
		mb, ma := b.Measured, a.Measured
		slack := tol.Measured*mb.MedianUs + math.Max(mb.SpreadUs, ma.SpreadUs)
		switch diff := ma.MedianUs - mb.MedianUs; {
		case diff > slack:
			worse = append(worse, fmt.Sprintf("measured %.1f → %.1f µs (spread ±%.1f)", mb.MedianUs, ma.MedianUs, math.Max(mb.SpreadUs, ma.SpreadUs)))
		case -diff > slack:
			better = append(better, fmt.Sprintf("measured %.1f → %.1f µs", mb.MedianUs, ma.MedianUs))
		}
	}
	if tol.SearchTime > 0 {
		if b.Stopped != "" && a.Stopped != "" {
			notes = append(notes, "both searches stopped early: times not compared")
		} else if nb, na := b.Seconds/calBefore, a.Seconds/calAfter; nb > 0 {
			d.TimeRatio = na / nb
			grew := (na - nb) * calAfter // in seconds of this machine
			switch {
			case d.TimeRatio > tol.SearchTime && grew >= minSearchSlowdown:
				worse = append(worse, fmt.Sprintf("search time ×%.2f, calibrated (%.1f s → %.1f s)", d.TimeRatio, b.Seconds, a.Seconds))
			case d.TimeRatio < 1/tol.SearchTime && -grew >= minSearchSlowdown:
				better = append(better, fmt.Sprintf("search time ×%.2f, calibrated", d.TimeRatio))
			}
		}
	}
	switch {
	case len(worse) > 0:
		d.Verdict = Regressed
	case len(better) > 0:
		d.Verdict = Improved
	default:
		d.Verdict = Unchanged
	}
	d.Reasons = append(append(worse, better...), notes...)
	return d
}

// WriteComparison writes c as a markdown delta table, with what each side
// was run on and a summary line.
func WriteComparison(w io.Writer, c *Comparison) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# mirage bench --compare: this run against the baseline (%s)\n\n", c.After.Machine.Target)
	fmt.Fprintf(&b, "- baseline: %s\n- this run: %s\n\n", describeRun(c.Before), describeRun(c.After))
	b.WriteString("| workload | verdict | fused | best est. µs: before | after | ratio | verified | search s: before | after | ratio (calibrated) | why |\n")
	b.WriteString("|---|---|---|---:|---:|---:|---|---:|---:|---:|---|\n")
	for _, d := range c.Deltas {
		fused, estB, estA, ratio, verified, secB, secA, tr := "-", "-", "-", "-", "-", "-", "-", "-"
		bo, af := d.Before, d.After
		if bo != nil && bo.Err == "" {
			estB, secB = fmt.Sprintf("%.1f", bo.BestUs), fmt.Sprintf("%.1f", bo.Seconds)
		}
		if af != nil && af.Err == "" {
			estA, secA = fmt.Sprintf("%.1f", af.BestUs), fmt.Sprintf("%.1f", af.Seconds)
		}
		if bo != nil && af != nil && bo.Err == "" && af.Err == "" {
			fused = yesNo(bo.Fused) + " → " + yesNo(af.Fused)
			ratio = fmt.Sprintf("%.3f", af.BestUs/bo.BestUs)
			verified = fmt.Sprintf("%d → %d", bo.Verified, af.Verified)
		}
		if d.TimeRatio > 0 {
			tr = fmt.Sprintf("%.2f", d.TimeRatio)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			d.Workload, d.Verdict, fused, estB, estA, ratio, verified, secB, secA, tr, strings.Join(d.Reasons, "; "))
	}
	fmt.Fprintf(&b, "\n%d regression(s), %d program(s) changed, %d improved, %d unchanged, %d only in the baseline, %d only in this run\n",
		c.Count(Regressed), c.Count(ProgramChanged), c.Count(Improved), c.Count(Unchanged), c.Count(OnlyBaseline), c.Count(OnlyThisRun))
	_, err := io.WriteString(w, b.String())
	return err
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// describeRun says what a run was: version, commit, date, machine.
func describeRun(r *Results) string {
	s := "mirage " + r.Version
	if r.Commit != "" {
		s += " " + r.Commit[:min(12, len(r.Commit))]
		if r.Modified {
			s += "+changes"
		}
	}
	return fmt.Sprintf("%s, %s, %d cores %s/%s, calibration %.3f s, time limit %s, %d workers",
		s, r.Time.Format("2006-01-02 15:04 UTC"), r.Machine.Cores, r.Machine.OS, r.Machine.CPU,
		r.Machine.CalibrationSeconds, r.Options.TimeLimit, r.Options.Workers)
}
