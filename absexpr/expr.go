// Package absexpr gives every tensor of a μGraph an abstract expression that
// forgets index details (DESIGN §5), and decides whether a candidate's
// expression is a subexpression, modulo algebraic axioms, of the expressions
// of the program being optimized.
//
// # The expression language
//
//	x                 a program input (a variable)
//	add(a, b, ...)    element-wise sum; n-ary, operands sorted
//	mul(a, b, ...)    element-wise product; n-ary, operands sorted
//	div(a, b)         element-wise quotient
//	sum(n, a)         a summed over n elements (a reduction, a matmul's inner
//	                  dimension, or for-loop iterations)
//	rms(n, a)         root mean square of a over n elements
//	exp, log, sqrt, square, silu, gelu, relu (a)
//	clamp(lo, hi, a)  a clamped to [lo, hi]
//	pow(a, b)         a to the power b
//
// What is forgotten, and why it is safe to forget: which index a reduction
// runs over, how a grid partitions a tensor, and the values of scalar
// constants: every one is the variable scalar (Scalar), so a·c is
// mul(a, scalar) and a mean over n is mul(sum(n, a), scalar). The oracle
// only prunes the search; every survivor is verified exactly (ffverify).
//
// Expressions are immutable and canonical: add and mul are flattened with
// their operands sorted, sum(1, a) is a, and sum(n, sum(m, a)) is
// sum(n·m, a). Two expressions are equal exactly when their keys are. They
// are also interned: equal expressions are one *Expr, each stored once
// however many expressions it is an operand of, so an expression costs
// space and time in proportion to its distinct subexpressions, although
// its key, which writes every operand wherever it occurs, can be
// exponentially longer.
//
// # Deriving and judging
//
// ForKernel, ForBlock and ForOp give μGraph tensors their expressions
// (derive.go); Targets gives a program's. An Oracle, made from the targets,
// answers IsSubexpr: whether an expression is a subexpression of a target
// modulo the axioms (axioms.go). It decides in Go what a model of the
// axioms settles (filter.go, normal.go), which on the search's workload is
// every query, and asks Z3 the rest (prover.go, through package z3).
// Unknown counts as no.
package absexpr

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/mirage-go/mirage/ugraph"
)

// Op is the kind of an expression node.
type Op uint8

// The ops, as the package documentation describes them: the structural
// ones, then an opaque op for each element-wise op of ugraph's table whose
// abstract form is ugraph.ExprOpaque, numbered and named after its kind
// (opaqueOp). A new element-wise op of the table needs nothing here.
const (
	OpVar Op = iota
	OpAdd
	OpMul
	OpDiv
	OpSum
	OpRms
	firstOpaque
)

// The opaque ops this package builds by name (the others come from the
// table alone).
const (
	OpExp    = firstOpaque + Op(ugraph.OpExp)
	OpLog    = firstOpaque + Op(ugraph.OpLog)
	OpSqrt   = firstOpaque + Op(ugraph.OpSqrt)
	OpSquare = firstOpaque + Op(ugraph.OpSquare)
	OpSilu   = firstOpaque + Op(ugraph.OpSilu)
	OpGelu   = firstOpaque + Op(ugraph.OpGelu)
	OpRelu   = firstOpaque + Op(ugraph.OpRelu)
	OpClamp  = firstOpaque + Op(ugraph.OpClamp)
	OpPow    = firstOpaque + Op(ugraph.OpPow)

	numOps = firstOpaque + Op(ugraph.NumOpKinds)
)

// opaqueOp is the opaque op of element-wise kind k, if its abstract form
// is opaque.
func opaqueOp(k ugraph.OpKind) (Op, bool) {
	op := firstOpaque + Op(k)
	return op, k.Valid() && ops[op].opaque
}

// nary marks an n-ary (associative and commutative) op in opInfo.arity.
const nary = -1

// opInfo describes an op; the table below is the one place that lists them.
type opInfo struct {
	name  string // "" for an Op that is not one (the slot of a kind that is not opaque)
	arity int    // operands, or nary
	sized bool   // carries a size: sum(n, a), rms(n, a)
	// opaque ops have no algebraic laws: the axioms move them around whole,
	// which is what lets the Go-side filter reason about them (filter.go).
	opaque bool
	// bounded opaque ops carry their two scalars (Expr.lo, Expr.hi):
	// clamp's bounds. A factor (mul_scalar's) is the variable Scalar.
	bounded bool
}

var ops = func() [numOps]opInfo {
	t := [numOps]opInfo{
		OpVar: {name: "var"},
		OpAdd: {name: "add", arity: nary},
		OpMul: {name: "mul", arity: nary},
		OpDiv: {name: "div", arity: 2},
		OpSum: {name: "sum", arity: 1, sized: true},
		OpRms: {name: "rms", arity: 1, sized: true},
	}
	for _, k := range ugraph.OpKinds(ugraph.LevelKernel | ugraph.LevelBlock) {
		info := k.Info()
		if k.IsElementwise() && info.Elem.Expr == ugraph.ExprOpaque {
			t[firstOpaque+Op(k)] = opInfo{name: info.Name, arity: info.Arity, opaque: true, bounded: info.Scalars > 0}
		}
	}
	return t
}()

// valid reports whether op is an op (not an empty slot of the table).
func (op Op) valid() bool { return op < numOps && ops[op].name != "" }

func (op Op) String() string {
	if op.valid() {
		return ops[op].name
	}
	return fmt.Sprintf("Op(%d)", uint8(op))
}

// opByName maps an op's name to the op, for the parser.
var opByName = func() map[string]Op {
	m := make(map[string]Op, numOps)
	for op := OpAdd; op < numOps; op++ {
		if op.valid() {
			m[ops[op].name] = op
		}
	}
	return m
}()

// Expr is an abstract expression. It is immutable; build it with the
// constructors (Var, Add, Sum, ...), which keep it canonical and intern it:
// while an expression is reachable, every constructor call that builds an
// equal one returns the same *Expr. So equality is identity, and an
// expression shared by several operands is stored once (intern.go).
type Expr struct {
	op     Op
	name   string  // OpVar
	size   int     // OpSum, OpRms: elements reduced, >= 1
	lo, hi float64 // a bounded opaque op's scalars
	args   []*Expr
	head   string // the key up to the first operand: "add(", "sum(4096, "; "" for a variable
	// id names e in the intern keys of the expressions it is an operand
	// of; ids are never reused.
	id uint64
	// slot holds the answer of the first oracle that judged e
	// (Oracle.serial<<1 | answer; 0 for none): one load, and no table
	// entry, where an oracle's own cache of millions of expressions costs a
	// walk through memory and the collector's time. Most expressions are
	// only ever judged by one oracle; the others keep their answers in
	// their caches.
	slot atomic.Uint64
	// form is e's normal form under the first normalizer that made it
	// (normalizer.form), for the same reason.
	form atomic.Pointer[formSlot]
}

// verdict returns the answer the oracle of serial cached in e's slot.
func (e *Expr) verdict(serial uint64) (ok, hit bool) {
	v := e.slot.Load()
	return v&1 == 1, v != 0 && v>>1 == serial
}

// claimVerdict caches the answer ok of the oracle of serial in e's slot,
// unless another oracle's answer is there; it reports whether it did.
func (e *Expr) claimVerdict(serial uint64, ok bool) bool {
	v := serial << 1
	if ok {
		v |= 1
	}
	return e.slot.CompareAndSwap(0, v) || e.slot.Load() == v
}

// Op is e's kind.
func (e *Expr) Op() Op { return e.op }

// Name is a variable's name ("" for other ops).
func (e *Expr) Name() string { return e.name }

// Size is the number of elements a sum or rms reduces (0 for other ops).
func (e *Expr) Size() int { return e.size }

// Bounds are a clamp's bounds.
func (e *Expr) Bounds() (lo, hi float64) { return e.lo, e.hi }

// NumArgs is the number of operands.
func (e *Expr) NumArgs() int { return len(e.args) }

// Arg is operand i.
func (e *Expr) Arg(i int) *Expr { return e.args[i] }

// Key is e's canonical text; equal expressions have equal keys, and Parse
// reads it back. It writes e as a tree, each operand in full wherever it
// occurs, so it can be exponentially longer than e is large: the package
// never needs it, and compares expressions by identity.
func (e *Expr) Key() string {
	var b strings.Builder
	writeText(&b, e, math.MaxInt)
	return b.String()
}

// abbrev is e's key, cut short if long, for messages.
func (e *Expr) abbrev() string { return e.Abbrev(200) }

// Abbrev is e's key, cut to limit bytes and ended with "…" if it is
// longer (it can be exponentially longer than e is large: see Key).
func (e *Expr) Abbrev(limit int) string {
	var b strings.Builder
	writeText(&b, e, limit+1)
	if b.Len() > limit {
		s := b.String()[:limit]
		for len(s) > 0 && !utf8.ValidString(s) { // not inside a character
			s = s[:len(s)-1]
		}
		return s + "…"
	}
	return b.String()
}

// String is Key.
func (e *Expr) String() string { return e.Key() }

// ID identifies e: equal expressions, and only they, have equal IDs. It
// is a cheap map key. IDs are never reused: an expression built after an
// equal one was garbage collected has another.
func (e *Expr) ID() uint64 { return e.id }

// Equal reports whether e and f are the same expression (in O(1)).
func (e *Expr) Equal(f *Expr) bool { return e == f }

// Var is the program input called name, an identifier ([A-Za-z_][A-Za-z0-9_]*).
// It panics on any other name.
func Var(name string) *Expr {
	if !isIdent(name) {
		panic(fmt.Sprintf("absexpr: variable name %q is not an identifier", name))
	}
	return intern(OpVar, name, 0, 0, 0, nil)
}

// ScalarName is the variable that stands for every scalar constant of a
// program: mul_scalar's factor, and the 1/n of a mean and of an rms. One
// symbol for every value: an expression shows where a factor is applied
// (exp(x·c) differs from exp(x)·c, and the search stops proposing one for
// the other) but not its value, which is the verifier's to check. Mirage's
// expressions forget scalars altogether.
const ScalarName = "scalar"

// Scalar is the variable ScalarName.
func Scalar() *Expr { return Var(ScalarName) }

// Add is the element-wise sum of xs (at least one).
func Add(xs ...*Expr) *Expr { return assoc(OpAdd, xs) }

// Mul is the element-wise product of xs (at least one).
func Mul(xs ...*Expr) *Expr { return assoc(OpMul, xs) }

// Div is x / y.
func Div(x, y *Expr) *Expr { return intern(OpDiv, "", 0, 0, 0, []*Expr{x, y}) }

// Sum is x summed over n >= 1 elements. Nested sums merge: a sum over n of
// sums over m is a sum over n·m. It panics on n < 1 or an overflowing size.
func Sum(n int, x *Expr) *Expr { return orPanic(sum(n, x)) }

func sum(n int, x *Expr) (*Expr, error) {
	if n < 1 {
		return nil, fmt.Errorf("absexpr: sum over %d elements", n)
	}
	if x.op == OpSum {
		m := x.size
		if n > math.MaxInt/m {
			return nil, fmt.Errorf("absexpr: sum over %d·%d elements overflows", n, m)
		}
		n, x = n*m, x.args[0]
	}
	if n == 1 {
		return x, nil
	}
	return intern(OpSum, "", n, 0, 0, []*Expr{x}), nil
}

// Rms is the root mean square of x over n >= 1 elements. It panics on
// n < 1.
func Rms(n int, x *Expr) *Expr { return orPanic(rms(n, x)) }

func rms(n int, x *Expr) (*Expr, error) {
	if n < 1 {
		return nil, fmt.Errorf("absexpr: rms over %d elements", n)
	}
	return intern(OpRms, "", n, 0, 0, []*Expr{x}), nil
}

// Exp is e^x.
func Exp(x *Expr) *Expr { return unary(OpExp, x) }

// Log is the natural logarithm of x.
func Log(x *Expr) *Expr { return unary(OpLog, x) }

// Sqrt is the square root of x.
func Sqrt(x *Expr) *Expr { return unary(OpSqrt, x) }

// Square is x².
func Square(x *Expr) *Expr { return unary(OpSquare, x) }

// Silu is x·sigmoid(x).
func Silu(x *Expr) *Expr { return unary(OpSilu, x) }

// Gelu is the Gaussian error linear unit of x.
func Gelu(x *Expr) *Expr { return unary(OpGelu, x) }

// Relu is max(x, 0).
func Relu(x *Expr) *Expr { return unary(OpRelu, x) }

// Clamp is x clamped to [lo, hi]. It panics on NaN or lo > hi.
func Clamp(lo, hi float64, x *Expr) *Expr {
	if lo > hi {
		panic(fmt.Sprintf("absexpr: clamp bounds [%v, %v]", lo, hi))
	}
	return orPanic(bounded(OpClamp, lo, hi, []*Expr{x}))
}

// bounded builds the bounded opaque op on args with scalars lo and hi.
func bounded(op Op, lo, hi float64, args []*Expr) (*Expr, error) {
	if math.IsNaN(lo) || math.IsNaN(hi) {
		return nil, fmt.Errorf("absexpr: %v scalars [%v, %v]", op, lo, hi)
	}
	return intern(op, "", 0, lo, hi, args), nil
}

// Pow is x to the power y.
func Pow(x, y *Expr) *Expr { return intern(OpPow, "", 0, 0, 0, []*Expr{x, y}) }

func unary(op Op, x *Expr) *Expr { return intern(op, "", 0, 0, 0, []*Expr{x}) }

// apply builds op (one without a size or bounds) on args.
func apply(op Op, args []*Expr) *Expr {
	switch op {
	case OpAdd:
		return Add(args...)
	case OpMul:
		return Mul(args...)
	case OpDiv:
		return Div(args[0], args[1])
	}
	return intern(op, "", 0, 0, 0, args)
}

// maxOperands bounds the operands assoc flattens an add or mul into.
const maxOperands = 1 << 10

// assoc builds an n-ary add or mul: nested ones are flattened and the
// operands sorted by key, so that associativity and commutativity never
// distinguish two expressions.
func assoc(op Op, xs []*Expr) *Expr {
	if len(xs) == 0 {
		panic("absexpr: " + op.String() + " of nothing")
	}
	if len(xs) == 1 {
		return xs[0]
	}
	// Nested operands are sorted already: merge them, for a long sum
	// that grows by one operand at a time. Past maxOperands they stay
	// nested: a program that adds a value to itself n times (y = y + y)
	// would otherwise flatten into 2^n operands. Such a sum is then not
	// canonical, which only weakens pruning, on programs no search takes.
	total := 0
	for _, x := range xs {
		if x.op == op {
			total += len(x.args)
		} else {
			total++
		}
	}
	var flat, single []*Expr
	for _, x := range xs {
		if x.op == op && total <= maxOperands {
			flat = mergeSorted(flat, x.args, compareText)
		} else {
			single = append(single, x)
		}
	}
	slices.SortFunc(single, compareText)
	flat = mergeSorted(flat, single, compareText)
	return intern(op, "", 0, 0, 0, flat)
}

// piece is the i-th piece of e's key (see textNode): name(attributes,
// operands).
func (e *Expr) piece(i int) (string, *Expr, bool) {
	if e.op == OpVar {
		return e.name, nil, i == 0
	}
	switch j := i - 1; {
	case i == 0:
		return e.head, nil, true
	case j < 2*len(e.args)-1 && j%2 == 0:
		return "", e.args[j/2], true
	case j < 2*len(e.args)-1:
		return ", ", nil, true
	case j == 2*len(e.args)-1:
		return ")", nil, true
	}
	return "", nil, false
}

// headOf is e's key up to its first operand, for e.head.
func headOf(e *Expr) string {
	info := ops[e.op]
	switch {
	case info.sized:
		return info.name + "(" + strconv.Itoa(e.size) + ", "
	case info.bounded:
		return info.name + "(" + formatFloat(e.lo) + ", " + formatFloat(e.hi) + ", "
	}
	return opHeads[e.op]
}

// opHeads are the heads of ops without attributes.
var opHeads = func() (h [numOps]string) {
	for op := range numOps {
		if op.valid() {
			h[op] = ops[op].name + "("
		}
	}
	return h
}()

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// orPanic turns a constructor's error into the panic its exported form
// documents.
func orPanic(e *Expr, err error) *Expr {
	if err != nil {
		panic(err)
	}
	return e
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		letter := r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z'
		if !letter && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// Walk calls f on e and then on each of its operands, depth first. It stops
// descending below a node for which f returns false. An operand is visited
// wherever it occurs, so a walk that should see each subexpression once
// returns false for those it has seen.
func (e *Expr) Walk(f func(*Expr) bool) {
	if f(e) {
		for _, a := range e.args {
			a.Walk(f)
		}
	}
}

// Vars lists the variables e mentions, sorted and without repeats.
func (e *Expr) Vars() []string {
	var names []string
	seen := map[*Expr]bool{}
	e.Walk(func(x *Expr) bool {
		if seen[x] {
			return false
		}
		seen[x] = true
		if x.op == OpVar {
			names = append(names, x.name)
		}
		return true
	})
	slices.Sort(names)
	return slices.Compact(names)
}
