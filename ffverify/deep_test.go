package ffverify_test

import (
	"testing"

	"github.com/mirage-go/mirage/ffverify"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// deep is the length of the chains below: a 25 MB .ugraph.json holds one
// this long, and the demand-driven evaluator recursed once per op.
const deep = 600_000

// chainOp is the kind of op i of a chain; last replaces the final one, so
// that two chains differ in one op at the far end from the input.
func chainOp(i int, last ugraph.OpKind) ugraph.OpKind {
	switch {
	case i == deep-1:
		return last
	case i%2 == 0:
		return ugraph.OpExp
	}
	return ugraph.OpSquare
}

// kernelChain is a chain of deep element-wise kernel ops on a 4x4 input.
func kernelChain(last ugraph.OpKind) *kernel.Graph {
	g := newKG()
	x := g.in(4, 4)
	for i := range deep {
		x = g.op(chainOp(i, last), x)
	}
	return g.outputs(x)
}

// blockChain is one graph-defined kernel whose block graph is such a chain.
func blockChain(last ugraph.OpKind) *kernel.Graph {
	g := newKG()
	x := g.in(4, 4)
	b := newBG(block.Dim3{1, 1, 1}, 1, 1)
	t := b.in(g.shape(x), block.Map{-1, -1, -1}, -1)
	for i := range deep {
		t = b.op(chainOp(i, last), t)
	}
	b.out(b.accum(t, ugraph.AccumNone), block.Map{-1, -1, -1})
	return g.outputs(g.custom(b, x)...)
}

// TestDeepGraphs: the depth of a graph comes from its file, so no evaluator
// may recurse once per op (a 600k-op chain overflowed the Go stack in the
// fast path's evaluator). The demand-driven evaluation must agree with the
// dense one, and the verifier must tell a chain from a copy whose last op
// differs.
func TestDeepGraphs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds graphs of 600k ops")
	}
	for _, c := range []struct {
		name  string
		chain func(last ugraph.OpKind) *kernel.Graph
	}{
		{"kernel ops", kernelChain},
		{"block ops", blockChain},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := c.chain(ugraph.OpExp)
			if err := ffverify.LazyMismatch(g, 1, 0, 2); err != nil {
				t.Error(err)
			}
			if r := must(ffverify.Equivalent(g, c.chain(ugraph.OpSqrt), ffverify.Options{})); r.Equivalent {
				t.Error("a chain whose last op differs is equivalent")
			}
		})
	}
}
