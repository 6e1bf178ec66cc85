package driver

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mirage-go/mirage/search"
)

// A part the enumeration cannot reach (one state) is fused by its seed:
// the part, the answer and the written document name the rule, and the
// run says when the part had its first fused answer.
func TestSeedFusesAPartTheEnumerationDoesNotReach(t *testing.T) {
	program := loadSource(t, "norm", `
X = g.new_input(dims=(8, 4096), dtype=mi.float16)
S = g.reduction(g.square(X), 1)
g.mark_output(g.div(X, g.sqrt(g.mul_scalar(S, 0.000244140625))))`)
	res, err := Run(context.Background(), program, Options{MaxStates: 1, TimeLimit: time.Minute, Workers: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Parts) != 1 {
		t.Fatalf("%d parts, want 1", len(res.Parts))
	}
	p := res.Parts[0]
	if !p.Fused || p.Seed != "rows" || p.FirstFusedAt < 0 || len(p.Seeds) != 1 || p.Seeds[0].Outcome != "verified" {
		t.Fatalf("part %+v, want it fused by the verified rows seed", p)
	}
	if res.Stats.FirstFused != p.FirstFusedAt {
		t.Errorf("run's first fused %v, want the one part's %v", res.Stats.FirstFused, p.FirstFusedAt)
	}
	best := res.Candidates[0]
	if best.Unfused || best.Seed != "rows" || best.Estimate.Micros >= res.Baseline.Micros {
		t.Fatalf("best answer %+v (unfused %.1f µs), want the faster rows seed", best, res.Baseline.Micros)
	}
	f, err := res.File("norm", nil)
	if err != nil {
		t.Fatal(err)
	}
	var meta struct{ Seed string }
	if err := json.Unmarshal(f.Graphs[0].Meta, &meta); err != nil || meta.Seed != "rows" {
		t.Errorf("the document's best graph has meta %s, want seed \"rows\"", f.Graphs[0].Meta)
	}
}

// A part no rule applies to, whose enumeration ends without a complete
// candidate, says both; then it is cut, and its pieces searched.
func TestWhyNotNamesTheEnumerationAndTheSeeds(t *testing.T) {
	program := loadSource(t, "bmm", `
Q = g.new_input(dims=(2, 16, 64), dtype=mi.float16)
K = g.new_input(dims=(2, 64, 128), dtype=mi.float16)
g.mark_output(g.reduction(g.matmul(Q, K), 1))`)
	var mu sync.Mutex
	var lines []string
	log := func(s string) { mu.Lock(); lines = append(lines, s); mu.Unlock() }
	res, err := Run(context.Background(), program, Options{MaxStates: 1, TimeLimit: time.Minute, Seed: 1, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	const whole = "part (matmul, reduction) -> [2, 1, 128]: not fused: "
	i := slices.IndexFunc(lines, func(s string) bool { return strings.HasPrefix(s, whole) })
	if i < 0 {
		t.Fatalf("no line for the whole part in the log:\n%s", strings.Join(lines, "\n"))
	}
	for _, want := range []string{"no candidate complete", "state budget", "no seed rule applies"} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("%q, want it to say %q", lines[i], want)
		}
	}
	var kinds [][]string
	for _, p := range res.Parts {
		kinds = append(kinds, p.Kinds)
	}
	if want := [][]string{{"matmul"}, {"reduction"}}; !slices.EqualFunc(kinds, want, slices.Equal) {
		t.Errorf("final parts %v, want %v: a part with nothing found is cut", kinds, want)
	}
}

// An output projection of grouped heads: its head_sum seed verifies, and
// at this shape its loop over the heads loses to the library's batched
// matmul by the model, which the part says.
func TestWhyNotWhenEveryFusedFormRanksBelow(t *testing.T) {
	program := loadSource(t, "oproj", `
O = g.new_input(dims=(8, 8, 4, 128), dtype=mi.float16)
W = g.new_input(dims=(8, 8, 128, 2048), dtype=mi.float16)
g.mark_output(g.reduction(g.reduction(g.matmul(O, W), 1), 0))`)
	res, err := Run(context.Background(), program, Options{MaxStates: 2000, PartResults: 2, TimeLimit: time.Minute, Workers: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Parts) != 1 {
		t.Fatalf("%d parts, want the program whole", len(res.Parts))
	}
	p := res.Parts[0]
	if p.Fused || len(p.Seeds) != 1 || p.Seeds[0].Rule != "head_sum" || p.Seeds[0].Outcome != "verified" {
		t.Fatalf("part %+v, want it unfused, its head_sum seed verified", p)
	}

	if want := "is no faster than the part's own ops"; !strings.Contains(p.WhyNot, want) {
		t.Errorf("why not %q, want it to say it %s", p.WhyNot, want)
	}
}

// judge reads a part's search: the kept candidates, best first, then the
// best-ranked fused one when none of them is fused.
func TestJudge(t *testing.T) {
	fused := func(us float64) *search.Candidate {
		return &search.Candidate{Customized: 1, Kernels: 1, Estimate: search.Estimate{Micros: us}}
	}
	ops := func(us float64) *search.Candidate {
		return &search.Candidate{Kernels: 2, Estimate: search.Estimate{Micros: us}}
	}
	const unfused = 20
	cases := []struct {
		name   string
		kept   []*search.Candidate
		ranked float64 // Stats.RankedFused
		fused  bool
		slower bool
		whyNot string // a part of it
	}{
		{"a faster fused one kept", []*search.Candidate{fused(15), ops(20)}, 15, true, false, ""},
		{"the fused one kept is slower", []*search.Candidate{ops(20), fused(23)}, 23, false, true, "the best fused μGraph (23.0 µs) is no faster than the part's own ops (20.0 µs)"},
		{"every fused one ranks below the kept", []*search.Candidate{ops(20), ops(21)}, 23.6, false, true, "the best fused μGraph the search ranked (23.6 µs, not verified: it ranks below the candidates kept) is no faster than the part's own ops (20.0 µs)"},
		{"none fused", []*search.Candidate{ops(20), ops(21)}, 0, false, false, "no equivalent fused μGraph found"},
		{"a faster fused one left unchecked", []*search.Candidate{ops(20), ops(21)}, 15, false, false, "no equivalent fused μGraph found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := &search.Result{Candidates: tc.kept, Stats: search.Stats{Complete: 3, Verified: int64(len(tc.kept)), RankedFused: tc.ranked}}
			var r result
			r.judge(res, unfused, false)
			if r.fused != tc.fused || r.slower != tc.slower || !strings.Contains(r.whyNot, tc.whyNot) || (tc.whyNot == "") != (r.whyNot == "") {
				t.Errorf("fused %v, slower %v, why not %q; want %v, %v, %q", r.fused, r.slower, r.whyNot, tc.fused, tc.slower, tc.whyNot)
			}
		})
	}
}

// A part no seed rule covers has its pieces searched before it when a
// rule covers each (withPieces): a final norm, the LM head and a softmax
// over the vocabulary, whose enumeration ends here at once with nothing
// complete, gives the norm, the head and exp as one piece and the sum
// and division as another, each fused by its seed.
func TestPiecesOfAnUncoveredPartAreSearchedFirst(t *testing.T) {
	program := loadSource(t, "lm_head", `
H = g.new_input(dims=(1, 1024), dtype=mi.float16)
W = g.new_input(dims=(1024, 4096), dtype=mi.float16)
E = g.exp(g.mul_scalar(g.matmul(g.rms_norm(H, normalized_shape=(1024,)), W), 1.4))
g.mark_output(g.div(E, g.reduction(E, 1)))`)
	var lines []string // one worker: no lock
	res, err := Run(context.Background(), program, Options{MaxStates: 1, TimeLimit: time.Minute, Workers: 1, Seed: 1, Log: func(s string) { lines = append(lines, s) }})
	if err != nil {
		t.Fatal(err)
	}
	var kinds [][]string
	for _, p := range res.Parts {
		kinds = append(kinds, p.Kinds)
		if !p.Fused || p.Seed == "" {
			t.Errorf("part %v: fused %v by seed %q, want fused by a seed", p.Kinds, p.Fused, p.Seed)
		}
	}
	if want := [][]string{{"rms_norm", "matmul", "mul_scalar", "exp"}, {"reduction", "div"}}; !slices.EqualFunc(kinds, want, slices.Equal) {
		t.Fatalf("final parts %v, want %v", kinds, want)
	}
	var order []string
	for _, l := range lines {
		if strings.HasPrefix(l, "part (") {
			order = append(order, l[:strings.Index(l, ")")+1])
		}
	}
	want := []string{"part (rms_norm, matmul, mul_scalar, exp)", "part (reduction, div)", "part (rms_norm, matmul, mul_scalar, exp, reduction, div)"}
	if !slices.Equal(order, want) {
		t.Errorf("searched in the order\n%s\nwant\n%s", strings.Join(order, "\n"), strings.Join(want, "\n"))
	}
}

// A norm shared by two parts (a MoE router's softmax and an expert's
// projection of the same normed input) is a copy in each (recompute). The
// router's part, which no rule covers, is cut without that copy: a piece of
// the norm alone would be copied back into the rest, the same part again,
// and the router would stay unfused. Its covered pieces are searched before
// it (cutAhead, withPieces), and the covered projection before the
// router's bare enumeration; the statistics count every search, the cut
// parts' too.
func TestASharedNormIsLeftOutOfACut(t *testing.T) {
	program := loadSource(t, "router", `
X = g.new_input(dims=(1, 1024), dtype=mi.float16)
Wr = g.new_input(dims=(1024, 8), dtype=mi.float16)
W1 = g.new_input(dims=(1024, 4096), dtype=mi.float16)
N = g.rms_norm(X, normalized_shape=(1024,))
L = g.exp(g.matmul(N, Wr))
g.mark_output(g.div(L, g.reduction(L, 1)))
g.mark_output(g.matmul(N, W1))`)
	var lines []string // one worker: no lock
	res, err := Run(context.Background(), program, Options{MaxStates: 1, TimeLimit: time.Minute, Workers: 1, Seed: 1, Log: func(s string) { lines = append(lines, s) }})
	if err != nil {
		t.Fatal(err)
	}
	var kinds [][]string
	var states int64
	for _, p := range res.Parts {
		kinds = append(kinds, p.Kinds)
		states += p.Stats.States
		if router := slices.Contains(p.Kinds, "exp") || slices.Contains(p.Kinds, "div"); router && !p.Fused {
			t.Errorf("the router's part %v did not fuse: %s", p.Kinds, p.WhyNot)
		}
	}
	want := [][]string{{"rms_norm", "matmul", "exp"}, {"reduction", "div"}, {"rms_norm", "matmul"}}
	if !slices.EqualFunc(kinds, want, slices.Equal) {
		t.Fatalf("final parts %v, want %v", kinds, want)
	}
	var order []string
	for _, l := range lines {
		if strings.HasPrefix(l, "part (") {
			order = append(order, l[:strings.Index(l, ")")+1])
		}
	}
	wantOrder := []string{"part (rms_norm, matmul, exp, reduction, div, matmul)", "part (rms_norm, matmul, exp)", "part (reduction, div)", "part (rms_norm, matmul)", "part (rms_norm, matmul, exp, reduction, div)"}
	if !slices.Equal(order, wantOrder) {
		t.Errorf("searched in the order\n%s\nwant\n%s", strings.Join(order, "\n"), strings.Join(wantOrder, "\n"))
	}
	if res.Stats.States <= states {
		t.Errorf("the run's statistics count %d states, the final parts' %d: the searches of the parts cut again are left out", res.Stats.States, states)
	}
}

// An encoder's MLP over 197 rows, which no power of two divides, so that
// the matmul rule tiles no rows and places no seed: the library rule
// covers both halves, so the down projection, its bias and the residual
// are one part as the norm, the up projection, its bias and silu are, and
// each is fused by the library's seed (the products by the library, the
// rest in one kernel after them).
func TestLibrarySeedsCoverAnEncodersParts(t *testing.T) {
	program := loadSource(t, "encoder_mlp", `
X = g.new_input(dims=(197, 64), dtype=mi.float16)
W1 = g.new_input(dims=(64, 256), dtype=mi.float16)
B1 = g.new_input(dims=(1, 256), dtype=mi.float16)
W2 = g.new_input(dims=(256, 64), dtype=mi.float16)
B2 = g.new_input(dims=(1, 64), dtype=mi.float16)
H = g.silu(g.add(g.matmul(g.rms_norm(X, normalized_shape=(64,)), W1), B1))
g.mark_output(g.add(g.add(g.matmul(H, W2), B2), X))`)
	res, err := Run(context.Background(), program, Options{MaxStates: 1, TimeLimit: time.Minute, Workers: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	var kinds [][]string
	for _, p := range res.Parts {
		kinds = append(kinds, p.Kinds)
		if !p.Fused || p.Seed != "library" {
			t.Errorf("part %v: fused %v by seed %q (%s), want fused by the library's", p.Kinds, p.Fused, p.Seed, p.WhyNot)
		}
	}
	if want := [][]string{{"rms_norm", "matmul", "add", "silu"}, {"matmul", "add", "add"}}; !slices.EqualFunc(kinds, want, slices.Equal) {
		t.Errorf("parts %v, want %v", kinds, want)
	}
	if best := res.Candidates[0]; best.Unfused || best.Estimate.Micros >= res.Baseline.Micros {
		t.Errorf("best answer %.1f µs (unfused %v), the program %.1f", best.Estimate.Micros, best.Unfused, res.Baseline.Micros)
	}
}

// A part that stays whole by splitAgain (a fused form slower than its ops,
// found before its search ran out of time) is cut anyway when its pieces,
// searched already, beat its answer together by the estimates
// (piecesWin): a 7B model's final norm, LM head and softmax at one token
// kept its ops at 116.7 µs where its two pieces fused at 96.7 and 6.9.
// Pieces that do not beat it, or that no search has ended for, leave it
// whole.
func TestFasterPiecesCutAPartThatStaysWhole(t *testing.T) {
	program := loadSource(t, "lm_head", `
H = g.new_input(dims=(1, 1024), dtype=mi.float16)
W = g.new_input(dims=(1024, 4096), dtype=mi.float16)
E = g.exp(g.matmul(g.rms_norm(H, normalized_shape=(1024,)), W))
g.mark_output(g.div(E, g.reduction(E, 1)))`)
	d, _, done, err := begin(context.Background(), program, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	groups := d.firstGroups(nil)
	parts := cut(d.ix, groups)
	if len(parts) != 1 {
		t.Fatalf("%d parts, want the program as one", len(parts))
	}
	whole, err := d.outcomeOf(parts[0])
	if err != nil {
		t.Fatal(err)
	}
	outs := []*outcome{whole}
	whole.result = result{done: true, timedOut: true, slower: true, estimatedUs: whole.unfusedUs}
	pieces := d.pieces(groups[0], groups)
	if len(pieces) != 2 {
		t.Fatalf("pieces %v, want two", pieces)
	}
	var pouts []*outcome
	for _, p := range cut(d.ix, recompute(d.ix, pieces, d.limits)) {
		o, err := d.outcomeOf(p)
		if err != nil {
			t.Fatal(err)
		}
		pouts = append(pouts, o)
	}
	for _, tt := range []struct {
		name  string
		share []float64 // each piece's answer, in shares of the whole's; nil: not searched
		cut   bool
	}{
		{"pieces not searched", nil, false},
		{"pieces faster together", []float64{0.8, 0.1}, true},
		{"pieces as fast together", []float64{0.9, 0.1}, false},
		{"one piece's search not ended", []float64{0.5, -1}, false},
	} {
		for i, o := range pouts {
			o.result = result{}
			if tt.share != nil && tt.share[i] >= 0 {
				o.result = result{done: true, fused: true, estimatedUs: tt.share[i] * whole.unfusedUs}
			}
		}
		next, changed := d.nextGroups(groups, outs, nil)
		if changed != tt.cut || (tt.cut && !slices.EqualFunc(next, pieces, slices.Equal)) {
			t.Errorf("%s: next groups %v (changed %v), want cut %v into %v", tt.name, next, changed, tt.cut, pieces)
		}
	}
}
