package ffverify_test

import (
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// Small programs and μGraphs of the catalogue.

var (
	xAxis = block.Map{0, -1, -1}
	xCols = block.Map{1, -1, -1}
)

// rmFusedWholeRowRMS is rmsnormMatmulFused whose rms accumulator reads the
// whole row of X every iteration (a second input op without fmap): the rms
// of F copies of a row is the rms of the row.
func rmFusedWholeRowRMS() *kernel.Graph {
	g := newKG()
	x, w := g.in(4, 32), g.in(32, 48)
	b := newBG(block.Dim3{3, 1, 1}, 4, 64)
	tx := b.in(g.shape(x), rep, 1)
	tw := b.in(g.shape(w), xCols, 0)
	tall := b.in(g.shape(x), rep, -1)
	acc := b.accum(b.op(ugraph.OpMatmul, tx, tw), ugraph.AccumNone)
	rms := b.accum(tall, ugraph.AccumRMS)
	b.out(b.op(ugraph.OpDiv, acc, rms), xCols)
	return g.outputs(g.custom(b, x, w, x)[0])
}

func rmsnormOnly() *kernel.Graph {
	g := newKG()
	return g.outputs(g.opA(ugraph.OpRMSNorm, dim(1), g.in(4, 12)))
}

// rmsnormDecomposed is x / sqrt(mul_scalar(Σx², scale)): rms_norm when scale
// is 1/n.
func rmsnormDecomposed(scale float64) func() *kernel.Graph {
	return func() *kernel.Graph {
		g := newKG()
		x := g.in(4, 12)
		ss := g.opA(ugraph.OpReduction, dim(1), g.op(ugraph.OpSquare, x))
		r := g.op(ugraph.OpSqrt, g.opA(ugraph.OpMulScalar, ugraph.Attr{Scalars: [2]float64{scale}}, ss))
		return g.outputs(g.op(ugraph.OpDiv, x, r))
	}
}

// gqaWalkPartials makes gqaSplit's second kernel fold the partial outputs
// with its for-loop (4 steps of 16 columns, no-reduction accumulator)
// instead of sum_todimx: the same strided sum.
func gqaWalkPartials() edits {
	e := launch(1, func(b *block.Graph) { b.ForloopRange = 4 })
	e.blockOp = func(k, i int, op *block.Op) {
		if k != 1 {
			return
		}
		switch i {
		case 0, 1:
			op.Input.FMap = 2
		case 2:
			op.Attr.Accum = ugraph.AccumNone
		}
	}
	return e
}

// divSum is (a/c)+(b/c), or (a+b)/c when distributed; c broadcasts.
func divSum(distributed bool) func() *kernel.Graph {
	return func() *kernel.Graph {
		g := newKG()
		a, b, c := g.in(4, 8), g.in(4, 8), g.in(4, 1)
		if distributed {
			return g.outputs(g.op(ugraph.OpDiv, g.op(ugraph.OpAdd, a, b), c))
		}
		return g.outputs(g.op(ugraph.OpAdd, g.op(ugraph.OpDiv, a, c), g.op(ugraph.OpDiv, b, c)))
	}
}

// matmulSum is A@(B+C), or A@B + A@C when distributed.
func matmulSum(distributed bool) func() *kernel.Graph {
	return func() *kernel.Graph {
		g := newKG()
		a, b, c := g.in(4, 8), g.in(8, 6), g.in(8, 6)
		if distributed {
			return g.outputs(g.op(ugraph.OpAdd, g.op(ugraph.OpMatmul, a, b), g.op(ugraph.OpMatmul, a, c)))
		}
		return g.outputs(g.op(ugraph.OpMatmul, a, g.op(ugraph.OpAdd, b, c)))
	}
}

// rowSum sums the rows of X 8×16.
func rowSum() *kernel.Graph {
	g := newKG()
	return g.outputs(g.opA(ugraph.OpReduction, dim(1), g.in(8, 16)))
}

// rowSumPartials sums each quarter of a row in one kernel (grid 2×4, the
// quarters side by side) and the four partial sums in a kernel reduction.
func rowSumPartials() *kernel.Graph {
	g := newKG()
	x := g.in(8, 16)
	b := newBG(block.Dim3{2, 4, 1}, 1, 1)
	t := b.in(g.shape(x), block.Map{0, 1, -1}, -1)
	b.out(b.accum(t, ugraph.AccumSum), block.Map{0, 1, -1})
	parts := g.custom(b, x)[0]
	return g.outputs(g.opA(ugraph.OpReduction, dim(1), parts))
}

// rowSumKernel sums the rows of X 8×16 in one kernel of two blocks with the
// given fmap, forloop range and accumulator.
func rowSumKernel(fmap, forloop int, acc ugraph.Accum) func() *kernel.Graph {
	return func() *kernel.Graph {
		g := newKG()
		x := g.in(8, 16)
		b := newBG(block.Dim3{2, 1, 1}, forloop, 1)
		t := b.in(g.shape(x), xAxis, fmap)
		b.out(b.accum(t, acc), xAxis)
		return g.outputs(g.custom(b, x)[0])
	}
}

// splitK is A@B (4×64 by 64×16) with the inner dim split over four blocks,
// whose partial products lie side by side, folded by sum_todimx.
func splitK() *kernel.Graph {
	g := newKG()
	a, bm := g.in(4, 64), g.in(64, 16)
	b1 := newBG(block.Dim3{4, 1, 1}, 1, 16)
	ta := b1.in(g.shape(a), xCols, -1)
	tb := b1.in(g.shape(bm), xAxis, -1)
	b1.out(b1.accum(b1.op(ugraph.OpMatmul, ta, tb), ugraph.AccumNone), xCols)
	parts := g.custom(b1, a, bm)[0]
	b2 := newBG(block.Dim3{1, 1, 1}, 1, 16)
	b2.out(b2.accum(b2.in(g.shape(parts), rep, -1), ugraph.AccumSumToDimx), rep)
	return g.outputs(g.custom(b2, parts)[0])
}

// meanProgram is mul_scalar(Σ_row X, scale), X 4×6.
func meanProgram(scale float64) func() *kernel.Graph {
	return func() *kernel.Graph {
		g := newKG()
		s := g.opA(ugraph.OpReduction, dim(1), g.in(4, 6))
		return g.outputs(g.opA(ugraph.OpMulScalar, ugraph.Attr{Scalars: [2]float64{scale}}, s))
	}
}

// meanAccum is the row mean of X 4×6 by the mean accumulator, walking the
// row in two steps.
func meanAccum() *kernel.Graph {
	g := newKG()
	x := g.in(4, 6)
	b := newBG(block.Dim3{1, 1, 1}, 2, 1)
	b.out(b.accum(b.in(g.shape(x), rep, 1), ugraph.AccumMean), rep)
	return g.outputs(g.custom(b, x)[0])
}

// concatProgram is A1@B1 + A2@B2.
func concatProgram() *kernel.Graph {
	g := newKG()
	a1, a2, b1, b2 := g.in(4, 8), g.in(4, 8), g.in(8, 8), g.in(8, 8)
	return g.outputs(g.op(ugraph.OpAdd, g.op(ugraph.OpMatmul, a1, b1), g.op(ugraph.OpMatmul, a2, b2)))
}

// concatFused is [A1 A2] @ [B1; B2] in one kernel (B2 first when swapped).
func concatFused(swapped bool) func() *kernel.Graph {
	return func() *kernel.Graph {
		g := newKG()
		a1, a2, b1, b2 := g.in(4, 8), g.in(4, 8), g.in(8, 8), g.in(8, 8)
		b := newBG(block.Dim3{1, 1, 1}, 1, 1)
		ta1, ta2 := b.in(g.shape(a1), rep, -1), b.in(g.shape(a2), rep, -1)
		tb1, tb2 := b.in(g.shape(b1), rep, -1), b.in(g.shape(b2), rep, -1)
		if swapped {
			tb1, tb2 = tb2, tb1
		}
		ta := b.opA(ugraph.OpConcat, dim(1), ta1, ta2)
		tb := b.opA(ugraph.OpConcat, dim(0), tb1, tb2)
		b.out(b.accum(b.op(ugraph.OpMatmul, ta, tb), ugraph.AccumNone), rep)
		return g.outputs(g.custom(b, a1, a2, b1, b2)[0])
	}
}

// twoOutputs has outputs A@B and A@C; permuted marks them the other way
// round, duplicated computes A@B for both.
func twoOutputs(permuted, duplicated bool) func() *kernel.Graph {
	return func() *kernel.Graph {
		g := newKG()
		a, b, c := g.in(4, 8), g.in(8, 8), g.in(8, 8)
		if duplicated {
			c = b
		}
		ab, ac := g.op(ugraph.OpMatmul, a, b), g.op(ugraph.OpMatmul, a, c)
		if permuted {
			return g.outputs(ac, ab)
		}
		return g.outputs(ab, ac)
	}
}

// gatedMLPSiluInLoop is gatedMLPFused with silu applied to each step's
// partial product instead of the accumulated one.
func gatedMLPSiluInLoop() *kernel.Graph {
	g := newKG()
	x, w1, w2 := g.in(4, 32), g.in(32, 32), g.in(32, 32)
	b := newBG(block.Dim3{2, 1, 1}, 4, 64)
	tx := b.in(g.shape(x), rep, 1)
	tw1, tw2 := b.in(g.shape(w1), xCols, 0), b.in(g.shape(w2), xCols, 0)
	a1 := b.accum(b.op(ugraph.OpSilu, b.op(ugraph.OpMatmul, tx, tw1)), ugraph.AccumNone)
	a2 := b.accum(b.op(ugraph.OpMatmul, tx, tw2), ugraph.AccumNone)
	b.out(b.op(ugraph.OpMul, a1, a2), xCols)
	return g.outputs(g.custom(b, x, w1, w2)[0])
}

// expThenSum is Σ_row exp(X), X 4×16: softmax's denominator.
func expThenSum() *kernel.Graph {
	g := newKG()
	return g.outputs(g.opA(ugraph.OpReduction, dim(1), g.op(ugraph.OpExp, g.in(4, 16))))
}

func sumThenExp() *kernel.Graph {
	g := newKG()
	return g.outputs(g.op(ugraph.OpExp, g.opA(ugraph.OpReduction, dim(1), g.in(4, 16))))
}

// blockSumThenExp is a kernel that accumulates the row sums and takes exp
// after the loop.
func blockSumThenExp() *kernel.Graph {
	g := newKG()
	x := g.in(4, 16)
	b := newBG(block.Dim3{2, 1, 1}, 2, 1)
	t := b.in(g.shape(x), xAxis, 1)
	b.out(b.op(ugraph.OpExp, b.accum(t, ugraph.AccumSum)), xAxis)
	return g.outputs(g.custom(b, x)[0])
}

// unaryProgram applies one unary op to X 4×8.
func unaryProgram(k ugraph.OpKind, a ugraph.Attr) func() *kernel.Graph {
	return func() *kernel.Graph {
		g := newKG()
		return g.outputs(g.opA(k, a, g.in(4, 8)))
	}
}

// powProgram is pow(A, B).
func powProgram() *kernel.Graph {
	g := newKG()
	a, b := g.in(4, 8), g.in(4, 8)
	return g.outputs(g.op(ugraph.OpPow, a, b))
}

// splitKToDimx is splitK whose second kernel folds the partial products
// with a block-level reduction_to_dimx instead of the sum_todimx
// accumulator.
func splitKToDimx() *kernel.Graph {
	g := newKG()
	a, bm := g.in(4, 64), g.in(64, 16)
	b1 := newBG(block.Dim3{4, 1, 1}, 1, 16)
	ta := b1.in(g.shape(a), xCols, -1)
	tb := b1.in(g.shape(bm), xAxis, -1)
	b1.out(b1.accum(b1.op(ugraph.OpMatmul, ta, tb), ugraph.AccumNone), xCols)
	parts := g.custom(b1, a, bm)[0]
	b2 := newBG(block.Dim3{1, 1, 1}, 1, 16)
	folded := b2.opA(ugraph.OpReductionToDimx, dim(1), b2.in(g.shape(parts), rep, -1))
	b2.out(b2.accum(folded, ugraph.AccumNone), rep)
	return g.outputs(g.custom(b2, parts)[0])
}

// blockRMSNorm is rms_norm of X 4×12 in one kernel of two blocks; with
// halves, the blocks split the columns instead of the rows, so each
// normalizes half rows.
func blockRMSNorm(halves bool) func() *kernel.Graph {
	return func() *kernel.Graph {
		g := newKG()
		x := g.in(4, 12)
		m := xAxis
		if halves {
			m = xCols
		}
		b := newBG(block.Dim3{2, 1, 1}, 1, 1)
		t := b.in(g.shape(x), m, -1)
		b.out(b.accum(b.op(ugraph.OpRMSNorm, t), ugraph.AccumNone), m)
		return g.outputs(g.custom(b, x)[0])
	}
}

// blockRowSum sums the rows of X 8×16 with a block-level reduction.
func blockRowSum() *kernel.Graph {
	g := newKG()
	x := g.in(8, 16)
	b := newBG(block.Dim3{2, 1, 1}, 1, 1)
	t := b.in(g.shape(x), xAxis, -1)
	b.out(b.accum(b.opA(ugraph.OpReduction, dim(1), t), ugraph.AccumNone), xAxis)
	return g.outputs(g.custom(b, x)[0])
}

// expMatmul is exp(X)·W for X 4×8 and W 8×12; fused, every block computes
// the same exp(X) tile and multiplies it by its own columns of W (grid 3,
// no loop), so tiles of equal values meet tiles loaded from elsewhere.
func expMatmul(fused bool) func() *kernel.Graph {
	return func() *kernel.Graph {
		g := newKG()
		x, w := g.in(4, 8), g.in(8, 12)
		if !fused {
			return g.outputs(g.op(ugraph.OpMatmul, g.op(ugraph.OpExp, x), w))
		}
		b := newBG(block.Dim3{3, 1, 1}, 1, 4)
		tx := b.in(g.shape(x), block.Replicate, -1)
		tw := b.in(g.shape(w), xCols, -1)
		b.out(b.accum(b.op(ugraph.OpMatmul, b.op(ugraph.OpExp, tx), tw), ugraph.AccumNone), xCols)
		return g.outputs(g.custom(b, x, w)[0])
	}
}
