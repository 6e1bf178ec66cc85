package thread

import (
	"fmt"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
)

// liveness marks the ops an output op depends on (the others are dead, as
// in the interpreter) and records, for each tile, its producer and its
// uses by live ops.
func (d *deriver) liveness() error {
	g := d.g
	d.live = make([]bool, len(g.Ops))
	d.prod = make([]int, len(g.Tensors))
	d.uses = make([][]int, len(g.Tensors))
	needed := make([]bool, len(g.Tensors))
	outputs := 0
	for i := len(g.Ops) - 1; i >= 0; i-- {
		op := &g.Ops[i]
		if op.Kind == ugraph.OpOutput {
			outputs++
		} else if !needed[op.Out] {
			continue
		}
		d.live[i] = true
		for _, t := range op.Operands() {
			needed[t] = true
		}
	}
	if outputs == 0 {
		return ErrNoOutput
	}
	for i := range g.Ops {
		op := &g.Ops[i]
		if op.Out != block.NoTensor {
			d.prod[op.Out] = i
		}
		if !d.live[i] {
			continue
		}
		for _, t := range op.Operands() {
			d.uses[t] = append(d.uses[t], i)
		}
	}
	for i := range d.out.Ops {
		d.out.Ops[i] = Op{Role: RoleDead, Group: -1}
	}
	return nil
}

// lower decides which matmuls run on tensor cores and how their output is
// split among the warps.
func (d *deriver) lower() error {
	for i := range d.g.Ops {
		op := &d.g.Ops[i]
		if d.live[i] && op.Kind == ugraph.OpMatmul {
			p := d.mmaPlan(op)
			if p != nil {
				d.fold(i, p)
			}
			d.out.Ops[i].MMA = p
		}
	}
	return nil
}

// fold folds into tensor-core matmul i, planned as p, the product that
// makes its B operand, where that product is X ⊙ By as Scaled describes
// (both input tiles, X of A's dtype) and matmul i its only reader: the
// product's op becomes dead and its operands matmul i's.
func (d *deriver) fold(i int, p *MMA) {
	g := d.g
	b := g.Ops[i].In[1]
	m := d.prod[b]
	if g.Ops[m].Kind != ugraph.OpMul || len(d.uses[b]) != 1 {
		return
	}
	bs := g.Tensors[b].Shape
	r := bs.Rank()
	isInput := func(t block.TensorID) bool { return g.Ops[d.prod[t]].Kind == ugraph.OpInput }
	for _, xy := range [][2]block.TensorID{{g.Ops[m].In[0], g.Ops[m].In[1]}, {g.Ops[m].In[1], g.Ops[m].In[0]}} {
		x, by := xy[0], xy[1]
		xs, ys := g.Tensors[x].Shape, g.Tensors[by].Shape
		switch {
		case x == by || !isInput(x) || !isInput(by) || g.Tensors[x].DType != g.Tensors[g.Ops[i].In[0]].DType:
			continue
		case xs.Rank() != r || ys.Rank() != r || xs.Dim(r-2) != bs.Dim(r-2) || xs.Dim(r-1) != bs.Dim(r-1):
			continue
		case ys.Dim(r-2) != 1 || ys.Dim(r-1) != 1 || xs.NumElements() != bs.Dim(r-2)*bs.Dim(r-1):
			continue
		}
		p.Scaled = &Scaled{Mul: m, X: x, By: by, Rows: p.M}
		p.M, p.Batch = p.Batch*p.M, 1
		p.MTiles = ceilDiv(p.M, p.Instr.M)
		d.split(p)
		d.live[m] = false
		d.uses[b] = nil
		for _, t := range []block.TensorID{x, by} {
			for k, u := range d.uses[t] {
				if u == m {
					d.uses[t][k] = i
				}
			}
		}
		return
	}
}

// mmaPlan returns the tensor-core plan of a matmul, or nil when it must run
// as SIMT loops: operands that are not 16-bit floats (a for-loop
// accumulator's tile is kept in fp32, whatever its dtype), an arch without
// an MMA instruction, or K or N not a multiple of the instruction's.
func (d *deriver) mmaPlan(op *block.Op) *MMA {
	a, b := d.g.Tensors[op.In[0]], d.g.Tensors[op.In[1]]
	if a.DType != ugraph.Float16 && a.DType != ugraph.BFloat16 {
		return nil
	}
	for _, t := range op.In[:2] {
		if d.g.Ops[d.prod[t]].Kind == ugraph.OpForloopAccum {
			return nil
		}
	}
	r := a.Shape.Rank()
	m, k, n := a.Shape.Dim(r-2), a.Shape.Dim(r-1), b.Shape.Dim(r-1)
	in := d.arch.MMA
	if in.M == 0 || k%in.K != 0 || n%in.N != 0 {
		return nil
	}
	batch := a.Shape.NumElements() / (m * k)
	p := &MMA{Instr: in, Batch: batch, M: m, N: n, K: k, MTiles: batch * ceilDiv(m, in.M), NTiles: n / in.N}
	d.split(p)
	return p
}

// split divides p's output tiles among the block's warps.
func (d *deriver) split(p *MMA) {
	p.WarpsM, p.WarpsN = warpGrid(p.MTiles, p.NTiles, d.out.Warps())
	p.MPer = ceilDiv(p.MTiles, p.WarpsM)
	p.NPer = p.NTiles / p.WarpsN
	p.ChunkM, p.ChunkN = streamChunk(p.MPer, p.NPer)
}

// warpGrid splits the output tiles among the warps: WarpsN must divide the
// n-tiles, and WarpsM·WarpsN warps at most take part (7 n-tiles of a
// 56-column tile go to 7 of 8 warps, the eighth idle, rather than all to
// one). It minimizes the work of the busiest warp per 16-wide step of K:
// two units per mma.sync and one per ldmatrix.x4 (one per m-tile for A,
// one per pair of n-tiles for B). Ties go to fewer warps along N.
func warpGrid(mTiles, nTiles, warps int) (wm, wn int) {
	best := -1
	for cn := 1; cn <= warps; cn++ {
		if nTiles%cn != 0 {
			continue
		}
		cm := warps / cn
		mPer, nPer := ceilDiv(mTiles, cm), nTiles/cn
		cost := 2*mPer*nPer + mPer + ceilDiv(nPer, 2)
		if best < 0 || cost < best {
			best, wm, wn = cost, cm, cn
		}
	}
	return wm, wn
}

// streamFloats bounds the fp32 registers of one chunk of a streaming mma
// epilogue (the tile is computed a chunk at a time and written out).
const streamFloats = 32

// streamChunk picks the chunk of a streaming epilogue: the largest
// divisors of the warp's tile counts that keep a chunk within streamFloats,
// n-tiles first (so that chunks split the warp's tile exactly).
func streamChunk(mPer, nPer int) (cm, cn int) {
	cn = largestDivisor(nPer, streamFloats/4)
	cm = largestDivisor(mPer, max(1, streamFloats/(4*cn)))
	return cm, cn
}

// largestDivisor is the largest divisor of n that is at most limit (>= 1).
func largestDivisor(n, limit int) int {
	for d := min(n, limit); d > 1; d-- {
		if n%d == 0 {
			return d
		}
	}
	return 1
}

// fuse forms the groups: each live op that is neither an input nor an
// output either joins the group of one of its operands (see the package
// comment for when) or heads a new group; each output op joins the group
// that produces its tile.
func (d *deriver) fuse() error {
	g, out := d.g, d.out
	groupOf := make([]int, len(g.Tensors)) // the group producing each tile; -1 for inputs
	for i := range groupOf {
		groupOf[i] = -1
	}
	for i := range g.Ops {
		if !d.live[i] {
			continue
		}
		op := &g.Ops[i]
		switch {
		case op.Kind == ugraph.OpInput:
			out.Ops[i] = Op{Role: RoleLoad, Group: -1}
		case op.Kind == ugraph.OpOutput:
			gi := groupOf[op.In[0]]
			if gi < 0 {
				return fmt.Errorf("output op %d stores an input tile", i)
			}
			out.Groups[gi].Stores = append(out.Groups[gi].Stores, i)
			out.Ops[i].Role, out.Ops[i].Group = RoleStore, gi
		default:
			gi := -1
			if x, ok := d.chainOperand(i, groupOf); ok {
				gi = groupOf[x]
				gr := &out.Groups[gi]
				gr.Chain = append(gr.Chain, i)
				gr.Result = op.Out
				if op.Kind == ugraph.OpForloopAccum {
					gr.Accum = i
				}
				out.Ops[i].Role = RoleFused
			} else {
				gi = len(out.Groups)
				accum := -1
				if op.Kind == ugraph.OpForloopAccum {
					accum = i
				}
				out.Groups = append(out.Groups, Group{Head: i, Accum: accum, Result: op.Out, Loop: -1, Post: -1, RowWarps: 1, RowVector: 1, StoreVector: 1, Scratch: -1})
				out.Ops[i].Role = RoleHead
			}
			out.Ops[i].Group = gi
			groupOf[op.Out] = gi
		}
	}
	// The chain ops up to the group's accumulator run in the loop (a head
	// that is an accumulator puts its whole chain after the loop).
	for gi := range out.Groups {
		gr := &out.Groups[gi]
		if !out.InLoop(gr.Head) {
			continue
		}
		gr.InLoop = len(gr.Chain)
		for k, c := range gr.Chain {
			if c == gr.Accum {
				gr.InLoop = k + 1
			}
		}
		if gr.Accum == gr.Head {
			gr.InLoop = 0
		}
	}
	return nil
}

// passThrough marks the groups whose accumulator passes the one
// iteration's values on (Group.Through): a loop of one iteration, an
// accumulator of kind none in the chain of a head that is not an mma, the
// group's result read by its stores alone, and the ops after the
// accumulator reading nothing else (a block graph combines a post-loop
// value only with others, which the loop does not have yet).
func (d *deriver) passThrough() error {
	g, out := d.g, d.out
	if g.ForloopRange != 1 {
		return nil
	}
	for gi := range out.Groups {
		gr := &out.Groups[gi]
		if gr.Accum < 0 || gr.Accum == gr.Head || g.Ops[gr.Accum].Attr.Accum != ugraph.AccumNone ||
			out.Ops[gr.Head].MMA != nil || !out.InLoop(gr.Head) || d.readByNonStore(gr.Result) {
			continue
		}
		through := true
		cur := g.Ops[gr.Accum].Out
		for _, c := range gr.Chain[gr.InLoop:] {
			for _, x := range g.Ops[c].Operands() {
				through = through && x == cur
			}
			cur = g.Ops[c].Out
		}
		if through {
			gr.Through, gr.InLoop = true, len(gr.Chain)
		}
	}
	return nil
}

// chainOperand returns the operand of op i whose group op i joins, if any.
func (d *deriver) chainOperand(i int, groupOf []int) (block.TensorID, bool) {
	op := &d.g.Ops[i]
	switch {
	case op.Kind.Info().Class == ugraph.ClassUnary:
	case op.Kind.Info().Class == ugraph.ClassBinary:
	case op.Kind == ugraph.OpForloopAccum && op.Attr.Accum == ugraph.AccumNone:
	default:
		return 0, false
	}
	outShape := d.g.Tensors[op.Out].Shape
	for _, x := range op.Operands() {
		gi := groupOf[x]
		switch {
		case gi < 0: // an input tile
		case len(d.uses[x]) != 1: // read twice, by this op or others
		case d.g.Tensors[x].Shape != outShape: // broadcast along the chain
		case op.Kind == ugraph.OpForloopAccum && d.out.Groups[gi].Accum >= 0:
		default:
			return x, true
		}
	}
	return 0, false
}
