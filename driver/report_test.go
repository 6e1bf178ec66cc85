package driver

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/mirage-go/mirage/search"
	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// A part's row says why its search stopped early: a run can end well
// inside --time-limit with a part's search cut at its share of it, and
// the summary's "(stopped: time limit)" alone reads as the whole budget
// spent.
func TestWriteTableSaysWhyAPartsSearchStopped(t *testing.T) {
	res := &Result{Stopped: "time limit", Parts: []*PartReport{
		{Kinds: []string{"matmul"}, SameAs: -1, FirstFusedAt: -1, Stats: search.Stats{States: 10, Seconds: 21.7, Stopped: "time limit"}},
		{Kinds: []string{"exp"}, SameAs: -1, FirstFusedAt: -1, Stats: search.Stats{States: 5, Seconds: 0.1, Stopped: "state budget"}},
		{Kinds: []string{"add"}, SameAs: -1, FirstFusedAt: -1, Stats: search.Stats{States: 7, Seconds: 0.2}},
	}}
	var w bytes.Buffer
	WriteTable(&w, res, Options{Arch: target.MustLookup("sm_90")}, "out", nil)
	rows := strings.Split(w.String(), "\n")
	for i, want := range []string{"10 states, 21.7s (stopped at its share of the time limit)", "5 states, 0.1s (stopped at --max-states)", "7 states, 0.2s"} {
		if row := rows[2+i]; !strings.HasSuffix(row, want) {
			t.Errorf("part %d's row %q, want it to end %q", i, row, want)
		}
	}
	if !strings.Contains(rows[0], " (stopped: time limit)") {
		t.Errorf("a run that reached its time limit: %q", rows[0])
	}
	// The same parts in a run that ended inside its time limit: the
	// summary says that a part's search stopped, not the run.
	for _, tc := range []struct{ stopped, want string }{
		{"time limit", "(a part's search stopped at its share of the time limit)"},
		{"state budget", "(a part's search stopped: state budget)"},
	} {
		res.Stopped, res.byPart = tc.stopped, true
		w.Reset()
		WriteTable(&w, res, Options{Arch: target.MustLookup("sm_90")}, "out", nil)
		if first, _, _ := strings.Cut(w.String(), "\n"); !strings.Contains(first, " "+tc.want) {
			t.Errorf("a part stopped (%s): %q", tc.stopped, first)
		}
	}
}

// A part's note is printed once under the parts' table, by the part's
// number (not again for a part searched as an earlier one), and goes into
// --json.
func TestWriteTableAndReportCarryNotes(t *testing.T) {
	res := &Result{Parts: []*PartReport{
		{Kinds: []string{"matmul"}, SameAs: -1, FirstFusedAt: -1},
		{Kinds: []string{"exp"}, SameAs: -1, FirstFusedAt: -1, Note: "pad the cache"},
		{Kinds: []string{"exp"}, SameAs: 1, FirstFusedAt: -1, Note: "pad the cache"},
	}}
	var w bytes.Buffer
	WriteTable(&w, res, Options{Arch: target.MustLookup("sm_90")}, "out", nil)
	if got := strings.Count(w.String(), "note: "); got != 1 || !strings.Contains(w.String(), "\nnote: part 1: pad the cache\n") {
		t.Errorf("the table holds %d notes, want one, for part 1:\n%s", got, w.String())
	}
	parts := res.Report("out", nil, nil).Parts
	if parts[0].Note != "" || parts[1].Note != "pad the cache" {
		t.Errorf("--json's parts' notes: %q, %q", parts[0].Note, parts[1].Note)
	}
}

// An answer's kernels are its launches as the code makes them: a matmul
// and the residual add folded into its cuBLASLt call are one (the table
// said 3 for the LLaMA MLP block's best, show --estimate and emit 2).
func TestCandidateKernelsAreLaunches(t *testing.T) {
	g := loadSource(t, "residual", `
X = g.new_input(dims=(8, 256), dtype=mi.float16)
W = g.new_input(dims=(256, 256), dtype=mi.float16)
R = g.new_input(dims=(8, 256), dtype=mi.float16)
g.mark_output(g.add(R, g.matmul(X, W)))`)
	d := &run{opts: Options{Arch: sm90}}
	c, err := d.candidate(g, true)
	if err != nil {
		t.Fatal(err)
	}
	if c.Kernels != 1 || c.Estimate.Launches != 1 {
		t.Errorf("%d kernels, %d launches estimated; want the one cuBLASLt call", c.Kernels, c.Estimate.Launches)
	}
}

// Why a searched part has no fused candidate, in the words a user reads.
func TestWhyNoneFound(t *testing.T) {
	for _, tt := range []struct {
		stats search.Stats
		want  string
	}{
		{search.Stats{Stopped: "time limit"}, "the time limit came before the enumeration's first state; "},
		{search.Stats{States: 10, Stopped: "time limit"}, "the enumeration stopped at the time limit after 10 states with no candidate complete; "},
		{search.Stats{States: 10}, "the enumeration ended after 10 states with no candidate complete; "},
		{search.Stats{States: 10, Complete: 3, Rejected: 3}, "all 3 candidates failed verification; "},
	} {
		if got := whyNoneFound(&search.Result{Stats: tt.stats}, false, false); !strings.HasPrefix(got, tt.want) {
			t.Errorf("%+v: %q, want it to begin %q", tt.stats, got, tt.want)
		}
	}
}

// An answer verified part by part says why its whole check did not end:
// the time limit, or an interrupt.
func TestWriteTableSaysWhyAnAnswerIsVerifiedByParts(t *testing.T) {
	g := kernel.New()
	for _, tc := range []struct{ stopped, want string }{
		{"time limit", "(verified part by part: the whole program's check did not fit the time limit)"},
		{"interrupted", "(verified part by part: the run was interrupted before the whole program's check ended)"},
	} {
		res := &Result{Stopped: tc.stopped, Candidates: []*Candidate{{Graph: g, Unfused: true}, {Graph: g, ByParts: true}}}
		var w bytes.Buffer
		WriteTable(&w, res, Options{Arch: target.MustLookup("sm_90")}, "out", nil)
		if !strings.Contains(w.String(), tc.want) {
			t.Errorf("stopped %q:\n%s", tc.stopped, w.String())
		}
	}
}

// A candidate's row prints its first grids and ranges, and counts the rest.
func TestGridsText(t *testing.T) {
	g := func(n int) []block.Dim3 {
		var gs []block.Dim3
		for i := range n {
			gs = append(gs, block.Dim3{i + 1, 1, 1})
		}
		return gs
	}
	for _, tc := range []struct {
		n    int
		want string
	}{
		{0, "-"},
		{2, "1x1x1 2x1x1"},
		{7, "1x1x1 2x1x1 3x1x1 4x1x1 5x1x1 6x1x1 7x1x1"},
		{32, "1x1x1 2x1x1 3x1x1 4x1x1 5x1x1 6x1x1 (+26 more)"},
	} {
		if got := gridsText(g(tc.n)); got != tc.want {
			t.Errorf("%d grids: %q, want %q", tc.n, got, tc.want)
		}
	}
	// So do for-loop ranges (found by review: a stack of 80 layers printed
	// 160 of them a row).
	ranges := make([]int, 160)
	for i := range ranges {
		ranges[i] = 64
	}
	if got, want := rangesText(ranges), "64 64 64 64 64 64 (+154 more)"; got != want {
		t.Errorf("160 ranges: %q, want %q", got, want)
	}
	if got := rangesText(nil); got != "-" {
		t.Errorf("no ranges: %q", got)
	}
}

// A part an interrupt or the memory bound stopped is reported in words
// (found by review: "the enumeration stopped at the interrupted").
func TestWhyNoneFoundNamesTheCause(t *testing.T) {
	for _, tt := range []struct {
		st   search.Stats
		want string
	}{
		{search.Stats{States: 10, Stopped: "interrupted"}, "the enumeration stopped at the interrupt after 10 states"},
		{search.Stats{Stopped: "interrupted"}, "the interrupt came before the enumeration's first state"},
		{search.Stats{States: 10, Complete: 3, Stopped: "interrupted"}, "the interrupt came before any of its 3 candidates was verified"},
		{search.Stats{States: 10, Stopped: "memory"}, "the enumeration stopped at the memory bound after 10 states"},
		{search.Stats{States: 10, Complete: 3, Stopped: "time limit"}, "the time limit came before any of its 3 candidates was verified"},
	} {
		if got := whyNoneFound(&search.Result{Stats: tt.st}, false, false); !strings.HasPrefix(got, tt.want) {
			t.Errorf("%+v: %q, want %q", tt.st, got, tt.want)
		}
	}
}

// A part had a fused candidate when its search ended with one that passed
// the full check, at the time its first passed the fast path: a LLaMA-70B
// part's seeds pass the fast path at once and the full check seconds
// later, and a run that ended between said "every part had a fused
// candidate" of parts it left unfused (found by a user's sweep).
func TestFirstFusedAtNeedsAVerifiedFusedCandidate(t *testing.T) {
	fused := &search.Candidate{Customized: 1}
	program := &search.Candidate{}
	for _, tt := range []struct {
		name string
		r    result
		want float64
	}{
		{"fast path only", result{searched: &search.Result{Candidates: []*search.Candidate{program}},
			stats: search.Stats{FirstFused: 0.25}, startedAt: 3 * time.Second}, -1},
		{"no search result", result{stats: search.Stats{FirstFused: 0.25}, startedAt: 3 * time.Second}, -1},
		{"verified", result{searched: &search.Result{Candidates: []*search.Candidate{program, fused}},
			stats: search.Stats{FirstFused: 0.25}, startedAt: 3 * time.Second}, 3.25},
		{"cached", result{searched: &search.Result{Candidates: []*search.Candidate{fused}}, cached: true,
			stats: search.Stats{FirstFused: 9}, startedAt: 2 * time.Second}, 2},
		{"a customized op as written", result{fused: true}, 0},
	} {
		if got := tt.r.firstFusedAt(); got != tt.want {
			t.Errorf("%s: firstFusedAt = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// The summary says how many parts the cache answered: their states are
// the searches it kept, not this run's (found by a user's sweep: a run
// with every part cached read as a search of 351,895 states).
func TestWriteTableSaysWhatTheCacheAnswered(t *testing.T) {
	res := &Result{Stats: search.Stats{States: 15, Seconds: 2, FirstFused: -1}, Parts: []*PartReport{
		{Kinds: []string{"matmul"}, SameAs: -1, FirstFusedAt: -1, Cached: true, Stats: search.Stats{States: 10}},
		{Kinds: []string{"exp"}, SameAs: -1, FirstFusedAt: -1, Stats: search.Stats{States: 5}},
	}}
	for _, tc := range []struct {
		cached bool
		want   string
	}{
		{true, "2 part(s), 0 fused, 1 from the cache; searched 15 states in 2.0s"},
		{false, "2 part(s), 0 fused; searched 15 states in 2.0s"},
	} {
		res.Parts[0].Cached = tc.cached
		var w bytes.Buffer
		WriteTable(&w, res, Options{Arch: target.MustLookup("sm_90")}, "out", nil)
		if first, _, _ := strings.Cut(w.String(), "\n"); first != tc.want {
			t.Errorf("cached %v: summary %q, want %q", tc.cached, first, tc.want)
		}
	}
}

// The summary's "every part had a fused candidate" says how many parts
// kept none, when their fused candidates were slower than their ops
// (found by a user's sweep: it stood beside "0 fused").
func TestWriteTableSaysWhichFusedCandidatesWereKept(t *testing.T) {
	for _, tc := range []struct {
		fused [2]bool
		want  string
	}{
		{[2]bool{true, true}, "2 part(s), 2 fused; searched 15 states in 2.0s; every part had a fused candidate at 1.5s"},
		{[2]bool{true, false}, "2 part(s), 1 fused; searched 15 states in 2.0s; every part had a fused candidate at 1.5s, 1 not kept (the table says why)"},
		{[2]bool{false, false}, "2 part(s), 0 fused; searched 15 states in 2.0s; every part had a fused candidate at 1.5s, 2 not kept (the table says why)"},
	} {
		res := &Result{Stats: search.Stats{States: 15, Seconds: 2, FirstFused: 1.5}, Parts: []*PartReport{
			{Kinds: []string{"matmul"}, SameAs: -1, FirstFusedAt: 1, Fused: tc.fused[0], Stats: search.Stats{States: 10}},
			{Kinds: []string{"exp"}, SameAs: -1, FirstFusedAt: 1.5, Fused: tc.fused[1], Stats: search.Stats{States: 5}},
		}}
		var w bytes.Buffer
		WriteTable(&w, res, Options{Arch: target.MustLookup("sm_90")}, "out", nil)
		if first, _, _ := strings.Cut(w.String(), "\n"); first != tc.want {
			t.Errorf("fused %v: summary %q, want %q", tc.fused, first, tc.want)
		}
	}
}
