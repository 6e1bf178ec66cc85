package thread

import (
	"testing"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
)

// The block graphs of examples/*_mugraph.py, built with the block builders.

var (
	fp16 = ugraph.Float16
	none = ugraph.Attr{}
)

func sh(dims ...int) ugraph.Shape { return ugraph.MustShape(dims...) }

// builder wraps the block builders, failing the test on any error.
type builder struct {
	t testing.TB
	g *block.Graph
}

func newBuilder(t testing.TB, grid block.Dim3, threads, f, dimx int) *builder {
	t.Helper()
	g, err := block.New(grid, block.Dim3{threads, 1, 1}, f, dimx)
	if err != nil {
		t.Fatal(err)
	}
	return &builder{t, g}
}

func (b *builder) in(dshape ugraph.Shape, dt ugraph.DType, imap block.Map, fmap int) block.TensorID {
	b.t.Helper()
	id, err := b.g.AddInput(dshape, dt, imap, fmap)
	if err != nil {
		b.t.Fatal(err)
	}
	return id
}

func (b *builder) op(k ugraph.OpKind, a ugraph.Attr, xs ...block.TensorID) block.TensorID {
	b.t.Helper()
	id, err := b.g.Add(k, a, xs...)
	if err != nil {
		b.t.Fatal(err)
	}
	return id
}

func (b *builder) acc(x block.TensorID, a ugraph.Accum) block.TensorID {
	b.t.Helper()
	return b.op(ugraph.OpForloopAccum, ugraph.Attr{Accum: a}, x)
}

func (b *builder) out(x block.TensorID, omap block.Map) {
	b.t.Helper()
	if err := b.g.AddOutput(x, omap); err != nil {
		b.t.Fatal(err)
	}
}

func rmsnormMatmul(t testing.TB) *block.Graph {
	b := newBuilder(t, block.Dim3{96, 1, 1}, 128, 64, 64)
	x := b.in(sh(16, 4096), fp16, block.Map{-1, -1, -1}, 1)
	w := b.in(sh(4096, 6144), fp16, block.Map{1, -1, -1}, 0)
	m := b.acc(b.op(ugraph.OpMatmul, none, x, w), ugraph.AccumNone)
	rms := b.acc(x, ugraph.AccumRMS)
	b.out(b.op(ugraph.OpDiv, none, m, rms), block.Map{1, -1, -1})
	return b.g
}

func gatedMLP(t testing.TB) *block.Graph {
	b := newBuilder(t, block.Dim3{64, 1, 1}, 128, 64, 64)
	x := b.in(sh(8, 4096), fp16, block.Map{-1, -1, -1}, 1)
	w1 := b.in(sh(4096, 4096), fp16, block.Map{1, -1, -1}, 0)
	w2 := b.in(sh(4096, 4096), fp16, block.Map{1, -1, -1}, 0)
	a1 := b.acc(b.op(ugraph.OpMatmul, none, x, w1), ugraph.AccumNone)
	a2 := b.acc(b.op(ugraph.OpMatmul, none, x, w2), ugraph.AccumNone)
	b.out(b.op(ugraph.OpMul, none, b.op(ugraph.OpSilu, none, a1), a2), block.Map{1, -1, -1})
	return b.g
}

func gqa1(t testing.TB) *block.Graph {
	b := newBuilder(t, block.Dim3{2, 16, 1}, 128, 4, 64)
	q := b.in(sh(2, 256, 64), fp16, block.Map{0, -1, -1}, -1)
	k := b.in(sh(2, 64, 4096), fp16, block.Map{0, 2, -1}, 2)
	v := b.in(sh(2, 4096, 64), fp16, block.Map{0, 1, -1}, 1)
	e := b.op(ugraph.OpExp, none, b.op(ugraph.OpMatmul, none, q, k))
	s := b.acc(e, ugraph.AccumSum)
	o := b.acc(b.op(ugraph.OpMatmul, none, e, v), ugraph.AccumNone)
	b.out(o, block.Map{0, 2, -1})
	b.out(s, block.Map{0, 2, -1})
	return b.g
}

func gqa2(t testing.TB) *block.Graph {
	b := newBuilder(t, block.Dim3{2, 4, 1}, 128, 1, 64)
	op := b.in(sh(2, 256, 1024), fp16, block.Map{0, 1, -1}, -1)
	sp := b.in(sh(2, 256, 16), fp16, block.Map{0, 1, -1}, -1)
	os := b.acc(op, ugraph.AccumSumToDimx)
	ss := b.acc(sp, ugraph.AccumSum)
	b.out(b.op(ugraph.OpDiv, none, os, ss), block.Map{0, 1, -1})
	return b.g
}

func TestPrintExamples(t *testing.T) {
	for _, f := range []func(testing.TB) *block.Graph{rmsnormMatmul, gatedMLP, gqa1, gqa2} {
		g, err := Derive(f(t), sm90, Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Log("\n" + g.String())
	}
}
