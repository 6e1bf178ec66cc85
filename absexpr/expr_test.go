package absexpr

import (
	"strings"
	"testing"
)

func TestCanonicalForms(t *testing.T) {
	X, W, Y := Var("X"), Var("W"), Var("Y")
	tests := []struct {
		name string
		got  *Expr
		want string
	}{
		{"add sorts its operands", Add(X, W), "add(W, X)"},
		{"add flattens nested adds", Add(X, Add(Y, W)), "add(W, X, Y)"},
		{"add keeps repeated operands", Add(X, X), "add(X, X)"},
		{"add of one operand is the operand", Add(X), "X"},
		{"mul flattens and sorts", Mul(Mul(Y, X), W), "mul(W, X, Y)"},
		{"mul inside add stays", Add(Mul(X, W), Y), "add(Y, mul(W, X))"},
		{"sum over one element is the operand", Sum(1, X), "X"},
		{"nested sums merge", Sum(4, Sum(1024, X)), "sum(4096, X)"},
		{"nested sums merge in either order", Sum(1024, Sum(4, X)), "sum(4096, X)"},
		{"div keeps its order", Div(X, W), "div(X, W)"},
		{"rms does not merge", Rms(4, Rms(8, X)), "rms(4, rms(8, X))"},
		{"clamp writes its bounds", Clamp(-1.5, 6, X), "clamp(-1.5, 6, X)"},
		{"matmul", Sum(4096, Mul(X, W)), "sum(4096, mul(W, X))"},
		{"rms_norm", Div(X, Rms(4096, X)), "div(X, rms(4096, X))"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.got.Key(); got != tt.want {
				t.Errorf("key = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEqualIsStructural(t *testing.T) {
	a := Sum(64, Mul(Var("X"), Var("W")))
	b := MustParse("sum(64, mul(X, W))")
	c := MustParse("sum(32, mul(X, W))")
	if !a.Equal(b) {
		t.Errorf("%s and %s built apart should be equal", a, b)
	}
	if a.Equal(c) {
		t.Errorf("%s and %s should differ", a, c)
	}
}

func TestParseRoundTrip(t *testing.T) {
	for _, src := range []string{
		"X",
		"sum(4096, mul(W, div(X, rms(4096, X))))",
		"mul(silu(sum(4096, mul(W1, X))), sum(4096, mul(W2, X)))",
		"sum(4096, mul(V, div(exp(sum(64, mul(K, Q))), sum(4096, exp(sum(64, mul(K, Q)))))))",
		"add(log(x), sqrt(y), square(z), gelu(a), relu(b), pow(c, d), clamp(0, 6, e))",
		"clamp(-0.5, 1e-05, x)",
	} {
		e, err := Parse(src)
		if err != nil {
			t.Fatalf("Parse(%q): %v", src, err)
		}
		again, err := Parse(e.Key())
		if err != nil || !again.Equal(e) {
			t.Errorf("Parse(Key()) of %q = %v, %v; want %s", src, again, err, e)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tt := range []struct{ src, want string }{
		{"", "expected a variable or an op"},
		{"foo(X)", `unknown op "foo"`},
		{"add(X)", "add takes two or more operands, got 1"},
		{"exp(X, Y)", "exp takes one operand, got 2"},
		{"sum(X, Y)", "sum needs a positive size first"},
		{"sum(0, X)", "sum needs a positive size first"},
		{"clamp(1, 0, X)", "reversed"},
		{"mul(X, Y", `expected ','`},
		{"X Y", "unexpected"},
		{"1X", "is not a variable name"},
	} {
		_, err := Parse(tt.src)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q) error = %v, want it to mention %q", tt.src, err, tt.want)
		}
	}
}

func TestConstructorsPanicOnMisuse(t *testing.T) {
	for name, f := range map[string]func(){
		"Var with a bad name": func() { Var("a b") },
		"Sum over 0":          func() { Sum(0, Var("x")) },
		"Add of nothing":      func() { Add() },
		"Clamp reversed":      func() { Clamp(2, 1, Var("x")) },
		"Sum overflowing":     func() { Sum(1<<40, Sum(1<<40, Var("x"))) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("did not panic")
				}
			}()
			f()
		})
	}
}

func TestVars(t *testing.T) {
	e := MustParse("div(add(X, mul(alpha, X)), rms(4096, H))")
	if got := strings.Join(e.Vars(), ","); got != "H,X,alpha" {
		t.Errorf("Vars = %s, want H,X,alpha", got)
	}
}

// A program that adds a value to itself n times (y = y + y), or multiplies
// in a Fibonacci chain, stays within maxOperands operands per node rather
// than flattening into 2^n (found by review: show --absexpr of a 40-op
// document ran out of memory), and Abbrev cuts its exponentially long key.
func TestChainsStayBounded(t *testing.T) {
	x := Var("x")
	y := x
	for range 60 {
		y = Add(y, y)
	}
	prev, cur := x, Mul(x, x)
	for range 60 {
		prev, cur = cur, Mul(cur, prev)
	}
	for _, e := range []*Expr{y, cur} {
		var walk func(e *Expr, depth int)
		seen := map[*Expr]bool{}
		walk = func(e *Expr, depth int) {
			if seen[e] {
				return
			}
			seen[e] = true
			if e.NumArgs() > maxOperands {
				t.Fatalf("%v of %d operands, past %d", e.Op(), e.NumArgs(), maxOperands)
			}
			for i := range e.NumArgs() {
				walk(e.Arg(i), depth+1)
			}
		}
		walk(e, 0)
		if s := e.Abbrev(100); len(s) > 100+len("…") || !strings.HasSuffix(s, "…") {
			t.Errorf("Abbrev(100) = %d bytes: %q", len(s), s)
		}
	}
	// Below the bound, sums flatten as before.
	if s := Add(Add(x, Var("y")), Add(x, Var("z"))).Key(); s != "add(x, x, y, z)" {
		t.Errorf("a short sum: %s", s)
	}
}
