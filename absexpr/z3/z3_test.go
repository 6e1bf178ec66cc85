package z3

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// requireZ3 skips a test that needs the library when it cannot be loaded,
// saying why. CI installs libz3-dev, so there these tests run.
func requireZ3(t testing.TB) {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("needs Z3: %v", err)
	}
}

func newContext(t testing.TB) *Context {
	t.Helper()
	requireZ3(t)
	ctx, err := NewContext()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ctx.Close)
	return ctx
}

func TestVersion(t *testing.T) {
	requireZ3(t)
	if v := Version(); !strings.HasPrefix(v, "4.") {
		t.Errorf("Version() = %q, want 4.x", v)
	}
}

// uf is a small problem over an uninterpreted function f: P -> P.
type uf struct {
	a       *Arena
	p       Sort
	f       FuncDecl
	c, d, x AST
}

func newUF(ctx *Context) uf {
	a := ctx.Arena()
	p := a.UninterpretedSort("P")
	return uf{a: a, p: p, f: a.FuncDecl("f", []Sort{p}, p),
		c: a.Const("c", p), d: a.Const("d", p), x: a.Const("x", p)}
}

func TestCheck(t *testing.T) {
	ctx := newContext(t)
	u := newUF(ctx)
	a := u.a
	s, err := ctx.NewSolver(SolverOptions{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// f(c) = d; then c = d ∧ f(c) ≠ f(d) is unsat, while f(d) ≠ d alone is sat.
	if err := s.Assert(a.Eq(a.App(u.f, u.c), u.d)); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		f    AST
		want Result
	}{
		{"congruence", a.And(a.Eq(u.c, u.d), a.Not(a.Eq(a.App(u.f, u.c), a.App(u.f, u.d)))), Unsat},
		{"free", a.Not(a.Eq(a.App(u.f, u.d), u.d)), Sat},
		{"quantified", a.And(
			a.Forall([]AST{u.x}, [][]AST{{a.App(u.f, u.x)}}, a.Eq(a.App(u.f, u.x), u.c), 0),
			a.Not(a.Eq(a.App(u.f, u.d), u.c))), Unsat},
	} {
		if err := s.Push(); err != nil {
			t.Fatal(err)
		}
		if err := s.Assert(tt.f); err != nil {
			t.Fatal(err)
		}
		got, err := s.Check()
		if err != nil || got != tt.want {
			t.Errorf("%s: Check() = %v, %v; want %v", tt.name, got, err, tt.want)
		}
		if err := s.Pop(1); err != nil {
			t.Fatal(err)
		}
	}
	if a.Err() != nil {
		t.Fatal(a.Err())
	}
}

func TestIntegerArithmetic(t *testing.T) {
	ctx := newContext(t)
	a := ctx.Arena()
	i := a.IntSort()
	n := a.Const("n", i)
	num := func(s string) AST { return a.Numeral(s, i) }
	s, err := ctx.NewSolver(SolverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// n·4 = 4096 ∧ 4096 div n = 4 ∧ n mod 3 = 1 ∧ 1 < n ≤ 1024 is sat (n = 1024).
	f := a.And(a.Eq(a.Mul(n, num("4")), num("4096")), a.Eq(a.IntDiv(num("4096"), n), num("4")),
		a.Eq(a.Mod(n, num("3")), num("1")), a.Lt(num("1"), n), a.Le(n, num("1024")))
	s.Assert(f)
	if r, err := s.Check(); r != Sat || err != nil {
		t.Errorf("Check() = %v, %v; want sat", r, err)
	}
	s.Assert(a.Not(a.Eq(n, num("1024"))))
	if r, err := s.Check(); r != Unsat || err != nil {
		t.Errorf("with n ≠ 1024, Check() = %v, %v; want unsat", r, err)
	}
}

func TestZ3ErrorsBecomeGoErrors(t *testing.T) {
	ctx := newContext(t)
	u := newUF(ctx)
	a := ctx.NewArena()
	defer a.Release()
	i := a.IntSort()
	bad := a.App(u.f, a.Numeral("1", i)) // f takes a P, not an Int
	var zerr *Error
	if !bad.IsZero() || !errors.As(a.Err(), &zerr) || !strings.Contains(zerr.Msg, "Sort mismatch") {
		t.Fatalf("applying f to an Int: %v, error %v; want the zero AST and a sort error", bad, a.Err())
	}
	// The error sticks: later calls make nothing.
	if !a.Eq(u.c, u.d).IsZero() {
		t.Error("an arena with an error went on making ASTs")
	}
	// Release clears it.
	a.Release()
	if a.Eq(u.c, u.d).IsZero() || a.Err() != nil {
		t.Errorf("after Release: %v", a.Err())
	}
	if a.Numeral("twelve", i); a.Err() == nil {
		t.Error(`Numeral("twelve") succeeded`)
	}
}

func TestRefsAreReleased(t *testing.T) {
	requireZ3(t)
	before := Live()
	ctx, err := NewContext()
	if err != nil {
		t.Fatal(err)
	}
	u := newUF(ctx)
	perm := ctx.LiveRefs()
	s, err := ctx.NewSolver(SolverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q := ctx.NewArena()
	for i := range 100 {
		x := u.c
		for range i % 7 {
			x = q.App(u.f, x)
		}
		s.Push()
		s.Assert(q.Not(q.Eq(x, u.d)))
		s.Check()
		s.Pop(1)
		if q.Len() == 0 && i%7 != 0 {
			t.Fatal("the arena recorded nothing")
		}
		q.Release()
		if got := ctx.LiveRefs(); got != perm {
			t.Fatalf("query %d: %d live references, want %d", i, got, perm)
		}
	}
	s.Close()
	ctx.Close()
	ctx.Close()
	if got := Live(); got != before {
		t.Errorf("Live() = %+v after closing everything, want %+v", got, before)
	}
}

// matchingLoop asserts ∀x. f(x) = f(f(x)) with trigger f(x) and f(c) ≠ f(d):
// E-matching never runs out of instances, so only a bound stops the check.
func matchingLoop(t *testing.T, ctx *Context, opts SolverOptions) *Solver {
	u := newUF(ctx)
	a := u.a
	s, err := ctx.NewSolver(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	g := a.FuncDecl("g", []Sort{u.p}, u.p)
	s.Assert(a.Forall([]AST{u.x}, [][]AST{{a.App(u.f, u.x)}}, a.Eq(a.App(u.f, u.x), a.App(u.f, a.App(g, u.x))), 0))
	s.Assert(a.Not(a.Eq(a.App(u.f, u.c), a.App(u.f, u.d))))
	if a.Err() != nil {
		t.Fatal(a.Err())
	}
	return s
}

func TestTimeoutBoundsCheck(t *testing.T) {
	const timeout = 50 * time.Millisecond
	for _, tt := range []struct {
		name string
		opts SolverOptions
		// mayEnd says how the check may end: Z3's own timeout usually ends
		// it (no error), but on a loaded machine the Go timer may come
		// first.
		mayEnd func(error) bool
	}{
		{"z3 timeout", SolverOptions{Timeout: timeout}, func(err error) bool { return err == nil || errors.Is(err, ErrInterrupted) }},
		{"Go timer alone", SolverOptions{Timeout: timeout, z3TimeoutOff: true}, func(err error) bool { return errors.Is(err, ErrInterrupted) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := newContext(t)
			s := matchingLoop(t, ctx, tt.opts)
			// A matching loop never ends by itself: each Check returning at
			// all is the timeout at work (without it the test hangs until go
			// test's own limit). How soon it returns is the machine's
			// business, not the test's.
			for range 3 {
				r, err := s.Check()
				if r != Unknown || !tt.mayEnd(err) {
					t.Errorf("Check() = %v, %v; want unknown", r, err)
				}
				if errors.Is(err, ErrAbandoned) {
					// On a loaded machine Z3 may heed the interrupt
					// after the binding stopped waiting: the check runs
					// on, and the context refuses work until it ends.
					waitIdle(t, ctx)
				}
			}
			// An interrupt does not stick to the context.
			checkStillWorks(t, ctx)
		})
	}
}

// waitIdle waits until ctx's abandoned check, if any, has ended.
func waitIdle(t *testing.T, ctx *Context) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ctx.busy.Load(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("an abandoned check still runs a minute after its interrupt")
		}
	}
}

func checkStillWorks(t *testing.T, ctx *Context) {
	t.Helper()
	u := newUF(ctx)
	s, err := ctx.NewSolver(SolverOptions{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Assert(u.a.And(u.a.Eq(u.c, u.d), u.a.Not(u.a.Eq(u.a.App(u.f, u.c), u.a.App(u.f, u.d)))))
	if r, err := s.Check(); r != Unsat || err != nil {
		t.Errorf("a later check = %v, %v; want unsat", r, err)
	}
}

func TestInterruptFromAnotherGoroutine(t *testing.T) {
	ctx := newContext(t)
	s := matchingLoop(t, ctx, SolverOptions{})
	ctx.Interrupt() // nothing in flight: no effect
	// No timeout: Check returns only because of an interrupt. One that
	// came before Check began would do nothing, so they come every 30 ms
	// until it returns.
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(30 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				ctx.Interrupt()
			}
		}
	}()
	r, err := s.Check()
	close(done)
	<-stopped // no interrupt may reach the check below
	if r != Unknown || !errors.Is(err, ErrInterrupted) {
		t.Errorf("Check() = %v, %v; want unknown, ErrInterrupted", r, err)
	}
	checkStillWorks(t, ctx)
}

func TestSolverOptionsAreAccepted(t *testing.T) {
	ctx := newContext(t)
	// Z3 validates parameter names against the solver's (an unknown one is
	// an error), so this shows the names the binding sets are real.
	s, err := ctx.NewSolver(SolverOptions{MaxQuantifierInstances: 10, Timeout: time.Second, MBQI: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
}

func TestContextsRunInParallel(t *testing.T) {
	requireZ3(t)
	before := Live()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, err := NewContext()
			if err != nil {
				errs <- err
				return
			}
			defer ctx.Close()
			u := newUF(ctx)
			s, err := ctx.NewSolver(SolverOptions{Timeout: time.Second})
			if err != nil {
				errs <- err
				return
			}
			defer s.Close()
			q := ctx.NewArena()
			for range 50 {
				s.Push()
				s.Assert(q.And(q.Eq(u.c, u.d), q.Not(q.Eq(q.App(u.f, u.c), q.App(u.f, u.d)))))
				if r, err := s.Check(); r != Unsat || err != nil {
					errs <- errors.Join(err, errors.New("want unsat, got "+r.String()))
				}
				s.Pop(1)
				q.Release()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := Live(); got != before {
		t.Errorf("Live() = %+v, want %+v", got, before)
	}
}
