package frontend

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.starlark.net/starlark"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
)

// Argument types for starlark.UnpackArgs. Each converts a Starlark value
// into the Go value the IR takes, or says what it wanted; UnpackArgs
// prefixes the function and parameter names.

// ints is a tuple or list of ints, such as dims=(16, 4096).
type ints []int

func (xs *ints) Unpack(v starlark.Value) error {
	var elems []starlark.Value
	switch v := v.(type) {
	case starlark.Tuple:
		elems = v
	case *starlark.List:
		elems = make([]starlark.Value, v.Len())
		for i := range elems {
			elems[i] = v.Index(i)
		}
	default:
		return fmt.Errorf("got %s, want a tuple or list of ints", v.Type())
	}
	out := make([]int, len(elems))
	for i, e := range elems {
		if err := starlark.AsInt(e, &out[i]); err != nil {
			return fmt.Errorf("element %d: got %s, want int", i, describe(e))
		}
	}
	*xs = out
	return nil
}

// describe names a value's type, and its value when it is an out-of-range int.
func describe(v starlark.Value) string {
	if _, ok := v.(starlark.Int); ok {
		return "int " + v.String() + " (out of range)"
	}
	return v.Type()
}

// triple reads 1 to 3 ints, padding the missing axes with pad.
func triple(v starlark.Value, pad int) ([3]int, error) {
	var xs ints
	if err := xs.Unpack(v); err != nil {
		return [3]int{}, err
	}
	if len(xs) < 1 || len(xs) > 3 {
		return [3]int{}, fmt.Errorf("got %d entries, want 1 to 3 (x, y, z)", len(xs))
	}
	t := [3]int{pad, pad, pad}
	copy(t[:], xs)
	return t, nil
}

// dim3 is a grid or block extent: (x, y, z), missing axes 1.
type dim3 block.Dim3

func (d *dim3) Unpack(v starlark.Value) error {
	t, err := triple(v, 1)
	*d = dim3(t)
	return err
}

// gridMap is an input or output map: the dim each grid axis partitions,
// missing axes -1 (replicate).
type gridMap block.Map

func (m *gridMap) Unpack(v starlark.Value) error {
	t, err := triple(v, -1)
	*m = gridMap(t)
	return err
}

// dtypeArg is mi.float16, mi.bfloat16 or mi.float32.
type dtypeArg ugraph.DType

func (d *dtypeArg) Unpack(v starlark.Value) error {
	if other, ok := v.(otherDType); ok {
		return other.unsupported()
	}
	dt, ok := v.(dtypeValue)
	if !ok {
		return fmt.Errorf("got %s, want a mirage dtype (mi.float16, mi.bfloat16 or mi.float32)", v.Type())
	}
	*d = dtypeArg(dt)
	return nil
}

// scalar is a finite int or float (our JSON and codegen need finite values).
type scalar float64

func (f *scalar) Unpack(v starlark.Value) error {
	x, ok := starlark.AsFloat(v)
	if !ok {
		return fmt.Errorf("got %s, want float", v.Type())
	}
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return fmt.Errorf("got %v, want a finite number", v)
	}
	*f = scalar(x)
	return nil
}

// accumArg is forloop_accum's acc: None or a name.
type accumArg ugraph.Accum

func (a *accumArg) Unpack(v starlark.Value) error {
	if v == starlark.None {
		*a = accumArg(ugraph.AccumNone)
		return nil
	}
	s, ok := starlark.AsString(v)
	if !ok {
		return fmt.Errorf("got %s, want None or a string", v.Type())
	}
	acc, err := ugraph.ParseAccum(s)
	*a = accumArg(acc)
	return err
}

// requiredInt converts an optional-looking parameter that is in fact
// required (those after an optional one in Mirage's signature).
func requiredInt(fn, param string, v starlark.Value) (int, error) {
	if v == nil {
		return 0, fmt.Errorf("%s: missing argument for %s", fn, param)
	}
	var n int
	if err := starlark.AsInt(v, &n); err != nil {
		return 0, argError(fn, param, fmt.Errorf("got %s, want int", describe(v)))
	}
	return n, nil
}

// listOf converts None (or an absent argument) to nil and a list or tuple
// to a non-nil slice, converting each element with conv.
func listOf[T any](fn, param string, v starlark.Value, conv func(starlark.Value) (T, error)) ([]T, error) {
	if v == nil || v == starlark.None {
		return nil, nil
	}
	seq, ok := v.(starlark.Indexable)
	if _, isStr := v.(starlark.String); !ok || isStr {
		return nil, argError(fn, param, wrongType(v, "a list"))
	}
	out := make([]T, seq.Len())
	for i := range out {
		x, err := conv(seq.Index(i))
		if err != nil {
			return nil, argError(fn, param, fmt.Errorf("element %d: %v", i, err))
		}
		out[i] = x
	}
	return out, nil
}

// pyTuple formats xs as Python writes a tuple: (4096, 1), (16,).
func pyTuple(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	if len(xs) == 1 {
		return "(" + s[0] + ",)"
	}
	return "(" + strings.Join(s, ", ") + ")"
}
