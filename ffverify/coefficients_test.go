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

// times is x summed with itself n times, by doubling and adding.
func (k *kg) times(x kernel.TensorID, n uint64) kernel.TensorID {
	return k.byBits(x, n, ugraph.OpAdd, func(x kernel.TensorID) kernel.TensorID { return k.op(ugraph.OpAdd, x, x) })
}

// power is x to the n, by squaring and multiplying.
func (k *kg) power(x kernel.TensorID, n uint64) kernel.TensorID {
	return k.byBits(x, n, ugraph.OpMul, func(x kernel.TensorID) kernel.TensorID { return k.op(ugraph.OpSquare, x) })
}

// byBits combines with op the steps of x, one per bit of n, where the
// bit is set (double and add; square and multiply).
func (k *kg) byBits(x kernel.TensorID, n uint64, op ugraph.OpKind, step func(kernel.TensorID) kernel.TensorID) kernel.TensorID {
	acc := kernel.TensorID(-1)
	for ; n > 0; n >>= 1 {
		if n&1 != 0 {
			if acc < 0 {
				acc = x
			} else {
				acc = k.op(op, acc, x)
			}
		}
		x = step(x)
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
		degree   float64
	}{
		{"an input", func() *kernel.Graph { k := newKG(); return k.outputs(k.in(4, 8)) }, 0, 0, 1},
		{"x + x", func() *kernel.Graph { k := newKG(); x := k.in(4, 8); return k.outputs(k.op(ugraph.OpAdd, x, x)) }, 1, 0, 1},
		{"a matmul sums K products", func() *kernel.Graph {
			k := newKG()
			return k.outputs(k.op(ugraph.OpMatmul, k.in(8, 64), k.in(64, 32)))
		}, 6, 0, 2},
		{"an opaque op is a variable; its argument counts", func() *kernel.Graph {
			k := newKG()
			return k.outputs(k.op(ugraph.OpSilu, k.op(ugraph.OpMatmul, k.in(8, 64), k.in(64, 32))))
		}, 6, 0, 2},
		{"a constant is a monomial", func() *kernel.Graph {
			k := newKG()
			return k.outputs(k.opA(ugraph.OpMulScalar, ugraph.Attr{Scalars: [2]float64{0.1}}, k.in(4, 8)))
		}, 0, 0, 2},
		{"squares double", func() *kernel.Graph {
			k := newKG()
			x := k.in(4, 8)
			return k.outputs(k.op(ugraph.OpSquare, k.op(ugraph.OpAdd, x, x)))
		}, 2, 0, 2},
		// rms_norm over 64: its root's argument Σx² has 64 terms.
		{"rms_norm's root is a variable", func() *kernel.Graph {
			k := newKG()
			return k.outputs(k.opA(ugraph.OpRMSNorm, dim(1), k.in(4, 64)))
		}, 6, 0, 6},
		// softmax(S)·V over 128 keys: e/Σe has denominator Σe (128
		// terms), one polynomial along the keys, which the matmul sums.
		{"softmax times values", func() *kernel.Graph {
			k := newKG()
			e := k.op(ugraph.OpExp, k.in(4, 128))
			p := k.op(ugraph.OpDiv, e, k.opA(ugraph.OpReduction, dim(1), e))
			return k.outputs(k.op(ugraph.OpMatmul, p, k.in(128, 16)))
		}, 7, 7, 2},
		// A denominator that differs term by term multiplies: 1/x summed
		// over 4 is Σ∏_{j≠i} x_j / ∏ x_j (4 terms over a monomial).
		{"inverses summed", func() *kernel.Graph {
			k := newKG()
			x := k.in(2, 4)
			return k.outputs(k.opA(ugraph.OpReduction, dim(1), k.op(ugraph.OpDiv, k.in(2, 1), x)))
		}, 2, 0, 4},
		{"sums over sums differ term by term", func() *kernel.Graph {
			k := newKG()
			x := k.in(2, 4)
			s := k.op(ugraph.OpAdd, x, k.in(2, 4)) // L1 2, in the denominator
			return k.outputs(k.opA(ugraph.OpReduction, dim(1), k.op(ugraph.OpDiv, k.in(2, 1), s)))
		}, 2 + 3, 4, 4},
		{"a term repeated 1 + P·Q times", func() *kernel.Graph { k := newKG(); return k.outputs(k.times(k.in(4, 8), 1+pq)) }, math.Log2(1 + pq), 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ffverify.CoefficientsOf(tc.graph())
			if math.Abs(c.Num-tc.num) > 1e-6 || math.Abs(c.Den-tc.den) > 1e-6 || c.Degree != tc.degree {
				t.Errorf("CoefficientsOf = %+v, want {Num: %g, Den: %g, Degree: %g}", c, tc.num, tc.den, tc.degree)
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

// A denominator is one polynomial along a dim the grid lays blocks along
// only where every block divides by the same values: X/Y with Y split
// over 16 blocks, a column each, then summed over the columns, has all 16
// of Y's elements in its denominator (degree 16), though each block's
// tile is one column.
func TestCoefficientsOfDenominatorsAcrossBlocks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		yMap   block.Map
		degree float64
	}{
		{"divisor split over the blocks", block.Map{1, -1, -1}, 16},
		{"divisor the same in every block", block.Map{-1, -1, -1}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newKG()
			x := k.in(4, 16)
			y := k.in(4, 16)
			if tc.yMap[0] < 0 {
				y = k.in(4, 1)
			}
			b := newBG(block.Dim3{16, 1, 1}, 1, 1)
			tx := b.in(k.shape(x), block.Map{1, -1, -1}, -1)
			ty := b.in(k.shape(y), tc.yMap, -1)
			b.out(b.accum(b.op(ugraph.OpDiv, tx, ty), ugraph.AccumNone), block.Map{1, -1, -1})
			g := k.outputs(k.opA(ugraph.OpReduction, dim(1), k.custom(b, x, y)[0]))
			if c := ffverify.CoefficientsOf(g); c.Degree != tc.degree {
				t.Errorf("CoefficientsOf = %+v, want Degree %g", c, tc.degree)
			}
		})
	}
}

func TestCoefficientsExact(t *testing.T) {
	type c = ffverify.Coefficients
	for _, tc := range []struct {
		a, b  c
		exact bool
	}{
		{c{}, c{}, true},
		{c{Num: 58}, c{Num: 57}, true},
		{c{Num: 59}, c{Num: 58}, false}, // two of the first graph's values differ by up to 2⁶⁰
		{c{Num: 31, Den: 28}, c{Num: 29, Den: 28}, false},
		{c{Num: 20, Den: 28}, c{Num: 29, Den: 20}, true},
		{c{Den: 29.5}, c{}, false}, // a denominator could be a multiple of Q
		{c{ExpNum: 20, ExpDen: 7}, c{}, true},
		{c{ExpNum: 28}, c{ExpDen: 1}, false}, // exp's arguments are read modulo Q
		{c{Degree: 1 << 15}, c{Degree: 100}, true},
		{c{Degree: 1<<15 + 1}, c{}, false},
		{c{Num: math.Inf(1)}, c{}, false},
		{c{Degree: math.NaN()}, c{}, false},
	} {
		if got := tc.a.Exact(tc.b); got != tc.exact {
			t.Errorf("%+v.Exact(%+v) = %v, want %v", tc.a, tc.b, got, tc.exact)
		}
	}
}

// Pairs the fields find equal on every draw while float64 tells them apart
// (found by two reviews): Exact must not hold for any, so that package
// check evaluates them in float64.
func TestExactMissesNothingTheFieldsCannotSee(t *testing.T) {
	const (
		modP, modQ = 2147481143, 1073740571
		c          = 79512013438994319 // 2³¹·2³¹ - 29·c = P·Q
	)
	identity := func() *kernel.Graph { // X (and an unused Y)
		k := newKG()
		x := k.in(16, 64)
		k.in(16, 64)
		return k.outputs(k.opA(ugraph.OpMulScalar, ugraph.Attr{Scalars: [2]float64{1}}, x))
	}
	for _, tc := range []struct {
		name               string
		program, candidate func() *kernel.Graph // program nil: identity
	}{
		{"a term 1 + P·Q times", nil, func() *kernel.Graph {
			k := newKG()
			x := k.in(16, 64)
			k.in(16, 64)
			return k.outputs(k.times(x, 1+pq))
		}},
		// x^k = x over F_P and F_Q for k ≡ 1 mod Q(Q-1) (Fermat), and
		// X^k has L1 norm 1: only its degree tells.
		{"X to the 1+Q(Q-1)", nil, func() *kernel.Graph {
			k := newKG()
			x := k.in(16, 64)
			k.in(16, 64)
			return k.outputs(k.power(x, 1+modQ*(modQ-1)))
		}},
		// A divisor ≡ 0 mod P is inv(0) = 0 there, a numerator ≡ 0 mod Q
		// is 0 there: (Q·X)/(P·X) is 0 over both fields, Q/P in the reals.
		{"X + (Q·X)/(P·X)", nil, func() *kernel.Graph {
			k := newKG()
			x := k.in(16, 64)
			k.in(16, 64)
			return k.outputs(k.op(ugraph.OpAdd, x, k.op(ugraph.OpDiv, k.times(x, modQ), k.times(x, modP))))
		}},
		// exp's P-residue G^(x mod Q) is blind to Q·(anything) in its
		// argument; the factor Q makes the Q-residues 0.
		{"Q·exp(X + Q·1e-9·Y)", func() *kernel.Graph {
			k := newKG()
			x := k.in(16, 64)
			k.in(16, 64)
			return k.outputs(k.times(k.op(ugraph.OpExp, x), modQ))
		}, func() *kernel.Graph {
			k := newKG()
			x, y := k.in(16, 64), k.in(16, 64)
			s := k.opA(ugraph.OpMulScalar, ugraph.Attr{Scalars: [2]float64{1e-9}}, y)
			return k.outputs(k.times(k.op(ugraph.OpExp, k.op(ugraph.OpAdd, x, k.times(s, modQ))), modQ))
		}},
		// Two values of one graph: the arguments u = 2³¹X/(29Y) and
		// v = cX/(2³¹Y) of B's two silus differ by P·Q·X/(29·2³¹·Y).
		{"X + silu(u) - silu(v), u - v a multiple of P·Q", nil, func() *kernel.Graph {
			k := newKG()
			x, y := k.in(16, 64), k.in(16, 64)
			u := k.op(ugraph.OpDiv, k.times(x, 1<<31), k.times(y, 29))
			v := k.op(ugraph.OpDiv, k.times(x, c), k.times(y, 1<<31))
			return k.outputs(k.op(ugraph.OpAdd, x, k.op(ugraph.OpSub, k.op(ugraph.OpSilu, u), k.op(ugraph.OpSilu, v))))
		}},
		// exp's P-residue is a homomorphism: exp(a)·exp(b) is G^(a+b)
		// there. 1/10407 + 1/14207 ≡ 1/49630 (mod Q), so with
		// u = X/exp(Y), exp(u/10407)·exp(u/14207) is exp(u/49630) in the
		// P-residues; the factor Q makes the Q-residues 0.
		{"Q·exp(u/10407)·exp(u/14207) against Q·exp(u/49630)", func() *kernel.Graph {
			k := newKG()
			x, y := k.in(16, 64), k.in(16, 64)
			e := k.op(ugraph.OpExp, y)
			return k.outputs(k.times(k.op(ugraph.OpExp, k.op(ugraph.OpDiv, x, k.times(e, 49630))), modQ))
		}, func() *kernel.Graph {
			k := newKG()
			x, y := k.in(16, 64), k.in(16, 64)
			e := k.op(ugraph.OpExp, y)
			arg := func(beta uint64) kernel.TensorID { return k.op(ugraph.OpDiv, x, k.times(e, beta)) }
			return k.outputs(k.times(k.op(ugraph.OpMul, k.op(ugraph.OpExp, arg(10407)), k.op(ugraph.OpExp, arg(14207))), modQ))
		}},
		// A divisor that is the zero polynomial is 0 at every point of
		// both fields, inv(0) = 0, and infinite in the reals; or, under
		// an exp, finite: exp(d - Y²/d²), d = Z - Z, is exp(-inf) = 0 in
		// the reals and exp(0) = 1 over the fields.
		{"X + Y/(Z - Z)", nil, func() *kernel.Graph {
			k := newKG()
			x, y := k.in(16, 64), k.in(16, 64)
			return k.outputs(k.op(ugraph.OpAdd, x, k.op(ugraph.OpDiv, y, k.op(ugraph.OpSub, y, y))))
		}},
		{"X + Y/(0·Y)", nil, func() *kernel.Graph {
			k := newKG()
			x, y := k.in(16, 64), k.in(16, 64)
			return k.outputs(k.op(ugraph.OpAdd, x, k.op(ugraph.OpDiv, y, k.opA(ugraph.OpMulScalar, ugraph.Attr{}, y))))
		}},
		{"X + exp(d - Y²/d²) against X + exp(d), d = Y - Y", func() *kernel.Graph {
			k := newKG()
			x, y := k.in(16, 64), k.in(16, 64)
			return k.outputs(k.op(ugraph.OpAdd, x, k.op(ugraph.OpExp, k.op(ugraph.OpSub, y, y))))
		}, func() *kernel.Graph {
			k := newKG()
			x, y := k.in(16, 64), k.in(16, 64)
			d := k.op(ugraph.OpSub, y, y)
			arg := k.op(ugraph.OpSub, d, k.op(ugraph.OpDiv, k.op(ugraph.OpSquare, y), k.op(ugraph.OpSquare, d)))
			return k.outputs(k.op(ugraph.OpAdd, x, k.op(ugraph.OpExp, arg)))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := identity(), tc.candidate()
			if tc.program != nil {
				a = tc.program()
			}
			r, err := ffverify.Equivalent(a, b, ffverify.Options{Trials: 2, Seed: 1})
			if err != nil || !r.Equivalent {
				t.Fatalf("the fields: %v, %v; want equivalent (else this test shows nothing)", r, err)
			}
			if ca, cb := ffverify.CoefficientsOf(a), ffverify.CoefficientsOf(b); ca.Exact(cb) {
				t.Errorf("CoefficientsOf: program %+v, candidate %+v: Exact, but the fields cannot tell them apart", ca, cb)
			}
		})
	}
}

// Ops that no output reads are not bounded: they cannot change a verdict.
func TestCoefficientsOfLiveOpsOnly(t *testing.T) {
	k := newKG()
	x := k.in(16, 64)
	k.times(x, 1+pq) // read by nothing
	if c := ffverify.CoefficientsOf(k.outputs(k.op(ugraph.OpSilu, x))); c != (ffverify.Coefficients{Degree: 1}) {
		t.Errorf("CoefficientsOf = %+v, want the live silu's alone", c)
	}
}
