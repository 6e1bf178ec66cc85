package frontend

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.starlark.net/starlark"

	"github.com/mirage-go/mirage/ugraph"
)

// method implements a method of a Starlark value of Go type R.
type method[R starlark.Value] func(recv R, th *starlark.Thread, fn string, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error)

// methodSet is the methods of one type, by name.
type methodSet[R starlark.Value] map[string]method[R]

// attr returns recv's method name bound to recv, or nil if it has none.
func (ms methodSet[R]) attr(recv R, name string) starlark.Value {
	m := ms[name]
	if m == nil {
		return nil
	}
	return starlark.NewBuiltin(name, func(th *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		return m(recv, th, name, args, kwargs)
	}).BindReceiver(recv)
}

func (ms methodSet[R]) names() []string { return slices.Sorted(maps.Keys(ms)) }

// opMethod reports whether kind k is an operator method of graphs at
// level lv (rather than an input, output or customized op, which have
// methods of their own).
func opMethod(k ugraph.OpKind, lv ugraph.Level) bool {
	c := k.Info().Class
	return k.AllowedAt(lv) && c != ugraph.ClassIO && c != ugraph.ClassCustomized
}

// scalarParams are the Python names of the scalar parameters of the ops
// that have some, in the order of ugraph.Attr.Scalars.
var scalarParams = map[ugraph.OpKind][]string{
	ugraph.OpClamp:     {"min_val", "max_val"},
	ugraph.OpMulScalar: {"scalar"},
}

// operandParams are the Python names of operator operands.
var operandParams = [2]string{"A", "B"}

// opCall is a parsed call of an operator method: its operands, still
// Starlark values (each level checks their type), and its attributes.
type opCall struct {
	operands   []starlark.Value
	attr       ugraph.Attr
	normalized []int // kernel rms_norm's normalized_shape
}

// unpackOp reads the arguments of operator k's method at level lv, with
// Mirage's parameter names:
//
//	exp(A)  clamp(A, min_val, max_val)  mul_scalar(A, scalar)  add(A, B)
//	matmul(A, B)  reduction(A, dim)  concat(A, B, dim)  forloop_accum(A, acc=None)
//	rms_norm(A, normalized_shape) (kernel)  rms_norm(A) (threadblock)
func unpackOp(fn string, k ugraph.OpKind, lv ugraph.Level, args starlark.Tuple, kwargs []starlark.Tuple) (opCall, error) {
	info := k.Info()
	var c opCall
	operands := make([]starlark.Value, info.Arity)
	var pairs []any
	for i := range operands {
		pairs = append(pairs, operandParams[i], &operands[i])
	}
	var scalars [2]scalar
	var normalized ints
	var acc accumArg
	switch info.Class {
	case ugraph.ClassUnary:
		for i, name := range scalarParams[k] {
			pairs = append(pairs, name, &scalars[i])
		}
	case ugraph.ClassReduction, ugraph.ClassConcat:
		pairs = append(pairs, "dim", &c.attr.Dim)
	case ugraph.ClassNorm:
		if lv == ugraph.LevelKernel {
			pairs = append(pairs, "normalized_shape", &normalized)
		}
	case ugraph.ClassAccum:
		pairs = append(pairs, "acc?", &acc)
	}
	if err := starlark.UnpackArgs(fn, args, kwargs, pairs...); err != nil {
		return c, err
	}
	c.operands = operands
	c.attr.Scalars = [2]float64{float64(scalars[0]), float64(scalars[1])}
	c.attr.Accum = ugraph.Accum(acc)
	c.normalized = normalized
	return c, nil
}

// renameOp rewrites an *ugraph.OpError of an input or output op in the
// words of the method the program called ("new_input(...)" rather than
// "input(...)").
func renameOp(fn string, err error) error {
	var oe *ugraph.OpError
	if !errors.As(err, &oe) || oe.Op.String() == fn {
		return err
	}
	shapes := make([]string, len(oe.Inputs))
	for i, s := range oe.Inputs {
		shapes[i] = s.String()
	}
	return fmt.Errorf("%s(%s): %s", fn, strings.Join(shapes, ", "), oe.Rule)
}

// argError words an argument's error as UnpackArgs does.
func argError(fn, param string, err error) error {
	return fmt.Errorf("%s: for parameter %s: %v", fn, param, err)
}

// wrongType says that v is not of the wanted type.
func wrongType(v starlark.Value, want string) error {
	return fmt.Errorf("got %s, want %s", v.Type(), want)
}

// shapeAttr implements the attributes that Mirage's tensors share:
// num_dims, dim(i) and dtype.
func shapeAttr(recv starlark.Value, name string, s ugraph.Shape, dt ugraph.DType) starlark.Value {
	switch name {
	case "num_dims":
		return starlark.MakeInt(s.Rank())
	case "dtype":
		return dtypeValue(dt)
	case "dim":
		return starlark.NewBuiltin("dim", func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var i int
			if err := starlark.UnpackPositionalArgs("dim", args, kwargs, 1, &i); err != nil {
				return nil, err
			}
			if i < 0 || i >= s.Rank() {
				return nil, fmt.Errorf("dim: index %d out of range for a rank-%d tensor", i, s.Rank())
			}
			return starlark.MakeInt(s.Dim(i)), nil
		}).BindReceiver(recv)
	}
	return nil
}

var shapeAttrNames = []string{"dim", "dtype", "num_dims"}

// dtypeValue is mi.float16, mi.bfloat16 or mi.float32.
type dtypeValue ugraph.DType

// Values compare by Go equality (Starlark's default for a type that is not
// starlark.Comparable), so mi.float16 == mi.float16.
func (d dtypeValue) String() string        { return "mirage." + ugraph.DType(d).String() }
func (d dtypeValue) Type() string          { return "dtype" }
func (d dtypeValue) Freeze()               {}
func (d dtypeValue) Truth() starlark.Bool  { return true }
func (d dtypeValue) Hash() (uint32, error) { return uint32(d), nil }
