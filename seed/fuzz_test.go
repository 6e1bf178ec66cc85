package seed_test

import (
	"strings"
	"testing"

	"github.com/mirage-go/mirage/ffverify"
	"github.com/mirage-go/mirage/seed"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// FuzzBuild builds small programs from bytes (inputs of a few shapes,
// then ops on earlier tensors, each kept when the shape rules allow it)
// and checks that Build never panics and that every seed it gives
// computes the program.
func FuzzBuild(f *testing.F) {
	f.Add([]byte{0, 0, 3, 1, 2, 0, 4, 1})
	f.Add([]byte{1, 1, 2, 9, 0, 1, 5, 2, 6, 3})
	f.Add([]byte{2, 2, 3, 9, 0, 1, 3, 2, 7, 3, 9, 4, 2})
	// bf16: rms_norm of X, its product with W, silu, plus a bias (1 x 16)
	// and a residual (4 x 16).
	f.Add([]byte{7, 0, 3, 8, 9, 10, 0, 0, 7, 4, 1, 1, 5, 5, 4, 6, 2, 4, 7, 3})
	// A low-rank adapter: X·W + 0.5·(X·A)·B, A of 4 columns.
	f.Add([]byte{3, 0, 3, 10, 9, 7, 0, 1, 7, 0, 2, 7, 5, 3, 3, 6, 6, 4, 4, 7})
	f.Fuzz(func(t *testing.T, data []byte) {
		g := programFrom(data)
		if g == nil {
			return
		}
		for _, s := range seed.Build(g, seed.Options{}) {
			r, err := ffverify.Equivalent(g, s.Graph, ffverify.Options{Seed: 1})
			if err != nil {
				t.Fatalf("%s seed: %v", s.Rule, err)
			}
			if !r.Equivalent {
				var b strings.Builder
				kernel.Fprint(&b, g)
				t.Fatalf("%s seed does not compute the program:\n%s", s.Rule, b.String())
			}
		}
	})
}

// fuzzShapes are the input shapes programFrom draws from: {2, 1, 1} is a
// factor per head (attention's prologues); {1, 16} and {4, 16} a bias and
// a residual of a product of {4, 8} and {8, 16} (the epilogue inputs of
// the matmul, split_k and library rules); {8, 4} and {4, 16} an adapter's
// A and B.
var fuzzShapes = [][]int{{4, 8}, {1, 8}, {4, 1}, {8, 16}, {2, 4, 8}, {2, 8, 4}, {2, 1, 8}, {2, 1, 1}, {1, 16}, {4, 16}, {8, 4}}

// fuzzDTypes are the programs' dtypes, one for all their inputs.
var fuzzDTypes = []ugraph.DType{ugraph.Float16, ugraph.BFloat16, ugraph.Float32}

// fuzzOps are the ops programFrom draws from.
var fuzzOps = []struct {
	kind ugraph.OpKind
	attr ugraph.Attr
}{
	{ugraph.OpExp, ugraph.Attr{}}, {ugraph.OpSilu, ugraph.Attr{}}, {ugraph.OpSquare, ugraph.Attr{}},
	{ugraph.OpMulScalar, ugraph.Attr{Scalars: [2]float64{0.5}}},
	{ugraph.OpAdd, ugraph.Attr{}}, {ugraph.OpMul, ugraph.Attr{}}, {ugraph.OpDiv, ugraph.Attr{}},
	{ugraph.OpMatmul, ugraph.Attr{}},
	{ugraph.OpReduction, ugraph.Attr{Dim: 1}}, {ugraph.OpReduction, ugraph.Attr{Dim: 2}},
	{ugraph.OpRMSNorm, ugraph.Attr{Dim: 1}}, {ugraph.OpRMSNorm, ugraph.Attr{Dim: 2}},
	{ugraph.OpSub, ugraph.Attr{}},
}

// programFrom reads data as: the number of inputs (1 to 4; the byte's
// next bits the dtype), each input's shape, then (op, operand, operand)
// triples. The last tensor made is the
// output. It returns nil when no op was kept.
func programFrom(data []byte) *kernel.Graph {
	next := func() int {
		if len(data) == 0 {
			return -1
		}
		b := int(data[0])
		data = data[1:]
		return b
	}
	g := kernel.New()
	n := next()
	if n < 0 {
		return nil
	}
	for range n%4 + 1 {
		b := next()
		if b < 0 {
			return nil
		}
		s, _ := ugraph.NewShape(fuzzShapes[b%len(fuzzShapes)]...)
		if _, err := g.AddInput(s, fuzzDTypes[n/4%len(fuzzDTypes)]); err != nil {
			return nil
		}
	}
	ops := 0
	for len(data) > 0 && ops < 8 {
		op, a, b := next(), next(), next()
		if b < 0 {
			break
		}
		o := fuzzOps[op%len(fuzzOps)]
		nt := len(g.Tensors)
		in := []kernel.TensorID{kernel.TensorID(a % nt), kernel.TensorID(b % nt)}[:o.kind.Info().Arity]
		if _, err := g.Add(o.kind, o.attr, in...); err == nil {
			ops++
		}
	}
	if ops == 0 {
		return nil
	}
	if g.MarkOutput(kernel.TensorID(len(g.Tensors)-1)) != nil {
		return nil
	}
	return g
}
