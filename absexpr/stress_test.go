package absexpr

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/mirage-go/mirage/absexpr/z3"
)

// withSizes rebuilds e with each reduction size n replaced by resize(n).
func withSizes(e *Expr, resize func(int) int) *Expr {
	if e.op == OpVar {
		return e
	}
	args := make([]*Expr, len(e.args))
	for i, a := range e.args {
		args[i] = withSizes(a, resize)
	}
	switch e.op {
	case OpAdd:
		return Add(args...)
	case OpMul:
		return Mul(args...)
	case OpDiv:
		return Div(args[0], args[1])
	case OpPow:
		return Pow(args[0], args[1])
	case OpSum:
		return Sum(resize(e.size), args[0])
	case OpRms:
		return Rms(resize(e.size), args[0])
	case OpClamp:
		return Clamp(e.lo, e.hi, args[0])
	}
	return unary(e.op, args[0])
}

// stressQueries makes n queries from the table's, with reduction sizes
// varied so that many are new to the cache and go to Z3.
func stressQueries(seed uint64, n int) []*Expr {
	r := rand.New(rand.NewPCG(seed, 7))
	qs := make([]*Expr, n)
	for i := range qs {
		row := queryTable[r.IntN(len(queryTable))]
		qs[i] = withSizes(MustParse(expand(row.query)), func(n int) int {
			if r.IntN(2) == 0 {
				return n
			}
			return max(1, []int{n / 2, n / 4, 2 * n, 3, 5, 8}[r.IntN(6)])
		})
	}
	return qs
}

var allPrograms = []*Expr{rmsNormMatMul, gatedMLP, attention, nTrans}

// withoutNormalForms makes o leave to Z3 what only the normal forms decide:
// the tests of the prover pool need queries that reach it.
func withoutNormalForms(o *Oracle) { o.index.nf = nil }

// TestStress runs 10,000 queries from 20 goroutines against one oracle and
// checks that the answers are those of a sequential run, that no Z3
// reference leaks, and that closing the oracle releases every context.
func TestStress(t *testing.T) {
	requireZ3(t)
	if testing.Short() {
		t.Skip("stress test")
	}
	const goroutines, perGoroutine = 20, 500
	before := z3.Live()
	refsPerProver := func() int64 {
		laws, _ := parseAxioms(axioms)
		r0 := z3.Live().Refs
		p, err := newProver(allPrograms, laws, Options{}.withDefaults().solverOptions())
		if err != nil {
			t.Fatal(err)
		}
		defer p.close()
		return z3.Live().Refs - r0
	}()

	queries := make([][]*Expr, goroutines)
	for g := range queries {
		queries[g] = stressQueries(uint64(g), perGoroutine)
	}

	// The reference answers, from one goroutine.
	want := map[string]bool{}
	ref, err := NewOracle(allPrograms, Options{Provers: 1})
	if err != nil {
		t.Fatal(err)
	}
	withoutNormalForms(ref)
	for _, qs := range queries {
		for _, q := range qs {
			if want[q.Key()], err = ref.IsSubexpr(q); err != nil {
				t.Fatal(err)
			}
		}
	}
	ref.Close()

	o, err := NewOracle(allPrograms, Options{})
	if err != nil {
		t.Fatal(err)
	}
	withoutNormalForms(o)
	start := time.Now()
	// Rounds, so that references can be counted between them, when no query
	// is in flight.
	const rounds = 5
	for round := range rounds {
		var wg sync.WaitGroup
		errs := make(chan error, goroutines)
		for g := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				chunk := perGoroutine / rounds
				for _, q := range queries[g][round*chunk : (round+1)*chunk] {
					got, err := o.IsSubexpr(q)
					if err != nil {
						errs <- err
						return
					}
					if got != want[q.Key()] {
						errs <- fmt.Errorf("%s: %v, but %v when asked sequentially", q, got, want[q.Key()])
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if got, want := z3.Live().Refs-before.Refs, o.Stats().Provers*refsPerProver; got != want {
			t.Errorf("after round %d: %d live Z3 references, want %d (%d provers × %d)", round, got, want, o.Stats().Provers, refsPerProver)
		}
	}
	st := o.Stats()
	t.Logf("%d queries in %v: %+v", st.Queries, time.Since(start), st)
	if st.Queries != goroutines*perGoroutine || st.Z3Calls == 0 {
		t.Errorf("stats %+v: want %d queries, some of them by Z3", st, goroutines*perGoroutine)
	}
	o.Close()
	waitForLive(t, before)
}

// TestBlowUpIsBounded asks Z3 a query that makes its E-matching explode: a
// flat sum of 17 products that distributivity (with associativity and
// commutativity of the 17 terms) equates to the target. Normal forms decide
// it in Go, so it is put to Z3 directly, as a query that Go leaves to Z3
// would be. Z3 does not heed interrupts while it matches; the query must
// still return within twice its timeout.
func TestBlowUpIsBounded(t *testing.T) {
	requireZ3(t)
	const timeout = 100 * time.Millisecond
	before := z3.Live()
	var xs, products []*Expr
	for i := range 17 {
		x := Var(fmt.Sprintf("x%d", i))
		xs = append(xs, x)
		products = append(products, Mul(Var("a"), x))
	}
	o, err := NewOracle([]*Expr{Mul(Var("a"), Add(xs...))}, Options{Timeout: timeout, MaxInstances: 20000})
	if err != nil {
		t.Fatal(err)
	}
	q := Add(products...)
	if got, decided := o.index.decide(q); !decided || !got {
		t.Errorf("Go decides %s: %v, %v; want true, true", q, got, decided)
	}
	// The axioms' instances blow up on this query: that it returns at all,
	// unknown, is the timeout at work (how soon is the machine's business).
	start := time.Now()
	got, err := o.askZ3(q)
	d := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if st := o.Stats(); got || st.Z3Unknown != 1 {
		t.Errorf("IsSubexpr = %v with stats %+v; want Z3 to give up (unknown counts as no)", got, st)
	}
	t.Logf("returned after %v: %+v", d, o.Stats())
	o.Close()
	waitForLive(t, before)
}

// waitForLive waits for abandoned checks to end and their contexts to go,
// then checks that the binding holds what it held before.
func waitForLive(t *testing.T, want z3.Counts) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for z3.Live() != want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := z3.Live(); got != want {
		t.Errorf("Live() = %+v, want %+v", got, want)
	}
}
