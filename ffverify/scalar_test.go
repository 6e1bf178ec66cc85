package ffverify_test

import (
	"fmt"
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
// wrote the wrong graph at exit 0. Each constant is now a product of
// random images of its primes (ffverify's constants), and each pair must
// be rejected.

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

// Scalars whose products are equal as rationals (0.1·0.3 = 0.03) are one
// element, and a candidate that moves them around is equivalent; so is one
// that moves 1/sqrt(128) or its negation around.
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

	// X·(-s)·Y against -((X·Y)·s): the sign is kept.
	s := 1 / math.Sqrt(128)
	k = newKG()
	x, w := k.in(8, 64), k.in(8, 64)
	program = k.outputs(k.op(ugraph.OpMul, k.opA(ugraph.OpMulScalar, scale(-s), x), w))
	k = newKG()
	x, w = k.in(8, 64), k.in(8, 64)
	moved := k.opA(ugraph.OpMulScalar, scale(-1), k.opA(ugraph.OpMulScalar, scale(s), k.op(ugraph.OpMul, x, w)))
	r, err = ffverify.Equivalent(program, k.outputs(moved), ffverify.Options{Seed: 1, Trials: 2})
	if err != nil || !r.Equivalent {
		t.Fatalf("the scalar moved: %v, %v; want equivalent", r, err)
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

// Found by review: exact scalars and counts multiplied as the field's own
// images of their rationals, and products of several can be chosen to be
// one element modulo P·Q: 9199·13834·6927·10359·8143·149 = 1 + 4805·P·Q,
// and 1/(3547·3467·3963·3505) ≡ 13499/13412. superopt wrote the first
// pair's wrong graph at exit 0.
func TestChosenProductsOfConstants(t *testing.T) {
	scaled := func(k *kg, x kernel.TensorID, cs ...float64) kernel.TensorID {
		for _, c := range cs {
			x = k.opA(ugraph.OpMulScalar, ugraph.Attr{Scalars: [2]float64{c}}, x)
		}
		return x
	}
	t.Run("X·9199·13834·6927 + Y/(10359·8143·149) as (X+Y)/(10359·8143·149)", func(t *testing.T) {
		den := []float64{1.0 / 10359, 1.0 / 8143, 1.0 / 149}
		k := newKG()
		x, y := k.in(8, 64), k.in(8, 64)
		program := k.outputs(k.op(ugraph.OpAdd, scaled(k, x, 9199, 13834, 6927), scaled(k, y, den...)))
		k = newKG()
		x, y = k.in(8, 64), k.in(8, 64)
		mustReject(t, program, k.outputs(scaled(k, k.op(ugraph.OpAdd, x, y), den...)))
	})
	t.Run("four means as the sums times 13499/13412", func(t *testing.T) {
		ns := []int{3547, 3467, 3963, 3505}
		build := func(means bool) *kernel.Graph {
			k := newKG()
			var prod kernel.TensorID
			for i, n := range ns {
				s := k.opA(ugraph.OpReduction, dim(1), k.in(1, n))
				if means {
					s = scaled(k, s, 1/float64(n))
				}
				if i == 0 {
					prod = s
				} else {
					prod = k.op(ugraph.OpMul, prod, s)
				}
			}
			if !means {
				prod = scaled(k, prod, 13499, 1.0/13412)
			}
			return k.outputs(prod)
		}
		mustReject(t, build(true), build(false))
	})
}

// Constants that are one rational are one element: the model is
// multiplicative. mul_scalar(Σx, 1/n) is the mean accumulator over n terms
// for every n (a hand-written RMSNorm over LLaMA-70B's 28672 columns keeps
// its fusion; once, past 2²⁰ terms or a prime factor past 2¹⁶, it did not),
// X·1e-6·1e6 is X, and F iterations that sum a tile the loop loads whole
// are X·F, as a seed that scales the sum by 1/F needs.
func TestConstantsThatAreOneRational(t *testing.T) {
	scale := func(c float64) ugraph.Attr { return ugraph.Attr{Scalars: [2]float64{c}} }
	equivalent := func(t *testing.T, a, b *kernel.Graph) {
		t.Helper()
		r, err := ffverify.Equivalent(a, b, ffverify.Options{Seed: 1, Trials: 2})
		if err != nil || !r.Equivalent {
			t.Errorf("Equivalent: %v, %v; want equivalent", r, err)
		}
		for _, g := range []*kernel.Graph{a, b} {
			if err := ffverify.LazyMismatch(g, 1, 0, 64); err != nil {
				t.Error(err)
			}
		}
	}
	for _, n := range []int{16384, 28672, 1 << 20, 1<<20 + 64, 64 * 65537} {
		t.Run(fmt.Sprintf("mean over %d", n), func(t *testing.T) {
			build := func(accum bool) *kernel.Graph {
				k := newKG()
				x := k.in(1, n)
				if !accum {
					return k.outputs(k.opA(ugraph.OpMulScalar, scale(1/float64(n)), k.opA(ugraph.OpReduction, dim(1), x)))
				}
				b := newBG(block.Dim3{1, 1, 1}, 64, n/64)
				tx := b.in(k.shape(x), block.Map{-1, -1, -1}, 1)
				b.out(b.accum(tx, ugraph.AccumMean), block.Map{-1, -1, -1})
				return k.outputs(k.custom(b, x)[0])
			}
			equivalent(t, build(false), build(true))
		})
	}
	t.Run("X·1e-6·1e6 as X", func(t *testing.T) {
		k := newKG()
		x := k.in(8, 64)
		program := k.outputs(k.op(ugraph.OpRelu, x))
		k = newKG()
		x = k.in(8, 64)
		equivalent(t, program, k.outputs(k.op(ugraph.OpRelu, k.opA(ugraph.OpMulScalar, scale(1e6), k.opA(ugraph.OpMulScalar, scale(1e-6), x)))))
	})
	summed := func(scaled float64) *kernel.Graph {
		k := newKG()
		x := k.in(8, 64)
		b := newBG(block.Dim3{8, 1, 1}, 4, 64)
		tx := b.in(k.shape(x), block.Map{0, -1, -1}, -1)
		sum := b.accum(b.op(ugraph.OpExp, tx), ugraph.AccumNone)
		if scaled != 0 {
			sum = b.opA(ugraph.OpMulScalar, scale(scaled), sum)
		}
		b.out(sum, block.Map{0, -1, -1})
		return k.outputs(k.custom(b, x)[0])
	}
	t.Run("exp(X) summed over 4 iterations, times 1/4, as exp(X)", func(t *testing.T) {
		k := newKG()
		equivalent(t, k.outputs(k.op(ugraph.OpExp, k.in(8, 64))), summed(0.25))
	})
	t.Run("exp(X) summed over 4 iterations as exp(X)·4", func(t *testing.T) {
		k := newKG()
		equivalent(t, k.outputs(k.opA(ugraph.OpMulScalar, scale(4), k.op(ugraph.OpExp, k.in(8, 64)))), summed(0))
	})
	t.Run("exp(X) summed over 4 iterations, times 1/3, is not exp(X)", func(t *testing.T) {
		k := newKG()
		mustReject(t, k.outputs(k.op(ugraph.OpExp, k.in(8, 64))), summed(1.0/3))
	})
}

// Verifiers of different programs share a memo; a graph-defined kernel's
// results, which the memo keeps for the candidates that run it again,
// depend on the program's constants (its scalars are the program's φ's),
// so the memo keeps them apart: each candidate below, its program
// computed another way, is equivalent under its own verifier.
func TestMemoKeepsEachProgramsConstants(t *testing.T) {
	memo := must(ffverify.NewMemo(ffverify.Options{Seed: 3}))
	opts := ffverify.Options{Seed: 3, Memo: memo}
	for _, extra := range []float64{2, 3, 5} {
		k := newKG()
		x := k.in(8, 64)
		half := k.opA(ugraph.OpMulScalar, ugraph.Attr{Scalars: [2]float64{0.5}}, x)
		program := k.outputs(half, k.opA(ugraph.OpMulScalar, ugraph.Attr{Scalars: [2]float64{extra}}, x))
		k = newKG()
		x = k.in(8, 64)
		b := newBG(block.Dim3{8, 1, 1}, 1, 64)
		tx := b.in(k.shape(x), block.Map{0, -1, -1}, -1)
		b.out(b.opA(ugraph.OpMulScalar, ugraph.Attr{Scalars: [2]float64{0.5}}, b.accum(tx, ugraph.AccumNone)), block.Map{0, -1, -1})
		candidate := k.outputs(k.custom(b, x)[0], k.opA(ugraph.OpMulScalar, ugraph.Attr{Scalars: [2]float64{extra}}, x))
		v := must(ffverify.New(program, opts))
		if r, err := v.Verify(candidate); err != nil || !r.Equivalent {
			t.Errorf("with x·%v beside it: %v, %v; want equivalent", extra, r, err)
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
