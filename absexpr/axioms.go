package absexpr

import (
	"fmt"
	"strconv"
	"strings"
)

// The axioms: the laws under which a candidate's expression counts as a
// subexpression of the program's. They are written once, here, as data; the
// prover (prover.go) turns each into a quantified Z3 formula, and tests check
// each against a numeric model (axioms_test.go) and against the Go-side filter
// (filter.go).
//
// Notation: x, y, z range over tensors; n, m over sizes (positive integers).
// Each law lhs = rhs holds for all values of its variables, under its guard
// if it has one. Triggers are the patterns Z3 instantiates the law on (ground
// terms matching every term of one multi-pattern); by default each side that
// mentions every variable and no size arithmetic is a trigger, so the law can
// be used in both directions.
//
// The model they describe: a tensor is a number, sum(n, x) is n·x (the index
// is forgotten, so every summand is alike), rms(n, x) is sqrt(n·x²) (the 1/n
// of the mean is a scalar, and scalars are forgotten), square(x) is x². Every
// law holds in that model, so the axioms are consistent and never identify
// two different inputs.
//
// The subexpression relation is not among these laws; it is a predicate S,
// "is a subexpression of a target", which the prover asserts of every target
// (reflexivity), closes under "each operand of an op is a subexpression of
// it" for every op in the ops table, and which is transitive by construction
// (a subexpression of a subexpression of a target is one of the target).
// Equalities from the laws make S hold of every expression equal to one it
// holds of.
var axioms = []axiom{
	// Addition is commutative. (Its mirror image is the same trigger.)
	{name: "add-comm", lhs: "add(x, y)", rhs: "add(y, x)", triggers: []string{"add(x, y)"}},
	// Addition is associative.
	{name: "add-assoc", lhs: "add(add(x, y), z)", rhs: "add(x, add(y, z))"},
	// Multiplication is commutative.
	{name: "mul-comm", lhs: "mul(x, y)", rhs: "mul(y, x)", triggers: []string{"mul(x, y)"}},
	// Multiplication is associative.
	{name: "mul-assoc", lhs: "mul(mul(x, y), z)", rhs: "mul(x, mul(y, z))"},
	// Multiplication distributes over addition (from the left; commutativity
	// gives the right).
	{name: "distrib", lhs: "mul(x, add(y, z))", rhs: "add(mul(x, y), mul(x, z))"},
	// Fractions over one denominator add up: x/z + y/z = (x+y)/z.
	{name: "div-add", lhs: "add(div(x, z), div(y, z))", rhs: "div(add(x, y), z)"},
	// A factor moves into a numerator: x·(y/z) = (x·y)/z.
	{name: "mul-div", lhs: "mul(x, div(y, z))", rhs: "div(mul(x, y), z)"},
	// Dividing twice is dividing by the product: (x/y)/z = x/(y·z).
	{name: "div-div", lhs: "div(div(x, y), z)", rhs: "div(x, mul(y, z))"},
	// A sum distributes over addition.
	{name: "sum-add", lhs: "sum(n, add(x, y))", rhs: "add(sum(n, x), sum(n, y))"},
	// A factor that does not depend on the summed index comes out of a sum.
	// Expressions forget indices, so any factor may: this over-approximates
	// the subexpressions, which only makes pruning weaker, never wrong.
	{name: "sum-mul", lhs: "sum(n, mul(x, y))", rhs: "mul(sum(n, x), y)"},
	// Likewise a divisor comes out of a sum (the softmax and RMSNorm
	// denominators, computed once per row).
	{name: "sum-div", lhs: "sum(n, div(x, y))", rhs: "div(sum(n, x), y)"},
	// A sum over n of sums over m is a sum over n·m elements. Sums therefore
	// commute: sum(n, sum(m, x)) = sum(n·m, x) = sum(m, sum(n, x)).
	{name: "sum-nest", lhs: "sum(n, sum(m, x))", rhs: "sum(n*m, x)"},
	// Conversely a sum over n elements splits into n/m sums over m, for any
	// proper divisor m of n. It is instantiated only for a size m at which x
	// is summed elsewhere, which is what makes partial sums (a per-iteration
	// matmul tile, a block's share of a reduction) subexpressions.
	{
		name: "sum-split", lhs: "sum(n, x)", rhs: "sum(n/m, sum(m, x))",
		when: "properDivisor(m, n)", triggers: []string{"sum(n, x)", "sum(m, x)"},
	},
	// rms is the square root of the mean of squares; the 1/n is a scalar.
	// This lets an accumulated sum of squares stand for an rms.
	{name: "rms-def", lhs: "rms(n, x)", rhs: "sqrt(sum(n, square(x)))"},
}

// An axiom is the law lhs = rhs, quantified over its variables.
type axiom struct {
	name     string
	lhs, rhs string
	// when is a guard on the size variables; the law holds where it does.
	// The one guard is properDivisor(m, n): 1 < m < n and m divides n.
	when string
	// triggers is one multi-pattern (all its terms must match); nil means
	// the default triggers (see the table's comment).
	triggers []string
}

// term is a node of an axiom's formula: an application of an op (or S, or
// size arithmetic "*" and "/", or the guard properDivisor), a variable, or
// an integer literal.
type term struct {
	fn   string // op name; "" for a variable or a literal
	name string // variable name
	num  int    // literal value, when fn and name are ""
	args []term
}

// sort of a variable by the naming convention: n, m are sizes, the rest
// tensors.
func varIsSize(name string) bool { return name == "n" || name == "m" }

func (t term) String() string {
	switch {
	case t.name != "":
		return t.name
	case t.fn == "":
		return strconv.Itoa(t.num)
	case t.fn == "*" || t.fn == "/":
		return t.args[0].String() + t.fn + t.args[1].String()
	}
	parts := make([]string, len(t.args))
	for i, a := range t.args {
		parts[i] = a.String()
	}
	return t.fn + "(" + strings.Join(parts, ", ") + ")"
}

// vars appends t's variables to seen (in order of first appearance).
func (t term) vars(seen []string) []string {
	if t.name != "" {
		for _, v := range seen {
			if v == t.name {
				return seen
			}
		}
		return append(seen, t.name)
	}
	for _, a := range t.args {
		seen = a.vars(seen)
	}
	return seen
}

// hasArith reports whether t does size arithmetic, which no trigger may.
func (t term) hasArith() bool {
	if t.fn == "*" || t.fn == "/" {
		return true
	}
	for _, a := range t.args {
		if a.hasArith() {
			return true
		}
	}
	return false
}

// parsedAxiom is an axiom with its terms parsed.
type parsedAxiom struct {
	name     string
	lhs, rhs term
	when     *term
	vars     []string
	triggers [][]term // each element one multi-pattern
}

// parseAxioms parses the table; a malformed row is a bug, reported with its
// name.
func parseAxioms(table []axiom) ([]parsedAxiom, error) {
	out := make([]parsedAxiom, 0, len(table))
	for _, ax := range table {
		p, err := parseAxiom(ax)
		if err != nil {
			return nil, fmt.Errorf("absexpr: axiom %s: %w", ax.name, err)
		}
		out = append(out, p)
	}
	return out, nil
}

func parseAxiom(ax axiom) (parsedAxiom, error) {
	p := parsedAxiom{name: ax.name}
	var err error
	if p.lhs, err = parseTerm(ax.lhs); err != nil {
		return p, err
	}
	if p.rhs, err = parseTerm(ax.rhs); err != nil {
		return p, err
	}
	p.vars = p.rhs.vars(p.lhs.vars(nil))
	if ax.when != "" {
		w, err := parseTerm(ax.when)
		if err != nil {
			return p, err
		}
		if w.fn != "properDivisor" || len(w.args) != 2 {
			return p, fmt.Errorf("unknown guard %s", w)
		}
		p.when = &w
		p.vars = w.vars(p.vars)
	}
	if ax.triggers != nil {
		var multi []term
		for _, s := range ax.triggers {
			t, err := parseTerm(s)
			if err != nil {
				return p, err
			}
			multi = append(multi, t)
		}
		p.triggers = [][]term{multi}
	} else {
		for _, side := range []term{p.lhs, p.rhs} {
			if side.fn != "" && !side.hasArith() && len(side.vars(nil)) == len(p.vars) {
				p.triggers = append(p.triggers, []term{side})
			}
		}
	}
	if len(p.triggers) == 0 {
		return p, fmt.Errorf("no trigger")
	}
	for _, multi := range p.triggers {
		var covered []string
		for _, t := range multi {
			if t.fn == "" || t.hasArith() {
				return p, fmt.Errorf("trigger %s is not an application", t)
			}
			covered = t.vars(covered)
		}
		if len(covered) != len(p.vars) {
			return p, fmt.Errorf("trigger %v does not bind every variable of %v", multi, p.vars)
		}
	}
	return p, nil
}

// parseTerm reads the axioms' term syntax: applications f(a, b), variables,
// integer literals and size arithmetic a*b, a/b.
func parseTerm(s string) (term, error) {
	toks, err := lexTerm(s)
	if err != nil {
		return term{}, err
	}
	p := &termParser{toks: toks}
	t, err := p.product()
	if err != nil {
		return term{}, fmt.Errorf("%q: %w", s, err)
	}
	if p.pos != len(toks) {
		return term{}, fmt.Errorf("%q: trailing %q", s, toks[p.pos])
	}
	return t, nil
}

func lexTerm(s string) ([]string, error) {
	var toks []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ':
			i++
		case strings.IndexByte("(),*/", c) >= 0:
			toks = append(toks, s[i:i+1])
			i++
		case c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9':
			j := i
			for j < len(s) && (s[j] == '_' || 'a' <= s[j] && s[j] <= 'z' || 'A' <= s[j] && s[j] <= 'Z' || '0' <= s[j] && s[j] <= '9') {
				j++
			}
			toks = append(toks, s[i:j])
			i = j
		default:
			return nil, fmt.Errorf("%q: unexpected %q", s, c)
		}
	}
	return toks, nil
}

type termParser struct {
	toks []string
	pos  int
}

func (p *termParser) peek() string {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return ""
}

func (p *termParser) product() (term, error) {
	t, err := p.atom()
	for err == nil && (p.peek() == "*" || p.peek() == "/") {
		op := p.toks[p.pos]
		p.pos++
		var r term
		if r, err = p.atom(); err == nil {
			t = term{fn: op, args: []term{t, r}}
		}
	}
	return t, err
}

func (p *termParser) atom() (term, error) {
	tok := p.peek()
	if tok == "" || strings.Contains("(),*/", tok) {
		return term{}, fmt.Errorf("expected a term at %q", tok)
	}
	p.pos++
	if n, err := strconv.Atoi(tok); err == nil {
		return term{num: n}, nil
	}
	if p.peek() != "(" {
		return term{name: tok}, nil
	}
	p.pos++
	t := term{fn: tok}
	for {
		a, err := p.product()
		if err != nil {
			return term{}, err
		}
		t.args = append(t.args, a)
		switch p.peek() {
		case ",":
			p.pos++
			continue
		case ")":
			p.pos++
			return t, nil
		}
		return term{}, fmt.Errorf("expected , or ) at %q", p.peek())
	}
}
