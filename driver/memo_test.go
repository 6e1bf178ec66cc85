package driver

import (
	"context"
	"strings"
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
	// llama_mlp with W2 declared first, so that the first part's inputs
	// (X, W1, W3) are not the program's first three.
	var w2 string
	var rest []string
	for _, line := range strings.Split(strings.TrimPrefix(programs["llama_mlp"], "\n"), "\n") {
		if strings.HasPrefix(line, "W2 = ") {
			w2 = line
		} else {
			rest = append(rest, line)
		}
	}
	if w2 == "" {
		t.Fatal("llama_mlp declares no W2")
	}
	program := loadSource(t, "llama_mlp_w2_first", w2+"\n"+strings.Join(rest, "\n"))
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
