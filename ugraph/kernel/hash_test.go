package kernel_test

import (
	"testing"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// rmsnormKernel builds the fused RMSNorm+MatMul graph with the given grid,
// for-loop range and rms accumulator kind.
func rmsnormKernel(grid, f int, acc ugraph.Accum) *kernel.Graph {
	g := kernel.New()
	x := must(g.AddInput(ugraph.MustShape(16, 4096), ugraph.Float16))
	w := must(g.AddInput(ugraph.MustShape(4096, 6144), ugraph.Float16))
	b := must(block.New(block.Dim3{grid, 1, 1}, block.Dim3{128, 1, 1}, f, 64))
	tx := must(b.AddInput(g.Tensors[x].Shape, ugraph.Float16, block.Replicate, 1))
	tw := must(b.AddInput(g.Tensors[w].Shape, ugraph.Float16, block.Map{1, -1, -1}, 0))
	m := must(b.Add(ugraph.OpForloopAccum, ugraph.Attr{}, must(b.Add(ugraph.OpMatmul, ugraph.Attr{}, tx, tw))))
	r := must(b.Add(ugraph.OpForloopAccum, ugraph.Attr{Accum: acc}, tx))
	if err := b.AddOutput(must(b.Add(ugraph.OpDiv, ugraph.Attr{}, m, r)), block.Map{1, -1, -1}); err != nil {
		panic(err)
	}
	o := must(g.Customized([]kernel.TensorID{x, w}, b))
	if err := g.MarkOutput(o[0]); err != nil {
		panic(err)
	}
	return g
}

func TestHash(t *testing.T) {
	base := kernel.Hash(rmsnormKernel(96, 64, ugraph.AccumRMS))
	if again := kernel.Hash(rmsnormKernel(96, 64, ugraph.AccumRMS)); again != base {
		t.Errorf("equal graphs hash differently: %x vs %x", base, again)
	}
	if c := kernel.Hash(rmsnormKernel(96, 64, ugraph.AccumRMS).Clone()); c != base {
		t.Errorf("a clone hashes differently")
	}
	for name, g := range map[string]*kernel.Graph{
		"grid":        rmsnormKernel(48, 64, ugraph.AccumRMS),
		"forloop":     rmsnormKernel(96, 16, ugraph.AccumRMS),
		"accumulator": rmsnormKernel(96, 64, ugraph.AccumMean),
	} {
		if kernel.Hash(g) == base {
			t.Errorf("changing the %s leaves the hash unchanged", name)
		}
	}
}
