package bench

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// fusedRow is a workload row as a run that fused it writes.
func fusedRow(name string) Row {
	return Row{Workload: name, File: name + ".py", ProgramHash: "00000000000000aa", ConfigHash: "00000000000000cc",
		Seconds: 10, States: 1000, Verified: 2, Fused: true, BestKernels: 1, BestUs: 20, UnfusedUs: 30, Speedup: 1.5, FirstFusedSec: 1}
}

func results(target string, calibration float64, rows ...Row) *Results {
	return &Results{Format: Format, Version: "test", Time: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC),
		Machine: Machine{Cores: 2, OS: "linux", CPU: "amd64", Target: target, CalibrationSeconds: calibration},
		Options: Options{TimeLimit: "1m0s", Workers: 2, Seed: 1}, Rows: rows}
}

func TestCompare(t *testing.T) {
	edit := func(f func(*Row)) Row {
		r := fusedRow("w")
		f(&r)
		return r
	}
	tests := []struct {
		name        string
		before      Row
		after       Row
		calAfter    float64 // the run's calibration; the baseline's is 1
		want        Verdict
		wantReasons []string
	}{
		{"identical", fusedRow("w"), fusedRow("w"), 1, Unchanged, nil},
		{"lost the fused result", fusedRow("w"), edit(func(r *Row) { r.Fused, r.BestUs, r.BestKernels = false, 30, 2 }), 1, Regressed,
			[]string{"lost its fused result", "best estimate 20.0 → 30.0 µs (+50.0%)"}},
		{"fused now", edit(func(r *Row) { r.Fused, r.BestUs = false, 30 }), fusedRow("w"), 1, Improved, []string{"fused now", "best estimate 30.0 → 20.0 µs (-33.3%)"}},
		{"no verified candidates", fusedRow("w"), edit(func(r *Row) { r.Verified = 0 }), 1, Regressed, []string{"no verified candidates"}},
		{"estimate 2% worse", fusedRow("w"), edit(func(r *Row) { r.BestUs = 20.4 }), 1, Regressed, []string{"best estimate 20.0 → 20.4 µs (+2.0%)"}},
		{"estimate within the tolerance", fusedRow("w"), edit(func(r *Row) { r.BestUs = 20.1 }), 1, Unchanged, nil},
		{"estimate better", fusedRow("w"), edit(func(r *Row) { r.BestUs = 10 }), 1, Improved, []string{"best estimate 20.0 → 10.0 µs (-50.0%)"}},
		{"program changed", fusedRow("w"), edit(func(r *Row) { r.ProgramHash = "00000000000000bb"; r.BestUs = 99 }), 1, ProgramChanged,
			[]string{"program hash 00000000000000bb, the baseline's 00000000000000aa: not compared; record a new baseline"}},
		{"configuration changed, no worse", fusedRow("w"), edit(func(r *Row) { r.ConfigHash = "00000000000000dd" }), 1, Unchanged, []string{"configuration changed"}},
		{"configuration narrowed", fusedRow("w"), edit(func(r *Row) { r.ConfigHash = "00000000000000dd"; r.Fused = false; r.BestUs = 30 }), 1, Regressed,
			[]string{"lost its fused result", "best estimate 20.0 → 30.0 µs (+50.0%)", "configuration changed"}},
		{"search twice as long", fusedRow("w"), edit(func(r *Row) { r.Seconds = 20 }), 1, Regressed, []string{"search time ×2.00, calibrated (10.0 s → 20.0 s)"}},
		{"search twice as long on a machine twice as slow", fusedRow("w"), edit(func(r *Row) { r.Seconds = 20 }), 2, Unchanged, nil},
		{"search 1.4 times as long", fusedRow("w"), edit(func(r *Row) { r.Seconds = 14 }), 1, Unchanged, nil},
		{"short search three times as long", edit(func(r *Row) { r.Seconds = 0.2 }), edit(func(r *Row) { r.Seconds = 0.6 }), 1, Unchanged, nil},
		{"search faster", fusedRow("w"), edit(func(r *Row) { r.Seconds = 2 }), 1, Improved, []string{"search time ×0.20, calibrated"}},
		{"both stopped at the time limit", edit(func(r *Row) { r.Stopped = "time limit" }), edit(func(r *Row) { r.Stopped, r.Seconds = "time limit", 30 }), 1, Unchanged,
			[]string{"both searches stopped early: times not compared"}},
		{"stops now", fusedRow("w"), edit(func(r *Row) { r.Stopped, r.Seconds = "time limit", 60 }), 1, Regressed, []string{"search time ×6.00, calibrated (10.0 s → 60.0 s)"}},
		{"measured slower beyond the spread", edit(func(r *Row) { r.Measured = &Measured{MedianUs: 10, SpreadUs: 0.2} }),
			edit(func(r *Row) { r.Measured = &Measured{MedianUs: 11, SpreadUs: 0.3} }), 1, Regressed, []string{"measured 10.0 → 11.0 µs (spread ±0.3)"}},
		{"measured slower within the spread", edit(func(r *Row) { r.Measured = &Measured{MedianUs: 10, SpreadUs: 1} }),
			edit(func(r *Row) { r.Measured = &Measured{MedianUs: 11, SpreadUs: 0.3} }), 1, Unchanged, nil},
		{"measured slower within 5%", edit(func(r *Row) { r.Measured = &Measured{MedianUs: 10} }),
			edit(func(r *Row) { r.Measured = &Measured{MedianUs: 10.4} }), 1, Unchanged, nil},
		{"fails now", fusedRow("w"), Row{Workload: "w", Err: "w.py:3: boom"}, 1, Regressed, []string{"fails: w.py:3: boom"}},
		{"runs now", Row{Workload: "w", Err: "w.py:3: boom"}, fusedRow("w"), 1, Improved, []string{"runs now (the baseline failed: w.py:3: boom)"}},
	}
	for _, tt := range tests {
		c, err := Compare(results("sm_90", 1, tt.before), results("sm_90", tt.calAfter, tt.after), DefaultTolerances)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		d := c.Deltas[0]
		if d.Verdict != tt.want || strings.Join(d.Reasons, "; ") != strings.Join(tt.wantReasons, "; ") {
			t.Errorf("%s: %s %q; want %s %q", tt.name, d.Verdict, d.Reasons, tt.want, tt.wantReasons)
		}
		if c.Failed() != tt.want.Failing() {
			t.Errorf("%s: Failed() = %v", tt.name, c.Failed())
		}
	}
}

func TestCompareTimeCheckOff(t *testing.T) {
	slow := fusedRow("w")
	slow.Seconds = 100
	c, err := Compare(results("sm_90", 1, fusedRow("w")), results("sm_90", 1, slow), Tolerances{Estimate: 0.01, Measured: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	if d := c.Deltas[0]; d.Verdict != Unchanged || d.TimeRatio != 0 {
		t.Errorf("--time-ratio 0: %s, ratio %v; want unchanged, not compared", d.Verdict, d.TimeRatio)
	}
}

func TestCompareListsBothSides(t *testing.T) {
	before := results("sm_90", 1, fusedRow("a"), fusedRow("gone"), fusedRow("b"))
	after := results("sm_90", 1, fusedRow("b"), fusedRow("new"), fusedRow("a"))
	c, err := Compare(before, after, DefaultTolerances)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range c.Deltas {
		got = append(got, d.Workload+":"+string(d.Verdict))
	}
	want := "b:unchanged new:only in this run a:unchanged gone:only in baseline"
	if strings.Join(got, " ") != want {
		t.Errorf("deltas %v, want %s", got, want)
	}
	if c.Failed() {
		t.Error("workloads on one side only failed the comparison")
	}
	var md bytes.Buffer
	if err := WriteComparison(&md, c); err != nil {
		t.Fatal(err)
	}
	text := md.String()
	for _, want := range []string{"| gone | only in baseline |", "| new | only in this run |",
		"| a | unchanged | yes → yes | 20.0 | 20.0 | 1.000 | 2 → 2 | 10.0 | 10.0 | 1.00 |  |",
		"0 regression(s), 0 program(s) changed, 0 improved, 2 unchanged, 1 only in the baseline, 1 only in this run"} {
		if !strings.Contains(text, want) {
			t.Errorf("the table lacks %q:\n%s", want, text)
		}
	}
}

func TestCompareOtherArch(t *testing.T) {
	_, err := Compare(results("sm_80", 1, fusedRow("a")), results("sm_90", 1, fusedRow("a")), DefaultTolerances)
	if err == nil || !strings.Contains(err.Error(), "the baseline is for sm_80, this run for sm_90") {
		t.Errorf("error %v", err)
	}
}
