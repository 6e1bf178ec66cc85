package absexpr

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// Parse reads an expression written as Key writes it, e.g.
// "div(sum(4096, mul(X, W)), rms(4096, X))". Spaces are optional; add and
// mul take two or more operands.
func Parse(s string) (*Expr, error) {
	p := &parser{src: s}
	e, err := p.expr()
	if err != nil {
		return nil, err
	}
	if p.skip(); p.pos < len(p.src) {
		return nil, p.errorf("unexpected %q after the expression", p.src[p.pos:])
	}
	return e, nil
}

// MustParse is Parse for expressions known to be valid; it panics otherwise.
func MustParse(s string) *Expr {
	e, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return e
}

type parser struct {
	src string
	pos int
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("absexpr: parse %q at offset %d: %s", p.src, p.pos, fmt.Sprintf(format, args...))
}

func (p *parser) skip() {
	for p.pos < len(p.src) && p.src[p.pos] == ' ' {
		p.pos++
	}
}

// token scans an identifier or a number.
func (p *parser) token() string {
	p.skip()
	start := p.pos
	for p.pos < len(p.src) {
		r := rune(p.src[p.pos])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("_.-+", r) {
			break
		}
		p.pos++
	}
	return p.src[start:p.pos]
}

func (p *parser) accept(c byte) bool {
	p.skip()
	if p.pos < len(p.src) && p.src[p.pos] == c {
		p.pos++
		return true
	}
	return false
}

func (p *parser) expect(c byte) error {
	if !p.accept(c) {
		return p.errorf("expected %q", c)
	}
	return nil
}

func (p *parser) expr() (*Expr, error) {
	name := p.token()
	if name == "" {
		return nil, p.errorf("expected a variable or an op")
	}
	if !p.accept('(') {
		if !isIdent(name) {
			return nil, p.errorf("%q is not a variable name", name)
		}
		return Var(name), nil
	}
	op, ok := opByName[name]
	if !ok {
		return nil, p.errorf("unknown op %q", name)
	}
	info := ops[op]
	var size int
	var bounds []float64
	switch {
	case info.sized:
		n, err := strconv.Atoi(p.token())
		if err != nil || n < 1 {
			return nil, p.errorf("%s needs a positive size first", name)
		}
		size = n
		if err := p.expect(','); err != nil {
			return nil, err
		}
	case info.bounded:
		for range 2 {
			f, err := strconv.ParseFloat(p.token(), 64)
			if err != nil {
				return nil, p.errorf("%s needs numeric bounds first", name)
			}
			bounds = append(bounds, f)
			if err := p.expect(','); err != nil {
				return nil, err
			}
		}
		if op == OpClamp && bounds[0] > bounds[1] {
			return nil, p.errorf("clamp bounds [%v, %v] are reversed", bounds[0], bounds[1])
		}
	}
	var args []*Expr
	for {
		a, err := p.expr()
		if err != nil {
			return nil, err
		}
		args = append(args, a)
		if p.accept(')') {
			break
		}
		if err := p.expect(','); err != nil {
			return nil, err
		}
	}
	if info.arity == nary && len(args) < 2 || info.arity != nary && len(args) != info.arity {
		return nil, p.errorf("%s takes %s, got %d", name, arityText(info.arity), len(args))
	}
	switch op {
	case OpAdd:
		return Add(args...), nil
	case OpMul:
		return Mul(args...), nil
	case OpDiv:
		return Div(args[0], args[1]), nil
	case OpSum:
		return sum(size, args[0])
	case OpRms:
		return rms(size, args[0])
	}
	if info.bounded {
		return bounded(op, bounds[0], bounds[1], args)
	}
	return apply(op, args), nil
}

func arityText(arity int) string {
	switch arity {
	case nary:
		return "two or more operands"
	case 1:
		return "one operand"
	}
	return fmt.Sprintf("%d operands", arity)
}
