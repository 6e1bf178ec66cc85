package ffverify_test

import (
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/mirage-go/mirage/ffverify"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// TestConcurrentUse shares one Verifier among goroutines that check correct
// and wrong candidates at once; every answer must equal the sequential one.
// Run it with -race.
func TestConcurrentUse(t *testing.T) {
	v := must(ffverify.New(rm(), ffverify.Options{Seed: 5}))
	var cands []*kernel.Graph
	for _, e := range catalogue() {
		if p, c := e.program(), e.candidate(); sameGraph(p, rm()) == nil {
			cands = append(cands, c)
		}
	}
	want := make([]ffverify.Result, len(cands))
	for i, c := range cands {
		want[i] = must(v.Verify(c))
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for k := range 3 * len(cands) {
				i := (k + w) % len(cands)
				got, err := v.Verify(cands[i])
				if err != nil || !reflect.DeepEqual(got, want[i]) {
					t.Errorf("candidate %d: concurrent Verify = %v, %v; sequential %v", i, got, err, want[i])
				}
				if rejected := must(v.Reject(cands[i])); rejected && want[i].Equivalent {
					t.Errorf("candidate %d: concurrent Reject rejects a correct candidate", i)
				}
			}
		})
	}
	wg.Wait()
	if len(cands) < 5 {
		t.Errorf("only %d candidates", len(cands))
	}
}

// TestDeterministic: a seed fixes every result; other seeds and trial
// counts give the same verdicts.
func TestDeterministic(t *testing.T) {
	for _, e := range catalogue() {
		a := must(ffverify.Equivalent(e.program(), e.candidate(), ffverify.Options{Seed: 9}))
		b := must(ffverify.Equivalent(e.program(), e.candidate(), ffverify.Options{Seed: 9}))
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: seed 9 gives %v, then %v", e.name, a, b)
		}
		for _, opts := range []ffverify.Options{{Seed: 10}, {Seed: 11, Trials: 1}, {Seed: 12, Trials: 5, Samples: 3}} {
			if c := must(ffverify.Equivalent(e.program(), e.candidate(), opts)); c.Equivalent != e.equivalent {
				t.Errorf("%s: %+v gives %v", e.name, opts, c)
			}
		}
	}
}

func TestResultDetails(t *testing.T) {
	v := must(ffverify.New(twoOutputs(false, false)(), ffverify.Options{}))
	// An extra output: the output shapes differ, no draw needed.
	g := newKG()
	a, b, _ := g.in(4, 8), g.in(8, 8), g.in(8, 8)
	ab := g.op(ugraph.OpMatmul, a, b)
	extra := g.outputs(ab, g.op(ugraph.OpMatmul, a, b), g.opA(ugraph.OpReduction, dim(1), ab))
	for _, c := range []struct {
		name      string
		candidate *kernel.Graph
		want      ffverify.Result
	}{
		{"same", twoOutputs(false, false)(), ffverify.Result{Equivalent: true, Mapping: []int{0, 1}, Output: -1, Trial: -1}},
		{"permuted", twoOutputs(true, false)(), ffverify.Result{Equivalent: true, Mapping: []int{1, 0}, Output: -1, Trial: -1}},
		{"extra output", extra, ffverify.Result{Output: -1, Trial: -1}},
	} {
		got := must(v.Verify(c.candidate))
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: Verify = %+v, want %+v", c.name, got, c.want)
		}
		if inOrder := c.name == "same"; got.InOrder() != inOrder {
			t.Errorf("%s: InOrder() = %v, want %v", c.name, got.InOrder(), inOrder)
		}
	}
	// Two equal outputs each keep their own position: the whole program's
	// check in driver takes only the identity.
	if r := must(ffverify.Equivalent(twoOutputs(false, true)(), twoOutputs(false, true)(), ffverify.Options{})); !r.Equivalent || !reflect.DeepEqual(r.Mapping, []int{0, 1}) {
		t.Errorf("equal outputs: %+v, want the identity", r)
	}
	// A wrong candidate names where it differs.
	r := must(ffverify.Equivalent(mm(), mutant(mm, kernelOp(2, swapOperands))(), ffverify.Options{}))
	if r.Equivalent || r.Output != 0 || len(r.Index) != 2 || r.Trial != 0 {
		t.Errorf("swapped matmul: %+v", r)
	}
	if !strings.Contains(r.String(), "differs at") {
		t.Errorf("String() = %q", r.String())
	}
}

func TestErrors(t *testing.T) {
	corrupt := mm()
	corrupt.Tensors[2].Shape = ugraph.MustShape(16, 8) // not what matmul makes
	noOutputs := newKG()
	noOutputs.in(4, 4)
	for _, c := range []struct {
		name               string
		program, candidate *kernel.Graph
		opts               ffverify.Options
		want               string
	}{
		{"nil program", nil, mm(), ffverify.Options{}, "program: nil graph"},
		{"corrupt candidate", mm(), corrupt, ffverify.Options{}, "candidate: the tensors differ"},
		{"no outputs", noOutputs.g, mm(), ffverify.Options{}, "no outputs"},
		{"input shapes differ", mm(), matmulProgram(16, 16, 8), ffverify.Options{}, "candidate input 1 is [16, 8]"},
		{"input counts differ", mm(), divSum(false)(), ffverify.Options{}, "3 inputs, the program 2"},
		{"negative trials", mm(), mm(), ffverify.Options{Trials: -1}, "-1 trials"},
	} {
		if _, err := ffverify.Equivalent(c.program, c.candidate, c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to mention %q", c.name, err, c.want)
		}
	}
}

// TestFastPathBudget: when one position depends on most of the graph, the
// fast path gives up (Reject says false) rather than cost more than a dense
// evaluation, and the full check decides.
func TestFastPathBudget(t *testing.T) {
	// x + Σ_all f(x): every output element depends on every f(x).
	total := func(f ugraph.OpKind, n int) *kernel.Graph {
		g := newKG()
		x := g.in(n, n)
		s := g.opA(ugraph.OpReduction, dim(0), g.opA(ugraph.OpReduction, dim(1), g.op(f, x)))
		return g.outputs(g.op(ugraph.OpAdd, x, s))
	}
	for _, c := range []struct {
		n            int
		wantRejected bool
	}{{8, true}, {128, false}} {
		v := must(ffverify.New(total(ugraph.OpSquare, c.n), ffverify.Options{}))
		wrong := total(ugraph.OpExp, c.n)
		if rejected := must(v.Reject(wrong)); rejected != c.wantRejected {
			t.Errorf("%d×%d: Reject = %v, want %v", c.n, c.n, rejected, c.wantRejected)
		}
		if r := must(v.Verify(wrong)); r.Equivalent {
			t.Errorf("%d×%d: Verify accepts a wrong candidate", c.n, c.n)
		}
	}
}
