package absexpr

import (
	"errors"
	"fmt"
	"math/big"
	"strconv"

	"github.com/mirage-go/mirage/absexpr/z3"
)

// prover is one Z3 context holding the axioms and "every target is a
// subexpression", asserted once; each query is pushed, checked and popped.
// A prover is used by one goroutine at a time.
type prover struct {
	ctx    *z3.Context
	solver *z3.Solver
	tensor z3.Sort // P: tensors
	size   z3.Sort // Int: sizes
	real   z3.Sort // Real: clamp bounds
	decls  [numOps]z3.FuncDecl
	sub    z3.FuncDecl // S: "is a subexpression of a target"
	query  *z3.Arena   // reused by every query, released after it
	memo   map[*Expr]z3.AST
}

func newProver(targets []*Expr, laws []parsedAxiom, opts z3.SolverOptions) (*prover, error) {
	ctx, err := z3.NewContext()
	if err != nil {
		return nil, err
	}
	p := &prover{ctx: ctx, query: ctx.NewArena(), memo: make(map[*Expr]z3.AST)}
	if err := p.init(targets, laws, opts); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

func (p *prover) init(targets []*Expr, laws []parsedAxiom, opts z3.SolverOptions) error {
	a := p.ctx.Arena()
	p.tensor = a.UninterpretedSort("P")
	p.size = a.IntSort()
	p.real = a.RealSort()
	for op := OpAdd; op < numOps; op++ {
		if op.valid() {
			p.decls[op] = a.FuncDecl(ops[op].name, p.domain(op), p.tensor)
		}
	}
	p.sub = a.FuncDecl("S", []z3.Sort{p.tensor}, a.BoolSort())
	var facts []z3.AST
	for _, law := range laws {
		facts = append(facts, p.law(a, law))
	}
	for op := OpAdd; op < numOps; op++ {
		if op.valid() {
			facts = append(facts, p.operandsAreSubexprs(a, op))
		}
	}
	for _, t := range targets {
		facts = append(facts, a.App(p.sub, p.encode(a, t)))
	}
	if err := a.Err(); err != nil {
		return err
	}
	s, err := p.ctx.NewSolver(opts)
	if err != nil {
		return err
	}
	p.solver = s
	for _, f := range facts {
		if err := s.Assert(f); err != nil {
			return err
		}
	}
	// The first push internalizes the base level and instantiates the
	// axioms on the targets' terms there, which no timeout bounds (only the
	// instance cap); do it now rather than inside the first query.
	if err := s.Push(); err != nil {
		return err
	}
	return s.Pop(1)
}

func (p *prover) close() {
	p.query.Release()
	if p.solver != nil {
		p.solver.Close()
	}
	p.ctx.Close()
}

// domain is the argument sorts of op's Z3 function.
func (p *prover) domain(op Op) []z3.Sort {
	info := ops[op]
	var d []z3.Sort
	if info.sized {
		d = append(d, p.size)
	}
	if info.bounded {
		d = append(d, p.real, p.real)
	}
	n := info.arity
	if n == nary {
		n = 2 // n-ary ops are binary in Z3, nested to the right
	}
	for range n {
		d = append(d, p.tensor)
	}
	return d
}

// check decides whether e is a subexpression of a target: Unsat means the
// axioms prove it (¬S(e) is contradictory).
func (p *prover) check(e *Expr) (z3.Result, error) {
	a := p.query
	defer func() {
		clear(p.memo) // it holds the query's ASTs
		a.Release()
	}()
	f := a.Not(a.App(p.sub, p.encode(a, e)))
	if err := a.Err(); err != nil {
		return z3.Unknown, err
	}
	if err := p.solver.Push(); err != nil {
		return z3.Unknown, err
	}
	r, err := z3.Unknown, p.solver.Assert(f)
	if err == nil {
		r, err = p.solver.Check()
	}
	if errors.Is(err, z3.ErrInterrupted) {
		return r, err // the prover is done for (see z3.ErrInterrupted)
	}
	if perr := p.solver.Pop(1); err == nil {
		err = perr
	}
	return r, err
}

// encode builds e in arena a. add and mul nest to the right in their
// canonical operand order.
func (p *prover) encode(a *z3.Arena, e *Expr) z3.AST {
	if x, ok := p.memo[e]; ok {
		return x
	}
	var x z3.AST
	switch info := ops[e.op]; {
	case e.op == OpVar:
		x = a.Const(e.name, p.tensor)
	case info.arity == nary:
		x = p.encode(a, e.args[len(e.args)-1])
		for i := len(e.args) - 2; i >= 0; i-- {
			x = a.App(p.decls[e.op], p.encode(a, e.args[i]), x)
		}
	default:
		var args []z3.AST
		if info.sized {
			args = append(args, a.Numeral(strconv.Itoa(e.size), p.size))
		}
		if info.bounded {
			args = append(args, a.Numeral(ratString(e.lo), p.real), a.Numeral(ratString(e.hi), p.real))
		}
		for _, arg := range e.args {
			args = append(args, p.encode(a, arg))
		}
		x = a.App(p.decls[e.op], args...)
	}
	p.memo[e] = x
	return x
}

// ratString writes f exactly, as Z3 reads numerals ("-3/2").
func ratString(f float64) string { return new(big.Rat).SetFloat64(f).RatString() }

// law builds ∀ vars. [guard ⇒] lhs = rhs with the law's triggers.
func (p *prover) law(a *z3.Arena, law parsedAxiom) z3.AST {
	bound := make(map[string]z3.AST, len(law.vars))
	var consts []z3.AST
	for _, v := range law.vars {
		s := p.tensor
		if varIsSize(v) {
			s = p.size
		}
		c := a.Const("!"+v, s)
		bound[v] = c
		consts = append(consts, c)
	}
	body := a.Eq(p.term(a, law.lhs, bound), p.term(a, law.rhs, bound))
	if law.when != nil {
		body = a.Implies(p.term(a, *law.when, bound), body)
	}
	patterns := make([][]z3.AST, len(law.triggers))
	for i, multi := range law.triggers {
		for _, t := range multi {
			patterns[i] = append(patterns[i], p.term(a, t, bound))
		}
	}
	return a.Forall(consts, patterns, body, 0)
}

// term builds an axiom term over the bound variables.
func (p *prover) term(a *z3.Arena, t term, bound map[string]z3.AST) z3.AST {
	if t.name != "" {
		return bound[t.name]
	}
	if t.fn == "" {
		return a.Numeral(strconv.Itoa(t.num), p.size)
	}
	args := make([]z3.AST, len(t.args))
	for i, x := range t.args {
		args[i] = p.term(a, x, bound)
	}
	switch t.fn {
	case "*":
		return a.Mul(args...)
	case "/":
		return a.IntDiv(args[0], args[1])
	case "properDivisor": // 1 < m < n and n mod m = 0
		m, n := args[0], args[1]
		one, zero := a.Numeral("1", p.size), a.Numeral("0", p.size)
		return a.And(a.Lt(one, m), a.Lt(m, n), a.Eq(a.Mod(n, m), zero))
	}
	op, ok := opByName[t.fn]
	if !ok {
		// parseAxioms accepted it, so this is a bug in the table.
		panic(fmt.Sprintf("absexpr: axiom term %s: unknown function", t))
	}
	return a.App(p.decls[op], args...)
}

// operandsAreSubexprs is ∀ args. S(op(args)) ⇒ S(arg) for each tensor
// operand, triggered by S(op(args)).
func (p *prover) operandsAreSubexprs(a *z3.Arena, op Op) z3.AST {
	var consts, operands []z3.AST
	for i, s := range p.domain(op) {
		c := a.Const("!"+strconv.Itoa(i), s)
		consts = append(consts, c)
		if s == p.tensor {
			operands = append(operands, a.App(p.sub, c))
		}
	}
	whole := a.App(p.sub, a.App(p.decls[op], consts...))
	return a.Forall(consts, [][]z3.AST{{whole}}, a.Implies(whole, a.And(operands...)), 0)
}
