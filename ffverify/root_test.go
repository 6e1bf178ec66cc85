package ffverify_test

import (
	"testing"

	"github.com/mirage-go/mirage/ffverify"
	"github.com/mirage-go/mirage/interp"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// A root is not a power map: with x^((m+1)/4) the model had sqrt(c²) =
// c·χ(c), χ the Legendre symbol, which is -1 modulo both primes for c = 10
// or 1/10, so it took rms_norm(c·x) for -rms_norm(x) (found by review).
// Each pair here differs in the reals (interp says so first); the verifier
// must reject it.
func TestRootsOfScaledValues(t *testing.T) {
	scale := func(c float64) ugraph.Attr { return ugraph.Attr{Scalars: [2]float64{c}} }
	for _, tc := range []struct {
		name           string
		program, wrong func() *kernel.Graph
	}{
		{"rms_norm(10·x) as -rms_norm(x)",
			func() *kernel.Graph {
				k := newKG()
				return k.outputs(k.opA(ugraph.OpRMSNorm, dim(1), k.opA(ugraph.OpMulScalar, scale(10), k.in(8, 64))))
			},
			func() *kernel.Graph {
				k := newKG()
				return k.outputs(k.opA(ugraph.OpMulScalar, scale(-1), k.opA(ugraph.OpRMSNorm, dim(1), k.in(8, 64))))
			}},
		{"rms_norm(0.1·x) as rms_norm(-x)",
			func() *kernel.Graph {
				k := newKG()
				return k.outputs(k.opA(ugraph.OpRMSNorm, dim(1), k.opA(ugraph.OpMulScalar, scale(0.1), k.in(8, 64))))
			},
			func() *kernel.Graph {
				k := newKG()
				return k.outputs(k.opA(ugraph.OpRMSNorm, dim(1), k.opA(ugraph.OpMulScalar, scale(-1), k.in(8, 64))))
			}},
		{"sqrt(100·x²) as -10·sqrt(x²)",
			func() *kernel.Graph {
				k := newKG()
				return k.outputs(k.op(ugraph.OpSqrt, k.opA(ugraph.OpMulScalar, scale(100), k.op(ugraph.OpSquare, k.in(8, 64)))))
			},
			func() *kernel.Graph {
				k := newKG()
				return k.outputs(k.opA(ugraph.OpMulScalar, scale(-10), k.op(ugraph.OpSqrt, k.op(ugraph.OpSquare, k.in(8, 64)))))
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			program, wrong := tc.program(), tc.wrong()
			differInTheReals(t, program, wrong, 7)
			r, err := ffverify.Equivalent(program, wrong, ffverify.Options{Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			if r.Equivalent {
				t.Errorf("the verifier calls them equivalent: %v", r)
			}
		})
	}
}

// differInTheReals fails t unless program and wrong compute different
// functions in float64 on inputs drawn with seed: a pair the verifier must
// reject is a test of the model only if they do.
func differInTheReals(t *testing.T, program, wrong *kernel.Graph, seed int64) {
	t.Helper()
	ins := interp.RandomInputs(program, seed)
	want, err := interp.Run(program, ins)
	if err != nil {
		t.Fatal(err)
	}
	got, err := interp.Run(wrong, ins)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := interp.Compare(want[0], got[0]); err == nil && d.MaxRelErr <= interp.DefaultTolerance {
		t.Fatalf("the pair agrees in the reals (%v): not a test of the model", d)
	}
}
