// Package pymath is Python's math module for mirage's front end: programs
// write the scale of attention as 1 / math.sqrt(head_dim). It is
// go.starlark.net's lib/math with Python's names (no round or mod, which
// Python's math lacks; log2, log10, isqrt, trunc, erf, the predicates and
// the constants inf, nan and tau added) and Python's errors: a function
// that Python refuses for its argument (sqrt(-1), log(0)) or whose result
// overflows (exp(1000)) is an error here too, never a NaN or an infinity
// carried into a tensor program.
package pymath

import (
	"fmt"
	"maps"
	"math"
	"math/big"
	"strings"

	starmath "go.starlark.net/lib/math"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
)

// Name is the module's name, as a program imports it.
const Name = "math"

// Module is the module a program's `import math` binds.
var Module = newModule()

// domainAtInfinity are the functions whose infinite result for a finite
// argument Python calls a domain error (log(0), gamma(0), atanh(1)), not
// an overflow.
var domainAtInfinity = map[string]bool{"log": true, "log2": true, "log10": true, "gamma": true, "atanh": true}

func newModule() *starlarkstruct.Module {
	members := maps.Clone(starmath.Module.Members)
	delete(members, "round") // Python's round is a builtin, not math's
	delete(members, "mod")   // Python's math has fmod; lib/math's mod is not it
	members["log2"] = unary("log2", math.Log2)
	members["log10"] = unary("log10", math.Log10)
	members["erf"] = unary("erf", math.Erf)
	members["erfc"] = unary("erfc", math.Erfc)
	members["fmod"] = binary("fmod", math.Mod)
	for name, v := range members {
		if b, ok := v.(*starlark.Builtin); ok && name != "ceil" && name != "floor" {
			members[name] = checked(name, b)
		}
	}
	members["trunc"] = starlark.NewBuiltin("trunc", trunc)
	members["isqrt"] = starlark.NewBuiltin("isqrt", isqrt)
	members["isfinite"] = predicate("isfinite", func(x float64) bool { return !math.IsInf(x, 0) && !math.IsNaN(x) })
	members["isinf"] = predicate("isinf", func(x float64) bool { return math.IsInf(x, 0) })
	members["isnan"] = predicate("isnan", math.IsNaN)
	members["inf"] = starlark.Float(math.Inf(1))
	members["nan"] = starlark.Float(math.NaN())
	members["tau"] = starlark.Float(2 * math.Pi)
	return &starlarkstruct.Module{Name: Name, Members: members}
}

// checked is b with Python's errors: finite arguments and a result that
// is not (a NaN, or an infinity) are a domain or a range error.
func checked(name string, b *starlark.Builtin) *starlark.Builtin {
	return starlark.NewBuiltin(name, func(t *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		v, err := starlark.Call(t, b, args, kwargs)
		if err != nil {
			return nil, err
		}
		y, ok := v.(starlark.Float)
		if !ok || !math.IsNaN(float64(y)) && !math.IsInf(float64(y), 0) {
			return v, nil
		}
		for _, a := range args {
			if f, ok := starlark.AsFloat(a); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
				return v, nil // Python's too: nan in, nan out; inf in, inf out
			}
		}
		what := "range" // an overflow
		if math.IsNaN(float64(y)) || domainAtInfinity[name] {
			what = "domain"
		}
		return nil, fmt.Errorf("math.%s(%s): math %s error", name, joined(args), what)
	})
}

// joined is args as a call writes them.
func joined(args starlark.Tuple) string {
	s := make([]string, len(args))
	for i, a := range args {
		s[i] = a.String()
	}
	return strings.Join(s, ", ")
}

// number is an int or float argument, as a float.
type number float64

func (n *number) Unpack(v starlark.Value) error {
	f, ok := starlark.AsFloat(v)
	if !ok {
		return fmt.Errorf("got %s, want int or float", v.Type())
	}
	*n = number(f)
	return nil
}

func unary(name string, f func(float64) float64) *starlark.Builtin {
	return starlark.NewBuiltin(name, func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var x number
		if err := starlark.UnpackPositionalArgs(name, args, kwargs, 1, &x); err != nil {
			return nil, err
		}
		return starlark.Float(f(float64(x))), nil
	})
}

func binary(name string, f func(float64, float64) float64) *starlark.Builtin {
	return starlark.NewBuiltin(name, func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var x, y number
		if err := starlark.UnpackPositionalArgs(name, args, kwargs, 2, &x, &y); err != nil {
			return nil, err
		}
		return starlark.Float(f(float64(x), float64(y))), nil
	})
}

func predicate(name string, f func(float64) bool) *starlark.Builtin {
	return starlark.NewBuiltin(name, func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var x number
		if err := starlark.UnpackPositionalArgs(name, args, kwargs, 1, &x); err != nil {
			return nil, err
		}
		return starlark.Bool(f(float64(x))), nil
	})
}

// trunc is Python's math.trunc: the int toward zero.
func trunc(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var x starlark.Value
	if err := starlark.UnpackPositionalArgs("trunc", args, kwargs, 1, &x); err != nil {
		return nil, err
	}
	switch x := x.(type) {
	case starlark.Int:
		return x, nil
	case starlark.Float:
		return starlark.NumberToInt(starlark.Float(math.Trunc(float64(x))))
	}
	return nil, fmt.Errorf("trunc: got %s, want int or float", x.Type())
}

// isqrt is Python's math.isqrt: the floor of the square root of an int
// at least 0.
func isqrt(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var n starlark.Int
	if err := starlark.UnpackPositionalArgs("isqrt", args, kwargs, 1, &n); err != nil {
		return nil, err
	}
	b := n.BigInt()
	if b.Sign() < 0 {
		return nil, fmt.Errorf("isqrt: %v: the argument must be at least 0", n)
	}
	return starlark.MakeBigInt(new(big.Int).Sqrt(b)), nil
}
