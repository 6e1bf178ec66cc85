package ffverify_test

import (
	"slices"
	"testing"

	"github.com/mirage-go/mirage/ffverify"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// rmsnormMatmulGrid is RMSNorm+MatMul in one kernel of grid (2, 2): x
// splits W's columns, and y X's rows, which the rms reads from rowsBy.
// With rowsBy 1 (y) it is right; with 0 (x), block (x, y) normalizes by
// the rms of the rows of block (y, x).
func rmsnormMatmulGrid(m, k, n, rowsBy int, exp bool) *kernel.Graph {
	g := newKG()
	x, w := g.in(m, k), g.in(k, n)
	b := newBG(block.Dim3{2, 2, 1}, 4, 64)
	tx := b.in(g.shape(x), block.Map{-1, 0, -1}, 1)
	imap := block.Map{-1, -1, -1}
	imap[rowsBy] = 0
	rx := b.in(g.shape(x), imap, 1)
	if exp {
		rx = b.op(ugraph.OpExp, rx)
	}
	tw := b.in(g.shape(w), block.Map{1, -1, -1}, 0)
	acc := b.accum(b.op(ugraph.OpMatmul, tx, tw), ugraph.AccumNone)
	b.out(b.op(ugraph.OpDiv, acc, b.accum(rx, ugraph.AccumRMS)), block.Map{1, 0, -1})
	return g.outputs(g.custom(b, x, x, w)[0])
}

// rmsExpMatmul is X·W / rms(exp(X)).
func rmsExpMatmul(m, k, n int) *kernel.Graph {
	g := newKG()
	x, w := g.in(m, k), g.in(k, n)
	rms := g.opA(ugraph.OpRMSNorm, dim(1), g.op(ugraph.OpExp, x))
	// rms_norm(e) = e / rms(e): X·W / rms(exp X) is (X ⊙ rms_norm(e) / e)·W.
	return g.outputs(g.op(ugraph.OpMatmul, g.op(ugraph.OpMul, x, g.op(ugraph.OpDiv, rms, g.op(ugraph.OpExp, x))), w))
}

// An accumulator whose operand does not vary along a grid axis sums alike
// in every block along it: all but the first block of each class copy its
// sums, and skip the loop ops that fed only them. The verdicts are those
// of the unfused program's check, where one block's rms differs from
// another's (rows split along y) and where the kernel is wrong.
func TestSharedAccumulators(t *testing.T) {
	for _, c := range []struct {
		name               string
		program, candidate *kernel.Graph
		equivalent         bool
		shared             []ugraph.Accum
		runs               []ugraph.OpKind // the loop ops of a block that copies every shared sum
	}{
		{"rms of the rows every block reads", rmsnormMatmul(8, 64, 32), rmsnormMatmulFused(8, 64, 32, 2, 4), true,
			[]ugraph.Accum{ugraph.AccumRMS}, []ugraph.OpKind{ugraph.OpInput, ugraph.OpInput, ugraph.OpMatmul, ugraph.OpForloopAccum}},
		{"rms of the rows split along y", rmsnormMatmul(8, 64, 32), rmsnormMatmulGrid(8, 64, 32, 1, false), true,
			[]ugraph.Accum{ugraph.AccumRMS}, []ugraph.OpKind{ugraph.OpInput, ugraph.OpInput, ugraph.OpMatmul, ugraph.OpForloopAccum}},
		{"rms of exp of the rows, split along y", rmsExpMatmul(8, 64, 32), rmsnormMatmulGrid(8, 64, 32, 1, true), true,
			[]ugraph.Accum{ugraph.AccumRMS}, []ugraph.OpKind{ugraph.OpInput, ugraph.OpInput, ugraph.OpMatmul, ugraph.OpForloopAccum}},
		{"rms of the rows of another block", rmsnormMatmul(8, 64, 32), rmsnormMatmulGrid(8, 64, 32, 0, false), false,
			[]ugraph.Accum{ugraph.AccumRMS}, []ugraph.OpKind{ugraph.OpInput, ugraph.OpInput, ugraph.OpMatmul, ugraph.OpForloopAccum}},
		{"a matmul's tiles", matmulProgram(16, 64, 24), matmulTiled(16, 64, 24, block.Dim3{3, 2, 1}, 4), true,
			nil, []ugraph.OpKind{ugraph.OpInput, ugraph.OpInput, ugraph.OpMatmul, ugraph.OpForloopAccum}},
	} {
		t.Run(c.name, func(t *testing.T) {
			shared, runs, err := ffverify.SharedAccumulators(c.candidate)
			if err != nil {
				t.Fatal(err)
			}
			if len(shared) != 1 || !slices.Equal(shared[0], c.shared) || !slices.Equal(runs[0], c.runs) {
				t.Errorf("shared accumulators %v, a copying block runs %v; want %v and %v", shared, runs, c.shared, c.runs)
			}
			for _, samples := range []int{0, -1} { // with the fast path, and the full check only
				opts := ffverify.Options{Seed: 5, Samples: samples}
				got := must(must(ffverify.New(c.program, opts)).Verify(c.candidate))
				if got.Equivalent != c.equivalent {
					t.Errorf("samples %d: %v; want equivalent = %v", samples, got, c.equivalent)
				}
			}
		})
	}
}
