package frontend

import (
	"fmt"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// Python statements that Starlark lacks but Mirage's scripts use, given
// their meaning once the program is parsed. rewritePython has left each as
// a call statement on its line:
//
//	@d1                      __mirage_decorator__(d1)
//	@d2                      __mirage_decorator__(d2)
//	def f(x): ...            def f(x): ...
//	                         f = "@"(f, d1, d2)        # f = d1(d2(f))
//
//	assert c, msg            if "assert failed"(c'): "assert"(msg)
//	                         (c': a == b -> "compare"(==, a, b), not a -> "not"(a),
//	                         a and b -> "and"(a, lambda: b), a or b likewise)
//
// The built-ins have names that are not identifiers, so a program can
// neither call nor rebind them. A decorator that is an inert stub (such as
// @torch.no_grad() or @torch.compile) leaves the function as it is: a
// stub's result could not be called to build the graph. In an assert's
// condition c' the comparisons and `not` are calls that give an inert
// value when an operand is one, and an inert condition passes: what a
// stub computed cannot be checked (assert torch.allclose(out, ref),
// assert out.shape == (16, 4096)).

// The built-ins that desugared statements call.
const (
	decorateBuiltin     = "@"
	assertFailedBuiltin = "assert failed"
	assertBuiltin       = "assert"
	compareBuiltin      = "compare"
	notBuiltin          = "not"
	andBuiltin          = "and"
	orBuiltin           = "or"
)

// desugar replaces the decorator and assert calls of stmts, and of the
// blocks they hold, by what they mean.
func (l *loader) desugar(stmts []syntax.Stmt) ([]syntax.Stmt, error) {
	var out []syntax.Stmt
	var decorators []*syntax.CallExpr // those waiting for their def
	for _, s := range stmts {
		if call := pseudoCall(s, decoratorFunc); call != nil {
			if len(call.Args) != 1 || isKeywordArg(call.Args[0]) {
				return nil, l.syntaxError(call.Lparen, "invalid decorator: want `@expression` on a line of its own")
			}
			decorators = append(decorators, call)
			continue
		}
		def, isDef := s.(*syntax.DefStmt)
		if len(decorators) > 0 && !isDef {
			return nil, l.syntaxError(decorators[0].Lparen, "a decorator must be followed by a def (the decorated function)")
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
			if *body, err = l.desugar(*body); err != nil {
				return nil, err
			}
		}
		if call := pseudoCall(s, assertFunc); call != nil {
			a, err := l.desugarAssert(call)
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
		return nil, l.syntaxError(decorators[0].Lparen, "a decorator must be followed by a def (the decorated function)")
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

func (l *loader) syntaxError(pos syntax.Position, msg string) error {
	return &Error{Filename: l.filename, Line: int(pos.Line), Msg: msg}
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
		RHS:   builtinCall(decorateBuiltin, pos, args...),
	}
}

// desugarAssert turns "assert c, msg" into
// if "assert failed"(c'): "assert"(msg).
func (l *loader) desugarAssert(call *syntax.CallExpr) (syntax.Stmt, error) {
	pos := call.Lparen
	if len(call.Args) < 1 || len(call.Args) > 2 || isKeywordArg(call.Args[0]) || len(call.Args) == 2 && isKeywordArg(call.Args[1]) {
		return nil, l.syntaxError(pos, "invalid assert statement: want `assert condition` or `assert condition, message`")
	}
	return &syntax.IfStmt{
		If:   pos,
		Cond: builtinCall(assertFailedBuiltin, pos, tristate(call.Args[0])),
		True: []syntax.Stmt{&syntax.ExprStmt{X: builtinCall(assertBuiltin, pos, call.Args[1:]...)}},
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
			return builtinCall(notBuiltin, x.OpPos, tristate(x.X))
		}
	case *syntax.BinaryExpr:
		switch x.Op {
		case syntax.AND, syntax.OR:
			// "and"(x, lambda: y): y is evaluated only when Python would.
			name := andBuiltin
			if x.Op == syntax.OR {
				name = orBuiltin
			}
			return builtinCall(name, x.OpPos, tristate(x.X), &syntax.LambdaExpr{Lambda: x.OpPos, Body: tristate(x.Y)})
		case syntax.EQL, syntax.NEQ, syntax.LT, syntax.GT, syntax.LE, syntax.GE, syntax.IN, syntax.NOT_IN:
			op := &syntax.Literal{Token: syntax.INT, TokenPos: x.OpPos, Raw: fmt.Sprint(int(x.Op)), Value: int64(x.Op)}
			return builtinCall(compareBuiltin, x.OpPos, op, x.X, x.Y)
		}
	}
	return e
}

// statementBuiltins are the built-ins the desugared statements call, and
// the Python that the rewrite and the scripts rely on: @, print(file=).
func statementBuiltins(predeclared starlark.StringDict) {
	predeclared[matmulFunc] = matmulValue{}
	predeclared["print"] = pythonPrint(predeclared["print"].(*starlark.Builtin))
	predeclared[decorateBuiltin] = starlark.NewBuiltin(decorateBuiltin, applyDecorators)
	predeclared[assertFailedBuiltin] = starlark.NewBuiltin(assertFailedBuiltin, func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
		return starlark.Bool(!isInert(args[0]) && !bool(args[0].Truth())), nil
	})
	predeclared[assertBuiltin] = starlark.NewBuiltin(assertBuiltin, func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
		if len(args) == 0 {
			return nil, fmt.Errorf("assertion failed")
		}
		msg, ok := starlark.AsString(args[0])
		if !ok {
			msg = args[0].String()
		}
		return nil, fmt.Errorf("assertion failed: %s", msg)
	})
	predeclared[compareBuiltin] = starlark.NewBuiltin(compareBuiltin, func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
		op, x, y := syntax.Token(args[0].(starlark.Int).BigInt().Int64()), args[1], args[2]
		if isInert(x) {
			return x, nil
		}
		if isInert(y) {
			return y, nil
		}
		if op == syntax.IN || op == syntax.NOT_IN {
			return starlark.Binary(op, x, y)
		}
		ok, err := starlark.Compare(op, x, y)
		return starlark.Bool(ok), err
	})
	predeclared[andBuiltin] = starlark.NewBuiltin(andBuiltin, andOr(syntax.AND))
	predeclared[orBuiltin] = starlark.NewBuiltin(orBuiltin, andOr(syntax.OR))
	predeclared[notBuiltin] = starlark.NewBuiltin(notBuiltin, func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
		if isInert(args[0]) {
			return args[0], nil
		}
		return !args[0].Truth(), nil
	})
}

// andOr implements "and"(x, thunk) and "or"(x, thunk) in an assert's
// condition: x and y, x or y, where an inert operand is unknown, so that
// the result is unknown (inert) unless the other operand decides it.
func andOr(op syntax.Token) func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
	return func(th *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
		x, thunk := args[0], args[1]
		decides := func(v starlark.Value) bool { return bool(v.Truth()) == (op == syntax.OR) } // x or ...: a true x
		if !isInert(x) && decides(x) {
			return x, nil
		}
		y, err := starlark.Call(th, thunk, nil, nil)
		if err != nil || !isInert(x) || !isInert(y) && decides(y) {
			return y, err
		}
		return x, nil
	}
}

// applyDecorators implements f = "@"(f, d1, ..., dn): f = d1(...dn(f)),
// skipping the decorators that are inert stubs.
func applyDecorators(th *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	f := args[0]
	for i := len(args) - 1; i >= 1; i-- {
		switch d := args[i].(type) {
		case inert, runtimeStub:
			continue
		case starlark.Callable:
			var err error
			if f, err = starlark.Call(th, d, starlark.Tuple{f}, nil); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("decorator: %s is not callable", d.Type())
		}
	}
	return f, nil
}

// isInert reports whether v is an inert value, whose meaning is unknown.
func isInert(v starlark.Value) bool {
	switch v.(type) {
	case inert, runtimeStub:
		return true
	}
	return false
}

// matmulValue is what the operator @ becomes: x @ w is x * M * w. Python's
// @ is torch's and numpy's matmul, which here are inert; on anything else,
// a mirage tensor above all, it is an error that names graph.matmul.
type matmulValue struct{}

var _ starlark.HasBinary = matmulValue{}

func (matmulValue) String() string        { return "@" }
func (matmulValue) Type() string          { return "@" }
func (matmulValue) Freeze()               {}
func (matmulValue) Truth() starlark.Bool  { return true }
func (matmulValue) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: @") }

func (matmulValue) Binary(op syntax.Token, y starlark.Value, _ starlark.Side) (starlark.Value, error) {
	if op == syntax.STAR && isInert(y) {
		return y, nil
	}
	return nil, fmt.Errorf("%s", unsupported("the `@` operator on "+y.Type()+" is", "use graph.matmul(A, B) (@ works only on torch and numpy values, which are inert stubs)"))
}

// pythonPrint is print with Python's keywords: file= and flush= are
// accepted (everything a program prints goes to Options.Stdout), and so is
// end= (each print still ends its line).
func pythonPrint(print *starlark.Builtin) *starlark.Builtin {
	return starlark.NewBuiltin("print", func(th *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var kept []starlark.Tuple
		for _, kv := range kwargs {
			switch kv[0].(starlark.String) {
			case "file", "flush", "end":
				continue
			}
			kept = append(kept, kv)
		}
		return print.CallInternal(th, args, kept)
	})
}
