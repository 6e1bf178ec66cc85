package ffverify_test

import (
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// The programs of examples/*.py and their hand-written μGraphs, at any size.

var rep = block.Replicate

// rmsnormMatmul is examples/rmsnorm_matmul.py: O = rms_norm(X) @ W, X m×k,
// W k×n.
func rmsnormMatmul(m, k, n int) *kernel.Graph {
	g := newKG()
	x, w := g.in(m, k), g.in(k, n)
	d := g.opA(ugraph.OpRMSNorm, dim(1), x)
	return g.outputs(g.op(ugraph.OpMatmul, d, w))
}

// rmsnormMatmulFused is examples/rmsnorm_matmul_mugraph.py: grid blocks
// each own n/grid columns of W; the loop walks k in forloop steps.
func rmsnormMatmulFused(m, k, n, grid, forloop int) *kernel.Graph {
	g := newKG()
	x, w := g.in(m, k), g.in(k, n)
	b := newBG(block.Dim3{grid, 1, 1}, forloop, 64)
	tx := b.in(g.shape(x), rep, 1)
	tw := b.in(g.shape(w), block.Map{1, -1, -1}, 0)
	acc := b.accum(b.op(ugraph.OpMatmul, tx, tw), ugraph.AccumNone)
	rms := b.accum(tx, ugraph.AccumRMS)
	b.out(b.op(ugraph.OpDiv, acc, rms), block.Map{1, -1, -1})
	return g.outputs(g.custom(b, x, w)[0])
}

// gatedMLP is examples/gated_mlp.py: O = silu(X @ W1) * (X @ W2).
func gatedMLP(m, k, n int) *kernel.Graph {
	g := newKG()
	x, w1, w2 := g.in(m, k), g.in(k, n), g.in(k, n)
	o1, o2 := g.op(ugraph.OpMatmul, x, w1), g.op(ugraph.OpMatmul, x, w2)
	return g.outputs(g.op(ugraph.OpMul, g.op(ugraph.OpSilu, o1), o2))
}

// gatedMLPFused is examples/gated_mlp_mugraph.py.
func gatedMLPFused(m, k, n, grid, forloop int) *kernel.Graph {
	g := newKG()
	x, w1, w2 := g.in(m, k), g.in(k, n), g.in(k, n)
	b := newBG(block.Dim3{grid, 1, 1}, forloop, 64)
	tx := b.in(g.shape(x), rep, 1)
	tw1 := b.in(g.shape(w1), block.Map{1, -1, -1}, 0)
	tw2 := b.in(g.shape(w2), block.Map{1, -1, -1}, 0)
	a1 := b.accum(b.op(ugraph.OpMatmul, tx, tw1), ugraph.AccumNone)
	a2 := b.accum(b.op(ugraph.OpMatmul, tx, tw2), ugraph.AccumNone)
	b.out(b.op(ugraph.OpMul, b.op(ugraph.OpSilu, a1), a2), block.Map{1, -1, -1})
	return g.outputs(g.custom(b, x, w1, w2)[0])
}

// gqa is examples/gqa.py: O = softmax(Q @ K) @ V without the max shift,
// Q batch×rows×d, K batch×d×keys, V batch×keys×d.
func gqa(batch, rows, d, keys int) *kernel.Graph {
	g := newKG()
	q, k, v := g.in(batch, rows, d), g.in(batch, d, keys), g.in(batch, keys, d)
	e := g.op(ugraph.OpExp, g.op(ugraph.OpMatmul, q, k))
	s := g.opA(ugraph.OpReduction, dim(2), e)
	return g.outputs(g.op(ugraph.OpMatmul, g.op(ugraph.OpDiv, e, s), v))
}

// gqaSplit is examples/gqa_mugraph.py: kernel 1 splits the keys over
// slices blocks (forloop steps each) and lays partial outputs and
// denominators side by side; kernel 2 (rowBlocks blocks per batch) folds
// them with sum_todimx and sum, and divides.
func gqaSplit(batch, rows, d, keys, slices, forloop, rowBlocks int) *kernel.Graph {
	g := newKG()
	q, k, v := g.in(batch, rows, d), g.in(batch, d, keys), g.in(batch, keys, d)
	b1 := newBG(block.Dim3{batch, slices, 1}, forloop, d)
	tq := b1.in(g.shape(q), block.Map{0, -1, -1}, -1)
	tk := b1.in(g.shape(k), block.Map{0, 2, -1}, 2)
	tv := b1.in(g.shape(v), block.Map{0, 1, -1}, 1)
	te := b1.op(ugraph.OpExp, b1.op(ugraph.OpMatmul, tq, tk))
	ts := b1.accum(te, ugraph.AccumSum)
	to := b1.accum(b1.op(ugraph.OpMatmul, te, tv), ugraph.AccumNone)
	b1.out(to, block.Map{0, 2, -1})
	b1.out(ts, block.Map{0, 2, -1})
	parts := g.custom(b1, q, k, v)

	b2 := newBG(block.Dim3{batch, rowBlocks, 1}, 1, d)
	top := b2.in(g.shape(parts[0]), block.Map{0, 1, -1}, -1)
	tsp := b2.in(g.shape(parts[1]), block.Map{0, 1, -1}, -1)
	tos := b2.accum(top, ugraph.AccumSumToDimx)
	tss := b2.accum(tsp, ugraph.AccumSum)
	b2.out(b2.op(ugraph.OpDiv, tos, tss), block.Map{0, 1, -1})
	return g.outputs(g.custom(b2, parts...)[0])
}

// matmulProgram is O = A @ B.
func matmulProgram(m, k, n int) *kernel.Graph {
	g := newKG()
	a, b := g.in(m, k), g.in(k, n)
	return g.outputs(g.op(ugraph.OpMatmul, a, b))
}

// matmulTiled is A @ B in one kernel: grid x splits B's (and O's)
// columns, grid y A's (and O's) rows, the loop walks k.
func matmulTiled(m, k, n int, grid block.Dim3, forloop int) *kernel.Graph {
	g := newKG()
	a, b := g.in(m, k), g.in(k, n)
	tb := newBG(grid, forloop, 1)
	ta := tb.in(g.shape(a), block.Map{-1, 0, -1}, 1)
	tbb := tb.in(g.shape(b), block.Map{1, -1, -1}, 0)
	tb.out(tb.accum(tb.op(ugraph.OpMatmul, ta, tbb), ugraph.AccumNone), block.Map{1, 0, -1})
	return g.outputs(g.custom(tb, a, b)[0])
}
