package search

import (
	"slices"
	"testing"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

func TestDimClasses(t *testing.T) {
	type dim struct {
		t kernel.TensorID
		d int
	}
	tests := []struct {
		program, mugraph string
		same, differ     [][2]dim // pairs of dims of the μGraph's tensors
	}{
		// X[16,4096] (t0), W[4096,6144] (t1), O (t2): X's columns are W's rows.
		{"rmsnorm_matmul.py", "rmsnorm_matmul_mugraph.py",
			[][2]dim{{{0, 1}, {1, 0}}, {{1, 1}, {2, 1}}, {{0, 0}, {2, 0}}},
			[][2]dim{{{0, 0}, {0, 1}}, {{1, 0}, {1, 1}}, {{0, 1}, {2, 1}}}},
		// Q[2,256,64] (t0), K[2,64,4096] (t1), V[2,4096,64] (t2), partials
		// Opart (t3), Spart (t4): batch everywhere, keys of K and V, queries
		// of Q and the partials.
		{"gqa.py", "gqa_mugraph.py",
			[][2]dim{{{0, 0}, {1, 0}}, {{1, 0}, {2, 0}}, {{1, 2}, {2, 1}}, {{0, 2}, {1, 1}}, {{3, 0}, {0, 0}}, {{4, 1}, {0, 1}}, {{3, 1}, {4, 1}}},
			[][2]dim{{{1, 2}, {0, 1}}, {{2, 2}, {1, 2}}, {{0, 0}, {0, 1}}}},
	}
	for _, tt := range tests {
		p, m := load(t, tt.program), load(t, tt.mugraph)
		cls := classify(p.Graph, m.Graph).of
		for _, pr := range tt.same {
			if cls[pr[0].t][pr[0].d] != cls[pr[1].t][pr[1].d] {
				t.Errorf("%s: t%d dim %d and t%d dim %d should correspond", tt.mugraph, pr[0].t, pr[0].d, pr[1].t, pr[1].d)
			}
		}
		for _, pr := range tt.differ {
			if cls[pr[0].t][pr[0].d] == cls[pr[1].t][pr[1].d] {
				t.Errorf("%s: t%d dim %d and t%d dim %d should not correspond", tt.mugraph, pr[0].t, pr[0].d, pr[1].t, pr[1].d)
			}
		}
	}
}

// TestConfigsCoverHandWritten checks that the configurations the generator
// opens include, for every graph-defined kernel of the hand-written
// μGraphs, its exact grid, for-loop range and maps.
func TestConfigsCoverHandWritten(t *testing.T) {
	for _, ex := range []string{"rmsnorm_matmul", "gated_mlp", "gqa", "../bench/workloads/qknorm_gqa"} {
		p, m := load(t, ex+".py"), load(t, ex+"_mugraph.py")
		cfg, err := NamedConfig(p.Superopt.Config)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Complete(p.Graph)
		s := &searcher{cfg: cfg, program: p.Graph}
		g := kernel.New()
		for i, op := range m.Graph.Ops {
			last := i == len(m.Graph.Ops)-1
			switch op.Kind {
			case ugraph.OpInput:
				t0 := m.Graph.Tensors[op.Out[0]]
				g.AddInput(t0.Shape, t0.DType)
			case ugraph.OpCustomized:
				b := op.Block
				want := blockConfig{grid: b.Grid, threads: b.Threads, forloop: b.ForloopRange}
				for _, in := range b.InputOps() {
					want.imaps = append(want.imaps, in.Input.IMap)
					want.fmaps = append(want.fmaps, in.Input.FMap)
				}
				found := false
				for _, c := range s.blockConfigs(g, op.In, last) {
					if c.grid == want.grid && c.threads == want.threads && c.forloop == want.forloop &&
						slices.Equal(c.imaps, want.imaps) && slices.Equal(c.fmaps, want.fmaps) {
						found = true
						// Its output maps are among those the classes allow.
						var open []block.TensorID
						for _, out := range b.OutputOps() {
							open = append(open, out.In[0])
						}
						dims := c.classes.outputDims(b, c.split, open)
						for i, out := range b.OutputOps() {
							if !omapFits(out.Output.OMap, b.Grid, dims[i]) {
								t.Errorf("%s: output map %v is not among those allowed (%v)", ex, out.Output.OMap, dims[i])
							}
						}
					}
				}
				if !found {
					t.Errorf("%s: the configurations miss %+v", ex, want)
				}
				// And its ops are within the configuration's limits.
				nops, nout := 0, 0
				for _, bop := range b.Ops {
					switch bop.Kind {
					case ugraph.OpOutput:
						nout++
					case ugraph.OpInput:
						nops++
					default:
						nops++
						allowed := func(o OpChoice) bool {
							return o.Kind == bop.Kind && (o.Kind != ugraph.OpForloopAccum || o.Attr.Accum == bop.Attr.Accum)
						}
						if !slices.ContainsFunc(cfg.BlockOps, allowed) {
							t.Errorf("%s: block op %v (%v) is not in the configuration", ex, bop.Kind, bop.Attr.Accum)
						}
					}
				}
				if nops > cfg.MaxBlockOps || len(op.In) > cfg.MaxBlockInputs || nout > cfg.MaxBlockOutputs {
					t.Errorf("%s: a graph-defined kernel of %d ops, %d inputs, %d outputs exceeds the limits %d, %d, %d",
						ex, nops, len(op.In), nout, cfg.MaxBlockOps, cfg.MaxBlockInputs, cfg.MaxBlockOutputs)
				}
				if _, err := g.Customized(op.In, b); err != nil {
					t.Fatal(err)
				}
			}
		}
		if len(m.Graph.Ops) > cfg.MaxKernelOps {
			t.Errorf("%s: %d kernel ops, the limit is %d", ex, len(m.Graph.Ops), cfg.MaxKernelOps)
		}
	}
}
