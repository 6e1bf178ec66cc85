package search

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/ffverify"
	"github.com/mirage-go/mirage/frontend"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// sumProgram is exp(A) + B, with the add's operands in either order, or
// exp(A) - B.
func sumProgram(t *testing.T, kind ugraph.OpKind, swapped bool) *kernel.Graph {
	t.Helper()
	g := kernel.New()
	check := func(id kernel.TensorID, err error) kernel.TensorID {
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	a := check(g.AddInput(ugraph.MustShape(8, 64), ugraph.Float16))
	b := check(g.AddInput(ugraph.MustShape(8, 64), ugraph.Float16))
	x, y := check(g.Add(ugraph.OpExp, ugraph.Attr{}, a)), b
	if swapped {
		x, y = y, x
	}
	if err := g.MarkOutput(check(g.Add(kind, ugraph.Attr{}, x, y))); err != nil {
		t.Fatal(err)
	}
	return g
}

// distinct keeps one of twins that tie in the ranking (the same graph up
// to the order of its ops and operands): the one a seed rule built,
// whichever ranks first by hash and verified or not, so that a shard's
// unverified search keeps what one process's does; graphs that compute
// something else, or rank apart, stay.
func TestDistinctDropsTwins(t *testing.T) {
	for _, seedFirst := range []bool{false, true} {
		cand := func(g *kernel.Graph, us float64) *Candidate {
			return &Candidate{Graph: g, Hash: kernel.Hash(g), Kernels: 2, Estimate: Estimate{Micros: us, Bytes: 4096}}
		}
		a, b := cand(sumProgram(t, ugraph.OpAdd, false), 5), cand(sumProgram(t, ugraph.OpAdd, true), 5)
		seedTwin, enumerated := a, b
		if (a.Hash < b.Hash) != seedFirst {
			seedTwin, enumerated = b, a
		}
		seedTwin.Seed = "rows"
		other := cand(sumProgram(t, ugraph.OpSub, false), 5)
		slower := cand(sumProgram(t, ugraph.OpAdd, true), 6)
		cands := []*Candidate{enumerated, seedTwin, other, slower}
		slices.SortFunc(cands, compareCandidates)
		got := distinct(cands)
		if len(got) != 3 || !slices.Contains(got, seedTwin) || !slices.Contains(got, other) || got[2] != slower {
			t.Errorf("seed first %v: distinct kept %d candidates (the seed's twin %v, the sub %v), want the seed's twin, the sub and the slower one last",
				seedFirst, len(got), slices.Contains(got, seedTwin), slices.Contains(got, other))
		}
	}
}

// A search's answers hold no twins: the seed rules' gated MLP kernels are
// ones the enumeration builds too, in another op order.
func TestAnswersHaveNoTwins(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "examples", "gated_mlp.py"))
	if err != nil {
		t.Fatal(err)
	}
	small := strings.NewReplacer("(8, 4096)", "(8, 256)", "(4096, 4096)", "(256, 512)").Replace(string(src))
	p, err := frontend.Load("gated_mlp.py", []byte(small), frontend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := writtenConfig(t, p)
	res, err := Run(context.Background(), p.Graph, cfg, Options{Workers: 2, MaxResults: 0, Estimate: testEstimate})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint64]int{}
	seeded := 0
	for i, c := range res.Candidates {
		h := kernel.CanonicalHash(c.Graph)
		if j, ok := seen[h]; ok {
			t.Errorf("candidates %d and %d are one graph in two op orders", j, i)
		}
		seen[h] = i
		if c.Seed != "" {
			seeded++
		}
	}
	if seeded == 0 {
		t.Errorf("none of %d candidates is a seed's: the case tests no twin of one", len(res.Candidates))
	}
}

// Of twins, a seed verified before the ranking is the one kept, whatever
// their hashes' order: it stays an answer however the ranked verification
// ends (here, before it begins).
func TestDistinctKeepsTheVerifiedSeed(t *testing.T) {
	for _, seedFirst := range []bool{false, true} {
		a := &Candidate{Graph: sumProgram(t, ugraph.OpAdd, false), Kernels: 2, Estimate: Estimate{Micros: 5, Bytes: 4096}}
		b := &Candidate{Graph: sumProgram(t, ugraph.OpAdd, true), Kernels: 2, Estimate: Estimate{Micros: 5, Bytes: 4096}}
		a.Hash, b.Hash = kernel.Hash(a.Graph), kernel.Hash(b.Graph)
		seed := a
		if (a.Hash < b.Hash) != seedFirst {
			seed = b
		}
		seed.Seed, seed.checked = "rows", true
		cands := []*Candidate{a, b}
		slices.SortFunc(cands, compareCandidates)
		got := distinct(cands)
		if len(got) != 1 || got[0] != seed {
			t.Fatalf("seed first %v: distinct kept %d, the seed's twin: %v", seedFirst, len(got), len(got) == 1 && got[0] != seed)
		}
		v, err := ffverify.New(sumProgram(t, ugraph.OpAdd, false), ffverify.Options{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		vr := verification{ctx: ctx, verifier: v, workers: 1, limit: 2}
		if best, err := vr.run(got, len(got)); err != nil || len(best) != 1 {
			t.Errorf("seed first %v: the ended verification returned %d, %v; want the verified seed", seedFirst, len(best), err)
		}
	}
}

// RankedFused passes over a fused candidate the verifier rejected: the
// part would otherwise report a wrong graph's estimate as its best fused
// one. (The candidates are labelled fused; the verifier sees only their
// graphs.)
func TestRankedFusedSkipsTheRejected(t *testing.T) {
	cand := func(g *kernel.Graph, us float64, customized int) *Candidate {
		return &Candidate{Graph: g, Hash: kernel.Hash(g), Kernels: 2, Customized: customized, Estimate: Estimate{Micros: us, Bytes: 4096}}
	}
	wrong := cand(sumProgram(t, ugraph.OpSub, false), 4, 1)
	ops := cand(sumProgram(t, ugraph.OpAdd, false), 5, 0)
	right := cand(sumProgram(t, ugraph.OpAdd, true), 6, 1)
	cands := []*Candidate{wrong, ops, right}
	v, err := ffverify.New(sumProgram(t, ugraph.OpAdd, false), ffverify.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	vr := verification{ctx: t.Context(), verifier: v, workers: 1, limit: 1}
	best, err := vr.run(cands, len(cands))
	if err != nil || len(best) != 1 || best[0] != ops || vr.rejected != 1 {
		t.Fatalf("kept %v (%v), %d rejected; want the ops alone, the wrong one rejected", best, err, vr.rejected)
	}
	if got := rankedFused(cands); got != 6 {
		t.Errorf("RankedFused %v, want 6: the fused candidate after the rejected one", got)
	}
}
