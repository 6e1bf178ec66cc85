package ffverify

import (
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/layout"
)

// A graph-defined kernel that multiplies two loaded tiles and sums the
// products over a for-loop that walks the whole k dim of both operands
// (a fused matmul: X·W with K cut into F tiles, the grid splitting rows
// or columns only) holds, after the loop, a box of the kernel operands'
// whole product. The draw's memo keeps that product under the same name
// as a pre-defined matmul of the same operands (wholeKey): the program's
// own X·W computed it, and every candidate that sums it so, whatever its
// grid and loop, copies its box rather than multiplying tile by tile. The
// values are exact in the model, so the copy is the sum.

// wholeSum is how an accumulator op of a block graph is summed whole:
// product is the whole product, a and b the input ops that load the
// matmul's operands.
type wholeSum struct {
	product *tensor
	a, b    int
}

// wholeSums are a block graph's accumulators summed whole, by op, and the
// ops the for-loop leaves out for them (the accumulators and their
// matmuls). The zero value sums none.
type wholeSums struct {
	sums    []wholeSum // by op; product nil where the op is not summed whole
	skipped []bool     // by op
}

// at returns op i's wholeSum, nil when it is not summed whole.
func (s wholeSums) at(i int) *wholeSum {
	if s.sums == nil || s.sums[i].product == nil {
		return nil
	}
	return &s.sums[i]
}

// skips reports whether op i is left out of the for-loop.
func (s wholeSums) skips(i int) bool { return s.skipped != nil && s.skipped[i] }

// copyTo writes into acc the accumulator's value in block b: the box of
// the whole product at the rows of b's A tiles and the columns of its B
// tiles.
func (s wholeSum) copyTo(acc *tensor, bp *blockPlan, b block.Dim3) {
	offA, offB := bp.inputOffset(&bp.g.Ops[s.a], b, 0), bp.inputOffset(&bp.g.Ops[s.b], b, 0)
	copyBox(acc, layout.Dims{}, s.product, layout.Dims{offA[0], offA[1], offA[2], offB[3]}, layout.Pad(acc.shape))
}

// wholeSums returns how bp's accumulators may be summed whole from the
// memo ps: an AccumNone accumulator whose operand is
// read by nothing else, a matmul of two loaded tiles whose loads walk
// the whole k dim of the kernel's operands, block by block at the same
// batch offsets.
func (bp *blockPlan) wholeSums(operands []operand, ps *products, check func()) wholeSums {
	var sums wholeSums
	if ps == nil {
		return sums
	}
	g := bp.g
	readers := make([]int, len(g.Tensors))
	for _, ops := range [][]int{bp.loop, bp.post} {
		for _, i := range ops {
			for _, t := range g.Ops[i].Operands() {
				readers[t]++
			}
		}
	}
	for _, i := range bp.loop {
		acc := &g.Ops[i]
		if acc.Kind != ugraph.OpForloopAccum || acc.Attr.Accum != ugraph.AccumNone || readers[acc.In[0]] != 2 {
			continue // (an accumulator's operand is read in both phases)
		}
		m := bp.producer[acc.In[0]]
		mm := &g.Ops[m]
		if mm.Kind != ugraph.OpMatmul || g.Tensors[mm.Out].PostLoop || g.Tensors[acc.Out].Shape != g.Tensors[mm.Out].Shape {
			continue
		}
		a, b := bp.producer[mm.In[0]], bp.producer[mm.In[1]]
		if g.Ops[a].Kind != ugraph.OpInput || g.Ops[b].Kind != ugraph.OpInput ||
			!bp.walksWholeK(&g.Ops[a], 1) || !bp.walksWholeK(&g.Ops[b], 2) || !bp.sameBatches(&g.Ops[a], &g.Ops[b]) {
			continue
		}
		x, y := operands[bp.operand[a]], operands[bp.operand[b]]
		if x.key.shape.Rank() != y.key.shape.Rank() {
			continue
		}
		product := ps.wholeProduct(x, y, check)
		if product == nil {
			continue
		}
		if sums.sums == nil {
			sums = wholeSums{make([]wholeSum, len(g.Ops)), make([]bool, len(g.Ops))}
		}
		sums.sums[i] = wholeSum{product: product, a: a, b: b}
		sums.skipped[i], sums.skipped[m] = true, true
		ps.summed.Add(1)
	}
	return sums
}

// walksWholeK reports whether input op's tiles, over the for-loop, cover
// the whole of its device tensor's dim rank-fromEnd (matmul's k: the
// last of A, the one before the last of B) once: the grid does not split
// it, and the loop walks it or the tile holds all of it.
func (bp *blockPlan) walksWholeK(op *block.Op, fromEnd int) bool {
	dev := op.Input.DShape
	d := dev.Rank() - fromEnd
	kt := bp.g.Tensors[op.Out].Shape.Dim(d)
	if f := bp.g.ForloopRange; f > 1 {
		return op.Input.FMap == d && kt*f == dev.Dim(d)
	}
	return kt == dev.Dim(d)
}

// sameBatches reports whether the input ops a and b read, in every block,
// the same batch entries of device tensors with the same batch dims: then
// their tiles' product is a box of the batched whole product.
func (bp *blockPlan) sameBatches(a, b *block.Op) bool {
	da, db := a.Input.DShape, b.Input.DShape
	if da.Rank() != db.Rank() {
		return false
	}
	for d := range da.Rank() - 2 {
		if da.Dim(d) != db.Dim(d) {
			return false
		}
	}
	if da.Rank() <= 2 {
		return true
	}
	g := bp.g.Grid
	for bz := range g[2] {
		for by := range g[1] {
			for bx := range g[0] {
				blk := block.Dim3{bx, by, bz}
				oa, ob := bp.inputOffset(a, blk, 0), bp.inputOffset(b, blk, 0)
				if oa[0] != ob[0] || oa[1] != ob[1] {
					return false
				}
			}
		}
	}
	return true
}
