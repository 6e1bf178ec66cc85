package seed

import (
	"slices"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// CacheAligns are the multiples of keys a cache padded by PadCache may
// hold, smallest first. 64: the attention rule's key tiles (32, 64, 128)
// and its splits into powers of two then divide it, and K's rows start on
// 16-byte boundaries. 256 and 1024: more splits divide them evenly (3000
// keys padded to 3008 = 64·47 split no better than 3000, the model found;
// 3072 = 3·1024 did, 25.1 µs against 32.9).
var CacheAligns = []int{64, 256, 1024}

// PaddedCache is an attention program rewritten over a cache of more
// keys, the keys past the program's masked out: what a serving engine
// runs when it allocates its cache ahead and passes a mask.
type PaddedCache struct {
	Graph  *kernel.Graph
	Keys   int // the program's keys
	Padded int // Graph's: Keys rounded up to a multiple of PadCache's align
	// Mask: Graph adds a mask input to the scores; else a bias term of
	// the program's with a value per key (a mask already) covers the
	// keys added.
	Mask bool
}

// PadCache returns program's attention, as the attention rule takes it,
// over a cache of its keys rounded up to a multiple of align (one of
// CacheAligns); false where the rule does not take the program or its keys
// are a multiple already. The cache's tensors (K, V, and bias terms with a value per
// key) get the padded keys; where the program adds no bias to its scores,
// Graph adds a mask input to them (one value per key, −inf past the
// program's keys in use, which makes their weights exp(−inf) = 0).
//
// Keys that split poorly (2047 = 23 · 89: tiles of 89 keys, whose rows
// in K are not 16-byte aligned; a prime count: no split at all) make the
// rule's kernels slow or its premise useless; the same attention over an
// aligned cache is what a user can write instead. The driver estimates
// both and says so (a note on the part) when the padded one is faster.
func PadCache(program *kernel.Graph, align int) (PaddedCache, bool) {
	p, ok := analyze(program)
	if !ok {
		return PaddedCache{}, false
	}
	plan, ok := planAttention(p)
	if !ok || align <= 0 || plan.n%align == 0 {
		return PaddedCache{}, false
	}
	pc := PaddedCache{Keys: plan.n, Padded: (plan.n + align - 1) / align * align, Mask: true}
	// Inputs with a dim of keys: K's last, V's rows, a bias term's last
	// (a mask the program has already: it masks the keys added).
	keysDim := map[kernel.TensorID]int{plan.inputs[1]: -1, plan.inputs[2]: -2}
	for _, t := range plan.biasInputs {
		if p.shape(t).Last() == plan.n {
			keysDim[t] = -1
			pc.Mask = false
		}
	}
	if !masksThrough(program, plan, keysDim) {
		return PaddedCache{}, false
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

// masksThrough reports whether −inf on the padded keys, added to the
// scores (PadCache's mask) or given by a bias input with a value per key
// (padded, in keysDim), makes their weights exp(−inf) = 0 through f: each
// such bias is an operand of an add before the exp; before it, f adds,
// subtracts from the scores and scales by a positive factor (−inf stays
// −inf); after it, f multiplies or divides the weights by what is finite
// (0 stays 0). Found by review: a 0/1 mask multiplied after the exp, a
// penalty subtracted, or scores clamped before it gave NaN or weights
// e⁻⁵ on the padded keys, where the note told the user to pass −inf.
func masksThrough(g *kernel.Graph, plan *attentionPlan, keysDim map[kernel.TensorID]int) bool {
	padded := func(t kernel.TensorID) bool {
		_, ok := keysDim[t]
		return ok && t != plan.inputs[1] && t != plan.inputs[2]
	}
	cur, exped := g.Ops[plan.scores].Out[0], false
	added := map[kernel.TensorID]bool{}
	for _, i := range plan.elem {
		op := &g.Ops[i]
		other := kernel.TensorID(-1)
		if op.Kind.Info().Class == ugraph.ClassBinary {
			if other = op.In[1]; other == cur {
				other = op.In[0]
			}
		}
		switch k := op.Kind; {
		case !exped && k == ugraph.OpExp:
			exped = true
		case !exped && k == ugraph.OpAdd:
			added[other] = true
		case !exped && k == ugraph.OpSub && op.In[0] == cur && !padded(other):
		case k == ugraph.OpMulScalar && op.Attr.Scalars[0] > 0:
		case exped && (k == ugraph.OpMul || k == ugraph.OpDiv && op.In[0] == cur) && !padded(other):
		default:
			return false
		}
		cur = op.Out[0]
	}
	for t := range keysDim {
		if padded(t) && !added[t] {
			return false // a per-key term that is no additive mask
		}
	}
	return exped
}
