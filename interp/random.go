package interp

import (
	"math/rand/v2"

	"github.com/mirage-go/mirage/ugraph/kernel"
)

// RandomInputs returns one tensor per input of g, in order, with elements
// drawn uniformly from [-1, 1). The same graph and seed always give the
// same tensors (math/rand/v2's PCG is a fixed algorithm).
//
// Why [-1, 1): both signs exercise the ops that treat them differently
// (relu, clamp, silu, gelu), magnitudes at most 1 keep products, exp of dot
// products and sums of thousands of terms far from overflow, and zero mean
// keeps long sums small. The price is that sqrt, log, pow and rms-based ops
// applied to values that can be negative yield NaN; Compare counts NaN in
// the same position on both sides as agreement. Use RandomInputsIn with a
// positive range for programs that need positive inputs.
func RandomInputs(g *kernel.Graph, seed int64) []*Tensor {
	return RandomInputsIn(g, seed, -1, 1)
}

// RandomInputsIn is RandomInputs with elements drawn uniformly from [lo, hi).
// Tensors are filled in input order, each row-major, from one stream.
func RandomInputsIn(g *kernel.Graph, seed int64, lo, hi float64) []*Tensor {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6d697261676521)) // "mirage!"
	ids := g.Inputs()
	ins := make([]*Tensor, len(ids))
	for k, id := range ids {
		t := NewTensor(g.Tensors[id].Shape)
		for i := range t.Data {
			t.Data[i] = lo + (hi-lo)*rng.Float64()
		}
		ins[k] = t
	}
	return ins
}
