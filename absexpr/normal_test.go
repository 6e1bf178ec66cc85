package absexpr

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/mirage-go/mirage/absexpr/z3"
)

func normalKey(t testing.TB, e *Expr) string {
	t.Helper()
	p, err := newNormalizer().normal(e)
	if err != nil {
		t.Fatalf("normal(%s): %v", e, err)
	}
	return p.String()
}

func TestNormalForms(t *testing.T) {
	for _, tt := range []struct{ expr, want string }{
		{"X", "1·X"},
		{"add(X, X)", "1·X + 1·X"}, // no law merges like terms
		{"mul(X, add(A, B))", "1·A·X + 1·B·X"},
		{"mul(sum(4, X), sum(16, W))", "64·W·X"},
		{"sum(8, div(X, Y))", "8·X / (1·Y)"},
		{"div(div(X, Y), Z)", "1·X / (1·Y·Z)"},
		{"div(add(X, Y), Z)", "1·X / (1·Z) + 1·Y / (1·Z)"},
		{"mul(div(X, Y), div(W, Z))", "1·W·X / (1·Y·Z)"},
		{"div(X, div(Y, Z))", "1·X / (1·Y / (1·Z))"}, // no law for a quotient below
		{"rms(8, X)", "1·sqrt(8·square(1·X))"},
		{"sum(4096, mul(div(X, rms(4096, X)), W))", "4096·W·X / (1·sqrt(4096·square(1·X)))"},
		{"exp(sum(64, mul(Q, K)))", "1·exp(64·K·Q)"},
		{"pow(X, add(Y, Z))", "1·pow(1·X; 1·Y + 1·Z)"},
		{"clamp(-0, 6, X)", "1·clamp[0, 6](1·X)"},
	} {
		if got := normalKey(t, MustParse(tt.expr)); got != tt.want {
			t.Errorf("normal form of %s = %q, want %q", tt.expr, got, tt.want)
		}
	}
}

func TestNormalFormsThatAgree(t *testing.T) {
	for _, pair := range [][2]string{
		{"rms(8, X)", "sqrt(sum(8, square(X)))"},
		{"div(sum(4096, mul(X, W)), rms(4096, X))", "sum(4096, mul(div(X, rms(4096, X)), W))"},
		{"mul(sum(4, X), W)", "mul(X, sum(4, W))"},
		{"clamp(-0, 1, X)", "clamp(0, 1, X)"},
	} {
		if a, b := normalKey(t, MustParse(pair[0])), normalKey(t, MustParse(pair[1])); a != b {
			t.Errorf("%s and %s are equal under the laws but have normal forms %q and %q", pair[0], pair[1], a, b)
		}
	}
}

func TestNormalFormTooLarge(t *testing.T) {
	var xs, ys []*Expr
	for i := range 20 {
		xs = append(xs, Var(fmt.Sprintf("x%d", i)))
		ys = append(ys, Var(fmt.Sprintf("y%d", i)))
	}
	if _, err := newNormalizer().normal(Mul(Add(xs...), Add(ys...))); err != errTooLarge {
		t.Errorf("a product of two 20-term sums: error %v, want errTooLarge", err)
	}
	if _, err := newNormalizer().normal(Mul(Sum(1<<40, xs[0]), Sum(1<<40, xs[1]))); err != errTooLarge {
		t.Errorf("overflowing sizes: error %v, want errTooLarge", err)
	}
}

// TestNormalFormModelsTheAxioms checks that both sides of every law have one
// normal form, which is what makes the normal form's "no" sound; and that
// the check catches plausible wrong laws.
func TestNormalFormModelsTheAxioms(t *testing.T) {
	keeps := func(law parsedAxiom) error {
		r := rand.New(rand.NewPCG(7, 8))
		for range 300 {
			as := randomAssignment(r, law)
			l, rr := instantiate(law.lhs, as), instantiate(law.rhs, as)
			if a, b := normalKey(t, l), normalKey(t, rr); a != b {
				return fmt.Errorf("%s has normal form %s but %s has %s", l, a, rr, b)
			}
		}
		return nil
	}
	laws, err := parseAxioms(axioms)
	if err != nil {
		t.Fatal(err)
	}
	for _, law := range laws {
		if err := keeps(law); err != nil {
			t.Errorf("axiom %s: %v", law.name, err)
		}
	}
	wrong, err := parseAxioms(wrongLaws)
	if err != nil {
		t.Fatal(err)
	}
	for _, law := range wrong {
		if keeps(law) == nil {
			t.Errorf("the check misses the wrong law %q", law.name)
		}
	}
}

// binding is a match of an axiom side to an expression.
type binding struct {
	exprs map[string]*Expr
	sizes map[string]int
}

func (b binding) with(name string, e *Expr, size int) binding {
	nb := binding{exprs: map[string]*Expr{}, sizes: map[string]int{}}
	for k, v := range b.exprs {
		nb.exprs[k] = v
	}
	for k, v := range b.sizes {
		nb.sizes[k] = v
	}
	if e != nil {
		nb.exprs[name] = e
	} else {
		nb.sizes[name] = size
	}
	return nb
}

// matches lists the ways e matches the axiom term t. A binary add or mul of
// t matches an n-ary one by splitting its operands in two; size arithmetic
// is never matched.
func matches(t term, e *Expr, b binding) []binding {
	if t.name != "" {
		if x, ok := b.exprs[t.name]; ok {
			if x.Equal(e) {
				return []binding{b}
			}
			return nil
		}
		return []binding{b.with(t.name, e, 0)}
	}
	op, ok := opByName[t.fn]
	if !ok || e.op != op {
		return nil
	}
	var out []binding
	switch {
	case op == OpAdd || op == OpMul:
		k := len(e.args)
		for mask := 1; mask < 1<<k-1; mask++ {
			var l, r []*Expr
			for i, a := range e.args {
				if mask&(1<<i) != 0 {
					l = append(l, a)
				} else {
					r = append(r, a)
				}
			}
			for _, b1 := range matches(t.args[0], assoc(op, l), b) {
				out = append(out, matches(t.args[1], assoc(op, r), b1)...)
			}
		}
	case ops[op].sized:
		n := t.args[0]
		if n.name == "" {
			return nil
		}
		if size, ok := b.sizes[n.name]; ok && size != e.size {
			return nil
		}
		out = matches(t.args[1], e.args[0], b.with(n.name, nil, e.size))
	default:
		out = []binding{b}
		for i, a := range t.args {
			var next []binding
			for _, bb := range out {
				next = append(next, matches(a, e.args[i], bb)...)
			}
			out = next
		}
	}
	return out
}

// rebuild is e with its operands replaced.
func rebuild(e *Expr, args []*Expr) *Expr {
	switch e.op {
	case OpSum:
		return Sum(e.size, args[0])
	case OpRms:
		return Rms(e.size, args[0])
	case OpClamp:
		return Clamp(e.lo, e.hi, args[0])
	}
	return apply(e.op, args)
}

// rewrites lists the expressions one law, applied once in either direction
// anywhere in e, makes e equal to. An n-ary add or mul is also rewritten in
// part: add(a, b, c) as add(add(a, b), c).
func rewrites(e *Expr, laws []parsedAxiom) []*Expr {
	type node struct {
		sub     *Expr
		rebuild func(*Expr) *Expr
	}
	nodes := []node{{e, func(x *Expr) *Expr { return x }}}
	if k := len(e.args); (e.op == OpAdd || e.op == OpMul) && k > 2 {
		for mask := 1; mask < 1<<k-1; mask++ {
			var in, rest []*Expr
			for i, a := range e.args {
				if mask&(1<<i) != 0 {
					in = append(in, a)
				} else {
					rest = append(rest, a)
				}
			}
			if len(in) >= 2 {
				nodes = append(nodes, node{assoc(e.op, in), func(x *Expr) *Expr { return assoc(e.op, append([]*Expr{x}, rest...)) }})
			}
		}
	}
	var out []*Expr
	for _, n := range nodes {
		for _, law := range laws {
			for _, side := range [][2]term{{law.lhs, law.rhs}, {law.rhs, law.lhs}} {
				from, to := side[0], side[1]
				if from.hasArith() {
					continue
				}
				for _, b := range matches(from, n.sub, binding{}) {
					for _, b := range withGuard(law, b) {
						out = append(out, n.rebuild(instantiate(to, assignment{sizes: b.sizes, exprs: b.exprs})))
					}
				}
			}
		}
	}
	for i, a := range e.args {
		for _, x := range rewrites(a, laws) {
			args := append([]*Expr(nil), e.args...)
			args[i] = x
			out = append(out, rebuild(e, args))
		}
	}
	return out
}

// withGuard extends b to the guard's free size, m of properDivisor(m, n).
func withGuard(law parsedAxiom, b binding) []binding {
	if law.when == nil {
		return []binding{b}
	}
	n, ok := b.sizes["n"]
	if !ok {
		return nil
	}
	var out []binding
	for m := 2; m < n; m++ {
		if n%m == 0 {
			out = append(out, b.with("m", nil, m))
		}
	}
	return out
}

// TestProvableSubexprsAreNotRefuted walks from random targets by the two
// steps of the prover's S, rewriting by a law and taking an operand, and
// checks that the normal forms never say no to where a walk goes.
func TestProvableSubexprsAreNotRefuted(t *testing.T) {
	laws, err := parseAxioms(axioms)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(9, 10))
	visited, refuted, undecided := 0, 0, 0
	for range 200 {
		target := randomExpr(r, 3)
		ix := newNFIndex([]*Expr{target})
		cur := target
		for range 25 {
			if v := ix.decide(cur); v != yes {
				if v == no {
					refuted++
					t.Errorf("target %s: %s is provably a subexpression, but the normal forms say no", target, cur)
				} else {
					undecided++
				}
			}
			visited++
			steps := rewrites(cur, laws)
			if len(cur.args) > 0 && (len(steps) == 0 || len(cur.Key()) > 300 || r.IntN(3) == 0) {
				cur = cur.args[r.IntN(len(cur.args))]
			} else if len(steps) > 0 {
				cur = steps[r.IntN(len(steps))]
			} else {
				break
			}
		}
	}
	t.Logf("%d expressions visited: %d refuted, %d undecided", visited, refuted, undecided)
	if undecided > visited/20 {
		t.Errorf("%d of %d provable subexpressions undecided", undecided, visited)
	}
}

// TestRandomQueriesAgreeWithZ3 asks Z3 random queries near random targets:
// where Z3 decides, the normal forms must answer the same.
func TestRandomQueriesAgreeWithZ3(t *testing.T) {
	requireZ3(t)
	if testing.Short() {
		t.Skip("asks Z3 many queries")
	}
	laws, err := parseAxioms(axioms)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(11, 12))
	var counts [3][3]int // [Z3 result][verdict]
	for range 30 {
		target := randomExpr(r, 3)
		ix := newNFIndex([]*Expr{target})
		p, err := newProver([]*Expr{target}, laws, Options{}.withDefaults().solverOptions())
		if err != nil {
			t.Fatal(err)
		}
		for range 5 {
			q := nearby(r, target, laws)
			v := ix.decide(q)
			res, err := p.check(q)
			if err != nil {
				t.Fatal(err)
			}
			counts[res][v]++
			if res == z3.Unsat && v == no || res == z3.Sat && v == yes {
				t.Errorf("target %s, query %s: Z3 says %v, the normal forms %v", target, q, res, v)
			}
		}
		p.close()
	}
	for res, name := range []string{"unknown", "sat", "unsat"} {
		t.Logf("Z3 %s: normal forms no %d, maybe %d, yes %d", name, counts[res][no], counts[res][maybe], counts[res][yes])
	}
}

// nearby is a query made from a subexpression of target: some are still
// subexpressions, some not.
func nearby(r *rand.Rand, target *Expr, laws []parsedAxiom) *Expr {
	q := target
	for range r.IntN(4) {
		if steps := rewrites(q, laws); len(steps) > 0 && r.IntN(2) == 0 && len(q.Key()) < 200 {
			q = steps[r.IntN(len(steps))]
		} else if len(q.args) > 0 {
			q = q.args[r.IntN(len(q.args))]
		}
	}
	switch r.IntN(4) {
	case 0:
		return Mul(q, Var("A"))
	case 1:
		return Sum(4, q)
	case 2:
		return Div(q, Var("B"))
	}
	return q
}
