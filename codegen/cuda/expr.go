package cuda

import (
	"fmt"
	"strconv"
)

// expr is a non-negative integer index expression: the offsets and indices
// of the emitted code are built from these, simplified with what is known
// of each value's range, printed as C, and evaluated in Go by the tests.
//
// Every expr has a value in [0, hi) when hi > 0 (hi = 0: no known bound).
// The builders simplify as they go, so an offset into a tile whose dims
// are 1 or whose index cannot exceed a dim prints without the dead terms.
type expr struct {
	op   byte // 'c' constant, 'v' variable, '+', '*' (by a constant), '/', '%' (by a constant), '-' (a constant)
	k    int  // the constant of 'c', '*', '/', '%', '-'
	name string
	a, b *expr
	hi   int
}

func cst(k int) *expr { return &expr{op: 'c', k: k, hi: k + 1} }

// vr is a variable known to lie in [0, hi) (hi = 0: unbounded).
func vr(name string, hi int) *expr { return &expr{op: 'v', name: name, hi: hi} }

func (x *expr) isConst() bool { return x.op == 'c' }

func add(a, b *expr) *expr {
	switch {
	case a.isConst() && b.isConst():
		return cst(a.k + b.k)
	case a.isConst() && a.k == 0:
		return b
	case b.isConst() && b.k == 0:
		return a
	case a.isConst():
		a, b = b, a // constants last
	}
	if b.isConst() && a.op == '+' && a.b.isConst() {
		return add(a.a, cst(a.b.k+b.k))
	}
	hi := 0
	if a.hi > 0 && b.hi > 0 {
		hi = a.hi + b.hi - 1
	}
	return &expr{op: '+', a: a, b: b, hi: hi}
}

func sum(xs ...*expr) *expr {
	s := cst(0)
	for _, x := range xs {
		s = add(s, x)
	}
	return s
}

func mul(a *expr, k int) *expr {
	switch {
	case k == 0:
		return cst(0)
	case k == 1:
		return a
	case a.isConst():
		return cst(a.k * k)
	case a.op == '*':
		return mul(a.a, a.k*k)
	}
	hi := 0
	if a.hi > 0 {
		hi = (a.hi-1)*k + 1
	}
	return &expr{op: '*', a: a, k: k, hi: hi}
}

func div(a *expr, k int) *expr {
	switch {
	case k == 1:
		return a
	case a.isConst():
		return cst(a.k / k)
	case a.hi > 0 && a.hi <= k:
		return cst(0)
	case a.op == '/':
		return div(a.a, a.k*k)
	case a.op == '*' && a.k%k == 0:
		return mul(a.a, a.k/k)
	case a.op == '+' && a.a.op == '*' && a.a.k%k == 0 && a.b.hi > 0 && a.b.hi <= k:
		return mul(a.a.a, a.a.k/k) // (x·mk + y) / k with y < k
	}
	hi := 0
	if a.hi > 0 {
		hi = (a.hi-1)/k + 1
	}
	return &expr{op: '/', a: a, k: k, hi: hi}
}

func mod(a *expr, k int) *expr {
	switch {
	case k == 1:
		return cst(0)
	case a.isConst():
		return cst(a.k % k)
	case a.hi > 0 && a.hi <= k:
		return a
	case a.op == '*' && a.k%k == 0:
		return cst(0)
	case a.op == '+' && a.a.op == '*' && a.a.k%k == 0:
		return mod(a.b, k) // (x·mk + y) % k
	}
	return &expr{op: '%', a: a, k: k, hi: k}
}

// subc is a − k, for a known (by the caller's context) to be at least k.
func subc(a *expr, k int) *expr {
	switch {
	case k == 0:
		return a
	case a.isConst():
		return cst(a.k - k)
	}
	hi := 0
	if a.hi > 0 {
		hi = max(a.hi-k, 1)
	}
	return &expr{op: '-', a: a, k: k, hi: hi}
}

// String prints x as a C expression.
func (x *expr) String() string { return x.c(0) }

// maxInt is the largest value of a C int, in which the emitted code
// computes indices.
const maxInt = 1<<31 - 1

// long reports whether x may exceed a C int (an offset into a device
// tensor of 2^31 elements or more): c then prints it in 64-bit arithmetic.
// A bound that is not known (hi = 0) is a variable's own, already typed.
func (x *expr) long() bool { return x.hi-1 > maxInt }

// asLong is x's C text at precedence prec, converted to long long if x
// does not print as one already.
func (x *expr) asLong(prec int) string {
	if x.long() || x.op == 'c' {
		return x.c(prec)
	}
	return "static_cast<long long>(" + x.c(0) + ")"
}

// c prints x in a context of precedence prec (higher binds tighter). A
// product, quotient or remainder of another one is parenthesized, for the
// reader: (e / 64) % 256. A sum or product that may exceed a C int
// converts an operand to long long first, so that C computes it in 64
// bits: static_cast<long long>(bx) * 16777216.
func (x *expr) c(prec int) string {
	var s string
	p := 2
	switch x.op {
	case 'c':
		return strconv.Itoa(x.k)
	case 'v':
		return x.name
	case '+':
		a := x.a.c(1)
		if x.long() && !x.a.long() && !x.b.long() {
			a = x.a.asLong(1)
		}
		s, p = a+" + "+x.b.c(1), 1
	case '-':
		s, p = x.a.c(1)+" - "+strconv.Itoa(x.k), 1
	case '*', '/', '%':
		inner := x.a.c(2)
		if (x.a.op == '*' || x.a.op == '/' || x.a.op == '%') && x.a.op != x.op {
			inner = "(" + inner + ")"
		}
		if x.op == '*' && x.long() && !x.a.long() {
			inner = x.a.asLong(2)
		}
		s = inner + " " + string(x.op) + " " + strconv.Itoa(x.k)
	default:
		panic(fmt.Sprintf("expr: op %q", x.op))
	}
	if p < prec {
		return "(" + s + ")"
	}
	return s
}

// eval computes x with the variables bound by env.
func (x *expr) eval(env map[string]int) int {
	switch x.op {
	case 'c':
		return x.k
	case 'v':
		v, ok := env[x.name]
		if !ok {
			panic("expr: unbound variable " + x.name)
		}
		return v
	case '+':
		return x.a.eval(env) + x.b.eval(env)
	case '-':
		return x.a.eval(env) - x.k
	case '*':
		return x.a.eval(env) * x.k
	case '/':
		return x.a.eval(env) / x.k
	case '%':
		return x.a.eval(env) % x.k
	}
	panic(fmt.Sprintf("expr: op %q", x.op))
}

// uses reports whether x mentions the variable name.
func (x *expr) uses(name string) bool {
	switch x.op {
	case 'v':
		return x.name == name
	case 'c':
		return false
	}
	return x.a.uses(name) || (x.b != nil && x.b.uses(name))
}
