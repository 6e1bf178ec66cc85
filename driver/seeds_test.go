package driver

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
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
// candidate, says both.
func TestWhyNotNamesTheEnumerationAndTheSeeds(t *testing.T) {
	program := loadSource(t, "bmm", `
Q = g.new_input(dims=(2, 16, 64), dtype=mi.float16)
K = g.new_input(dims=(2, 64, 128), dtype=mi.float16)
g.mark_output(g.exp(g.matmul(Q, K)))`)
	res, err := Run(context.Background(), program, Options{MaxStates: 1, TimeLimit: time.Minute, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Parts {
		if p.Fused {
			t.Fatalf("part %v fused in one state", p.Kinds)
		}
		for _, want := range []string{"no candidate complete", "state budget", "no seed rule applies"} {
			if !strings.Contains(p.WhyNot, want) {
				t.Errorf("why not %q, want it to say %q", p.WhyNot, want)
			}
		}
	}
}
