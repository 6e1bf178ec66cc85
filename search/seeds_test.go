package search

import (
	"context"
	"slices"
	"strconv"
	"testing"

	"github.com/mirage-go/mirage/cost"
	"github.com/mirage-go/mirage/frontend"
	"github.com/mirage-go/mirage/seed"
	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// normProgram is QK-norm's norm written out, the class that 22 million
// states of enumeration did not fuse at a LLaMA shape.
func normProgram(t *testing.T, rows int) *kernel.Graph {
	t.Helper()
	p, err := frontend.Load("norm.py", []byte(`import mirage as mi
g = mi.new_kernel_graph()
X = g.new_input(dims=(`+strconv.Itoa(rows)+`, 128), dtype=mi.float16)
S = g.reduction(g.square(X), 1)
g.mark_output(g.div(X, g.sqrt(g.mul_scalar(S, 0.0078125))))
`), frontend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p.Graph
}

// testEstimate is the cost model's estimate on the default target.
func testEstimate(g *kernel.Graph) (Estimate, error) {
	e, err := cost.EstimateGraph(g, target.MustLookup(target.Default))
	return Estimate{Micros: e.Micros, Bytes: e.Bytes, Flops: e.Flops}, err
}

// seedRun searches program with at most one state of enumeration: what
// it returns fused comes from the seeds.
func seedRun(t *testing.T, ctx context.Context, program *kernel.Graph, noSeeds bool) *Result {
	t.Helper()
	cfg, err := NamedConfig("default")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(ctx, program, cfg, Options{Seed: 1, MaxStates: 1, MaxResults: 2, NoSeeds: noSeeds, Estimate: testEstimate})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestSeedsComeFirst(t *testing.T) {
	program := normProgram(t, 32)
	res := seedRun(t, context.Background(), program, false)
	if len(res.Candidates) == 0 || res.Candidates[0].Seed != "rows" || res.Candidates[0].Customized != 1 {
		for _, c := range res.Candidates {
			t.Logf("%+v", *c)
		}
		t.Fatalf("best candidate %+v, want the rows seed", res.Candidates)
	}
	if res.Stats.FirstFused < 0 {
		t.Errorf("FirstFused %v: the verified seed is a first fused answer", res.Stats.FirstFused)
	}
	if want := []SeedTrial{{Rule: "rows", Outcome: "verified", Tilings: 6}}; !slices.Equal(res.Seeds, want) {
		t.Errorf("Seeds %+v, want %+v", res.Seeds, want)
	}
	for _, c := range res.Candidates {
		if c.Seed == "" {
			continue
		}
		r, err := res.Verifier.Verify(c.Graph)
		if err != nil || !r.Equivalent {
			t.Errorf("returned seed does not verify: %v %+v", err, r)
		}
	}

	without := seedRun(t, context.Background(), program, true)
	if len(without.Candidates) != 0 || without.Seeds != nil || without.Stats.FirstFused >= 0 {
		t.Errorf("NoSeeds: %d candidates, seeds %v, first fused %v; want none of them (one state enumerates nothing)",
			len(without.Candidates), without.Seeds, without.Stats.FirstFused)
	}
}

// A search whose verification the context ends keeps the seed verified
// before the enumeration.
func TestSeedOutlastsTheVerification(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := seedRun(t, ctx, normProgram(t, 16), false)
	if len(res.Candidates) != 1 || res.Candidates[0].Seed != "rows" {
		t.Fatalf("candidates %+v, want the one verified seed", res.Candidates)
	}
}

// Of several rules' seeds, only the best-ranked goes through the full
// check before the ranked verification: the others wait for their rank
// (a split_k seed's full check at a LLaMA-70B shape took 12 s).
func TestOnlyTheBestRuleIsCheckedFirst(t *testing.T) {
	p, err := frontend.Load("mm.py", []byte(`import mirage as mi
g = mi.new_kernel_graph()
X = g.new_input(dims=(16, 512), dtype=mi.float16)
W = g.new_input(dims=(512, 1024), dtype=mi.float16)
g.mark_output(g.matmul(g.rms_norm(X, normalized_shape=(512,)), W))
`), frontend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// A canceled verification returns what was checked before it.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := seedRun(t, ctx, p.Graph, false)
	if len(res.Candidates) != 1 {
		t.Fatalf("%d candidates, want the one seed checked first", len(res.Candidates))
	}
	best := res.Candidates[0].Seed
	var outcomes []string
	for _, tr := range res.Seeds {
		want := "outranked"
		if tr.Rule == best {
			want = "verified"
		}
		if tr.Outcome != want {
			t.Errorf("rule %s: %s, want %s (the best-ranked seed is %s's)", tr.Rule, tr.Outcome, want, best)
		}
		outcomes = append(outcomes, tr.Rule+" "+tr.Outcome)
	}
	if len(res.Seeds) != 2 {
		t.Errorf("seeds %v, want matmul's and split_k's", outcomes)
	}
	// A verification that runs checks the others by rank, and reports
	// the rule verified when one of its seeds is among the answers.
	all, err := Run(context.Background(), p.Graph, mustConfig(t, "default"), Options{Seed: 1, MaxStates: 1, MaxResults: 0, Estimate: testEstimate})
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range all.Seeds {
		if tr.Outcome != "verified" {
			t.Errorf("every seed verified: rule %s %s", tr.Rule, tr.Outcome)
		}
	}
}

// What the ranked verification made of outranked rules' seeds becomes
// their outcome; the others' stand.
func TestSettleOutranked(t *testing.T) {
	trials := []SeedTrial{
		{Rule: "rows", Outcome: "verified"},
		{Rule: "matmul", Outcome: "outranked"},
		{Rule: "split_k", Outcome: "outranked"},
		{Rule: "attention", Outcome: "outranked"},
		{Rule: "broken", Outcome: "rejected"},
	}
	best := []*Candidate{{Seed: "rows"}, {Seed: "matmul"}, {}}
	settleOutranked(trials, best, []string{"split_k", "broken"})
	want := []string{"verified", "verified", "rejected", "outranked", "rejected"}
	for i, tr := range trials {
		if tr.Outcome != want[i] {
			t.Errorf("%s: %s, want %s", tr.Rule, tr.Outcome, want[i])
		}
	}
}

func mustConfig(t *testing.T, name string) Config {
	t.Helper()
	cfg, err := NamedConfig(name)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// A seed that does not compute the program (a bug in its rule) is caught
// by the verifier and never returned.
func TestWrongSeedIsRejected(t *testing.T) {
	program := normProgram(t, 32)
	defer func(b func(*kernel.Graph, seed.Options) []seed.Seed) { buildSeeds = b }(buildSeeds)
	// The rule builds the rows seeds of the program with its square left
	// out.
	buildSeeds = func(_ *kernel.Graph, opts seed.Options) []seed.Seed {
		wrong, err := frontend.Load("wrong.py", []byte(`import mirage as mi
g = mi.new_kernel_graph()
X = g.new_input(dims=(32, 128), dtype=mi.float16)
S = g.reduction(X, 1)
g.mark_output(g.div(X, g.sqrt(g.mul_scalar(S, 0.0078125))))
`), frontend.Options{})
		if err != nil {
			t.Fatal(err)
		}
		bad := seed.Build(wrong.Graph, opts)
		for i := range bad {
			bad[i].Rule = "broken"
		}
		return bad
	}
	res := seedRun(t, context.Background(), program, false)
	if want := []SeedTrial{{Rule: "broken", Outcome: "rejected", Tilings: 6}}; !slices.Equal(res.Seeds, want) {
		t.Errorf("Seeds %+v, want %+v", res.Seeds, want)
	}
	for _, c := range res.Candidates {
		if c.Seed != "" {
			t.Errorf("a rejected rule's seed was returned: %+v", c)
		}
	}
	if res.Stats.Rejected == 0 || res.Stats.Rejected > res.Stats.Complete {
		t.Errorf("the rejected seed is not counted as a complete candidate rejected: %d rejected of %d", res.Stats.Rejected, res.Stats.Complete)
	}
}

// A program no rule fuses (a sum over rows: the rows rule wants sums
// over the last dim) gets no seeds, and the enumeration still fuses it.
func TestPremiseFailsEnumerationFuses(t *testing.T) {
	p, err := frontend.Load("colsum.py", []byte(`import mirage as mi
g = mi.new_kernel_graph()
X = g.new_input(dims=(64, 256), dtype=mi.float16)
g.mark_output(g.reduction(g.exp(X), 0))
`), frontend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := NamedConfig("default")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), p.Graph, cfg, Options{Seed: 1, MaxResults: 2, Estimate: testEstimate})
	if err != nil {
		t.Fatal(err)
	}
	if res.Seeds != nil {
		t.Errorf("seeds %+v for a sum over rows", res.Seeds)
	}
	if !slices.ContainsFunc(res.Candidates, func(c *Candidate) bool { return c.Customized > 0 && c.Seed == "" }) {
		t.Errorf("the enumeration fused nothing: %d candidates", len(res.Candidates))
	}
}

// Seeds keep to the grids and ranges a program fixes (superoptimize's
// griddims, franges, ...), as the enumeration does.
func TestSeedsKeepToTheRestrictions(t *testing.T) {
	program := normProgram(t, 32)
	cfg, err := NamedConfig("default")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Restrict(Restrictions{Grids: []block.Dim3{{4, 1, 1}}})
	res, err := Run(context.Background(), program, cfg, Options{Seed: 1, MaxStates: 1, MaxResults: 8, Estimate: testEstimate})
	if err != nil {
		t.Fatal(err)
	}
	var seeds int
	for _, c := range res.Candidates {
		if c.Seed == "" {
			continue
		}
		seeds++
		if !slices.Equal(c.Grids, []block.Dim3{{4, 1, 1}}) {
			t.Errorf("a %s seed on grids %v, outside the program's (4, 1, 1)", c.Seed, c.Grids)
		}
	}
	if seeds != 1 {
		t.Errorf("%d seeds, want the one on grid (4, 1, 1)", seeds)
	}
	if want := []SeedTrial{{Rule: "rows", Outcome: "verified", Tilings: 1}}; !slices.Equal(res.Seeds, want) {
		t.Errorf("Seeds %+v, want %+v", res.Seeds, want)
	}
}

// A search shared among runs says what became of the seeds once their
// candidates are verified together, and when the merge had a fused one.
func TestMergedRunsReportTheSeeds(t *testing.T) {
	program := normProgram(t, 32)
	cfg, err := NamedConfig("default")
	if err != nil {
		t.Fatal(err)
	}
	share, err := Run(context.Background(), program, cfg, Options{Seed: 1, MaxStates: 1, MaxResults: 4, Unverified: true, Estimate: testEstimate})
	if err != nil {
		t.Fatal(err)
	}
	if want := []SeedTrial{{Rule: "rows", Outcome: "unverified", Tilings: 6}}; !slices.Equal(share.Seeds, want) {
		t.Errorf("the share's seeds %+v, want %+v", share.Seeds, want)
	}
	merged, err := VerifyMerged(context.Background(), program, []*Result{share}, Options{Seed: 1, MaxResults: 2})
	if err != nil {
		t.Fatal(err)
	}
	if want := []SeedTrial{{Rule: "rows", Outcome: "verified", Tilings: 6}}; !slices.Equal(merged.Seeds, want) {
		t.Errorf("merged seeds %+v, want %+v", merged.Seeds, want)
	}
	if merged.Stats.FirstFused < 0 || merged.Stats.FirstFused > merged.Stats.Seconds {
		t.Errorf("merged first fused %v of %v s", merged.Stats.FirstFused, merged.Stats.Seconds)
	}
	none, err := VerifyMerged(context.Background(), program, nil, Options{Seed: 1, MaxResults: 2})
	if err != nil || none.Stats.FirstFused != -1 {
		t.Errorf("nothing merged: first fused %v, %v; want -1", none.Stats.FirstFused, err)
	}
}
