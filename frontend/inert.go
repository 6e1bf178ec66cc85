package frontend

import (
	"fmt"
	"hash/fnv"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/mirage-go/mirage/frontend/argparse"
	"github.com/mirage-go/mirage/frontend/pyformat"
)

// inert is a value that absorbs whatever a program does with it: the
// result of superoptimize (Mirage returns a compiled graph that demos call
// and time) and, in lenient mode, modules other than mirage (torch, ...).
// Attributes, calls, indexing, slicing and arithmetic give inert values; it iterates
// as empty, has length 0 and is false, so a stubbed loop or branch does not
// run. Assignments to its fields and keys are ignored.
type inert struct {
	name string // what it stands for, for messages: "torch.randn()"
}

var (
	_ starlark.HasAttrs    = inert{}
	_ starlark.HasSetField = inert{}
	_ starlark.Callable    = inert{}
	_ starlark.HasSetKey   = inert{}
	_ starlark.Sequence    = inert{}
	_ starlark.Sliceable   = inert{}
	_ starlark.HasBinary   = inert{}
	_ starlark.HasUnary    = inert{}
	_ pyformat.Inert       = inert{} // formatted as nan where a number is wanted
	_ argparse.Stub        = inert{} // argparse's attributes it does not emulate
)

// maxInertName bounds the names a loop of attribute accesses builds.
const maxInertName = 80

func (x inert) derive(suffix string) inert {
	if len(x.name)+len(suffix) > maxInertName {
		return x
	}
	return inert{x.name + suffix}
}

func (x inert) String() string       { return "<inert " + x.name + ">" }
func (x inert) Type() string         { return "inert" }
func (x inert) Freeze()              {}
func (x inert) Truth() starlark.Bool { return false }
func (x inert) Name() string         { return x.name }
func (x inert) Len() int             { return 0 }
func (x inert) Iterate() starlark.Iterator {
	return emptyIterator{}
}
func (x inert) Inert()           {}
func (x inert) StubName() string { return x.name }

func (x inert) Hash() (uint32, error) {
	h := fnv.New32a()
	h.Write([]byte(x.name))
	return h.Sum32(), nil
}

func (x inert) Attr(name string) (starlark.Value, error) { return x.derive("." + name), nil }
func (x inert) AttrNames() []string                      { return nil }
func (x inert) SetField(string, starlark.Value) error    { return nil }

func (x inert) CallInternal(*starlark.Thread, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
	return x.derive("()"), nil
}

func (x inert) Get(starlark.Value) (starlark.Value, bool, error) { return x.derive("[]"), true, nil }
func (x inert) Index(int) starlark.Value                         { return x.derive("[]") }
func (x inert) Slice(_, _, _ int) starlark.Value                 { return x.derive("[:]") }
func (x inert) SetKey(k, v starlark.Value) error                 { return nil }

func (x inert) Binary(op syntax.Token, y starlark.Value, side starlark.Side) (starlark.Value, error) {
	switch op {
	case syntax.PLUS, syntax.MINUS, syntax.STAR, syntax.SLASH, syntax.SLASHSLASH, syntax.PERCENT,
		syntax.AMP, syntax.PIPE, syntax.CIRCUMFLEX, syntax.LTLT, syntax.GTGT:
		return x, nil
	}
	return nil, nil // not handled: Starlark reports the unsupported operation
}

func (x inert) Unary(op syntax.Token) (starlark.Value, error) { return x, nil }

type emptyIterator struct{}

func (emptyIterator) Next(*starlark.Value) bool { return false }
func (emptyIterator) Done()                     {}

// orderOps are the ordered comparisons, rewritten into calls of built-ins
// of these names (guardExpr; not identifiers, so a program cannot use
// them): Starlark cannot compare values of different types, and an inert
// value is a number the script never sees, such as time.time().
var orderOps = map[syntax.Token]string{
	syntax.LT: "<",
	syntax.GT: ">",
	syntax.LE: "<=",
	syntax.GE: ">=",
}

// less is x op y for an ordered comparison op, as Python has it: a bool
// compared with a number is an int, and a NaN operand makes it false. An
// inert operand compares as NaN does: false, so that the branch of `if dt
// < best:` or the loop of `while time.time() - t0 < 10:` does not run, as
// a stub's loop does not.
func less(op syntax.Token, x, y starlark.Value) (bool, error) {
	x, y = asNumbers(x, y)
	if isInert(x) || isInert(y) || isNaN(x) || isNaN(y) {
		return false, nil
	}
	return starlark.Compare(op, x, y)
}

// lenBuiltins replaces len and range. The length of a stub (a torch
// tensor's shape, the inputs of a graph Mirage compiled) is a stub, a
// number the script never sees, so `assert len(out.shape) == 2` passes as
// other asserts on stubs do; and a range to a stub is one, which iterates
// as empty, as the stub itself does.
func lenBuiltins(predeclared starlark.StringDict) {
	for _, name := range []string{"len", "range"} {
		builtin := starlark.Universe[name].(*starlark.Builtin)
		predeclared[name] = starlark.NewBuiltin(name, func(th *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			for _, a := range args {
				if s, ok := a.(interface{ StubName() string }); ok && isInert(a) {
					return inert{name + "(" + s.StubName() + ")"}, nil
				}
			}
			return builtin.CallInternal(th, args, kwargs)
		})
	}
}

// orderBuiltins adds the comparisons' built-ins, and min and max, which
// compare too, to predeclared.
func orderBuiltins(predeclared starlark.StringDict) {
	for op, name := range orderOps {
		predeclared[name] = starlark.NewBuiltin(name, func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			ok, err := less(op, args[0], args[1]) // the rewrite passes two
			return starlark.Bool(ok), err
		})
	}
	for name, op := range map[string]syntax.Token{"min": syntax.LT, "max": syntax.GT} {
		predeclared[name] = starlark.NewBuiltin(name, func(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			return extreme(th, b, op, args, kwargs)
		})
	}
}

// extreme is min (op <) or max (op >) as Starlark's, but for comparing
// with less: an inert value never beats another, nor is beaten.
func extreme(th *starlark.Thread, b *starlark.Builtin, op syntax.Token, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("%s requires at least one positional argument", b.Name())
	}
	var keyFunc starlark.Callable
	if err := starlark.UnpackArgs(b.Name(), nil, kwargs, "key?", &keyFunc); err != nil {
		return nil, err
	}
	var iterable starlark.Value = args
	if len(args) == 1 {
		iterable = args[0]
	}
	iter := starlark.Iterate(iterable)
	if iter == nil {
		return nil, fmt.Errorf("%s: %s value is not iterable", b.Name(), iterable.Type())
	}
	defer iter.Done()
	keyOf := func(v starlark.Value) (starlark.Value, error) {
		if keyFunc == nil {
			return v, nil
		}
		return starlark.Call(th, keyFunc, starlark.Tuple{v}, nil)
	}
	var best, x starlark.Value
	if !iter.Next(&best) {
		return nil, fmt.Errorf("%s: argument is an empty sequence", b.Name())
	}
	bestKey, err := keyOf(best)
	if err != nil {
		return nil, err
	}
	for iter.Next(&x) {
		key, err := keyOf(x)
		if err != nil {
			return nil, err
		}
		beats, err := less(op, key, bestKey)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", b.Name(), err)
		}
		if beats {
			best, bestKey = x, key
		}
	}
	return best, nil
}
