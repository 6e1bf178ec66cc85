package ffverify_test

import (
	"math"
	"testing"

	"github.com/mirage-go/mirage/ffverify"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// pq is P·Q, the modulus the fields keep integers to.
const pq = 2147481143 * 1073740571

// times is x summed with itself k times, by doubling and adding.
func (k *kg) times(x kernel.TensorID, n uint64) kernel.TensorID {
	acc := kernel.TensorID(-1)
	for ; n > 0; n >>= 1 {
		if n&1 != 0 {
			if acc < 0 {
				acc = x
			} else {
				acc = k.op(ugraph.OpAdd, acc, x)
			}
		}
		x = k.op(ugraph.OpAdd, x, x)
	}
	return acc
}

// Each bound below is worked out by hand from the rules in
// coefficients.go: log2 of the L1 norms of a value's numerator and
// denominator, the largest over the graph.
func TestCoefficientsOf(t *testing.T) {
	for _, tc := range []struct {
		name     string
		graph    func() *kernel.Graph
		num, den float64
	}{
		{"an input", func() *kernel.Graph { k := newKG(); return k.outputs(k.in(4, 8)) }, 0, 0},
		{"x + x", func() *kernel.Graph { k := newKG(); x := k.in(4, 8); return k.outputs(k.op(ugraph.OpAdd, x, x)) }, 1, 0},
		{"a matmul sums K products", func() *kernel.Graph {
			k := newKG()
			return k.outputs(k.op(ugraph.OpMatmul, k.in(8, 64), k.in(64, 32)))
		}, 6, 0},
		{"an opaque op is a variable; its argument counts", func() *kernel.Graph {
			k := newKG()
			return k.outputs(k.op(ugraph.OpSilu, k.op(ugraph.OpMatmul, k.in(8, 64), k.in(64, 32))))
		}, 6, 0},
		{"a constant is a monomial", func() *kernel.Graph {
			k := newKG()
			return k.outputs(k.opA(ugraph.OpMulScalar, ugraph.Attr{Scalars: [2]float64{0.1}}, k.in(4, 8)))
		}, 0, 0},
		{"squares double", func() *kernel.Graph {
			k := newKG()
			x := k.in(4, 8)
			return k.outputs(k.op(ugraph.OpSquare, k.op(ugraph.OpAdd, x, x)))
		}, 2, 0},
		// rms_norm over 64: its root's argument Σx² has 64 terms.
		{"rms_norm's root is a variable", func() *kernel.Graph {
			k := newKG()
			return k.outputs(k.opA(ugraph.OpRMSNorm, dim(1), k.in(4, 64)))
		}, 6, 0},
		// softmax(S)·V over 128 keys: e/Σe has denominator Σe (128
		// terms), one polynomial along the keys, which the matmul sums.
		{"softmax times values", func() *kernel.Graph {
			k := newKG()
			e := k.op(ugraph.OpExp, k.in(4, 128))
			p := k.op(ugraph.OpDiv, e, k.opA(ugraph.OpReduction, dim(1), e))
			return k.outputs(k.op(ugraph.OpMatmul, p, k.in(128, 16)))
		}, 7, 7},
		// A denominator that differs term by term multiplies: 1/x summed
		// over 4 is Σ∏_{j≠i} x_j / ∏ x_j (4 terms over a monomial).
		{"inverses summed", func() *kernel.Graph {
			k := newKG()
			x := k.in(2, 4)
			return k.outputs(k.opA(ugraph.OpReduction, dim(1), k.op(ugraph.OpDiv, k.in(2, 1), x)))
		}, 2, 0},
		{"sums over sums differ term by term", func() *kernel.Graph {
			k := newKG()
			x := k.in(2, 4)
			s := k.op(ugraph.OpAdd, x, k.in(2, 4)) // L1 2, in the denominator
			return k.outputs(k.opA(ugraph.OpReduction, dim(1), k.op(ugraph.OpDiv, k.in(2, 1), s)))
		}, 2 + 3, 4},
		{"a term repeated 1 + P·Q times", func() *kernel.Graph { k := newKG(); return k.outputs(k.times(k.in(4, 8), 1+pq)) }, 61, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ffverify.CoefficientsOf(tc.graph())
			if math.Abs(c.Num-tc.num) > 1e-9 || math.Abs(c.Den-tc.den) > 1e-9 {
				t.Errorf("CoefficientsOf = %+v, want {Num: %g, Den: %g}", c, tc.num, tc.den)
			}
		})
	}
}

// A block graph's sums count as the kernel op's: the tiled matmul of
// K = 64 in a for-loop of 8 sums 8 tiles of 8 products.
func TestCoefficientsOfBlockGraphs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		graph func() *kernel.Graph
		num   float64
	}{
		{"a tiled matmul", func() *kernel.Graph { return matmulTiled(16, 64, 16, block.Dim3{2, 2, 1}, 8) }, 6},
		// A tile the loop does not walk is summed once and scaled by
		// φ(F), a monomial: its 8 iterations add nothing.
		{"an accumulator of an unwalked tile", rowSumKernel(-1, 8, ugraph.AccumNone), 0},
		{"an accumulator of a walked tile", rowSumKernel(1, 8, ugraph.AccumNone), 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if c := ffverify.CoefficientsOf(tc.graph()); math.Abs(c.Num-tc.num) > 1e-9 || c.Den != 0 {
				t.Errorf("CoefficientsOf = %+v, want {Num: %g, Den: 0}", c, tc.num)
			}
		})
	}
	// Every correct rewriting in the catalogue, fused or not, is bounded,
	// and small enough that the fields see every difference. (Wrong ones
	// need not be: a softmax over the wrong dim sums fractions whose
	// denominators differ term by term.)
	for _, e := range catalogue() {
		if !e.equivalent {
			continue
		}
		a, b := ffverify.CoefficientsOf(e.program()), ffverify.CoefficientsOf(e.candidate())
		if !a.Exact(b) || math.IsInf(b.Num, 0) || math.IsInf(b.Den, 0) {
			t.Errorf("%s: program %+v, candidate %+v: want both bounded and exact", e.name, a, b)
		}
	}
}

func TestCoefficientsExact(t *testing.T) {
	for _, tc := range []struct {
		a, b  ffverify.Coefficients
		exact bool
	}{
		{ffverify.Coefficients{}, ffverify.Coefficients{}, true},
		{ffverify.Coefficients{Num: 59}, ffverify.Coefficients{Num: 58}, true},
		{ffverify.Coefficients{Num: 59}, ffverify.Coefficients{Num: 59}, false}, // 2⁶⁰ + 2⁶⁰ is past P·Q/2
		{ffverify.Coefficients{Num: 30, Den: 29}, ffverify.Coefficients{Num: 29, Den: 29}, true},
		{ffverify.Coefficients{Num: 31, Den: 29}, ffverify.Coefficients{Num: 30, Den: 30}, false},
		{ffverify.Coefficients{Num: math.Inf(1)}, ffverify.Coefficients{}, false},
	} {
		if got := tc.a.Exact(tc.b); got != tc.exact {
			t.Errorf("%+v.Exact(%+v) = %v, want %v", tc.a, tc.b, got, tc.exact)
		}
	}
}
