package ffverify

import (
	"testing"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// TestDenseWork counts, by hand, what a dense evaluation does in the fast
// path's units: values, terms of sums (multiply-adds, reduced elements)
// and input elements drawn.
func TestDenseWork(t *testing.T) {
	chain := func() *kernel.Graph {
		g := kernel.New()
		x := must(g.AddInput(ugraph.MustShape(2, 3), ugraph.Float16))
		w := must(g.AddInput(ugraph.MustShape(3, 4), ugraph.Float16))
		v := must(g.AddInput(ugraph.MustShape(4, 5), ugraph.Float16))
		y := must(g.Add(ugraph.OpMatmul, ugraph.Attr{}, must(g.Add(ugraph.OpSilu, ugraph.Attr{}, must(g.Add(ugraph.OpMatmul, ugraph.Attr{}, x, w)))), v))
		_ = g.MarkOutput(must(g.Add(ugraph.OpReduction, ugraph.Attr{Dim: 1}, y)))
		return g
	}
	// A grid of 2 blocks, each walking k = 8 of X (4 × 8) · W (8 × 6) in
	// 2 iterations of 4 and summing its 2 × 6 tile of the product over
	// them.
	customized := func() *kernel.Graph {
		g := kernel.New()
		x := must(g.AddInput(ugraph.MustShape(4, 8), ugraph.Float16))
		w := must(g.AddInput(ugraph.MustShape(8, 6), ugraph.Float16))
		b := must(block.New(block.Dim3{2, 1, 1}, block.Dim3{128, 1, 1}, 2, 1))
		bx := must(b.AddInput(g.Tensors[x].Shape, ugraph.Float16, block.Map{0, -1, -1}, 1))
		bw := must(b.AddInput(g.Tensors[w].Shape, ugraph.Float16, block.Map{-1, -1, -1}, 0))
		prod := must(b.Add(ugraph.OpMatmul, ugraph.Attr{}, bx, bw))
		acc := must(b.Add(ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumNone}, prod))
		if err := b.AddOutput(acc, block.Map{0, -1, -1}); err != nil {
			panic(err)
		}
		_ = g.MarkOutput(must(g.Customized([]kernel.TensorID{x, w}, b))[0])
		return g
	}
	for _, c := range []struct {
		name string
		g    *kernel.Graph
		want int64
	}{
		// inputs 6 + 12 + 20; X·W 8 values, 8·3 terms; silu 8; ·V 10
		// values, 10·4 terms; the sum over dim 1: 2 values, 10 terms.
		{"kernel ops", chain(), 38 + 8 + 24 + 8 + 10 + 40 + 2 + 10},
		// inputs 32 + 48; per block and iteration the tiles X 2 × 4,
		// W 4 × 6 and their product 2 × 6 (12 values of 4 terms), added
		// to the accumulator (12 terms); after the loop its 2 × 6 values.
		{"a customized op", customized(), 80 + 2*(2*(8+24+12+12*4+12)+12)},
	} {
		p := must(newPlan(c.g))
		if got := p.denseWork(); got != c.want {
			t.Errorf("%s: denseWork = %d, want %d", c.name, got, c.want)
		}
	}
}

// TestLazySpendsTheProducts: an element of (X·W)·V read lazily costs its
// row of X·W, each a product of k terms over a column of W drawn, not just
// the values it remembers.
func TestLazySpendsTheProducts(t *testing.T) {
	const m, k, n, o = 8, 512, 256, 4
	g := kernel.New()
	x := must(g.AddInput(ugraph.MustShape(m, k), ugraph.Float16))
	w := must(g.AddInput(ugraph.MustShape(k, n), ugraph.Float16))
	v := must(g.AddInput(ugraph.MustShape(n, o), ugraph.Float16))
	y := must(g.Add(ugraph.OpMatmul, ugraph.Attr{}, must(g.Add(ugraph.OpMatmul, ugraph.Attr{}, x, w)), v))
	_ = g.MarkOutput(y)
	p := must(newPlan(g))
	l := newLazy(p, p.trial(Options{Seed: 1}, 0), 1<<62, int(p.denseSize()))
	l.value(int(y), 0)
	// n values of X·W, each k terms over a column of W drawn (k) and a
	// row of X drawn once; the element itself, n terms over a column of V.
	if want := n*(1+k+k) + k + 1 + n + n; l.computed != want {
		t.Errorf("one element's work %d, want %d", l.computed, want)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
