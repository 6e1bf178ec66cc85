package ffverify_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/mirage-go/mirage/ffverify"
	"github.com/mirage-go/mirage/interp"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// An entry of the catalogue: a program, a candidate μGraph, and whether the
// candidate computes the program's outputs.
type entry struct {
	name       string
	program    func() *kernel.Graph
	candidate  func() *kernel.Graph
	equivalent bool
	// positive draws the float inputs from [0.5, 1.5) instead of [-1, 1):
	// the graph takes sqrt, log or pow of values that could be negative.
	positive bool
}

// blockOp edits op i of the k-th customized op's block graph.
func blockOp(k, i int, f func(op *block.Op)) edits {
	return edits{blockOp: func(kk, ii int, op *block.Op) {
		if kk == k && ii == i {
			f(op)
		}
	}}
}

// kernelOp edits kernel op i.
func kernelOp(i int, f func(op *kernel.Op)) edits {
	return edits{kernelOp: func(ii int, op *kernel.Op) {
		if ii == i {
			f(op)
		}
	}}
}

// launch edits the k-th customized op's launch parameters.
func launch(k int, f func(b *block.Graph)) edits {
	return edits{launch: func(kk int, b *block.Graph) {
		if kk == k {
			f(b)
		}
	}}
}

func mutant(base func() *kernel.Graph, e edits) func() *kernel.Graph {
	return func() *kernel.Graph { return must(mutate(base(), e)) }
}

func swapOperands(op *kernel.Op) { op.In[0], op.In[1] = op.In[1], op.In[0] }

// Small instances of the bases. Block op indices used below:
//
//	matmulTiled:        0 A, 1 B, 2 matmul, 3 accum, 4 output
//	rmsnormMatmulFused: 0 X, 1 W, 2 matmul, 3 accum, 4 rms accum, 5 div, 6 output
//	gatedMLPFused:      0 X, 1 W1, 2 W2, 3 matmul, 4 accum, 5 matmul, 6 accum, 7 silu, 8 mul, 9 output
//	gqaSplit kernel 0:  0 Q, 1 K, 2 V, 3 matmul, 4 exp, 5 sum, 6 matmul, 7 accum, 8 and 9 outputs
//	gqaSplit kernel 1:  0 Opart, 1 Spart, 2 sum_todimx, 3 sum, 4 div, 5 output
var (
	mm      = func() *kernel.Graph { return matmulProgram(16, 16, 16) }
	mmTiled = func() *kernel.Graph { return matmulTiled(16, 16, 16, block.Dim3{2, 2, 1}, 2) }
	rm      = func() *kernel.Graph { return rmsnormMatmul(4, 32, 48) }
	rmFused = func() *kernel.Graph { return rmsnormMatmulFused(4, 32, 48, 3, 4) }
	gm      = func() *kernel.Graph { return gatedMLP(4, 32, 32) }
	gmFused = func() *kernel.Graph { return gatedMLPFused(4, 32, 32, 2, 2) }
	gq      = func() *kernel.Graph { return gqa(2, 8, 16, 64) }
	gqSplit = func() *kernel.Graph { return gqaSplit(2, 8, 16, 64, 4, 2, 2) }
)

func catalogue() []entry {
	return []entry{
		// Correct rewritings.
		{name: "matmul/tiled-2x2", program: mm, candidate: mmTiled, equivalent: true},
		{name: "matmul/tiled-4x1-forloop-8", program: mm, candidate: func() *kernel.Graph { return matmulTiled(16, 16, 16, block.Dim3{4, 1, 1}, 8) }, equivalent: true},
		{name: "matmul/forloop-1-fmap-irrelevant", program: mm, candidate: mutant(func() *kernel.Graph { return matmulTiled(16, 16, 16, block.Dim3{2, 2, 1}, 1) },
			blockOp(0, 0, func(op *block.Op) { op.Input.FMap = 0 })), equivalent: true},
		{name: "rmsnorm-matmul/fused", program: rm, candidate: rmFused, equivalent: true},
		{name: "rmsnorm-matmul/fused-grid-6-forloop-2", program: rm, candidate: func() *kernel.Graph { return rmsnormMatmulFused(4, 32, 48, 6, 2) }, equivalent: true},
		{name: "rmsnorm-matmul/rms-of-unwalked-tile", program: rm, candidate: rmFusedWholeRowRMS, equivalent: true},
		{name: "rmsnorm/decomposed", program: rmsnormOnly, candidate: rmsnormDecomposed(1.0 / 12), equivalent: true},
		{name: "gated-mlp/fused", program: gm, candidate: gmFused, equivalent: true},
		{name: "gqa/split-keys", program: gq, candidate: gqSplit, equivalent: true},
		{name: "matmul/computed-tile-times-weight-columns", program: expMatmul(false), candidate: expMatmul(true), equivalent: true},
		{name: "gqa/second-kernel-walks-partials", program: gq, candidate: mutant(gqSplit, gqaWalkPartials()), equivalent: true},
		{name: "div/distributes", program: divSum(false), candidate: divSum(true), equivalent: true},
		{name: "matmul/distributes", program: matmulSum(false), candidate: matmulSum(true), equivalent: true},
		{name: "sum/partial-sums", program: rowSum, candidate: rowSumPartials, equivalent: true},
		{name: "sum/one-kernel", program: rowSum, candidate: rowSumKernel(-1, 1, ugraph.AccumSum), equivalent: true},
		{name: "matmul/split-k-sum-todimx", program: func() *kernel.Graph { return matmulProgram(4, 64, 16) }, candidate: splitK, equivalent: true},
		{name: "matmul/split-k-reduction-to-dimx", program: func() *kernel.Graph { return matmulProgram(4, 64, 16) }, candidate: splitKToDimx, equivalent: true},
		{name: "rmsnorm/block-level", program: rmsnormOnly, candidate: blockRMSNorm(false), equivalent: true},
		{name: "sum/block-reduction", program: rowSum, candidate: blockRowSum, equivalent: true},
		{name: "mean/as-scaled-sum", program: meanProgram(1.0 / 6), candidate: meanAccum, equivalent: true},
		{name: "concat/matmul", program: concatProgram, candidate: concatFused(false), equivalent: true},
		{name: "outputs/permuted", program: twoOutputs(false, false), candidate: twoOutputs(true, false), equivalent: true},

		// Wrong μGraphs, mutations of correct ones.
		{name: "matmul/omap-on-other-dim", program: mm, candidate: mutant(mmTiled, blockOp(0, 4, func(op *block.Op) { op.Output.OMap = block.Map{0, 1, -1} }))},
		{name: "matmul/imap-swapped", program: mm, candidate: mutant(mmTiled, blockOp(0, 0, func(op *block.Op) { op.Input.IMap = block.Map{0, -1, -1} }))},
		{name: "matmul/block-operands-swapped", program: mm, candidate: mutant(mmTiled, blockOp(0, 2, func(op *block.Op) { op.In[0], op.In[1] = op.In[1], op.In[0] }))},
		{name: "matmul/kernel-operands-swapped", program: mm, candidate: mutant(mm, kernelOp(2, swapOperands))},
		{name: "rmsnorm-matmul/mean-for-rms", program: rm, candidate: mutant(rmFused, blockOp(0, 4, func(op *block.Op) { op.Attr.Accum = ugraph.AccumMean }))},
		{name: "rmsnorm-matmul/div-swapped", program: rm, candidate: mutant(rmFused, blockOp(0, 5, func(op *block.Op) { op.In[0], op.In[1] = op.In[1], op.In[0] }))},
		{name: "rmsnorm-matmul/dropped-rms", program: rm, candidate: mutant(rmFused, blockOp(0, 6, func(op *block.Op) { op.In[0] = 3 }))},
		{name: "rmsnorm-matmul/sum-for-no-accum", program: rm, candidate: mutant(rmFused, blockOp(0, 3, func(op *block.Op) { op.Attr.Accum = ugraph.AccumSum }))},
		{name: "rmsnorm-matmul/rms-over-whole-tensor", program: rm, candidate: mutant(rm, kernelOp(2, func(op *kernel.Op) { op.Attr.Dim = 0 }))},
		{name: "rmsnorm/missing-1/n", program: rmsnormOnly, candidate: rmsnormDecomposed(1)},
		{name: "rmsnorm/block-normalizes-half-rows", program: rmsnormOnly, candidate: blockRMSNorm(true)},
		{name: "gated-mlp/weights-swapped", program: gm, candidate: mutant(gmFused, kernelOp(3, func(op *kernel.Op) { op.In[1], op.In[2] = op.In[2], op.In[1] }))},
		{name: "gated-mlp/w2-tiled-transposed", program: gm, candidate: mutant(gmFused, blockOp(0, 2, func(op *block.Op) { op.Input.IMap, op.Input.FMap = block.Map{0, -1, -1}, 1 }))},
		{name: "gated-mlp/gelu-for-silu", program: gm, candidate: mutant(gmFused, blockOp(0, 7, func(op *block.Op) { op.Kind = ugraph.OpGelu }))},
		{name: "gated-mlp/silu-inside-loop", program: gm, candidate: gatedMLPSiluInLoop},
		{name: "gqa/softmax-over-wrong-dim", program: gq, candidate: mutant(gq, kernelOp(5, func(op *kernel.Op) { op.Attr.Dim = 1 }))},
		{name: "gqa/mean-for-sum-of-partials", program: gq, candidate: mutant(gqSplit, blockOp(1, 3, func(op *block.Op) { op.Attr.Accum = ugraph.AccumMean }))},
		{name: "gqa/square-for-exp", program: gq, candidate: mutant(gqSplit, blockOp(0, 4, func(op *block.Op) { op.Kind = ugraph.OpSquare }))},
		{name: "softmax-denominator/exp-after-sum", program: expThenSum, candidate: sumThenExp},
		{name: "softmax-denominator/block-exp-after-accum", program: expThenSum, candidate: blockSumThenExp},
		{name: "sum/forloop-range-changed", program: rowSum, candidate: rowSumKernel(-1, 2, ugraph.AccumSum)},
		{name: "sum/mean-for-sum", program: rowSum, candidate: rowSumKernel(1, 4, ugraph.AccumMean)},
		{name: "mean/wrong-scale", program: meanProgram(1.0 / 5), candidate: meanAccum},
		{name: "concat/operands-swapped", program: concatProgram, candidate: concatFused(true)},
		{name: "outputs/duplicated", program: twoOutputs(false, false), candidate: twoOutputs(false, true)},
		{name: "unary/relu-for-gelu", program: unaryProgram(ugraph.OpGelu, ugraph.Attr{}), candidate: unaryProgram(ugraph.OpRelu, ugraph.Attr{})},
		{name: "unary/clamp-bounds", program: unaryProgram(ugraph.OpClamp, ugraph.Attr{Scalars: [2]float64{-0.5, 0.5}}), candidate: unaryProgram(ugraph.OpClamp, ugraph.Attr{Scalars: [2]float64{-0.5, 0.25}})},
		{name: "unary/mul-scalar-factor", program: unaryProgram(ugraph.OpMulScalar, ugraph.Attr{Scalars: [2]float64{0.5}}), candidate: unaryProgram(ugraph.OpMulScalar, ugraph.Attr{Scalars: [2]float64{0.25}})},
		// A bound of -0 is the bound 0 (the key once hashed the sign).
		{name: "clamp/negative-zero-bound", program: unaryProgram(ugraph.OpClamp, ugraph.Attr{Scalars: [2]float64{math.Copysign(0, -1), 1}}),
			candidate: unaryProgram(ugraph.OpClamp, ugraph.Attr{Scalars: [2]float64{0, 1}}), equivalent: true},
		{name: "unary/log-for-sqrt", program: unaryProgram(ugraph.OpSqrt, ugraph.Attr{}), candidate: unaryProgram(ugraph.OpLog, ugraph.Attr{}), positive: true},
		{name: "pow/operands-swapped", program: powProgram, candidate: mutant(powProgram, kernelOp(2, swapOperands)), positive: true},
	}
}

func TestCatalogue(t *testing.T) {
	var right, wrong int
	for _, e := range catalogue() {
		if e.equivalent {
			right++
		} else {
			wrong++
		}
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			checkEntry(t, e.program(), e.candidate(), e.equivalent, e.positive, 4096)
		})
	}
	if right < 10 || wrong < 20 {
		t.Errorf("catalogue has %d correct and %d wrong entries, want at least 10 and 20", right, wrong)
	}
}

// checkEntry checks that ffverify, its fast path and interp all reach the
// expected verdict, and that the fast path's evaluator agrees with the dense
// one on both graphs (on up to lazyPositions positions per output).
func checkEntry(t *testing.T, program, candidate *kernel.Graph, equivalent, positive bool, lazyPositions int) {
	t.Helper()
	opts := ffverify.Options{Seed: 1}
	v, err := ffverify.New(program, opts)
	if err != nil {
		t.Fatal(err)
	}
	r, err := v.Verify(candidate)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Verify: %v", r)
	if r.Equivalent != equivalent {
		t.Errorf("Verify = %v, want equivalent = %v", r, equivalent)
	}
	rejected, err := v.Reject(candidate)
	if err != nil {
		t.Fatal(err)
	}
	if rejected && equivalent {
		t.Errorf("Reject = true on a correct candidate")
	}
	full, err := ffverify.Equivalent(program, candidate, ffverify.Options{Seed: 1, Samples: -1})
	if err != nil {
		t.Fatal(err)
	}
	if full.Equivalent != equivalent {
		t.Errorf("full check without fast path = %v, want equivalent = %v", full, equivalent)
	}
	float, err := floatEquivalent(program, candidate, positive)
	if err != nil {
		t.Fatal(err)
	}
	if float != equivalent {
		t.Errorf("interp says equivalent = %v, want %v", float, equivalent)
	}
	for _, g := range []*kernel.Graph{program, candidate} {
		if err := ffverify.LazyMismatch(g, 1, 0, lazyPositions); err != nil {
			t.Errorf("demand-driven and dense evaluation differ: %v", err)
		}
	}
}

// floatEquivalent runs both graphs in float64 on the same random inputs and
// reports whether some matching of same-shape outputs agrees within
// interp.DefaultTolerance.
func floatEquivalent(program, candidate *kernel.Graph, positive bool) (bool, error) {
	var ins []*interp.Tensor
	if positive {
		ins = interp.RandomInputsIn(program, 1, 0.5, 1.5)
	} else {
		ins = interp.RandomInputs(program, 1)
	}
	want, err := interp.Run(program, ins)
	if err != nil {
		return false, fmt.Errorf("interp: program: %w", err)
	}
	got, err := interp.Run(candidate, ins)
	if err != nil {
		return false, fmt.Errorf("interp: candidate: %w", err)
	}
	if len(got) != len(want) {
		return false, nil
	}
	agree := func(i, j int) bool {
		if got[i].Shape != want[j].Shape {
			return false
		}
		d, err := interp.Compare(want[j], got[i])
		return err == nil && d.MaxRelErr <= interp.DefaultTolerance
	}
	// Few outputs: try every assignment.
	used := make([]bool, len(want))
	var match func(i int) bool
	match = func(i int) bool {
		if i == len(got) {
			return true
		}
		for j := range want {
			if !used[j] && agree(i, j) {
				used[j] = true
				if match(i + 1) {
					return true
				}
				used[j] = false
			}
		}
		return false
	}
	return match(0), nil
}

// TestSharedInputsAgree checks that verdicts are the same whether the
// verifier shares its draws' inputs between candidates or computes them in
// each check.
func TestSharedInputsAgree(t *testing.T) {
	for _, e := range catalogue() {
		program, candidate := e.program(), e.candidate()
		shared := must(ffverify.New(program, ffverify.Options{Seed: 3, Samples: -1}))
		own := must(ffverify.New(program, ffverify.Options{Seed: 3, Samples: -1, SharedInputs: -1}))
		if !ffverify.SharesInputs(shared) || ffverify.SharesInputs(own) {
			t.Fatalf("%s: shared %v and %v, want true and false", e.name, ffverify.SharesInputs(shared), ffverify.SharesInputs(own))
		}
		a, errA := shared.Verify(candidate)
		b, errB := own.Verify(candidate)
		if (errA == nil) != (errB == nil) || a.String() != b.String() {
			t.Errorf("%s: with shared inputs %v (%v), without %v (%v)", e.name, a, errA, b, errB)
		}
		if errA == nil && a.Equivalent != e.equivalent {
			t.Errorf("%s: %v, want equivalent = %v", e.name, a, e.equivalent)
		}
	}
}

// TestWarmProductsAgree checks that the products memo, warmed by the
// other candidates of the same program (right and wrong ones, in both
// orders), changes no verdict: each agrees with a Verifier that keeps no
// products (its inputs are not shared).
func TestWarmProductsAgree(t *testing.T) {
	groups := map[uint64][]entry{}
	var order []uint64
	for _, e := range catalogue() {
		h := kernel.Hash(e.program())
		if groups[h] == nil {
			order = append(order, h)
		}
		groups[h] = append(groups[h], e)
	}
	served := 0
	for _, h := range order {
		es := groups[h]
		if len(es) < 2 {
			continue
		}
		served++
		for _, reverse := range []bool{false, true} {
			warm := must(ffverify.New(es[0].program(), ffverify.Options{Seed: 5, Samples: -1}))
			for i := range es {
				e := es[i]
				if reverse {
					e = es[len(es)-1-i]
				}
				cold := must(ffverify.New(e.program(), ffverify.Options{Seed: 5, Samples: -1, SharedInputs: -1}))
				a, errA := warm.Verify(e.candidate())
				b, errB := cold.Verify(e.candidate())
				if (errA == nil) != (errB == nil) || a.String() != b.String() {
					t.Errorf("%s (after %d others): with the memo %v (%v), without %v (%v)", e.name, i, a, errA, b, errB)
				}
			}
		}
	}
	if served < 3 {
		t.Errorf("%d programs with several candidates in the catalogue, want at least 3", served)
	}
}

// TestRejectIgnoresTheMemo: Reject decides alone (a cached result is
// checked with it), so it looks as far where the full check would have the
// products' memo as where it would not.
func TestRejectIgnoresTheMemo(t *testing.T) {
	rejected := 0
	for _, e := range catalogue() {
		program, candidate := e.program(), e.candidate()
		memo := must(ffverify.New(program, ffverify.Options{Seed: 3}))
		none := must(ffverify.New(program, ffverify.Options{Seed: 3, SharedInputs: -1}))
		a, errA := memo.Reject(candidate)
		b, errB := none.Reject(candidate)
		if a != b || (errA == nil) != (errB == nil) {
			t.Errorf("%s: Reject = %v (%v) with the memo, %v (%v) without", e.name, a, errA, b, errB)
		}
		if a {
			rejected++
		}
	}
	if rejected < 10 {
		t.Errorf("Reject rejects %d catalogue entries, want at least 10", rejected)
	}
	// A position of rms_norm(X+Y) at 64×4096 depends on a whole row: more
	// than a 256th of the graph's values, less than a 16th.
	norm := func(k ugraph.OpKind) *kernel.Graph {
		g := newKG()
		return g.outputs(g.opA(ugraph.OpRMSNorm, dim(1), g.op(k, g.in(64, 4096), g.in(64, 4096))))
	}
	v := must(ffverify.New(norm(ugraph.OpAdd), ffverify.Options{Seed: 3}))
	if !ffverify.SharesInputs(v) || !must(v.Reject(norm(ugraph.OpMul))) {
		t.Error("Reject with the memo does not reject rms_norm(X·Y) for rms_norm(X+Y) at 64×4096")
	}
}
