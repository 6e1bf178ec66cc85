package ffverify_test

import (
	"testing"

	"github.com/mirage-go/mirage/ffverify"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// matmulBlocks is A @ B in one kernel of grid (2, 2): x splits B's
// columns, y A's rows, the loop walks k in forloop steps; the output map
// places the blocks' tiles as given (block.Map{1, 0, -1} is right).
func matmulBlocks(m, k, n, forloop int, omap block.Map) *kernel.Graph {
	g := newKG()
	a, b := g.in(m, k), g.in(k, n)
	tb := newBG(block.Dim3{2, 2, 1}, forloop, 1)
	ta := tb.in(g.shape(a), block.Map{-1, 0, -1}, 1)
	tbb := tb.in(g.shape(b), block.Map{1, -1, -1}, 0)
	tb.out(tb.accum(tb.op(ugraph.OpMatmul, ta, tbb), ugraph.AccumNone), omap)
	return g.outputs(g.custom(tb, a, b)[0])
}

// batchedMatmul is A @ B of batch 2, unfused or in one kernel whose grid
// x takes a batch entry of both operands and y a half of B's columns.
func batchedMatmul(fused bool) *kernel.Graph {
	g := newKG()
	a, b := g.in(2, 8, 16), g.in(2, 16, 12)
	if !fused {
		return g.outputs(g.op(ugraph.OpMatmul, a, b))
	}
	tb := newBG(block.Dim3{2, 2, 1}, 4, 1)
	ta := tb.in(g.shape(a), block.Map{0, -1, -1}, 2)
	tbb := tb.in(g.shape(b), block.Map{0, 2, -1}, 1)
	tb.out(tb.accum(tb.op(ugraph.OpMatmul, ta, tbb), ugraph.AccumNone), block.Map{0, 2, -1})
	return g.outputs(g.custom(tb, a, b)[0])
}

// splitKLoopRows is a wrong A @ B in one kernel: grid x splits k in two,
// and the loop walks A's rows, not k, so that the tiles still cover k
// once, but each block sums the products of two row tiles.
func splitKLoopRows(m, k, n int) *kernel.Graph {
	g := newKG()
	a, b := g.in(m, k), g.in(k, n)
	tb := newBG(block.Dim3{2, 1, 1}, 2, 1)
	ta := tb.in(g.shape(a), block.Map{1, -1, -1}, 0)
	tbb := tb.in(g.shape(b), block.Map{0, -1, -1}, -1)
	tb.out(tb.accum(tb.op(ugraph.OpMatmul, ta, tbb), ugraph.AccumNone), block.Map{0, -1, -1})
	return g.outputs(g.custom(tb, a, b)[0])
}

// TestWholeSums checks the candidates whose fused matmuls are summed from
// the program's whole products (the memo) against the same checks made
// without any memo (Equivalent), and that the memo is used exactly where
// a kernel's loop walks the whole k of both operands.
func TestWholeSums(t *testing.T) {
	for _, c := range []struct {
		name               string
		program, candidate *kernel.Graph
		equivalent, summed bool
		opts               ffverify.Options
	}{
		{"tiled, loop over k", matmulProgram(16, 64, 24), matmulTiled(16, 64, 24, block.Dim3{3, 2, 1}, 4), true, true, ffverify.Options{}},
		{"tiled, no loop", matmulProgram(16, 64, 24), matmulTiled(16, 64, 24, block.Dim3{3, 2, 1}, 1), true, true, ffverify.Options{}},
		{"inputs not shared", matmulProgram(16, 64, 24), matmulTiled(16, 64, 24, block.Dim3{3, 2, 1}, 4), true, true, ffverify.Options{SharedInputs: -1}},
		// The fused kernel is the program: its own evaluation makes the
		// whole product (from inputs it does not share), which the
		// candidate's matmul then finds.
		{"fused program", matmulTiled(16, 64, 24, block.Dim3{3, 2, 1}, 4), matmulProgram(16, 64, 24), true, true, ffverify.Options{SharedInputs: -1}},
		{"blocks placed wrong", matmulProgram(16, 64, 16), matmulBlocks(16, 64, 16, 4, block.Map{0, 1, -1}), false, true, ffverify.Options{}},
		{"blocks placed right", matmulProgram(16, 64, 16), matmulBlocks(16, 64, 16, 4, block.Map{1, 0, -1}), true, true, ffverify.Options{}},
		{"split k, loop over rows", matmulProgram(16, 64, 24), splitKLoopRows(16, 64, 24), false, false, ffverify.Options{}},
		{"batched", batchedMatmul(false), batchedMatmul(true), true, true, ffverify.Options{}},
		{"gated MLP", gatedMLP(8, 64, 32), gatedMLPFused(8, 64, 32, 2, 4), true, true, ffverify.Options{}},
		{"gated MLP, no loop", gatedMLP(8, 64, 32), gatedMLPFused(8, 64, 32, 2, 1), true, true, ffverify.Options{}},
		// The normalised rows are summed whole too: the division follows.
		{"rms_norm fused", rmsnormMatmul(8, 64, 32), rmsnormMatmulFused(8, 64, 32, 2, 4), true, true, ffverify.Options{}},
		// exp(Q·K)·V: its accumulated matmul reads a computed tile.
		{"attention split over keys", gqa(2, 8, 16, 64), gqaSplit(2, 8, 16, 64, 4, 2, 2), true, false, ffverify.Options{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.opts.Seed, c.opts.Samples = 3, -1 // the full check only
			v := must(ffverify.New(c.program, c.opts))
			got := must(v.Verify(c.candidate))
			want := must(ffverify.Equivalent(c.program, c.candidate, c.opts))
			if got.Equivalent != want.Equivalent || got.Equivalent != c.equivalent {
				t.Fatalf("Verify says %v, Equivalent (no memo) %v; want equivalent = %v", got, want, c.equivalent)
			}
			if n := ffverify.WholeSums(v); (n > 0) != c.summed {
				t.Errorf("%d accumulators summed whole; want some = %v", n, c.summed)
			}
		})
	}
}

// A whole product whose left operand's rows are multiples of one the memo
// keeps (X against the program's rms_norm(X), for the same W) is that
// product's rows scaled: the same verdicts as a check with no memo, the
// wrong candidate (X·W, unnormalized) included, which only a correctly
// scaled product tells from the program.
func TestScaledProducts(t *testing.T) {
	for _, c := range []struct {
		name       string
		candidate  *kernel.Graph
		equivalent bool
	}{
		{"(X·W)/rms(X)", rmsnormMatmulFused(8, 64, 32, 2, 4), true},
		{"X·W", matmulProgram(8, 64, 32), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			program := rmsnormMatmul(8, 64, 32)
			opts := ffverify.Options{Seed: 3, Samples: -1} // the full check only
			v := must(ffverify.New(program, opts))
			got := must(v.Verify(c.candidate))
			want := must(ffverify.Equivalent(program, c.candidate, opts))
			if got.Equivalent != want.Equivalent || got.Equivalent != c.equivalent {
				t.Fatalf("Verify says %v, Equivalent (no memo) %v; want equivalent = %v", got, want, c.equivalent)
			}
			if n := ffverify.ScaledProducts(v); n == 0 {
				t.Error("no product made by scaling the program's rows")
			}
		})
	}
}

// A dynamic program's smaller bucket, checked with fingerprints cut from
// the largest's (Prefix, which shares its memo), takes its whole products
// as the first rows of the largest's, scaled: X[:3] and rms_norm(X[:3])
// are the first rows of X and rms_norm(X). Its verdicts are those of a
// verifier made at three rows, the unnormalized X·W's included.
func TestProductsOfFirstRows(t *testing.T) {
	opts := ffverify.Options{Seed: 5, Samples: -1}
	own := must(ffverify.New(rmsnormMatmul(3, 64, 32), opts))
	for _, c := range []struct {
		name       string
		candidate  *kernel.Graph
		equivalent bool
	}{
		{"(X·W)/rms(X)", rmsnormMatmulFused(3, 64, 32, 2, 4), true},
		{"X·W", matmulProgram(3, 64, 32), false},
	} {
		big := must(ffverify.New(rmsnormMatmul(16, 64, 32), opts))
		if r := must(big.Verify(rmsnormMatmulFused(16, 64, 32, 2, 4))); !r.Equivalent {
			t.Fatalf("the largest bucket's candidate: %v", r)
		}
		cut := must(big.Prefix(rmsnormMatmul(3, 64, 32)))
		before := ffverify.ScaledProducts(cut)
		got := must(cut.Verify(c.candidate))
		want := must(own.Verify(c.candidate))
		if got.Equivalent != c.equivalent || want.Equivalent != c.equivalent {
			t.Errorf("%s: the cut verifier says %v, one made at three rows %v; want equivalent = %v", c.name, got, want, c.equivalent)
		}
		if ffverify.ScaledProducts(cut) == before {
			t.Errorf("%s: no product made from the first rows of one kept", c.name)
		}
	}
}

// Only a left operand that is the first rows of a kept one, with no batch
// dims above 1, takes that one's product's rows (rowPrefix).
func TestFirstRowsOf(t *testing.T) {
	s := ugraph.MustShape
	for _, c := range []struct {
		s, of ugraph.Shape
		want  bool
	}{
		{s(3, 64), s(16, 64), true},
		{s(16, 64), s(16, 64), true},
		{s(1, 3, 64), s(1, 16, 64), true},
		{s(16, 64), s(3, 64), false},       // more rows
		{s(3, 32), s(16, 64), false},       // another k
		{s(2, 3, 64), s(2, 16, 64), false}, // batches interleave the rows
		{s(3, 64), s(1, 16, 64), false},    // another rank
		{s(2, 4, 64), s(2, 4, 64), true},
	} {
		if got := ffverify.RowPrefix(c.s, c.of); got != c.want {
			t.Errorf("rowPrefix(%v, %v) = %v; want %v", c.s, c.of, got, c.want)
		}
	}
}
