package absexpr

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// trickyExprs builds n expressions over variables whose names are
// prefixes of each other and of op names, each from earlier ones, so that
// they share operands and their keys share long prefixes.
func trickyExprs(r *rand.Rand, n int) []*Expr {
	var pool []*Expr
	for _, name := range []string{"X", "X1", "ex", "exp", "expo", "s", "sum", "add"} {
		pool = append(pool, Var(name))
	}
	pick := func() *Expr { return pool[r.IntN(len(pool))] }
	sizes := []int{1, 4, 40, 400, 8}
	bounds := [][2]float64{{0, 6}, {-1.5, 1e-5}, {0, 0.5}, {-1, 6}}
	for len(pool) < n {
		var e *Expr
		switch op := Op(1 + r.IntN(int(numOps)-1)); {
		case op == OpAdd || op == OpMul:
			args := []*Expr{pick(), pick()}
			for r.IntN(2) == 0 {
				args = append(args, pick())
			}
			e = assoc(op, args)
		case op == OpSum:
			e = Sum(sizes[r.IntN(len(sizes))], pick())
		case op == OpRms:
			e = Rms(sizes[r.IntN(len(sizes))], pick())
		case op == OpClamp:
			b := bounds[r.IntN(len(bounds))]
			e = Clamp(b[0], b[1], pick())
		case op == OpDiv || op == OpPow:
			e = apply(op, []*Expr{pick(), pick()})
		default:
			e = unary(op, pick())
		}
		pool = append(pool, e)
	}
	return pool
}

func sign(c int) int { return min(max(c, -1), 1) }

// TestCompareTextIsKeyOrder checks that compareText orders expressions,
// and normal forms, as their texts sort.
func TestCompareTextIsKeyOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	exprs := trickyExprs(r, 300)
	nz := newNormalizer()
	var nodes []nfNode
	for _, e := range exprs {
		if p, err := nz.normal(e); err == nil {
			nodes = append(nodes, p, p.terms[0], p.terms[0].atoms[0])
		}
	}
	for range 20000 {
		a, b := exprs[r.IntN(len(exprs))], exprs[r.IntN(len(exprs))]
		if got, want := compareText(a, b), strings.Compare(a.Key(), b.Key()); sign(got) != want {
			t.Fatalf("compareText(%s, %s) = %d, want %d", a, b, got, want)
		}
		x, y := nodes[r.IntN(len(nodes))], nodes[r.IntN(len(nodes))]
		if got, want := compareText(x, y), strings.Compare(nfText(x), nfText(y)); sign(got) != want {
			t.Fatalf("compareText(%s, %s) = %d, want %d", nfText(x), nfText(y), got, want)
		}
	}
}

func nfText(n nfNode) string {
	var b strings.Builder
	writeText(&b, n, math.MaxInt)
	return b.String()
}

// TestCanonicalOrderOfPrefixes pins the order of keys that are prefixes of
// each other: a variable sorts before an op of its name, except inside an
// operand list, where the op's "(" sorts before the ", " or ")" that ends
// the variable.
func TestCanonicalOrderOfPrefixes(t *testing.T) {
	X := Var("X")
	for _, tt := range []struct {
		got  *Expr
		want string
	}{
		{Add(Exp(X), Var("exp")), "add(exp, exp(X))"},
		{Add(Var("X1"), X), "add(X, X1)"},
		{Add(Sum(40, X), Sum(4, X)), "add(sum(4, X), sum(40, X))"},
		{Mul(Add(Var("exp"), X), Add(Exp(X), X)), "mul(add(X, exp(X)), add(X, exp))"},
		{Mul(Add(X, Var("exp")), Add(X, Exp(X))), "mul(add(X, exp(X)), add(X, exp))"},
	} {
		if got := tt.got.Key(); got != tt.want {
			t.Errorf("key = %s, want %s", got, tt.want)
		}
	}
}

func TestAbbrev(t *testing.T) {
	x := Var("X")
	for range 600 { // a key of 2⁶⁰⁰ bytes
		x = Add(x, Exp(x))
	}
	if got := x.abbrev(); len(got) > 210 || !strings.HasPrefix(got, "add(X, exp(X), exp(add(X, exp(X))), ") {
		t.Errorf("abbrev = %q", got)
	}
	if got := Exp(Var("X")).abbrev(); got != "exp(X)" {
		t.Errorf("abbrev = %q, want exp(X)", got)
	}
}
