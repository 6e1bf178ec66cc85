package rewrite

import (
	"fmt"

	"go.starlark.net/syntax"
)

// Python statements that Starlark lacks but Mirage's scripts use, given
// their meaning once the program is parsed. Source has left each as a call
// statement on its line:
//
//	@d1                      __mirage_decorator__(d1)
//	@d2                      __mirage_decorator__(d2)
//	def f(x): ...            def f(x): ...
//	                         f = "@"(f, d1, d2)        # f = d1(d2(f))
//
//	assert c, msg            if "assert failed"(c'): "assert"(msg)
//	                         (c': a == b -> "compare op"(==, a, b), not a -> "not"(a),
//	                         a and b -> "and"(a, lambda: b), a or b likewise)
//
// The built-ins have names that are not identifiers, so a program can
// neither call nor rebind them; the loader predeclares them (package
// frontend, statements.go). In an assert's condition c' the comparisons
// and `not`, `and` and `or` become calls too, so that the loader can give
// them a meaning for the values it stubs: what a stub computed cannot be
// checked, so an assert on it passes (assert torch.allclose(out, ref)).

// The built-ins that desugared statements call.
const (
	Decorate     = "@"             // "@"(f, d1, ..., dn) is d1(...dn(f)), skipping stubs
	AssertFailed = "assert failed" // "assert failed"(c) is whether c is known to be false
	Assert       = "assert"        // "assert"() or "assert"(msg) fails the program
	Compare      = "compare op"    // "compare op"(op, x, y) is x op y, op a syntax.Token
	Not          = "not"           // "not"(x) is not x
	And          = "and"           // "and"(x, lambda: y) is x and y
	Or           = "or"            // "or"(x, lambda: y) is x or y
)

// Builtins returns the names of all the built-ins and values that the
// rewritten program refers to, which the loader must predeclare.
func Builtins() []string {
	return []string{ImportFunc, MatmulFunc, SliceFunc, EllipsisValue, UnpackFunc, Decorate, AssertFailed, Assert, Compare, Not, And, Or}
}

// Desugar replaces the decorator and assert calls that Source left in
// stmts, and in the blocks they hold, by what they mean. Its errors are
// *Error.
func Desugar(stmts []syntax.Stmt) ([]syntax.Stmt, error) {
	var out []syntax.Stmt
	var decorators []*syntax.CallExpr // those waiting for their def
	for _, s := range stmts {
		if call := pseudoCall(s, decoratorFunc); call != nil {
			if len(call.Args) != 1 || isKeywordArg(call.Args[0]) {
				return nil, syntaxError(call.Lparen, "invalid decorator: want `@expression` on a line of its own")
			}
			decorators = append(decorators, call)
			continue
		}
		def, isDef := s.(*syntax.DefStmt)
		if len(decorators) > 0 && !isDef {
			return nil, syntaxError(decorators[0].Lparen, "a decorator must be followed by a def (the decorated function)")
		}
		var bodies []*[]syntax.Stmt // the nested blocks, desugared in turn
		switch s := s.(type) {
		case *syntax.DefStmt:
			bodies = []*[]syntax.Stmt{&s.Body}
		case *syntax.ForStmt:
			bodies = []*[]syntax.Stmt{&s.Body}
		case *syntax.WhileStmt:
			bodies = []*[]syntax.Stmt{&s.Body}
		case *syntax.IfStmt:
			bodies = []*[]syntax.Stmt{&s.True, &s.False}
		}
		for _, body := range bodies {
			var err error
			if *body, err = Desugar(*body); err != nil {
				return nil, err
			}
		}
		if call := pseudoCall(s, assertFunc); call != nil {
			a, err := desugarAssert(call)
			if err != nil {
				return nil, err
			}
			out = append(out, a)
			continue
		}
		out = append(out, s)
		if isDef && len(decorators) > 0 {
			out = append(out, decorate(def, decorators))
			decorators = nil
		}
	}
	if len(decorators) > 0 {
		return nil, syntaxError(decorators[0].Lparen, "a decorator must be followed by a def (the decorated function)")
	}
	return out, nil
}

// pseudoCall returns the call of fn that statement s is, or nil.
func pseudoCall(s syntax.Stmt, fn string) *syntax.CallExpr {
	e, ok := s.(*syntax.ExprStmt)
	if !ok {
		return nil
	}
	call, ok := e.X.(*syntax.CallExpr)
	if !ok {
		return nil
	}
	if id, ok := call.Fn.(*syntax.Ident); ok && id.Name == fn {
		return call
	}
	return nil
}

// isKeywordArg reports whether a call argument is name=value, *x or **x.
func isKeywordArg(e syntax.Expr) bool {
	switch e := e.(type) {
	case *syntax.BinaryExpr:
		return e.Op == syntax.EQ
	case *syntax.UnaryExpr:
		return e.Op == syntax.STAR || e.Op == syntax.STARSTAR
	}
	return false
}

func syntaxError(pos syntax.Position, msg string) error {
	return &Error{Line: int(pos.Line), Msg: msg}
}

// builtinCall is a call of the built-in name at pos.
func builtinCall(name string, pos syntax.Position, args ...syntax.Expr) *syntax.CallExpr {
	return &syntax.CallExpr{Fn: &syntax.Ident{NamePos: pos, Name: name}, Lparen: pos, Args: args, Rparen: pos}
}

// decorate is the assignment that applies decorators, top first in the
// source, to def's function: f = "@"(f, d1, d2).
func decorate(def *syntax.DefStmt, decorators []*syntax.CallExpr) syntax.Stmt {
	pos := decorators[0].Lparen
	args := []syntax.Expr{&syntax.Ident{NamePos: def.Name.NamePos, Name: def.Name.Name}}
	for _, d := range decorators {
		args = append(args, d.Args[0])
	}
	return &syntax.AssignStmt{
		OpPos: pos,
		Op:    syntax.EQ,
		LHS:   &syntax.Ident{NamePos: def.Name.NamePos, Name: def.Name.Name},
		RHS:   builtinCall(Decorate, pos, args...),
	}
}

// desugarAssert turns "assert c, msg" into
// if "assert failed"(c'): "assert"(msg).
func desugarAssert(call *syntax.CallExpr) (syntax.Stmt, error) {
	pos := call.Lparen
	if len(call.Args) < 1 || len(call.Args) > 2 || isKeywordArg(call.Args[0]) || len(call.Args) == 2 && isKeywordArg(call.Args[1]) {
		return nil, syntaxError(pos, "invalid assert statement: want `assert condition` or `assert condition, message`")
	}
	return &syntax.IfStmt{
		If:   pos,
		Cond: builtinCall(AssertFailed, pos, tristate(call.Args[0])),
		True: []syntax.Stmt{&syntax.ExprStmt{X: builtinCall(Assert, pos, call.Args[1:]...)}},
	}, nil
}

// tristate rewrites the comparisons and negations of an assert's
// condition into calls that keep an inert operand inert.
func tristate(e syntax.Expr) syntax.Expr {
	switch x := e.(type) {
	case *syntax.ParenExpr:
		x.X = tristate(x.X)
	case *syntax.UnaryExpr:
		if x.Op == syntax.NOT {
			return builtinCall(Not, x.OpPos, tristate(x.X))
		}
	case *syntax.BinaryExpr:
		switch x.Op {
		case syntax.AND, syntax.OR:
			// "and"(x, lambda: y): y is evaluated only when Python would.
			name := And
			if x.Op == syntax.OR {
				name = Or
			}
			return builtinCall(name, x.OpPos, tristate(x.X), &syntax.LambdaExpr{Lambda: x.OpPos, Body: tristate(x.Y)})
		case syntax.EQL, syntax.NEQ, syntax.LT, syntax.GT, syntax.LE, syntax.GE, syntax.IN, syntax.NOT_IN:
			op := &syntax.Literal{Token: syntax.INT, TokenPos: x.OpPos, Raw: fmt.Sprint(int(x.Op)), Value: int64(x.Op)}
			return builtinCall(Compare, x.OpPos, op, x.X, x.Y)
		}
	}
	return e
}
