package frontend

import (
	"fmt"
	"math"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// Starlark runs the program, but where its values compare otherwise than
// Python's, the program would silently take the other branch. The loader
// gives them Python's meaning:
//
//   - x == y, x != y, x in y and x not in y are rewritten into calls of
//     "==", "!=", "in" and "not in" (guardExpr), for which a bool is the
//     int 0 or 1 (1 == True, as bool is an int subclass in Python) and NaN
//     equals nothing, itself included;
//   - the ordered comparisons (less) treat bools as ints too, and are false
//     when either operand is NaN;
//   - type(x) is the built-in that a program compares it with: type((1,)) ==
//     tuple, type(1) == int (Starlark's type returns the string "tuple").

// equalityOps are the comparisons rewritten into calls of built-ins of
// these names (not identifiers, so a program cannot use them).
var equalityOps = map[syntax.Token]string{
	syntax.EQL:    "==",
	syntax.NEQ:    "!=",
	syntax.IN:     "in",
	syntax.NOT_IN: "not in",
}

// identityOps are the names of the built-ins that the program's `is` and
// `is not` call (package rewrite gives them only None, True or False on the
// right): for these singletons identity is Starlark's equality, where
// nothing else equals them (1 == True is false there, as `1 is True` is in
// Python).
var identityOps = map[syntax.Token]string{
	syntax.EQL: "is",
	syntax.NEQ: "is not",
}

// pyEqual is Python's x == y for the values a program compares: numbers and
// bools as numbers, NaN unequal to everything, tuples and lists element by
// element under the same rules; anything else as Starlark compares it.
func pyEqual(x, y starlark.Value) (bool, error) {
	x, y = asNumbers(x, y)
	if isNaN(x) || isNaN(y) {
		return false, nil
	}
	switch x := x.(type) {
	case starlark.Tuple:
		if y, ok := y.(starlark.Tuple); ok {
			return elementsEqual(x, y)
		}
	case *starlark.List:
		if y, ok := y.(*starlark.List); ok {
			return elementsEqual(x, y)
		}
	}
	return starlark.Equal(x, y)
}

func elementsEqual(x, y starlark.Indexable) (bool, error) {
	if x.Len() != y.Len() {
		return false, nil
	}
	for i := range x.Len() {
		if eq, err := pyEqual(x.Index(i), y.Index(i)); err != nil || !eq {
			return false, err
		}
	}
	return true, nil
}

// pyIn is Python's x in y: in a tuple or list, an element equal to x by
// pyEqual; anything else as Starlark has it (a dict's keys, a substring).
func pyIn(x, y starlark.Value) (bool, error) {
	var seq starlark.Indexable
	switch y := y.(type) {
	case starlark.Tuple:
		seq = y
	case *starlark.List:
		seq = y
	default:
		v, err := starlark.Binary(syntax.IN, x, y)
		if err != nil {
			return false, err
		}
		return bool(v.Truth()), nil
	}
	for i := range seq.Len() {
		if eq, err := pyEqual(x, seq.Index(i)); err != nil || eq {
			return eq, err
		}
	}
	return false, nil
}

// asNumbers turns a bool compared with a number into the int it is in
// Python.
func asNumbers(x, y starlark.Value) (starlark.Value, starlark.Value) {
	if isNum(x) && isBool(y) {
		y = boolInt(y)
	} else if isBool(x) && isNum(y) {
		x = boolInt(x)
	}
	return x, y
}

func isBool(v starlark.Value) bool { _, ok := v.(starlark.Bool); return ok }

func isNum(v starlark.Value) bool {
	switch v.(type) {
	case starlark.Int, starlark.Float:
		return true
	}
	return false
}

func boolInt(v starlark.Value) starlark.Value {
	if v.(starlark.Bool) {
		return starlark.MakeInt(1)
	}
	return starlark.MakeInt(0)
}

func isNaN(v starlark.Value) bool {
	f, ok := v.(starlark.Float)
	return ok && math.IsNaN(float64(f))
}

// equalityBuiltins adds "==", "!=", "is" and "is not" to predeclared.
func equalityBuiltins(predeclared starlark.StringDict) {
	for op, name := range equalityOps {
		test, want := pyEqual, op == syntax.EQL || op == syntax.IN
		if op == syntax.IN || op == syntax.NOT_IN {
			test = pyIn
		}
		predeclared[name] = starlark.NewBuiltin(name, func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			ok, err := test(args[0], args[1]) // the rewrite passes two
			return starlark.Bool(ok == want), err
		})
	}
	for op, name := range identityOps {
		predeclared[name] = starlark.NewBuiltin(name, func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			same, err := starlark.Equal(args[0], args[1])
			return starlark.Bool(same == (op == syntax.EQL)), err
		})
	}
}

// pyTypes are the Starlark types whose Python type is a built-in a program
// can name: Starlark's type name, and the built-in's.
var pyTypes = map[string]string{
	"bool":   "bool",
	"int":    "int",
	"float":  "float",
	"string": "str",
	"bytes":  "bytes",
	"list":   "list",
	"tuple":  "tuple",
	"dict":   "dict",
	"set":    "set",
}

// typeBuiltin adds type(x) to predeclared: the built-in named after x's
// Python type, the very value the program finds under that name (so ==,
// != and `in` compare it by identity), or, for other types, a value of
// its own per type, so that type(x) == type(y) holds as in Python.
func typeBuiltin(predeclared starlark.StringDict) {
	others := map[string]*starlark.Builtin{}
	predeclared["type"] = starlark.NewBuiltin("type", func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var x starlark.Value
		if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &x); err != nil {
			return nil, err
		}
		if name, ok := pyTypes[x.Type()]; ok {
			if v, ok := predeclared[name]; ok {
				return v, nil
			}
			if v, ok := starlark.Universe[name]; ok {
				return v, nil
			}
		}
		t := x.Type()
		if v, ok := others[t]; ok {
			return v, nil
		}
		v := starlark.NewBuiltin(t, func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
			return nil, fmt.Errorf("type(x)(...) of a %s is not supported", t)
		})
		others[t] = v
		return v, nil
	})
}
