package ffverify_test

import (
	"math"
	"testing"

	"github.com/mirage-go/mirage/ffverify"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// Each pair below differs in the reals only through scalars (or counts)
// that the model once took at their rationals' elements, where a float can
// be built to share another's residues: every draw agreed, and superopt
// wrote the wrong graph at exit 0. Each scalar that is not small is now a
// variable (scalarModel), and each pair must be rejected.

// Scalars whose rationals are one element modulo P·Q. The first three
// pairs are the ones review found (superopt wrote (X+Y)·b for X·a + Y·b);
// the others are built for P and Q by CollidingFloat.
func TestScalarsSharingAnElement(t *testing.T) {
	scale := func(c float64) ugraph.Attr { return ugraph.Attr{Scalars: [2]float64{c}} }
	invSqrt2, invSqrt32 := 0.7071067811865475, 1/math.Sqrt(32)
	c := ffverify.CollidingFloat(invSqrt2, 1.5)
	for _, tc := range []struct {
		name           string
		program, wrong func(k *kg, x, y kernel.TensorID) kernel.TensorID
	}{
		{"X·a + Y·b as (X+Y)·b", // superopt --max-candidates 0 wrote the second
			func(k *kg, x, y kernel.TensorID) kernel.TensorID {
				return k.op(ugraph.OpAdd, k.opA(ugraph.OpMulScalar, scale(invSqrt2), x), k.opA(ugraph.OpMulScalar, scale(1.0239865361364665e7), y))
			},
			func(k *kg, x, y kernel.TensorID) kernel.TensorID {
				return k.opA(ugraph.OpMulScalar, scale(1.0239865361364665e7), k.op(ugraph.OpAdd, x, y))
			}},
		{"X·3 as X·4.69e21",
			func(k *kg, x, _ kernel.TensorID) kernel.TensorID { return k.opA(ugraph.OpMulScalar, scale(3), x) },
			func(k *kg, x, _ kernel.TensorID) kernel.TensorID {
				return k.opA(ugraph.OpMulScalar, scale(4.6877678991400915e21), x)
			}},
		{"X/sqrt(32) as X·2559966.34",
			func(k *kg, x, _ kernel.TensorID) kernel.TensorID {
				return k.opA(ugraph.OpMulScalar, scale(invSqrt32), x)
			},
			func(k *kg, x, _ kernel.TensorID) kernel.TensorID {
				return k.opA(ugraph.OpMulScalar, scale(2559966.340341166), x)
			}},
		{"(X·a)·1.5 as X·c, c ≡ 1.5a: a product", // the candidate has c alone
			func(k *kg, x, _ kernel.TensorID) kernel.TensorID {
				return k.opA(ugraph.OpMulScalar, scale(1.5), k.opA(ugraph.OpMulScalar, scale(invSqrt2), x))
			},
			func(k *kg, x, _ kernel.TensorID) kernel.TensorID { return k.opA(ugraph.OpMulScalar, scale(c), x) }},
		{"X·c1 as X, c1 ≡ 1",
			func(k *kg, x, _ kernel.TensorID) kernel.TensorID {
				return k.opA(ugraph.OpMulScalar, scale(ffverify.CollidingFloat()), x)
			},
			func(k *kg, x, _ kernel.TensorID) kernel.TensorID {
				return k.op(ugraph.OpAdd, x, k.op(ugraph.OpSub, x, x))
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			build := func(f func(k *kg, x, y kernel.TensorID) kernel.TensorID) *kernel.Graph {
				k := newKG()
				x, y := k.in(8, 64), k.in(8, 64)
				return k.outputs(f(k, x, y))
			}
			program, wrong := build(tc.program), build(tc.wrong)
			mustReject(t, program, wrong)
		})
	}
}

// Small scalars are exact: whose products are equal as rationals
// (0.1·0.3 = 0.03) are one element, and a candidate that moves them around
// is equivalent; so is one that moves a variable (1/sqrt(128), 1e-6) or
// its negation around.
func TestScalarsTheModelTellsApart(t *testing.T) {
	scale := func(c float64) ugraph.Attr { return ugraph.Attr{Scalars: [2]float64{c}} }
	scalars := []float64{0.1, 0.3, 0.03, 0.5, 2, 1.0 / 3, 1 / math.Sqrt(128), -1 / math.Sqrt(128), 1e-6, 4096, 1.0 / 4096, -7.5}
	k := newKG()
	x := k.in(8, 64)
	y := x
	for _, c := range scalars {
		y = k.op(ugraph.OpAdd, y, k.opA(ugraph.OpMulScalar, scale(c), x))
	}
	program := k.outputs(y)
	// (X·0.1)·0.3 in place of X·0.03, the rest as they are.
	k = newKG()
	x = k.in(8, 64)
	y = x
	for _, c := range scalars {
		term := k.opA(ugraph.OpMulScalar, scale(c), x)
		if c == 0.03 {
			term = k.opA(ugraph.OpMulScalar, scale(0.3), k.opA(ugraph.OpMulScalar, scale(0.1), x))
		}
		y = k.op(ugraph.OpAdd, y, term)
	}
	r, err := ffverify.Equivalent(program, k.outputs(y), ffverify.Options{Seed: 1, Trials: 2})
	if err != nil || !r.Equivalent {
		t.Fatalf("Equivalent: %v, %v; want equivalent", r, err)
	}

	// X·(-s)·Y against -((X·Y)·s), s a variable: its sign is kept.
	s := 1 / math.Sqrt(128)
	k = newKG()
	x, w := k.in(8, 64), k.in(8, 64)
	program = k.outputs(k.op(ugraph.OpMul, k.opA(ugraph.OpMulScalar, scale(-s), x), w))
	k = newKG()
	x, w = k.in(8, 64), k.in(8, 64)
	moved := k.opA(ugraph.OpMulScalar, scale(-1), k.opA(ugraph.OpMulScalar, scale(s), k.op(ugraph.OpMul, x, w)))
	r, err = ffverify.Equivalent(program, k.outputs(moved), ffverify.Options{Seed: 1, Trials: 2})
	if err != nil || !r.Equivalent {
		t.Fatalf("the variable moved: %v, %v; want equivalent", r, err)
	}
}

// Found by review: exp's P-residue, G^(x mod Q), reads only its
// argument's Q-residue, and a scalar whose rational has a numerator that
// is a multiple of Q (1073.740571 = Q/10⁶) was 0 modulo Q. So
// exp(X·s)·c and exp(X·s')·c were one function of the model whenever
// s ≡ s' (mod Q), though s and s' differ modulo P. The scalars look
// ordinary: 0.5 and 12345/1073765261 ≈ 1.15e-5 agree modulo Q.
func TestScalarsAgreeingModuloQUnderExp(t *testing.T) {
	scale := func(c float64) ugraph.Attr { return ugraph.Attr{Scalars: [2]float64{c}} }
	const (
		c     = 1073.740571          // Q/10⁶: 0 modulo Q
		half  = 0.5                  // 1/2
		small = 12345.0 / 1073765261 // 12345/(2·12345+Q) ≡ 1/2 (mod Q)
		one   = 1.0 / 1073740572     // 1/(Q+1) ≡ 1 (mod Q)
	)
	for _, tc := range []struct {
		name             string
		program, written func(k *kg, x, y kernel.TensorID) kernel.TensorID
	}{
		{"exp(X)·c as exp(X/(Q+1))·c",
			func(k *kg, x, _ kernel.TensorID) kernel.TensorID {
				return k.opA(ugraph.OpMulScalar, scale(c), k.op(ugraph.OpExp, x))
			},
			func(k *kg, x, _ kernel.TensorID) kernel.TensorID {
				return k.opA(ugraph.OpMulScalar, scale(c), k.op(ugraph.OpExp, k.opA(ugraph.OpMulScalar, scale(one), x)))
			}},
		{"exp(X·0.5)·c + Y·1.15e-5 with the two scalars swapped in the exp", // what superopt writes
			func(k *kg, x, y kernel.TensorID) kernel.TensorID {
				e := k.opA(ugraph.OpMulScalar, scale(c), k.op(ugraph.OpExp, k.opA(ugraph.OpMulScalar, scale(half), x)))
				return k.op(ugraph.OpAdd, e, k.opA(ugraph.OpMulScalar, scale(small), y))
			},
			func(k *kg, x, y kernel.TensorID) kernel.TensorID {
				e := k.opA(ugraph.OpMulScalar, scale(c), k.op(ugraph.OpExp, k.opA(ugraph.OpMulScalar, scale(small), x)))
				return k.op(ugraph.OpAdd, e, k.opA(ugraph.OpMulScalar, scale(small), y))
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			build := func(f func(k *kg, x, y kernel.TensorID) kernel.TensorID) *kernel.Graph {
				k := newKG()
				x, y := k.in(8, 64), k.in(8, 64)
				return k.outputs(f(k, x, y))
			}
			program, wrong := build(tc.program), build(tc.written)
			mustReject(t, program, wrong)
		})
	}
}

// Found by review: sums of scalar terms that vanish modulo P·Q, though
// no two terms share an element. With a ≡ b (mod P) and s ≡ s' (mod Q),
// (X·a - X·b)·s and (X·a - X·b)·s' differ by X·(a-b)·(s-s') ≡ 0 (mod P·Q).
// All four scalars look ordinary (0.5, 5.75e-6, 0.25, 1.15e-5).
func TestScalarSumsThatVanish(t *testing.T) {
	scale := func(c float64) ugraph.Attr { return ugraph.Attr{Scalars: [2]float64{c}} }
	const (
		a  = 0.5
		b  = 12345.0 / 2147505833 // 12345/(2·12345+P) ≡ 1/2 (mod P)
		s  = 0.25
		s2 = 12345.0 / 1073789951 // 12345/(4·12345+Q) ≡ 1/4 (mod Q)
	)
	build := func(last float64) *kernel.Graph {
		k := newKG()
		x, y := k.in(8, 64), k.in(8, 64)
		d := k.op(ugraph.OpSub, k.opA(ugraph.OpMulScalar, scale(a), x), k.opA(ugraph.OpMulScalar, scale(b), x))
		return k.outputs(k.op(ugraph.OpAdd, k.opA(ugraph.OpMulScalar, scale(last), d), k.opA(ugraph.OpMulScalar, scale(s2), y)))
	}
	program, wrong := build(s), build(s2)
	mustReject(t, program, wrong)
}

// The same with one scalar b = 1/(1+3P) ≈ 1.55e-10, which is 1 modulo P
// and 1/4 modulo Q: (X - X·b)·0.25 and (X - X·b)·b differ by
// X·(1-b)·(1/4-b) ≡ 0. superopt wrote the second (as X·b - (X·b)·b, its
// best candidate) for the first (reproducer: /tmp/s35/r1w/sums3.py).
func TestScalarSumsThatVanishOneScalar(t *testing.T) {
	scale := func(c float64) ugraph.Attr { return ugraph.Attr{Scalars: [2]float64{c}} }
	const b = 1.0 / 6442443430 // 1/(1+3P)
	build := func(last float64) *kernel.Graph {
		k := newKG()
		x := k.in(8, 64)
		d := k.op(ugraph.OpSub, x, k.opA(ugraph.OpMulScalar, scale(b), x))
		return k.outputs(k.opA(ugraph.OpMulScalar, scale(last), d))
	}
	program, wrong := build(0.25), build(b)
	mustReject(t, program, wrong)
}

// Found by review: counts enter the model as field elements too (the
// mean's and rms's 1/n, an accumulator's F copies of a loop-invariant
// tile), and a program's scalar can be built to be the same element as a
// count, as CollidingFloat does for scalars.
func TestCountsTheModelConfuses(t *testing.T) {
	scale := func(c float64) ugraph.Attr { return ugraph.Attr{Scalars: [2]float64{c}} }
	inv64 := ffverify.CollidingFloat(1.0 / 64) // ≡ 1/64 in the model, not 1/64
	four := ffverify.CollidingFloat(4)         // ≡ 4 in the model, not 4
	for _, tc := range []struct {
		name             string
		program, written func() *kernel.Graph
	}{
		{"X/sqrt(Σx²·c) as rms_norm(X), c ≡ 1/64",
			func() *kernel.Graph {
				k := newKG()
				x := k.in(8, 64)
				ss := k.opA(ugraph.OpMulScalar, scale(inv64), k.opA(ugraph.OpReduction, dim(1), k.op(ugraph.OpSquare, x)))
				return k.outputs(k.op(ugraph.OpDiv, x, k.op(ugraph.OpSqrt, ss)))
			},
			func() *kernel.Graph {
				k := newKG()
				return k.outputs(k.opA(ugraph.OpRMSNorm, dim(1), k.in(8, 64)))
			}},
		{"Σx·c as the mean accumulator, c ≡ 1/64",
			func() *kernel.Graph {
				k := newKG()
				return k.outputs(k.opA(ugraph.OpMulScalar, scale(inv64), k.opA(ugraph.OpReduction, dim(1), k.in(8, 64))))
			},
			func() *kernel.Graph {
				k := newKG()
				x := k.in(8, 64)
				b := newBG(block.Dim3{8, 1, 1}, 1, 64)
				tx := b.in(k.shape(x), block.Map{0, -1, -1}, -1)
				b.out(b.accum(tx, ugraph.AccumMean), block.Map{0, -1, -1})
				return k.outputs(k.custom(b, x)[0])
			}},
		{"X·c as X summed over 4 iterations, c ≡ 4",
			func() *kernel.Graph {
				k := newKG()
				return k.outputs(k.opA(ugraph.OpMulScalar, scale(four), k.in(8, 64)))
			},
			func() *kernel.Graph {
				k := newKG()
				x := k.in(8, 64)
				b := newBG(block.Dim3{8, 1, 1}, 4, 64)
				tx := b.in(k.shape(x), block.Map{0, -1, -1}, -1)
				b.out(b.accum(tx, ugraph.AccumNone), block.Map{0, -1, -1})
				return k.outputs(k.custom(b, x)[0])
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			program, wrong := tc.program(), tc.written()
			mustReject(t, program, wrong)
		})
	}
}

// mul_scalar(Σx, 1/n) is the mean accumulator over n terms for n up to
// 2²⁰: a scalar ±1/n is exact there (found by review: past 2¹⁴, a
// hand-written RMSNorm over LLaMA-70B's 28672 columns lost its fusion).
// Past 2²⁰, 1/n is a variable, and the two differ in the model.
func TestMeanAsAScaledSum(t *testing.T) {
	for _, tc := range []struct {
		n     int
		equal bool
	}{{16384, true}, {28672, true}, {1 << 20, true}, {1<<20 + 64, false}} {
		build := func(accum bool) *kernel.Graph {
			k := newKG()
			x := k.in(1, tc.n)
			if !accum {
				return k.outputs(k.opA(ugraph.OpMulScalar, ugraph.Attr{Scalars: [2]float64{1 / float64(tc.n)}}, k.opA(ugraph.OpReduction, dim(1), x)))
			}
			b := newBG(block.Dim3{1, 1, 1}, 64, tc.n/64)
			tx := b.in(k.shape(x), block.Map{-1, -1, -1}, 1)
			b.out(b.accum(tx, ugraph.AccumMean), block.Map{-1, -1, -1})
			return k.outputs(k.custom(b, x)[0])
		}
		r, err := ffverify.Equivalent(build(false), build(true), ffverify.Options{Seed: 1, Trials: 2})
		if err != nil {
			t.Fatal(err)
		}
		if r.Equivalent != tc.equal {
			t.Errorf("n = %d: %v, want equivalent %v", tc.n, r, tc.equal)
		}
	}
}

// mustReject fails t unless the pair, which must differ in the reals, is
// rejected by Equivalent and by a Verifier of program alike.
func mustReject(t *testing.T, program, wrong *kernel.Graph) {
	t.Helper()
	differInTheReals(t, program, wrong, 7)
	opts := ffverify.Options{Seed: 1, Trials: 2}
	if r, err := ffverify.Equivalent(program, wrong, opts); err != nil || r.Equivalent {
		t.Errorf("Equivalent: %v, %v; the pair differs in the reals", r, err)
	}
	v, err := ffverify.New(program, opts)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := v.Verify(wrong); err != nil || r.Equivalent {
		t.Errorf("Verify: %v, %v; the pair differs in the reals", r, err)
	}
}
