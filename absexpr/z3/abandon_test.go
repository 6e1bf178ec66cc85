//go:build cgo

package z3

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// acBlowUp asserts that addition is associative and commutative and that a
// 17-term sum differs from its reverse: E-matching then builds every
// bracketing and ordering of the terms, in rounds that Z3 does not
// interrupt.
func acBlowUp(t *testing.T, ctx *Context, opts SolverOptions) *Solver {
	a := ctx.Arena()
	p := a.UninterpretedSort("P")
	add := a.FuncDecl("add", []Sort{p, p}, p)
	x, y, z := a.Const("!x", p), a.Const("!y", p), a.Const("!z", p)
	s, err := ctx.NewSolver(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	s.Assert(a.Forall([]AST{x, y}, [][]AST{{a.App(add, x, y)}}, a.Eq(a.App(add, x, y), a.App(add, y, x)), 0))
	l, r := a.App(add, a.App(add, x, y), z), a.App(add, x, a.App(add, y, z))
	s.Assert(a.Forall([]AST{x, y, z}, [][]AST{{l}, {r}}, a.Eq(l, r), 0))
	var terms []AST
	for i := range 17 {
		terms = append(terms, a.Const(fmt.Sprintf("t%d", i), p))
	}
	fwd, bwd := terms[16], terms[0]
	for i := 15; i >= 0; i-- {
		fwd = a.App(add, terms[i], fwd)
		bwd = a.App(add, terms[16-i], bwd)
	}
	s.Assert(a.Not(a.Eq(fwd, bwd)))
	if a.Err() != nil {
		t.Fatal(a.Err())
	}
	return s
}

// TestAbandonedCheck stands in for a check that ignores Z3_interrupt and
// follows what the context does until it ends.
func TestAbandonedCheck(t *testing.T) {
	requireZ3(t)
	const timeout = 100 * time.Millisecond
	before := Live()
	ctx, err := NewContext()
	if err != nil {
		t.Fatal(err)
	}
	s, err := ctx.NewSolver(SolverOptions{Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	q := ctx.NewArena()
	q.True()
	release := make(chan struct{})
	s.run = func() checkResult { <-release; return checkResult{lbool: 0} }

	// The check never ends by itself (run waits for release): Check
	// returning at all is the abandonment at work.
	r, err := s.Check()
	if r != Unknown || !errors.Is(err, ErrAbandoned) {
		t.Fatalf("Check() = %v, %v; want unknown, ErrAbandoned", r, err)
	}
	if Live().Abandoned != before.Abandoned+1 {
		t.Errorf("Live().Abandoned = %d, want %d", Live().Abandoned, before.Abandoned+1)
	}
	// While the check runs on, the context refuses work...
	if err := s.Push(); !errors.Is(err, ErrBusy) {
		t.Errorf("Push on a busy context: %v, want ErrBusy", err)
	}
	if _, err := s.Check(); !errors.Is(err, ErrBusy) {
		t.Errorf("Check on a busy context: %v, want ErrBusy", err)
	}
	q2 := ctx.NewArena()
	if x := q2.True(); !x.IsZero() || !errors.Is(q2.Err(), ErrBusy) {
		t.Errorf("an arena on a busy context made %v, error %v; want ErrBusy", x, q2.Err())
	}
	// ...and defers releases until it ends.
	q.Release()
	s.Close()
	ctx.Close()
	if got := Live(); got.Refs == before.Refs || got.Contexts == before.Contexts {
		t.Errorf("Live() = %+v: released while the check still ran", got)
	}
	close(release)
	<-ctx.Deleted()
	if got := Live(); got != before {
		t.Errorf("Live() = %+v once the check ended, want %+v", got, before)
	}
}

// TestBlowUpIsBounded runs a real check that E-matching blows up, with a
// large instance cap: whether Z3 heeds the interrupt or the check is
// abandoned, Check returns, unknown. (How soon after its timeout is the
// machine's business: a wall-clock bound fails under load.)
func TestBlowUpIsBounded(t *testing.T) {
	const timeout = 100 * time.Millisecond
	before := Live()
	ctx := newContext(t)
	s := acBlowUp(t, ctx, SolverOptions{MaxQuantifierInstances: 50000, Timeout: timeout})
	r, err := s.Check()
	if r != Unknown || err != nil && !errors.Is(err, ErrInterrupted) {
		t.Errorf("Check() = %v, %v; want unknown", r, err)
	}
	s.Close()
	ctx.Close()
	<-ctx.Deleted()
	if got := Live(); got != before {
		t.Errorf("Live() = %+v once the check ended, want %+v", got, before)
	}
}
