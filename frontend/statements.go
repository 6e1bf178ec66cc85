package frontend

import (
	"fmt"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/mirage-go/mirage/frontend/rewrite"
)

// The built-ins that the statements Starlark lacks become (package rewrite:
// decorators, assert statements and the operator @), and Python's print.
// A decorator that is an inert stub (such as @torch.no_grad() or
// @torch.compile) leaves the function as it is: a stub's result could not
// be called to build the graph. In an assert's condition the comparisons
// and `not` are calls that give an inert value when an operand is one, and
// an inert condition passes: what a stub computed cannot be checked
// (assert torch.allclose(out, ref), assert out.shape == (16, 4096)).

// statementBuiltins are the built-ins the desugared statements call, and
// the Python that the rewrite and the scripts rely on: @, print(file=).
func statementBuiltins(predeclared starlark.StringDict) {
	predeclared[rewrite.MatmulFunc] = matmulValue{}
	// x[a, b:c, ...] indexes x with (a, slice, ellipsis): only a stub (a
	// torch tensor) or a dict takes such an index, and neither reads the
	// slice, so a slice and the ellipsis are values that do nothing.
	predeclared[rewrite.SliceFunc] = starlark.NewBuiltin("slice", func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
		return inert{"slice"}, nil
	})
	predeclared[rewrite.EllipsisValue] = inert{"..."}
	// a, b = x: a stub unpacks into as many stubs (Xk, Xv = X.chunk(2, 1));
	// anything else is unpacked by Starlark, with its errors.
	predeclared[rewrite.UnpackFunc] = starlark.NewBuiltin("unpack", func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
		n, _ := starlark.AsInt32(args[0]) // the rewrite passes the count of names
		s, ok := args[1].(interface{ StubName() string })
		if !ok || !isInert(args[1]) {
			return args[1], nil
		}
		parts := make(starlark.Tuple, n)
		for i := range parts {
			parts[i] = inert{s.StubName()}.derive("[]")
		}
		return parts, nil
	})
	predeclared["print"] = pythonPrint(predeclared["print"].(*starlark.Builtin))
	predeclared[rewrite.Decorate] = starlark.NewBuiltin(rewrite.Decorate, applyDecorators)
	predeclared[rewrite.AssertFailed] = starlark.NewBuiltin(rewrite.AssertFailed, func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
		return starlark.Bool(!isInert(args[0]) && !bool(args[0].Truth())), nil
	})
	predeclared[rewrite.Assert] = starlark.NewBuiltin(rewrite.Assert, func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
		if len(args) == 0 {
			return nil, fmt.Errorf("assertion failed")
		}
		msg, ok := starlark.AsString(args[0])
		if !ok {
			msg = args[0].String()
		}
		return nil, fmt.Errorf("assertion failed: %s", msg)
	})
	predeclared[rewrite.Compare] = starlark.NewBuiltin(rewrite.Compare, func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
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
	predeclared[rewrite.And] = starlark.NewBuiltin(rewrite.And, andOr(syntax.AND))
	predeclared[rewrite.Or] = starlark.NewBuiltin(rewrite.Or, andOr(syntax.OR))
	predeclared[rewrite.Not] = starlark.NewBuiltin(rewrite.Not, func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
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
	return nil, fmt.Errorf("%s", rewrite.Unsupported("the `@` operator on "+y.Type()+" is", "use graph.matmul(A, B) (@ works only on torch and numpy values, which are inert stubs)"))
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
