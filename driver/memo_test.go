package driver

import (
	"context"
	"testing"
	"time"

	"github.com/mirage-go/mirage/ffverify"
	"github.com/mirage-go/mirage/search"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// The whole program's verifier takes the products that its parts'
// verifiers computed, rather than computing them again (at a prefill's
// shapes, most of a run): every verifier of the run names its inputs by the
// program's tensors, and they share the run's memo. A part whose result
// comes from the cache is checked by its verifier too, so the second run
// shares as the first did.
func TestWholeCheckTakesThePartsProducts(t *testing.T) {
	defer func(c func(*run, *kernel.Graph, []Part, []*outcome) (bool, error)) { wholeCheck = c }(wholeCheck)
	// W2 comes first, so that the first part's inputs (X, W1, W3) are not
	// the program's first three.
	program := loadSource(t, "llama_mlp_w2_first", `
W2 = g.new_input(dims=(128, 64), dtype=mi.float16)
X = g.new_input(dims=(8, 64), dtype=mi.float16)
W1 = g.new_input(dims=(64, 128), dtype=mi.float16)
W3 = g.new_input(dims=(64, 128), dtype=mi.float16)
N = g.rms_norm(X, normalized_shape=(64,))
M = g.mul(g.silu(g.matmul(N, W1)), g.matmul(N, W3))
g.mark_output(g.add(g.matmul(M, W2), X))`)
	cache := &search.Cache{Dir: t.TempDir()}
	for _, pass := range []string{"searched", "cached"} {
		var checks int
		var before, after ffverify.MemoStats
		var parts [][]int
		wholeCheck = func(d *run, g *kernel.Graph, ps []Part, outs []*outcome) (bool, error) {
			if checks++; checks == 1 {
				for _, p := range ps {
					parts = append(parts, p.Ops)
				}
				before = d.memo.Stats()
				if _, err := d.wholeVerifier(); err != nil {
					t.Error(err)
				}
				after = d.memo.Stats()
			}
			return (*run).verify(d, g, ps, outs)
		}
		res, err := Run(context.Background(), program, Options{TimeLimit: 60 * time.Second, Workers: 2, Seed: 1, Cache: cache})
		if err != nil {
			t.Fatal(err)
		}
		// The parts: rms_norm, matmul (N·W1), silu, matmul (N·W3), mul;
		// then matmul (M·W2), add.
		if len(parts) != 2 || len(parts[0]) != 5 {
			t.Fatalf("%s: parts %v, want the MLP's two", pass, parts)
		}
		if cached := res.Parts[0].Cached; cached != (pass == "cached") {
			t.Errorf("%s: the first part's result cached: %v", pass, cached)
		}
		// On each of the two draws the program takes N·W1 and N·W3 from
		// the first part's verifier and computes M·W2, whose left operand
		// the second part's verifier drew at random.
		got := ffverify.MemoStats{Computed: after.Computed - before.Computed, Taken: after.Taken - before.Taken}
		if want := (ffverify.MemoStats{Computed: 2, Taken: 4}); got != want {
			t.Errorf("%s: the whole program's verifier: %+v, want %+v", pass, got, want)
		}
		if res.Candidates[0].Unfused || res.Candidates[0].ByParts {
			t.Errorf("%s: best answer %+v, want a fused one verified whole", pass, res.Candidates[0])
		}
	}
}
