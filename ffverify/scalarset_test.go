package ffverify_test

import (
	"math"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/ffverify"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// Pairs of graphs that differ in the reals only in scalars whose rationals
// are one element of the model: every draw agrees on them, so the verifier
// must refuse the verdict rather than call them equivalent. The first
// three pairs of scalars are the ones review found; the others are built
// for P and Q by CollidingFloat.
func TestScalarsTheModelConfuses(t *testing.T) {
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
			differInTheReals(t, program, wrong, 7)
			r, err := ffverify.Equivalent(program, wrong, ffverify.Options{Seed: 1, Trials: 2})
			if err != nil {
				t.Fatal(err)
			}
			if r.Equivalent || len(r.Confused) != 2 {
				t.Fatalf("Equivalent: %v, want a refusal naming two terms", r)
			}
			if !strings.Contains(r.String(), "cannot tell") {
				t.Errorf("String() = %q, does not say why", r)
			}
			v, err := ffverify.New(program, ffverify.Options{Seed: 1, Trials: 2})
			if err != nil {
				t.Fatal(err)
			}
			if r, err := v.Verify(wrong); err != nil || r.Equivalent || r.Confused == nil {
				t.Errorf("Verify: %v, %v; want a refusal", r, err)
			}
		})
	}
}

// The refusal is for collisions only: scalars whose products are equal as
// rationals (0.1·0.3 = 0.03) are one element rightly, and a candidate that
// moves them around is equivalent.
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
}
