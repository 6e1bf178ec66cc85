package interp

import (
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/layout"
)

// blockRun evaluates one graph-defined kernel (DESIGN §3): every block of the
// grid runs the for-loop, then the post-loop ops, then stores its output
// tiles. Blocks run one after another; each owns disjoint parts of the
// outputs, so the order does not matter.
type blockRun struct {
	g    *block.Graph
	dev  []*Tensor // per op: the device tensor an input op reads or an output op writes
	tile []*Tensor // per tile of g: its buffer, reused by every block and iteration

	// The live ops (those an output op depends on), split by phase.
	// Accumulators are in both: they add in the loop and finish after it.
	loop, post []int
}

// runCustomized evaluates g on the device tensors ins (the k-th input op
// reads ins[k]) and returns one device tensor per output op, in order.
func runCustomized(g *block.Graph, ins []*Tensor) []*Tensor {
	r := &blockRun{g: g, dev: make([]*Tensor, len(g.Ops)), tile: make([]*Tensor, len(g.Tensors))}
	for i, t := range g.Tensors {
		r.tile[i] = NewTensor(t.Shape)
	}
	var outs []*Tensor
	for i := range g.Ops {
		switch op := &g.Ops[i]; op.Kind {
		case ugraph.OpInput:
			r.dev[i] = ins[0]
			ins = ins[1:]
		case ugraph.OpOutput:
			r.dev[i] = NewTensor(op.Output.DShape)
			outs = append(outs, r.dev[i])
		}
	}
	r.schedule()
	for bz := range g.Grid[2] {
		for by := range g.Grid[1] {
			for bx := range g.Grid[0] {
				r.runBlock(block.Dim3{bx, by, bz})
			}
		}
	}
	return outs
}

// schedule fills loop and post with the live ops in op order. Dead ops would
// be harmless but cost time (and may compute NaN nobody reads).
func (r *blockRun) schedule() {
	ops := r.g.Ops
	live := make([]bool, len(r.g.Tensors))
	need := make([]bool, len(ops))
	for i := len(ops) - 1; i >= 0; i-- {
		op := &ops[i]
		if op.Kind != ugraph.OpOutput && !live[op.Out] {
			continue
		}
		need[i] = true
		for _, t := range op.Operands() {
			live[t] = true
		}
	}
	for i := range ops {
		if !need[i] {
			continue
		}
		switch op := &ops[i]; {
		case op.Kind == ugraph.OpForloopAccum:
			r.loop = append(r.loop, i)
			r.post = append(r.post, i)
		case op.Kind == ugraph.OpOutput || r.g.Tensors[op.Out].PostLoop:
			r.post = append(r.post, i)
		default:
			r.loop = append(r.loop, i)
		}
	}
}

// runBlock runs block b: it clears the accumulators, runs the in-loop ops F
// times, then the post-loop ops once, output ops storing into the device
// tensors.
func (r *blockRun) runBlock(b block.Dim3) {
	g := r.g
	for _, i := range r.loop {
		if op := &g.Ops[i]; op.Kind == ugraph.OpForloopAccum {
			clear(r.tile[op.Out].Data)
		}
	}
	for it := range g.ForloopRange {
		for _, i := range r.loop {
			op := &g.Ops[i]
			switch op.Kind {
			case ugraph.OpInput:
				if it > 0 && op.Input.FMap < 0 {
					continue // the same tile every iteration: loaded once
				}
				r.load(op, r.dev[i], b, it)
			case ugraph.OpForloopAccum:
				accumulate(r.tile[op.Out], r.tile[op.In[0]], op.Attr.Accum == ugraph.AccumRMS)
			default:
				r.compute(op)
			}
		}
	}
	for _, i := range r.post {
		op := &g.Ops[i]
		switch op.Kind {
		case ugraph.OpForloopAccum:
			x := g.Tensors[op.In[0]].Shape
			finishAccum(op.Attr.Accum, r.tile[op.Out], g.ForloopRange*x.Last())
		case ugraph.OpOutput:
			r.store(op, r.dev[i], b)
		default:
			r.compute(op)
		}
	}
}

// compute runs a stateless op on the block's tiles.
func (r *blockRun) compute(op *block.Op) {
	var y *Tensor
	if op.In[1] != block.NoTensor {
		y = r.tile[op.In[1]]
	}
	eval(op.Kind, op.Attr, r.tile[op.Out], r.tile[op.In[0]], y)
}

// load copies into its tile the part of device tensor dev that block b reads
// at iteration it. Along a dim that grid axis a partitions, block b owns the
// b[a]-th of Grid[a] equal chunks; along the for-loop dim the loop walks
// (that chunk, if the dim is also partitioned, or the whole dim) in F tiles.
// So along a dim both partitioned and walked the tile index is b[a]·F + it,
// as DESIGN §3 states.
func (r *blockRun) load(op *block.Op, dev *Tensor, b block.Dim3, it int) {
	t := r.tile[op.Out]
	in := op.Input
	var off [ugraph.MaxRank]int // per dim of the tensor, not padded
	for a, d := range in.IMap {
		if d >= 0 && r.g.Grid[a] > 1 {
			off[d] = b[a] * (in.DShape.Dim(d) / r.g.Grid[a])
		}
	}
	if in.FMap >= 0 {
		off[in.FMap] += it * t.Shape.Dim(in.FMap)
	}
	copyBox(t, layout.Dims{}, dev, layout.PadIndex(off[:t.Shape.Rank()]), layout.Pad(t.Shape))
}

// store copies block b's post-loop tile into device tensor dev: the blocks'
// tiles lie side by side, in block order, along each dim the output map
// names.
func (r *blockRun) store(op *block.Op, dev *Tensor, b block.Dim3) {
	t := r.tile[op.In[0]]
	var off [ugraph.MaxRank]int
	for a, d := range op.Output.OMap {
		if d >= 0 && r.g.Grid[a] > 1 {
			off[d] = b[a] * t.Shape.Dim(d)
		}
	}
	copyBox(dev, layout.PadIndex(off[:t.Shape.Rank()]), t, layout.Dims{}, layout.Pad(t.Shape))
}
