package frontend

import (
	"errors"
	"fmt"
	"math"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/mirage-go/mirage/frontend/pyformat"
)

// A program that builds a kernel graph runs a few hundred Starlark steps and
// builds kilobytes of values. The loader bounds a run far above that, so
// that a runaway program (an endless loop, a string doubled in a loop, a
// list of a billion elements) stops with an error at its line instead of
// hanging or exhausting the machine's memory. The bounds:
//
//   - the source: MaxSourceSize bytes;
//   - execution steps: Options.MaxSteps (DefaultMaxSteps);
//   - call depth: maxCallDepth, and the nesting of printed values:
//     maxNesting;
//   - the values the program builds: Options.MaxAlloc bytes
//     (DefaultMaxAlloc), summed over the run.
//
// Starlark counts steps but not memory, and one step can build a value of
// any size: s + s, [0] * n, l[:], list(range(n)), "".join(l), str(l). So
// the loader rewrites the operations that build a value as large as their
// operands or larger (guard.go) into calls of checking built-ins: each
// estimates the size of its result (sizes.go), charges it against
// Options.MaxAlloc, and only then lets Starlark do the operation. The
// estimates count a string's bytes, 16 bytes for each element of a list,
// tuple, dict or set, the bytes of an int too large for 64 bits (for a
// product, the bytes of a schoolbook product's partial products), and the
// length of a value's string form when it is printed or formatted. What
// one step builds of a few words (an append, a comprehension's element, a
// dict entry) is bounded by the step bound instead.

// MaxSourceSize is the size of the largest program the loader reads.
const MaxSourceSize = 1 << 20

// DefaultMaxAlloc is the bound on the bytes of values a program builds when
// Options.MaxAlloc is 0: more than a thousand times what an example needs.
const DefaultMaxAlloc = 64 << 20

// maxNesting bounds how deeply the values a program prints or formats may
// nest, as Python's recursion limit does.
const maxNesting = 1000

// valueSize is what an element of a list, tuple, dict or set costs: a
// starlark.Value is an interface, two words.
const valueSize = 16

// charge counts n more bytes of values built by the program, or stops it
// when they pass the bound.
func (l *loader) charge(th *starlark.Thread, n int64) error {
	if n <= l.maxAlloc-l.alloc {
		l.alloc += n
		return nil
	}
	msg := fmt.Sprintf("the program builds more than %s of strings, lists and other values; a runaway loop?", byteSize(l.maxAlloc))
	l.stop(th, msg)
	return fmt.Errorf("%s", msg)
}

// left is what remains of the allocation bound; estimates stop counting
// past it.
func (l *loader) left() int64 { return l.maxAlloc - l.alloc }

func byteSize(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// guardOps are the binary operators the loader checks, and the names of
// their checking built-ins. The names are not identifiers, so a program
// cannot use or rebind them.
var guardOps = map[syntax.Token]string{
	syntax.PLUS:    "+",
	syntax.STAR:    "*",
	syntax.PERCENT: "%",
	syntax.LTLT:    "<<",
}

// guardAssign are the augmented assignments the loader checks, with the
// operator each applies.
var guardAssign = map[syntax.Token]syntax.Token{
	syntax.PLUS_EQ:    syntax.PLUS,
	syntax.STAR_EQ:    syntax.STAR,
	syntax.PERCENT_EQ: syntax.PERCENT,
	syntax.LTLT_EQ:    syntax.LTLT,
}

// A sizeFunc estimates the bytes of the result of a call of a built-in
// function, or of a method of recv.
type sizeFunc func(l *loader, recv starlark.Value, args starlark.Tuple, kwargs []starlark.Tuple) (int64, error)

// guardMethods estimate the results of the methods of built-in values that
// build values as large as their receiver or arguments: recv.name(args).
var guardMethods = map[string]sizeFunc{
	"join":                 joinSize,
	"replace":              replaceSize,
	"format":               formatSize,
	"split":                splitSize,
	"rsplit":               splitSize,
	"splitlines":           splitSize,
	"partition":            recvSize,
	"rpartition":           recvSize,
	"capitalize":           recvSize,
	"lower":                recvSize,
	"upper":                recvSize,
	"title":                recvSize,
	"strip":                recvSize,
	"lstrip":               recvSize,
	"rstrip":               recvSize,
	"removeprefix":         recvSize,
	"removesuffix":         recvSize,
	"keys":                 recvSize,
	"values":               recvSize,
	"items":                recvSize,
	"extend":               iterablesSize,
	"update":               iterablesSize,
	"union":                iterablesSize,
	"intersection":         iterablesSize,
	"difference":           iterablesSize,
	"symmetric_difference": iterablesSize,
	"issubset":             iterablesSize,
	"issuperset":           iterablesSize,
}

// guardBuiltins estimate the results of the built-in functions that can
// build large values; the loader predeclares checking versions of them.
var guardBuiltins = map[string]sizeFunc{
	"list":      iterablesSize,
	"tuple":     iterablesSize,
	"sorted":    iterablesSize,
	"reversed":  iterablesSize,
	"enumerate": iterablesSize,
	"zip":       iterablesSize,
	"set":       iterablesSize,
	"dict":      iterablesSize,
	"str":       strSize,
	"repr":      printSize,
	"print":     printSize,
	"fail":      printSize,
}

// guardPredeclared adds the checking built-ins to predeclared.
func (l *loader) guardPredeclared(predeclared starlark.StringDict) {
	for op, name := range guardOps {
		predeclared[name] = starlark.NewBuiltin(name, func(th *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			x, y := args[0], args[1] // the rewrite passes two
			n := l.binarySize(op, x, y)
			if err := l.charge(th, n); err != nil {
				return nil, err
			}
			if f, ok := x.(starlark.String); ok && op == syntax.PERCENT {
				return l.formatted(th, n, func(limit int64) (string, error) { return pyformat.Percent(string(f), y, limit) })
			}
			return starlark.Binary(op, x, y)
		})
	}
	for tok, op := range guardAssign {
		// x op= y becomes x op= "op="(x, y): it checks and returns y.
		name := tok.String()
		predeclared[name] = starlark.NewBuiltin(name, func(th *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			x, y := args[0], args[1]
			n := l.binarySize(op, x, y)
			if _, ok := x.(*starlark.List); ok && op == syntax.PLUS {
				n = iterableSize(y) // list += iterable extends the list in place
			}
			if err := l.charge(th, n); err != nil {
				return nil, err
			}
			return y, nil
		})
	}
	// f(*args, **kwargs) becomes f(*"*args"(args), **"**kwargs"(kwargs)):
	// the call copies them.
	for _, name := range []string{"*args", "**kwargs"} {
		predeclared[name] = starlark.NewBuiltin(name, func(th *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			if err := l.charge(th, iterableSize(args[0])); err != nil {
				return nil, err
			}
			return args[0], nil
		})
	}
	// x[i:j] becomes "[:]"(x)[i:j], and x[i:j:k] "[:]"(x, k)[i:j:k]: a
	// slice copies x's elements, or a string's bytes unless k is 1.
	predeclared["[:]"] = starlark.NewBuiltin("[:]", func(th *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
		x, n := args[0], ownSize(args[0])
		switch x.(type) {
		case starlark.String, starlark.Bytes:
			if len(args) == 1 {
				n = 0
			} else if k, err := starlark.AsInt32(args[1]); err == nil && k == 1 {
				n = 0
			}
		}
		if err := l.charge(th, n); err != nil {
			return nil, err
		}
		return x, nil
	})
	for name := range guardMethods {
		// x.name becomes ".name"(x): the attribute, checked.
		predeclared["."+name] = starlark.NewBuiltin("."+name, func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			attr, err := getAttr(args[0], name)
			if err != nil {
				return nil, err
			}
			return l.guardAttr(args[0], name, attr), nil
		})
	}
	getattr := starlark.Universe["getattr"].(*starlark.Builtin)
	predeclared["getattr"] = starlark.NewBuiltin("getattr", func(th *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		attr, err := getattr.CallInternal(th, args, kwargs)
		if err != nil || len(args) < 2 {
			return attr, err
		}
		name, _ := starlark.AsString(args[1])
		return l.guardAttr(args[0], name, attr), nil
	})
	for name, size := range guardBuiltins {
		b := starlark.Universe[name].(*starlark.Builtin)
		predeclared[name] = starlark.NewBuiltin(name, func(th *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			if err := l.chargeCall(th, b, size, nil, args, kwargs); err != nil {
				return nil, err
			}
			return b.CallInternal(th, args, kwargs)
		})
	}
}

// guardAttr returns the attribute attr of recv, checked if it is a method
// of a built-in value that can build a large one.
func (l *loader) guardAttr(recv starlark.Value, name string, attr starlark.Value) starlark.Value {
	size := guardMethods[name]
	method, ok := attr.(*starlark.Builtin)
	if size == nil || !ok || method.Receiver() == nil {
		return attr
	}
	switch recv.(type) {
	case starlark.String, starlark.Bytes, *starlark.List, *starlark.Dict, *starlark.Set:
	default:
		return attr // a mirage value's own method
	}
	return starlark.NewBuiltin(name, func(th *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		n, err := size(l, recv, args, kwargs)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", method.Name(), err)
		}
		if err := l.charge(th, n); err != nil {
			return nil, err
		}
		if f, ok := recv.(starlark.String); ok && name == "format" {
			// Python's, with format specs ({:.3f}), which Starlark's lacks.
			return l.formatted(th, n, func(limit int64) (string, error) { return pyformat.Format(string(f), args, kwargs, limit) })
		}
		return method.CallInternal(th, args, kwargs)
	}).BindReceiver(recv)
}

// formatted returns the string that format builds (package pyformat), of at most
// what is left of the bound past charged, the estimate already charged for
// it; what it builds past the estimate is charged too.
func (l *loader) formatted(th *starlark.Thread, charged int64, format func(limit int64) (string, error)) (starlark.Value, error) {
	s, err := format(add(charged, l.left()))
	if errors.Is(err, pyformat.ErrTooLong) {
		return nil, l.charge(th, math.MaxInt64)
	}
	if err != nil {
		return nil, err
	}
	if extra := int64(len(s)) - charged; extra > 0 {
		if err := l.charge(th, extra); err != nil {
			return nil, err
		}
	}
	return starlark.String(s), nil
}

// chargeCall charges the estimated result of a call of b.
func (l *loader) chargeCall(th *starlark.Thread, b *starlark.Builtin, size sizeFunc, recv starlark.Value, args starlark.Tuple, kwargs []starlark.Tuple) error {
	n, err := size(l, recv, args, kwargs)
	if err != nil {
		return fmt.Errorf("%s: %v", b.Name(), err)
	}
	return l.charge(th, n)
}

// getAttr is x.name, as Starlark evaluates it.
func getAttr(x starlark.Value, name string) (starlark.Value, error) {
	if x, ok := x.(starlark.HasAttrs); ok {
		v, err := x.Attr(name)
		if err != nil || v != nil {
			return v, err
		}
	}
	return nil, fmt.Errorf("%s has no .%s field or method", x.Type(), name)
}
