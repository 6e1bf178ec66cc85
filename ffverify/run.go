package ffverify

import (
	"slices"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/layout"
)

// run evaluates the plan's graph densely on draw tr and returns its outputs
// in order. Intermediate tensors are dropped after their last use.
func (p *plan) run(tr *trial) []*tensor {
	g := p.g
	val := make([]source, len(g.Tensors))
	for i := range g.Ops {
		if !p.live[i] {
			continue
		}
		tr.check()
		op := &g.Ops[i]
		switch op.Kind {
		case ugraph.OpInput:
			t := op.Out[0]
			val[t] = source{tr: tr, input: p.inputPos[t], shape: g.Tensors[t].Shape}
		case ugraph.OpCustomized:
			args := make([]source, len(op.In))
			for j, id := range op.In {
				args[j] = val[id]
			}
			run := p.blocks[i].run
			if tr.products != nil {
				run = tr.products.kernel(p.blocks[i], tr.used)
			}
			for r, t := range run(tr.block[i], args, tr.products, tr.check) {
				val[op.Out[r]] = source{t: t, shape: t.shape}
			}
		case ugraph.OpMatmul:
			// The right operand, a weight, is not materialised if it is an
			// input: the product computes it as it reads it.
			a := val[op.In[0]].dense()
			val[op.In[0]].t = a
			b := val[op.In[1]]
			dst := newTensor(g.Tensors[op.Out[0]].Shape)
			if ps := tr.products; ps != nil {
				x, y := ps.sourceOperand(val[op.In[0]]), ps.sourceOperand(b)
				ps.whole(dst, x, y, tr.check)
				tr.used(wholeKey{x.key, y.key})
			} else {
				mulOperands(dst, operand{t: a}, operand{t: b.t, src: b}, tr.check)
			}
			val[op.Out[0]] = source{t: dst, shape: dst.shape}
		default:
			args := make([]*tensor, 2)
			for j, id := range op.In {
				args[j] = val[id].dense()
				val[id].t = args[j] // materialised once
			}
			dst := newTensor(g.Tensors[op.Out[0]].Shape)
			apply(&tr.ops[i], dst, args[0], args[1])
			val[op.Out[0]] = source{t: dst, shape: dst.shape}
		}
		for _, id := range op.In {
			if p.lastUse[id] == i {
				val[id] = source{}
			}
		}
	}
	outs := make([]*tensor, len(g.Outputs))
	for k, id := range g.Outputs {
		outs[k] = val[id].dense()
	}
	return outs
}

// source is a device tensor as an operand: computed (t), or input k of
// draw tr, whose elements are computed where they are read. So an input
// that only tile loads and the right side of pre-defined matmuls read is
// never stored whole: for large weights that saves more time (fresh
// memory) than recomputing the hashes costs.
type source struct {
	t     *tensor
	tr    *trial
	input int
	shape ugraph.Shape
}

// dense returns the tensor, materialising an input.
func (s source) dense() *tensor {
	if s.t == nil && s.tr != nil {
		return s.tr.inputTensor(s.input, s.shape)
	}
	return s.t
}

// load fills dst with the box of its shape at offset off of s.
func (s source) load(dst *tensor, off layout.Dims) {
	if s.t != nil || s.tr.dense != nil {
		copyBox(dst, layout.Dims{}, s.dense(), off, layout.Pad(dst.shape))
		return
	}
	box, ss := layout.Pad(dst.shape), layout.Pad(s.shape).Strides()
	key := s.tr.inputs[s.input]
	d := 0
	for a := range box[0] {
		for b := range box[1] {
			for c := range box[2] {
				at := (off[0]+a)*ss[0] + (off[1]+b)*ss[1] + (off[2]+c)*ss[2] + off[3]
				fillUniform(dst.v[d:][:box[3]], key+uint64(at)*inputStride) // s.tr.input, a row at a time
				d += box[3]
			}
		}
	}
}

// run evaluates one graph-defined kernel densely: every block of the grid
// runs the for-loop, then the post-loop ops, then stores its output tiles.
// ps, when not nil, is the draw's memo of products. check is called
// before each block (trial.check).
func (bp *blockPlan) run(fns []fn, ins []source, ps *products, check func()) []*tensor {
	return bp.runOn(fns, ins, ps, ps.operands(ins), check)
}

// runOn is run with the memo's names of the kernel's operands.
func (bp *blockPlan) runOn(fns []fn, ins []source, ps *products, operands []operand, check func()) []*tensor {
	g := bp.g
	tile := make([]*tensor, len(g.Tensors))
	for i, t := range g.Tensors {
		tile[i] = newTensor(t.Shape)
	}
	outs := make([]*tensor, len(bp.outputs))
	for r, i := range bp.outputs {
		outs[r] = newTensor(g.Ops[i].Output.DShape)
	}
	sums := bp.wholeSums(operands, ps, check)
	served, skip := bp.memoised(operands, ps, sums)
	shared := bp.sharedAccums(sums, served)
	eval := func(i int) {
		op := &g.Ops[i]
		var y *tensor
		if op.In[1] != block.NoTensor {
			y = tile[op.In[1]]
		}
		apply(&fns[i], tile[op.Out], tile[op.In[0]], y)
	}
	for bz := range g.Grid[2] {
		for by := range g.Grid[1] {
			for bx := range g.Grid[0] {
				check()
				b := block.Dim3{bx, by, bz}
				need := shared.needs(b)
				for _, i := range bp.loop {
					if op := &g.Ops[i]; op.Kind == ugraph.OpForloopAccum && sums.at(i) == nil {
						clear(tile[op.Out].v)
					}
				}
				for it := range g.ForloopRange {
					for _, i := range bp.loop {
						op := &g.Ops[i]
						if sums.skips(i) {
							continue // summed whole after the loop
						}
						if need != nil && !need[i] {
							continue // feeds only sums another block made
						}
						switch op.Kind {
						case ugraph.OpInput:
							if skip[i] || it > 0 && op.Input.FMap < 0 {
								continue // read from the memo, or the same tile every iteration
							}
							ins[bp.operand[i]].load(tile[op.Out], bp.inputOffset(op, b, it))
						case ugraph.OpForloopAccum:
							if it > 0 && bp.invariant[op.In[0]] {
								continue // summed once, times the count after the loop
							}
							accumulate(tile[op.Out], tile[op.In[0]], op.Attr.Accum == ugraph.AccumRMS)
						default:
							switch {
							case it > 0 && bp.invariant[op.Out]:
								// the same tile as on iteration 0
							case served[i]:
								bp.product(tile[op.Out], operands, ps, op, b, it, check)
							case ps != nil && op.Kind == ugraph.OpMatmul && ps.tilesPay():
								ps.tiles(tile[op.Out], bp.tileName(tile, operands, ps, op.In[0], b, it), bp.tileName(tile, operands, ps, op.In[1], b, it))
							default:
								eval(i)
							}
						}
					}
				}
				shared.keepOrCopy(tile, b)
				for _, i := range bp.post {
					op := &g.Ops[i]
					switch op.Kind {
					case ugraph.OpForloopAccum:
						acc := tile[op.Out]
						if sum := sums.at(i); sum != nil {
							sum.copyTo(acc, bp, b)
							continue
						}
						n, f, times := bp.accumTerms(op), &fns[i], one
						if bp.invariant[op.In[0]] {
							times = f.consts.count(g.ForloopRange)
						}
						for j, s := range acc.v {
							acc.v[j] = f.finishAccum(op.Attr.Accum, s.mul(times), n)
						}
					case ugraph.OpOutput:
						t := tile[op.In[0]]
						copyBox(outs[bp.result(i)], bp.outputOffset(op, b), t, layout.Dims{}, layout.Pad(t.shape))
					default:
						eval(i)
					}
				}
			}
		}
	}
	return outs
}

// memoised says which matmuls of the for-loop the draw's products memo ps
// serves (served, by op), and which input ops only such matmuls, or those
// that sums skip, read (skip): both operands of a served matmul are tiles
// that input ops load.
func (bp *blockPlan) memoised(operands []operand, ps *products, sums wholeSums) (served, skip []bool) {
	g := bp.g
	served, skip = make([]bool, len(g.Ops)), make([]bool, len(g.Ops))
	if ps == nil {
		return served, skip
	}
	loaded := func(t block.TensorID) bool { return g.Ops[bp.producer[t]].Kind == ugraph.OpInput }
	for _, i := range bp.loop {
		op := &g.Ops[i]
		if sums.skips(i) && op.Kind == ugraph.OpMatmul {
			served[i] = true // read nothing
			skip[bp.producer[op.In[0]]], skip[bp.producer[op.In[1]]] = true, true
			continue
		}
		if op.Kind != ugraph.OpMatmul || g.Tensors[op.Out].PostLoop || !loaded(op.In[0]) || !loaded(op.In[1]) {
			continue
		}
		a, b := bp.producer[op.In[0]], bp.producer[op.In[1]]
		if ps.serves(operands[bp.operand[a]], g.Tensors[op.In[0]].Shape, operands[bp.operand[b]], g.Tensors[op.In[1]].Shape) {
			served[i] = true
			skip[a], skip[b] = true, true
		}
	}
	// A load that any other op reads is needed.
	for _, ops := range [][]int{bp.loop, bp.post} {
		for _, i := range ops {
			if served[i] {
				continue
			}
			for _, t := range g.Ops[i].Operands() {
				skip[bp.producer[t]] = false
			}
		}
	}
	return served, skip
}

// tileName names tile t of block b at iteration it for the memo ps: a
// loaded tile by where it comes from, another by its values.
func (bp *blockPlan) tileName(tile []*tensor, operands []operand, ps *products, t block.TensorID, b block.Dim3, it int) tileName {
	x := tile[t]
	if i := bp.producer[t]; bp.g.Ops[i].Kind == ugraph.OpInput {
		return tileName{t: x, shape: x.shape, from: operands[bp.operand[i]].key, off: bp.inputOffset(&bp.g.Ops[i], b, it)}
	}
	return tileName{t: x, shape: x.shape, print: fingerprint(x.v, ps.points)}
}

// product computes served matmul op of block b at iteration it into dst,
// from the memo ps.
func (bp *blockPlan) product(dst *tensor, operands []operand, ps *products, op *block.Op, b block.Dim3, it int, check func()) {
	a, c := &bp.g.Ops[bp.producer[op.In[0]]], &bp.g.Ops[bp.producer[op.In[1]]]
	ps.tile(dst, operands[bp.operand[bp.producer[op.In[0]]]], bp.g.Tensors[a.Out].Shape, bp.inputOffset(a, b, it),
		operands[bp.operand[bp.producer[op.In[1]]]], bp.inputOffset(c, b, it), check)
}

// accumTerms is the number of terms each element of accumulator op's result
// sums: F times the last dim of its operand (mean and rms divide by it).
func (bp *blockPlan) accumTerms(op *block.Op) int {
	return bp.g.ForloopRange * bp.g.Tensors[op.In[0]].Shape.Last()
}

// result is the position of output op i among the block graph's results.
func (bp *blockPlan) result(i int) int {
	for r, j := range bp.outputs {
		if j == i {
			return r
		}
	}
	panic("ffverify: not an output op")
}

// inputOffset is where, in its device tensor, the tile of input op lies that
// block b reads at iteration it (padded coordinates). Along a dim that grid
// axis a partitions, block b owns the b[a]-th of Grid[a] equal chunks; along
// the for-loop dim the loop walks that chunk (or the whole dim) in F tiles,
// so the tile index there is b[a]·F + it, as DESIGN §3 states.
func (bp *blockPlan) inputOffset(op *block.Op, b block.Dim3, it int) layout.Dims {
	in := op.Input
	r := in.DShape.Rank()
	var off layout.Dims
	for a, d := range in.IMap {
		if d >= 0 && bp.g.Grid[a] > 1 {
			off[layout.PadDim(d, r)] = b[a] * (in.DShape.Dim(d) / bp.g.Grid[a])
		}
	}
	if in.FMap >= 0 {
		off[layout.PadDim(in.FMap, r)] += it * bp.g.Tensors[op.Out].Shape.Dim(in.FMap)
	}
	return off
}

// outputOffset is where, in its device tensor, output op stores block b's
// tile: the blocks' tiles lie side by side, in block order, along each dim
// the output map names.
func (bp *blockPlan) outputOffset(op *block.Op, b block.Dim3) layout.Dims {
	t := bp.g.Tensors[op.In[0]].Shape
	var off layout.Dims
	for a, d := range op.Output.OMap {
		if d >= 0 && bp.g.Grid[a] > 1 {
			off[layout.PadDim(d, t.Rank())] = b[a] * t.Dim(d)
		}
	}
	return off
}

// sharedAccums are the for-loop accumulators of a block graph that sum
// alike in every block along some grid axis: the sum of squares of an
// RMSNorm+MatMul kernel's rows, which each of its 96 blocks summed anew.
// The first block of each class (its coordinates 0 along the axes the
// accumulator does not vary along) sums them, and keeps its sums; every
// other copies them, and skips the loop ops that fed only them. Blocks
// run in order of z, y, x, so the first of a class runs before the rest.
type sharedAccums struct {
	bp    *blockPlan
	ops   []int              // the accumulator ops
	kept  []map[int32][]elem // per op in ops, per class: the sums at the loop's end
	reads func(i int) bool   // whether loop op i reads its operands' tiles
	// need is loopNeeds per set of grid axes a block's coordinates are
	// not 0 along (bit a: axis a), which alone says which sums it copies.
	need [8][]bool
}

// maxKept bounds the elements the kept sums of a kernel's shared
// accumulators take (16 MiB): beyond it an accumulator is summed by
// every block, as the verifier's memory budget counts it.
const maxKept = 1 << 21

// sharedAccums finds bp's shared accumulators; none where the grid has one
// block, and never one summed whole (sums), which the loop does not sum.
// A loop op that the memo serves (served) or that sums skip reads no
// tile, so the loads that only such ops and copied sums read are skipped.
func (bp *blockPlan) sharedAccums(sums wholeSums, served []bool) *sharedAccums {
	g := bp.g
	all := uint8(0)
	for a, n := range g.Grid {
		if n > 1 {
			all |= 1 << a
		}
	}
	s := &sharedAccums{bp: bp,
		reads: func(i int) bool { return !served[i] && !sums.skips(i) }}
	kept := 0
	for _, i := range bp.loop {
		op := &g.Ops[i]
		if op.Kind != ugraph.OpForloopAccum || sums.at(i) != nil || bp.varies[op.In[0]] == all {
			continue
		}
		classes := 1
		for a, n := range g.Grid {
			if bp.varies[op.In[0]]&(1<<a) != 0 {
				classes *= n
			}
		}
		size := classes * g.Tensors[op.Out].Shape.NumElements()
		if kept+size > maxKept {
			continue
		}
		kept += size
		s.ops = append(s.ops, i)
		s.kept = append(s.kept, map[int32][]elem{})
	}
	return s
}

// first returns the first block of the class of accumulator k (in s.ops)
// that block b is in, and its index.
func (s *sharedAccums) first(k int, b block.Dim3) (block.Dim3, int32) {
	mask := s.bp.varies[s.bp.g.Ops[s.ops[k]].In[0]]
	for a := range b {
		if mask&(1<<a) == 0 {
			b[a] = 0
		}
	}
	return b, s.bp.blockIndex(b)
}

// needs returns, per op, whether block b's loop must run it; nil when b
// copies no sums (it runs every op).
func (s *sharedAccums) needs(b block.Dim3) []bool {
	if len(s.ops) == 0 {
		return nil
	}
	var at int // the axes b's coordinates are not 0 along
	for a, x := range b {
		if x != 0 {
			at |= 1 << a
		}
	}
	if s.need[at] == nil {
		var copied []int
		for k, i := range s.ops {
			if f, _ := s.first(k, b); f != b {
				copied = append(copied, i)
			}
		}
		if len(copied) == 0 {
			return nil
		}
		s.need[at] = s.bp.loopNeeds(copied, s.reads)
	}
	return s.need[at]
}

// keepOrCopy, after block b's loop, keeps the sums of each shared
// accumulator where b is the first of its class, and copies them where
// it is not.
func (s *sharedAccums) keepOrCopy(tile []*tensor, b block.Dim3) {
	for k, i := range s.ops {
		acc := tile[s.bp.g.Ops[i].Out]
		switch f, at := s.first(k, b); {
		case f == b:
			s.kept[k][at] = slices.Clone(acc.v)
		default:
			copy(acc.v, s.kept[k][at])
		}
	}
}

// loopNeeds returns, per op, whether the for-loop must run it when the
// accumulators copied are not summed: every op but those whose tiles
// only they read, where loop op i reads its operands' tiles when
// reads(i).
func (bp *blockPlan) loopNeeds(copied []int, reads func(i int) bool) []bool {
	g := bp.g
	read := make([]bool, len(g.Tensors))
	for _, i := range bp.post {
		if op := &g.Ops[i]; op.Kind != ugraph.OpForloopAccum { // an accumulator reads its operand in the loop
			for _, t := range op.Operands() {
				read[t] = true
			}
		}
	}
	need := make([]bool, len(g.Ops))
	for k := len(bp.loop) - 1; k >= 0; k-- {
		i := bp.loop[k]
		op := &g.Ops[i]
		if op.Kind == ugraph.OpForloopAccum {
			need[i] = !slices.Contains(copied, i)
		} else {
			need[i] = read[op.Out]
		}
		if need[i] && reads(i) {
			for _, t := range op.Operands() {
				read[t] = true
			}
		}
	}
	return need
}
