package driver

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// TestCombinations: best-first choices of one option per part, by their
// summed estimate, leaving out the all-own-ops choice (the unfused
// program).
func TestCombinations(t *testing.T) {
	fused := &kernel.Graph{}
	opt := func(us float64, isFused bool) option {
		if isFused {
			return option{graph: fused, us: us}
		}
		return option{us: us}
	}
	tests := []struct {
		name string
		opts [][]option
		n    int
		want [][]int
	}{
		{"one part: its options in order, own ops left out",
			[][]option{{opt(1, true), opt(2, true), opt(5, false), opt(6, true)}}, 10,
			[][]int{{0}, {1}, {3}}},
		{"one part, n caps",
			[][]option{{opt(1, true), opt(2, true), opt(5, false)}}, 1,
			[][]int{{0}}},
		{"two parts: the next-best of the part where it costs least",
			[][]option{{opt(10, true), opt(11, true), opt(20, false)}, {opt(5, true), opt(8, false)}}, 10,
			// sums: 15, 16 (0 +1), 18 (1 0... part 1 own), 19, 25, [28: both own, left out]
			[][]int{{0, 0}, {1, 0}, {0, 1}, {1, 1}, {2, 0}}},
		{"a part that did not fuse has its own ops only",
			[][]option{{opt(3, false)}, {opt(1, true), opt(2, false)}}, 10,
			[][]int{{0, 0}}},
		{"nothing fused: no combination",
			[][]option{{opt(3, false)}, {opt(2, false)}}, 10,
			nil},
		{"equal sums in a fixed order",
			[][]option{{opt(1, true), opt(2, false)}, {opt(1, true), opt(2, false)}}, 10,
			[][]int{{0, 0}, {0, 1}, {1, 0}}},
	}
	for _, tt := range tests {
		got := combinations(tt.opts, tt.n)
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestRunAnswers: Options.Answers whole-program answers beside the unfused
// program, best first, each equivalent to the program (in the finite-field
// verifier and in float64), all different; -1 keeps every one of a
// single-part program's verified candidates, and, for a program of
// several parts, combinations of theirs.
func TestRunAnswers(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: searches")
	}
	tests := []struct {
		program string
		answers int
		parts   int // at least
	}{
		{"lora", 4, 1},
		{"lora", -1, 1},
		{"llama_mlp", 4, 2},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%d", tt.program, tt.answers), func(t *testing.T) {
			g := load(t, tt.program)
			res, err := Run(context.Background(), g, Options{Workers: 2, Seed: 1, TimeLimit: 30 * time.Second,
				Arch: target.MustLookup("sm_90"), PartResults: tt.answers, Answers: tt.answers})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Parts) < tt.parts {
				t.Fatalf("%d parts, want at least %d", len(res.Parts), tt.parts)
			}
			var fused []*Candidate
			hashes := map[uint64]bool{}
			for i, c := range res.Candidates {
				if i > 0 && res.Candidates[i-1].Estimate.Micros > c.Estimate.Micros {
					t.Errorf("answer %d (%.2f µs) is ranked after a slower one (%.2f µs)", i, c.Estimate.Micros, res.Candidates[i-1].Estimate.Micros)
				}
				if hashes[c.Hash] {
					t.Errorf("answer %d is written twice", i)
				}
				hashes[c.Hash] = true
				if !c.Unfused {
					fused = append(fused, c)
				}
				checkEquivalent(t, fmt.Sprintf("answer %d", i), g, c.Graph)
			}
			if !slices.ContainsFunc(res.Candidates, func(c *Candidate) bool { return c.Unfused }) {
				t.Error("the unfused program is not among the answers")
			}
			switch {
			case tt.answers > 0 && len(fused) != tt.answers:
				t.Errorf("%d answers beside the unfused program, want %d", len(fused), tt.answers)
			case tt.answers < 0 && len(res.Parts) == 1 && len(fused) != int(res.Parts[0].Stats.Verified):
				// Every verified candidate of the part's search runs a
				// graph-defined kernel here (LoRA has no rewrite into
				// pre-defined ops alone).
				t.Errorf("%d answers, the search verified %d", len(fused), res.Parts[0].Stats.Verified)
			case tt.answers < 0 && len(fused) <= 4:
				t.Errorf("%d answers: want the whole verified set, more than 4", len(fused))
			}
		})
	}
}

// TestCombinationsAsEveryNeighbour holds combinations to the search it
// replaced, which pushed every choice one step from each one taken (a
// choice's every part, and a set of those seen): the same choices in the
// same order, on random tables with many equal estimates.
func TestCombinationsAsEveryNeighbour(t *testing.T) {
	fused := &kernel.Graph{}
	rng := rand.New(rand.NewPCG(7, 11))
	for trial := range 300 {
		opts := make([][]option, 1+rng.IntN(6))
		for k := range opts {
			for range 1 + rng.IntN(4) {
				o := option{us: float64(1+rng.IntN(8)) / 10} // tenths of a µs, as estimates are: ties that float sums round apart
				if rng.IntN(3) > 0 {
					o.graph = fused
				}
				opts[k] = append(opts[k], o)
			}
			slices.SortStableFunc(opts[k], func(a, b option) int { return cmp.Compare(a.us, b.us) })
		}
		n := 1 + rng.IntN(12)
		if got, want := combinations(opts, n), everyNeighbour(opts, n); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("trial %d, n %d, %v: %v, want %v", trial, n, opts, got, want)
		}
	}
}

// Sums that are equal come in the order of their choices, where float
// sums built in other orders differ in their last bit (0.1 + 0.5 and
// 0.3 + 0.3, as 0.4 + 0.2 and 0.4 + 0.19999999999999998).
func TestCombinationsEqualSumsOfTenths(t *testing.T) {
	f := &kernel.Graph{}
	opts := [][]option{{{graph: f, us: 0.1}, {graph: f, us: 0.3}}, {{graph: f, us: 0.3}, {graph: f, us: 0.5}}}
	if got, want := fmt.Sprint(combinations(opts, 4)), "[[0 0] [0 1] [1 0] [1 1]]"; got != want {
		t.Errorf("combinations %v, want %v", got, want)
	}
}

// everyNeighbour is combinations as it was first written, but for its
// sums: of whole nanoseconds (nanos), as combinations' are.
func everyNeighbour(opts [][]option, n int) [][]int {
	sum := func(c []int) int64 {
		var s int64
		for k, i := range c {
			s += nanos(opts[k][i].us)
		}
		return s
	}
	unfused := func(c []int) bool {
		for k, i := range c {
			if opts[k][i].graph != nil {
				return false
			}
		}
		return true
	}
	type entry struct {
		choice []int
		us     int64
	}
	var frontier []entry
	seen := map[string]bool{}
	push := func(c []int) {
		if k := fmt.Sprint(c); !seen[k] {
			seen[k] = true
			frontier = append(frontier, entry{c, sum(c)})
		}
	}
	push(make([]int, len(opts)))
	var out [][]int
	for len(frontier) > 0 && len(out) < n {
		best := 0
		for i, e := range frontier {
			if e.us < frontier[best].us || e.us == frontier[best].us && slices.Compare(e.choice, frontier[best].choice) < 0 {
				best = i
			}
		}
		c := frontier[best]
		frontier = slices.Delete(frontier, best, best+1)
		if !unfused(c.choice) {
			out = append(out, c.choice)
		}
		for k := range c.choice {
			if c.choice[k]+1 < len(opts[k]) {
				next := slices.Clone(c.choice)
				next[k]++
				push(next)
			}
		}
	}
	return out
}

// A program whose two outputs are one expression written twice, marked in
// the reverse of the order its ops make them (so the part's program is not
// the program, and the stitched answer gets the whole check): the fused
// answer stands. The whole check's matching once paired the equal outputs
// crosswise, which the check takes for outputs out of place, and the run
// wrote the unfused program alone ("the stitched program did not verify").
func TestEqualOutputsKeepTheFusedAnswer(t *testing.T) {
	g := loadSource(t, "equal_outputs", `
X = g.new_input(dims=(16, 64), dtype=mi.float16)
W = g.new_input(dims=(64, 64), dtype=mi.float16)
A = g.silu(g.matmul(X, W))
B = g.silu(g.matmul(X, W))
g.mark_output(B)
g.mark_output(A)`)
	var log []string
	res, err := Run(context.Background(), g, Options{Name: "equal_outputs", Arch: target.MustLookup("sm_90"),
		TimeLimit: 30 * time.Second, Workers: 2, Seed: 1, Log: func(s string) { log = append(log, s) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Parts) != 1 || res.Parts[0].Stats.Verified == 0 {
		t.Fatalf("want one part whose search verified fused candidates; parts %+v", res.Parts)
	}
	if p := res.Parts[0]; p.WhyNot != "" {
		t.Errorf("part %v: %q (log %q)", p.Kinds, p.WhyNot, log)
	}
	if !slices.ContainsFunc(res.Candidates, func(c *Candidate) bool { return c.Customized > 0 }) {
		t.Error("no fused answer: only the unfused program")
	}
}
