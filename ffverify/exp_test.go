package ffverify_test

import (
	"testing"

	"github.com/mirage-go/mirage/ffverify"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// Pairs of graphs that differ in the reals (interp says so first) and
// that the verifier took for equivalent while exp's Q-residue was the
// constant 1 (found by review): an exp of a value computed from an exp
// was blind, and so were scalars under an exp that agree modulo Q. Each
// must be rejected.
func TestExpOfComputedValues(t *testing.T) {
	scale := func(c float64) ugraph.Attr { return ugraph.Attr{Scalars: [2]float64{c}} }
	softmax := func(k *kg, x kernel.TensorID) kernel.TensorID {
		e := k.op(ugraph.OpExp, x)
		return k.op(ugraph.OpDiv, e, k.opA(ugraph.OpReduction, dim(1), e))
	}
	for _, tc := range []struct {
		name           string
		program, wrong func() *kernel.Graph
	}{
		// exp's result has Q-residue 1, and exp reads only its argument's
		// Q-residue: exp(x·exp(y)) = G^(x_Q·1) = exp(x) on every draw.
		{"exp(x·exp(y)) as exp(x)",
			func() *kernel.Graph {
				k := newKG()
				x, y := k.in(8, 64), k.in(8, 64)
				return k.outputs(k.op(ugraph.OpExp, k.op(ugraph.OpMul, x, k.op(ugraph.OpExp, y))))
			},
			func() *kernel.Graph {
				k := newKG()
				x, _ := k.in(8, 64), k.in(8, 64)
				return k.outputs(k.op(ugraph.OpExp, x))
			}},
		// softmax(s) has Q-residue 1/n whatever s is, so the outer
		// softmax is the constant 1/n in the model for every argument.
		{"softmax(softmax(2x)) as softmax(softmax(x))",
			func() *kernel.Graph {
				k := newKG()
				return k.outputs(softmax(k, softmax(k, k.in(8, 64))))
			},
			func() *kernel.Graph {
				k := newKG()
				return k.outputs(softmax(k, softmax(k, k.opA(ugraph.OpMulScalar, scale(2), k.in(8, 64)))))
			}},
		// Scalars under exp only count modulo Q: 0.08838834764831845, the
		// float nearest 1/sqrt(128) (an attention scale), is 21306286/241053109, and 8759/123337 is the same residue
		// modulo Q = 1073740571. Both are the simplest rationals of their
		// floats. Draws are no help: the collision is in the constants.
		{"exp(x/sqrt(128)) as exp(0.0710168076·x)",
			func() *kernel.Graph {
				k := newKG()
				return k.outputs(k.op(ugraph.OpExp, k.opA(ugraph.OpMulScalar, scale(0.08838834764831845), k.in(8, 64))))
			},
			func() *kernel.Graph {
				k := newKG()
				return k.outputs(k.op(ugraph.OpExp, k.opA(ugraph.OpMulScalar, scale(0.07101680760842245), k.in(8, 64))))
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			program, wrong := tc.program(), tc.wrong()
			differInTheReals(t, program, wrong, 7)
			for _, seed := range []uint64{1, 2, 3} {
				r, err := ffverify.Equivalent(program, wrong, ffverify.Options{Seed: seed, Trials: 4})
				if err != nil {
					t.Fatal(err)
				}
				if r.Equivalent {
					t.Errorf("seed %d: the verifier calls them equivalent: %v", seed, r)
				}
			}
		})
	}
}

// `mirage superopt --config attention --max-candidates 0` on
// softmax(softmax(X)), X 16x256, wrote 68 verified candidates that differ
// from the program in float64; this is one of them (its rank 246): the
// outer softmax's normalizer sums a 16x16 block of the inner result, and
// its output map moves the tiles. With exp's Q-residue the constant 1, the
// inner softmax was 1/256 everywhere modulo Q, so the outer exp was one
// constant and every normalizer of 256 terms, anywhere, agreed.
func TestSearchAnswerSoftmaxOfSoftmax(t *testing.T) {
	k := newKG()
	x := k.in(16, 256)
	softmax := func(v kernel.TensorID) kernel.TensorID {
		e := k.op(ugraph.OpExp, v)
		return k.op(ugraph.OpDiv, e, k.opA(ugraph.OpReduction, dim(1), e))
	}
	program := k.outputs(softmax(softmax(x)))
	f, err := kernel.ReadFile("testdata/exp/softmax_softmax_wrong.ugraph.json")
	if err != nil {
		t.Fatal(err)
	}
	wrong := f.Graphs[0].Graph
	differInTheReals(t, program, wrong, 1)
	r, err := ffverify.Equivalent(program, wrong, ffverify.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r.Equivalent {
		t.Errorf("the verifier calls the search's wrong answer equivalent: %v", r)
	}
	// The search's own path: a Verifier of the program, with its memo.
	v, err := ffverify.New(program, ffverify.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := v.Verify(wrong); err != nil || r.Equivalent {
		t.Errorf("Verifier.Verify: %v, %v", r, err)
	}
}

// expSum is exp(a+b), or exp(a)·exp(b) as a product.
func expSum(product bool) func() *kernel.Graph {
	return func() *kernel.Graph {
		g := newKG()
		a, b := g.in(4, 8), g.in(4, 8)
		if product {
			return g.outputs(g.op(ugraph.OpMul, g.op(ugraph.OpExp, a), g.op(ugraph.OpExp, b)))
		}
		return g.outputs(g.op(ugraph.OpExp, g.op(ugraph.OpAdd, a, b)))
	}
}

// exp(a+b) = exp(a)·exp(b) holds in the reals, and modulo P in the model,
// but not modulo Q, where exp is a random function of its argument (see
// elem.exp): the verifier rejects a rewriting that rests on it. The
// search's axioms lack it too, so no search needs it.
func TestExpOfASumIsRejected(t *testing.T) {
	r, err := ffverify.Equivalent(expSum(false)(), expSum(true)(), ffverify.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r.Equivalent {
		t.Errorf("exp(a+b) and exp(a)·exp(b): %v, want not equivalent (exp's Q-residue is a random function)", r)
	}
}
