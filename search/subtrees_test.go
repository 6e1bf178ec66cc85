package search_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/mirage-go/mirage/cost"
	"github.com/mirage-go/mirage/search"
	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// TestSubtreesShareASearch splits searches among processes that never
// talk, as sharding does: each run explores every N-th subtree of the
// list, and VerifyMerged of the N runs must give the one run's candidates, in
// its order. It also checks that the list is the same each time it is
// computed.
func TestSubtreesShareASearch(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: each program is searched 1 + 3 times")
	}
	arch := target.MustLookup("sm_90")
	for _, name := range []string{"gated_mlp.py"} { // the driver's shard tests take the others
		t.Run(name, func(t *testing.T) {
			p := loadProgram(t, name)
			cfg, err := search.NamedConfig(p.Superopt.Config)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Restrict(search.Restrictions(p.Superopt.Lists))
			cfg.Arch = arch
			ctx := context.Background()
			subtrees, err := search.Subtrees(ctx, p.Graph, cfg)
			if err != nil {
				t.Fatal(err)
			}
			again, err := search.Subtrees(ctx, p.Graph, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(subtrees, again) {
				t.Fatal("two calls of Subtrees listed different subtrees")
			}
			if len(subtrees) < 3 {
				t.Fatalf("%d subtrees: too few to share", len(subtrees))
			}
			const results = 6
			opts := func(only []int, unverified bool, keep int) search.Options {
				return search.Options{Workers: 2, Seed: 1, MaxResults: keep, Subtrees: only, Unverified: unverified,
					Estimate: func(g *kernel.Graph) (search.Estimate, error) {
						e, err := cost.EstimateGraph(g, arch)
						return search.Estimate{Micros: e.Micros, Bytes: e.Bytes, Flops: e.Flops}, err
					}}
			}
			run := func(o search.Options) *search.Result {
				res, err := search.Run(ctx, p.Graph, cfg, o)
				if err != nil {
					t.Fatal(err)
				}
				if res.Stats.Stopped != "" {
					t.Fatalf("stopped early: %s", res.Stats.Stopped)
				}
				return res
			}
			whole := run(opts(nil, false, results))
			if len(whole.Candidates) < 2 || whole.Candidates[0].Customized == 0 {
				t.Fatal("the one run found no fused candidate: nothing to compare")
			}
			// Each slice keeps its best results+2, unverified: VerifyMerged
			// gives the one run's answer; each keeping 1 does not settle it.
			for _, keep := range []int{results + 2, 1} {
				const n = 3
				var parts []*search.Result
				var states int64
				for i := range n {
					only := []int{}
					for j := i; j < len(subtrees); j += n {
						only = append(only, j)
					}
					r := run(opts(only, true, keep))
					if r.Stats.Verified != 0 || len(r.Candidates) > keep {
						t.Fatalf("an unverified run verified %d and kept %d candidates", r.Stats.Verified, len(r.Candidates))
					}
					states += r.Stats.States
					parts = append(parts, r)
				}
				merged, err := search.VerifyMerged(ctx, p.Graph, parts, opts(nil, false, results))
				if keep == 1 {
					if !errors.Is(err, search.ErrUnsettled) {
						t.Errorf("slices keeping 1 candidate each: %v, want ErrUnsettled", err)
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				// Ended before verifying: no answer, and it says so.
				done, cancel := context.WithCancel(ctx)
				cancel()
				if r, err := search.VerifyMerged(done, p.Graph, parts, opts(nil, false, results)); err != nil || len(r.Candidates) != 0 || r.Stats.Stopped != "interrupted" {
					t.Errorf("VerifyMerged, cancelled: %d candidates, stopped %q, %v; want none, interrupted", len(r.Candidates), r.Stats.Stopped, err)
				}
				if got, want := hashes(merged), hashes(whole); !slices.Equal(got, want) {
					t.Errorf("merged candidates %x, one run's %x", got, want)
				}
				if states < whole.Stats.States {
					t.Errorf("the slices created %d states between them, the one run %d: some subtree was skipped", states, whole.Stats.States)
				}
				if merged.Stats.States != states {
					t.Errorf("merged stats count %d states, the slices %d", merged.Stats.States, states)
				}
			}
		})
	}
}

func hashes(r *search.Result) []uint64 {
	var hs []uint64
	for _, c := range r.Candidates {
		hs = append(hs, c.Hash)
	}
	return hs
}

func TestSubtreesOutOfOrder(t *testing.T) {
	p := loadProgram(t, "rmsnorm_matmul.py")
	cfg, err := search.NamedConfig(p.Superopt.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := search.Run(context.Background(), p.Graph, cfg, search.Options{Subtrees: []int{3, 1}}); err == nil {
		t.Error("Run accepted subtrees out of order")
	}
}
