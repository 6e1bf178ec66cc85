package seed

import (
	"slices"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// CacheAlign is the multiple of keys a cache padded by PadCache holds: the
// attention rule's key tiles (32, 64, 128) and its splits into powers of
// two then divide it, and K's rows start on 16-byte boundaries.
const CacheAlign = 64

// PaddedCache is an attention program rewritten over a cache of more
// keys, the keys past the program's masked out: what a serving engine
// runs when it allocates its cache ahead and passes a mask.
type PaddedCache struct {
	Graph  *kernel.Graph
	Keys   int // the program's keys
	Padded int // Graph's: Keys rounded up to a multiple of CacheAlign
	// Mask: Graph adds a mask input to the scores; else a bias term of
	// the program's with a value per key (a mask already) covers the
	// keys added.
	Mask bool
}

// PadCache returns program's attention, as the attention rule takes it,
// over a cache of its keys rounded up to a multiple of CacheAlign; false
// where the rule does not take the program or its keys are a multiple
// already. The cache's tensors (K, V, and bias terms with a value per
// key) get the padded keys; where the program adds no bias to its scores,
// Graph adds a mask input to them (one value per key, −inf past the
// program's keys in use, which makes their weights exp(−inf) = 0).
//
// Keys that split poorly (2047 = 23 · 89: tiles of 89 keys, whose rows
// in K are not 16-byte aligned; a prime count: no split at all) make the
// rule's kernels slow or its premise useless; the same attention over an
// aligned cache is what a user can write instead. The driver estimates
// both and says so (a note on the part) when the padded one is faster.
func PadCache(program *kernel.Graph) (PaddedCache, bool) {
	p, ok := analyze(program)
	if !ok {
		return PaddedCache{}, false
	}
	plan, ok := planAttention(p)
	if !ok || plan.n%CacheAlign == 0 {
		return PaddedCache{}, false
	}
	pc := PaddedCache{Keys: plan.n, Padded: (plan.n + CacheAlign - 1) / CacheAlign * CacheAlign, Mask: true}
	// Inputs with a dim of keys: K's last, V's rows, a bias term's last
	// (a mask the program has already: it masks the keys added).
	keysDim := map[kernel.TensorID]int{plan.inputs[1]: -1, plan.inputs[2]: -2}
	for _, t := range plan.biasInputs {
		if p.shape(t).Last() == plan.n {
			keysDim[t] = -1
			pc.Mask = false
		}
	}
	g := kernel.New()
	ids := make([]kernel.TensorID, len(program.Tensors))
	for i, op := range program.Ops {
		if op.Kind == ugraph.OpInput {
			t := program.Tensors[op.Out[0]]
			shape := t.Shape
			if d, ok := keysDim[op.Out[0]]; ok && shape.Dim(shape.Rank()+d) == plan.n {
				dims := shape.Dims()
				dims[len(dims)+d] = pc.Padded
				shape = ugraph.MustShape(dims...)
			}
			id, err := g.AddInput(shape, t.DType)
			if err != nil {
				return PaddedCache{}, false
			}
			ids[op.Out[0]] = id
			continue
		}
		in := make([]kernel.TensorID, len(op.In))
		for j, t := range op.In {
			in[j] = ids[t]
		}
		id, err := g.Add(op.Kind, op.Attr, in...)
		if err != nil {
			return PaddedCache{}, false
		}
		ids[op.Out[0]] = id
		if i == plan.scores && pc.Mask {
			// The mask, added to Q·K: one value per key, broadcast over
			// the batch and the rows.
			s := g.Tensors[id].Shape
			dims := slices.Repeat([]int{1}, s.Rank())
			dims[len(dims)-1] = pc.Padded
			mask, err := g.AddInput(ugraph.MustShape(dims...), g.Tensors[id].DType)
			if err == nil {
				ids[op.Out[0]], err = g.Add(ugraph.OpAdd, ugraph.Attr{}, id, mask)
			}
			if err != nil {
				return PaddedCache{}, false
			}
		}
	}
	for _, t := range program.Outputs {
		if g.MarkOutput(ids[t]) != nil {
			return PaddedCache{}, false
		}
	}
	pc.Graph = g
	return pc, true
}
