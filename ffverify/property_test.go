package ffverify_test

import (
	"math/rand/v2"
	"testing"

	"github.com/mirage-go/mirage/ffverify"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// randomEdit returns one random change to an op or launch parameter of g.
// Many make an invalid graph; the caller retries.
func randomEdit(rng *rand.Rand, g *kernel.Graph) edits {
	pick := func(xs ...int) int { return xs[rng.IntN(len(xs))] }
	var customs []*block.Graph
	for _, op := range g.Ops {
		if op.Kind == ugraph.OpCustomized {
			customs = append(customs, op.Block)
		}
	}
	if len(customs) > 0 && rng.IntN(3) > 0 {
		k := rng.IntN(len(customs))
		b := customs[k]
		if rng.IntN(5) == 0 {
			return launch(k, func(b *block.Graph) {
				switch rng.IntN(3) {
				case 0:
					b.Grid[rng.IntN(3)] = pick(1, 2, 4)
				case 1:
					b.ForloopRange = pick(1, 2, 4)
				default:
					b.ReductionDimx = pick(1, 2, 4, 8, 16)
				}
			})
		}
		i := rng.IntN(len(b.Ops))
		r := rng.IntN(4) // a rank bound for dims; invalid ones fail to build
		return blockOp(k, i, func(op *block.Op) {
			switch op.Kind.Info().Class {
			case ugraph.ClassIO:
				if op.Kind == ugraph.OpInput {
					if rng.IntN(2) == 0 {
						op.Input.IMap[rng.IntN(3)] = r - 1
					} else {
						op.Input.FMap = r - 1
					}
				} else {
					op.Output.OMap[rng.IntN(3)] = r - 1
				}
			case ugraph.ClassAccum:
				op.Attr.Accum = ugraph.Accum(rng.IntN(5))
			default:
				mutateCompute(rng, op.Kind.Info().Class, &op.Kind, &op.Attr, op.In[:], true)
			}
		})
	}
	i := rng.IntN(len(g.Ops))
	return kernelOp(i, func(op *kernel.Op) {
		if op.Kind == ugraph.OpCustomized {
			if n := len(op.In); n > 1 {
				a, b := rng.IntN(n), rng.IntN(n)
				op.In[a], op.In[b] = op.In[b], op.In[a]
			}
			return
		}
		mutateCompute(rng, op.Kind.Info().Class, &op.Kind, &op.Attr, op.In, false)
	})
}

var (
	unaryKinds  = []ugraph.OpKind{ugraph.OpExp, ugraph.OpSquare, ugraph.OpSqrt, ugraph.OpSilu, ugraph.OpGelu, ugraph.OpRelu, ugraph.OpLog}
	binaryKinds = []ugraph.OpKind{ugraph.OpAdd, ugraph.OpMul, ugraph.OpDiv, ugraph.OpPow, ugraph.OpSub}
)

// mutateCompute changes a compute op: its kind within its class, its
// operand order, or its dim.
func mutateCompute[T ~int32](rng *rand.Rand, c ugraph.Class, kind *ugraph.OpKind, a *ugraph.Attr, in []T, blockLevel bool) {
	switch c {
	case ugraph.ClassUnary:
		if *kind != ugraph.OpMulScalar && *kind != ugraph.OpClamp {
			*kind = unaryKinds[rng.IntN(len(unaryKinds))]
		}
	case ugraph.ClassBinary:
		if rng.IntN(2) == 0 {
			in[0], in[1] = in[1], in[0]
		} else {
			*kind = binaryKinds[rng.IntN(len(binaryKinds))]
		}
	case ugraph.ClassMatmul, ugraph.ClassConcat:
		in[0], in[1] = in[1], in[0]
	case ugraph.ClassReduction, ugraph.ClassNorm:
		a.Dim = rng.IntN(3)
	}
}

// TestRandomMutations mutates the correct μGraphs of the catalogue at
// random and checks, for every valid mutant: the demand-driven evaluator
// agrees with the dense one; whenever the fast path rejects, the full check
// (without fast path) says not equivalent; Verify agrees with the full
// check; and the verdict agrees with interp's float comparison.
func TestRandomMutations(t *testing.T) {
	n := 600
	if testing.Short() {
		n = 150
	}
	rng := rand.New(rand.NewPCG(7, 11))
	var bases []entry
	for _, e := range catalogue() {
		if e.equivalent {
			bases = append(bases, e)
		}
	}
	var tried, equivalent, fastRejected, fullOnly int
	for tried < n {
		e := bases[rng.IntN(len(bases))]
		program, base := e.program(), e.candidate()
		m, err := mutate(base, randomEdit(rng, base))
		if err == nil && rng.IntN(2) == 0 {
			m, err = mutate(m, randomEdit(rng, m))
		}
		if err != nil {
			continue
		}
		if _, err := ffverify.New(m, ffverify.Options{}); err != nil {
			continue // inputs or outputs no longer fit (an input op dropped, say)
		}
		tried++
		// Two samples only, so that the full check has work to do.
		fast := must(ffverify.New(program, ffverify.Options{Seed: 3, Samples: 2}))
		full := must(ffverify.New(program, ffverify.Options{Seed: 3, Samples: -1}))
		rejected, err := fast.Reject(m)
		if err != nil {
			t.Fatalf("%s mutant: Reject: %v", e.name, err)
		}
		want := must(full.Verify(m))
		got := must(fast.Verify(m))
		switch {
		case want.Equivalent:
			equivalent++
		case rejected:
			fastRejected++
		default:
			fullOnly++
		}
		if rejected && want.Equivalent {
			t.Errorf("%s mutant: the fast path rejects, the full check accepts", e.name)
		}
		if got.Equivalent != want.Equivalent {
			t.Errorf("%s mutant: Verify = %v, full check = %v", e.name, got, want)
		}
		if err := ffverify.LazyMismatch(m, 3, 0, 4096); err != nil {
			t.Errorf("%s mutant: demand-driven and dense evaluation differ: %v", e.name, err)
		}
		float, err := floatEquivalent(program, m, e.positive)
		if err != nil {
			t.Fatalf("%s mutant: %v", e.name, err)
		}
		if float != want.Equivalent {
			t.Errorf("%s mutant: interp says equivalent = %v, ffverify %v\n%s", e.name, float, want, describe(m))
		}
	}
	t.Logf("%d mutants: %d equivalent, %d rejected by the fast path, %d by the full check only", tried, equivalent, fastRejected, fullOnly)
	if equivalent == 0 || fastRejected == 0 {
		t.Errorf("the mutants exercise only one verdict")
	}
}

// TestFullCheckDecides uses a wrong candidate that is right in half of its
// positions (a swapped output map on a 2×2 grid: the diagonal blocks land
// where they belong) and one sample: for some seeds the sample falls on a
// right position and the fast path passes it; the full check must still
// reject it, every time.
func TestFullCheckDecides(t *testing.T) {
	wrong := mutant(mmTiled, blockOp(0, 4, func(op *block.Op) { op.Output.OMap = block.Map{0, 1, -1} }))()
	missed := 0
	for seed := range uint64(32) {
		v := must(ffverify.New(mm(), ffverify.Options{Seed: seed, Samples: 1}))
		rejected := must(v.Reject(wrong))
		r := must(v.Verify(wrong))
		if r.Equivalent {
			t.Fatalf("seed %d: Verify accepts a wrong candidate", seed)
		}
		if !rejected {
			missed++
			if r.Trial != 0 || r.Index == nil {
				t.Errorf("seed %d: Verify = %v, want a difference found on trial 0", seed, r)
			}
		}
	}
	t.Logf("the fast path let %d of 32 seeds through", missed)
	if missed == 0 || missed == 32 {
		t.Errorf("the fast path missed %d of 32 seeds; want some but not all", missed)
	}
}
