package frontend

import (
	"hash/fnv"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
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
