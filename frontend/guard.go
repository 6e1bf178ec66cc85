package frontend

import (
	"go.starlark.net/syntax"

	"github.com/mirage-go/mirage/frontend/rewrite"
)

// whileName is the predeclared True that the rewritten while loops test
// first (see guardStmt).
const whileName = "while"

// guardFile rewrites the parsed program so that the operations that can
// build large values call the checking built-ins of bounds.go, and so that
// every while loop has a position of its own. Positions stay those of the
// operations they replace, so errors name the lines the user wrote.
//
//	x + y, x * y, x % y, x << y    ->  "+"(x, y), ...
//	x < y (and >, <=, >=)          ->  "<"(x, y): an inert operand (inert.go)
//	x == y, x != y, x in y         ->  "=="(x, y), ...: Python's equality (pyvalues.go)
//	x is None, x is not True       ->  "is"(x, None), "is not"(x, True)
//	x += y (and *=, <<=)           ->  x += "+="(x, y)
//	x %= y                         ->  x = "%"(x, y)
//	x.join (replace, format, ...)  ->  ".join"(x)
//	x[i:j:k]                       ->  "[:]"(x, k)[i:j:k]
//	f(*args, **kwargs)             ->  f(*"*args"(args), **"**kwargs"(kwargs))
//	while c:                       ->  while "while" and c:
//
// An operand that is a number literal cannot make + or % build a large
// value, so n + 1 and n += 1 stay as they are.
//
// identity holds the positions of the == and != that stand for the
// program's `is` and `is not` (package rewrite): tests against None, True
// or False, which become calls of "is" and "is not" rather than of "=="
// and "!=" (for which 1 == True, as in Python).
func guardFile(f *syntax.File, identity map[rewrite.Pos]bool) {
	gd := &guard{identity: identity}
	f.Stmts = gd.guardStmts(f.Stmts)
}

type guard struct {
	identity map[rewrite.Pos]bool
}

func (gd *guard) guardStmts(stmts []syntax.Stmt) []syntax.Stmt {
	var out []syntax.Stmt
	for _, s := range stmts {
		out = append(out, gd.guardStmt(s)...)
	}
	return out
}

// guardStmt returns the statements that replace s: more than one when an
// augmented assignment's target needs temporaries.
func (gd *guard) guardStmt(s syntax.Stmt) []syntax.Stmt {
	switch s := s.(type) {
	case *syntax.AssignStmt:
		if op, ok := guardAssign[s.Op]; ok {
			return gd.guardAugmented(s, op)
		}
		s.LHS = gd.guardTarget(s.LHS)
		s.RHS = gd.guardExpr(s.RHS)
	case *syntax.DefStmt:
		gd.guardParams(s.Params)
		s.Body = gd.guardStmts(s.Body)
	case *syntax.ExprStmt:
		s.X = gd.guardExpr(s.X)
	case *syntax.ForStmt:
		s.Vars = gd.guardTarget(s.Vars)
		s.X = gd.guardExpr(s.X)
		s.Body = gd.guardStmts(s.Body)
	case *syntax.WhileStmt:
		// Starlark positions only the instructions that can fail, so a
		// loop like `while True: pass` has none, and a stop inside it
		// would be reported at the last positioned line before it. Reading
		// a predeclared name gives the loop's head the line of its while.
		s.Cond = &syntax.BinaryExpr{
			X:     &syntax.Ident{NamePos: s.While, Name: whileName},
			OpPos: s.While,
			Op:    syntax.AND,
			Y:     gd.guardExpr(s.Cond),
		}
		s.Body = gd.guardStmts(s.Body)
	case *syntax.IfStmt:
		s.Cond = gd.guardExpr(s.Cond)
		s.True = gd.guardStmts(s.True)
		s.False = gd.guardStmts(s.False)
	case *syntax.ReturnStmt:
		if s.Result != nil {
			s.Result = gd.guardExpr(s.Result)
		}
	}
	return []syntax.Stmt{s}
}

// guardAugmented rewrites x op= y into x op= "op="(x, y), which checks the
// result's size and returns y. The target is read twice, so the parts of
// an index or attribute target that are not names or literals are first
// assigned to temporaries: a[f()] += y becomes $0 = f(); a[$0] += "+="(a[$0], y).
func (gd *guard) guardAugmented(s *syntax.AssignStmt, op syntax.Token) []syntax.Stmt {
	var pre []syntax.Stmt
	hoist := func(e syntax.Expr) syntax.Expr {
		e = gd.guardExpr(e)
		switch e.(type) {
		case *syntax.Ident, *syntax.Literal:
			return e
		}
		start := syntax.Start(e)
		tmp := &syntax.Ident{NamePos: start, Name: tempNames[len(pre)]}
		pre = append(pre, &syntax.AssignStmt{OpPos: start, Op: syntax.EQ, LHS: tmp, RHS: e})
		return &syntax.Ident{NamePos: start, Name: tmp.Name}
	}
	var again syntax.Expr // a second reading of the target
	switch x := s.LHS.(type) {
	case *syntax.Ident:
		again = &syntax.Ident{NamePos: x.NamePos, Name: x.Name}
	case *syntax.IndexExpr:
		x.X, x.Y = hoist(x.X), hoist(x.Y)
		again = &syntax.IndexExpr{X: copyName(x.X), Lbrack: x.Lbrack, Y: copyName(x.Y), Rbrack: x.Rbrack}
	case *syntax.DotExpr:
		x.X = hoist(x.X)
		again = &syntax.DotExpr{X: copyName(x.X), Dot: x.Dot, NamePos: x.NamePos, Name: &syntax.Ident{NamePos: x.NamePos, Name: x.Name.Name}}
	default:
		s.RHS = gd.guardExpr(s.RHS) // Starlark rejects the target
		return []syntax.Stmt{s}
	}
	if op == syntax.PERCENT {
		// x = "%"(x, y): a format is Python's (package pyformat), not Starlark's.
		s.Op, s.RHS = syntax.EQ, call("%", s.OpPos, again, gd.guardExpr(s.RHS))
		return append(pre, s)
	}
	if lit, ok := s.RHS.(*syntax.Literal); ok && op != syntax.STAR && op != syntax.LTLT && isNumber(lit) {
		return append(pre, s)
	}
	s.RHS = call(s.Op.String(), s.OpPos, again, gd.guardExpr(s.RHS))
	return append(pre, s)
}

// tempNames are the temporaries of guardAugmented; not identifiers, so a
// program cannot use them.
var tempNames = [...]string{"$0", "$1"}

// copyName copies an identifier or literal, so that no syntax node occurs
// twice in the tree.
func copyName(e syntax.Expr) syntax.Expr {
	if id, ok := e.(*syntax.Ident); ok {
		return &syntax.Ident{NamePos: id.NamePos, Name: id.Name}
	}
	c := *e.(*syntax.Literal)
	return &c
}

// guardTarget rewrites the expressions an assignment target reads: the
// operands of an index or attribute target.
func (gd *guard) guardTarget(e syntax.Expr) syntax.Expr {
	switch e := e.(type) {
	case *syntax.IndexExpr:
		e.X, e.Y = gd.guardExpr(e.X), gd.guardExpr(e.Y)
	case *syntax.DotExpr:
		e.X = gd.guardExpr(e.X)
	case *syntax.ParenExpr:
		e.X = gd.guardTarget(e.X)
	case *syntax.ListExpr:
		for i := range e.List {
			e.List[i] = gd.guardTarget(e.List[i])
		}
	case *syntax.TupleExpr:
		for i := range e.List {
			e.List[i] = gd.guardTarget(e.List[i])
		}
	}
	return e
}

// guardParams rewrites the default values of parameters (name=expr).
func (gd *guard) guardParams(params []syntax.Expr) {
	for _, p := range params {
		if b, ok := p.(*syntax.BinaryExpr); ok && b.Op == syntax.EQ {
			b.Y = gd.guardExpr(b.Y)
		}
	}
}

func (gd *guard) guardExprs(es []syntax.Expr) {
	for i := range es {
		es[i] = gd.guardExpr(es[i])
	}
}

func (gd *guard) guardExpr(e syntax.Expr) syntax.Expr {
	switch e := e.(type) {
	case *syntax.BinaryExpr:
		e.X, e.Y = gd.guardExpr(e.X), gd.guardExpr(e.Y)
		if name, ok := orderOps[e.Op]; ok {
			return call(name, e.OpPos, e.X, e.Y)
		}
		if name, ok := equalityOps[e.Op]; ok {
			if gd.identity[rewrite.Pos{Line: e.OpPos.Line, Col: e.OpPos.Col}] {
				name = identityOps[e.Op]
			}
			return call(name, e.OpPos, e.X, e.Y)
		}
		name, ok := guardOps[e.Op]
		// A number literal on the left makes % a remainder, not a format.
		if !ok || e.Op == syntax.PLUS && (isNumber(e.X) || isNumber(e.Y)) || e.Op == syntax.PERCENT && isNumber(e.X) {
			return e
		}
		return call(name, e.OpPos, e.X, e.Y)
	case *syntax.CallExpr:
		e.Fn = gd.guardExpr(e.Fn)
		for i, a := range e.Args {
			switch a := a.(type) {
			case *syntax.BinaryExpr:
				if a.Op == syntax.EQ { // name=value
					a.Y = gd.guardExpr(a.Y)
					continue
				}
			case *syntax.UnaryExpr:
				if a.Op == syntax.STAR || a.Op == syntax.STARSTAR {
					name := "*args"
					if a.Op == syntax.STARSTAR {
						name = "**kwargs"
					}
					a.X = call(name, a.OpPos, gd.guardExpr(a.X))
					continue
				}
			}
			e.Args[i] = gd.guardExpr(a)
		}
	case *syntax.Comprehension:
		e.Body = gd.guardExpr(e.Body)
		for _, c := range e.Clauses {
			switch c := c.(type) {
			case *syntax.ForClause:
				c.Vars = gd.guardTarget(c.Vars)
				c.X = gd.guardExpr(c.X)
			case *syntax.IfClause:
				c.Cond = gd.guardExpr(c.Cond)
			}
		}
	case *syntax.CondExpr:
		e.Cond, e.True, e.False = gd.guardExpr(e.Cond), gd.guardExpr(e.True), gd.guardExpr(e.False)
	case *syntax.DictEntry:
		e.Key, e.Value = gd.guardExpr(e.Key), gd.guardExpr(e.Value)
	case *syntax.DictExpr:
		gd.guardExprs(e.List)
	case *syntax.DotExpr:
		e.X = gd.guardExpr(e.X)
		if _, ok := guardMethods[e.Name.Name]; ok {
			return call("."+e.Name.Name, e.Dot, e.X)
		}
	case *syntax.IndexExpr:
		e.X, e.Y = gd.guardExpr(e.X), gd.guardExpr(e.Y)
	case *syntax.LambdaExpr:
		gd.guardParams(e.Params)
		e.Body = gd.guardExpr(e.Body)
	case *syntax.ListExpr:
		gd.guardExprs(e.List)
	case *syntax.ParenExpr:
		e.X = gd.guardExpr(e.X)
	case *syntax.SliceExpr:
		for _, p := range []*syntax.Expr{&e.X, &e.Lo, &e.Hi, &e.Step} {
			if *p != nil {
				*p = gd.guardExpr(*p)
			}
		}
		args := []syntax.Expr{e.X}
		switch step := e.Step.(type) {
		case nil:
		case *syntax.Ident, *syntax.Literal:
			args = append(args, copyName(step))
		default:
			args = append(args, &syntax.Literal{Token: syntax.INT, TokenPos: e.Lbrack, Raw: "0", Value: int64(0)}) // unknown: count a copy
		}
		e.X = call("[:]", e.Lbrack, args...)
	case *syntax.TupleExpr:
		gd.guardExprs(e.List)
	case *syntax.UnaryExpr:
		if e.X != nil {
			e.X = gd.guardExpr(e.X)
		}
	}
	return e
}

// call is a call of the predeclared built-in name, positioned at pos.
func call(name string, pos syntax.Position, args ...syntax.Expr) *syntax.CallExpr {
	return &syntax.CallExpr{Fn: &syntax.Ident{NamePos: pos, Name: name}, Lparen: pos, Args: args, Rparen: pos}
}

// isNumber reports whether e is an int or float literal.
func isNumber(e syntax.Expr) bool {
	lit, ok := e.(*syntax.Literal)
	return ok && (lit.Token == syntax.INT || lit.Token == syntax.FLOAT)
}
