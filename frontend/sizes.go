package frontend

import (
	"fmt"
	"iter"
	"math"
	"math/bits"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// The estimates of the sizes of the values that the checked operations
// build (bounds.go). Each counts at most a little past what is left of the
// bound, so that estimating a huge value is no slower than failing.

// binarySize estimates the bytes of x op y; 0 when the operation builds
// nothing large or fails.
func (l *loader) binarySize(op syntax.Token, x, y starlark.Value) int64 {
	switch op {
	case syntax.PLUS:
		if isInt(x) && isInt(y) || isSequence(x) && x.Type() == y.Type() {
			return add(ownSize(x), ownSize(y))
		}
	case syntax.STAR:
		switch {
		case isInt(x) && isInt(y):
			// The time to multiply ints grows faster than their size:
			// count the words of a schoolbook product, so that squaring an
			// int in a loop stops in milliseconds, not minutes.
			a, b := intWords(x.(starlark.Int)), intWords(y.(starlark.Int))
			if a == 0 && b == 0 {
				return 0
			}
			return mul(8, mul(max(a, 1), max(b, 1)))
		case isSequence(x) && isInt(y):
			return mul(ownSize(x), count(y))
		case isInt(x) && isSequence(y):
			return mul(ownSize(y), count(x))
		}
	case syntax.LTLT:
		if x, ok := x.(starlark.Int); ok {
			if bits := intBits(x) + count(y); bits >= 64 {
				return bits / 8
			}
		}
	case syntax.PERCENT:
		if f, ok := x.(starlark.String); ok {
			// Each conversion prints one operand: a tuple's elements in
			// turn, or a dict's values by key, any number of times.
			var n int64
			switch y := y.(type) {
			case starlark.Tuple:
				for _, v := range y {
					n = add(n, printedSize(v, l.left()))
				}
			case *starlark.Dict:
				n = mul(int64(strings.Count(string(f), "%")), maxPrinted(y.Keys(), y, l.left()))
			default:
				n = printedSize(y, l.left())
			}
			return add(int64(len(f)), n)
		}
	}
	return 0
}

// ownSize is the memory of x itself, not counting the elements of a
// list or tuple: a string's bytes, a list's element slots, the bytes of an
// int too large for 64 bits.
func ownSize(x starlark.Value) int64 {
	switch x := x.(type) {
	case starlark.String:
		return int64(len(x))
	case starlark.Bytes:
		return int64(len(x))
	case starlark.Tuple:
		return valueSize * int64(len(x))
	case *starlark.List:
		return valueSize * int64(x.Len())
	case starlark.Int:
		if _, ok := x.Int64(); ok {
			return 0
		}
		return intBits(x) / 8
	}
	return 0
}

// intBits is the bit length of x's magnitude.
func intBits(x starlark.Int) int64 {
	if i, ok := x.Int64(); ok && i != math.MinInt64 {
		return int64(bits.Len64(uint64(max(i, -i))))
	}
	return int64(x.BigInt().BitLen())
}

// intWords is the number of 64-bit words of x; 0 when it fits in one.
func intWords(x starlark.Int) int64 {
	if _, ok := x.Int64(); ok {
		return 0
	}
	return intBits(x)/64 + 1
}

func isInt(x starlark.Value) bool { _, ok := x.(starlark.Int); return ok }

func isSequence(x starlark.Value) bool {
	switch x.(type) {
	case starlark.String, starlark.Bytes, starlark.Tuple, *starlark.List:
		return true
	}
	return false
}

// count is the int n as a repeat or shift count; 0 when it is negative or
// beyond Starlark's own bounds, which then fail the operation.
func count(n starlark.Value) int64 {
	i, err := starlark.AsInt32(n)
	if err != nil || i < 0 {
		return 0
	}
	return int64(i)
}

// add and mul saturate instead of overflowing.
func add(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func mul(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

// iterableSize is what a list of the elements of x costs, if x has a
// length.
func iterableSize(x starlark.Value) int64 {
	if _, ok := x.(starlark.Iterable); !ok {
		return 0 // strings are not iterable, though they have a length
	}
	if n := starlark.Len(x); n > 0 {
		return valueSize * int64(n)
	}
	return 0
}

// iterablesSize estimates the result of a function that collects the
// elements of its iterable arguments: list(range(n)), l.extend(l).
func iterablesSize(_ *loader, _ starlark.Value, args starlark.Tuple, _ []starlark.Tuple) (int64, error) {
	var n int64
	for _, a := range args {
		n = add(n, iterableSize(a))
	}
	return n, nil
}

// joinSize estimates sep.join(iterable).
func joinSize(l *loader, recv starlark.Value, args starlark.Tuple, _ []starlark.Tuple) (int64, error) {
	sep, ok := recv.(starlark.String)
	if !ok || len(args) != 1 {
		return 0, nil
	}
	it := starlark.Iterate(args[0])
	if it == nil {
		return 0, nil
	}
	defer it.Done()
	var n int64
	var v starlark.Value
	for n <= l.left() && it.Next(&v) {
		s, ok := v.(starlark.String)
		if !ok {
			break // join fails
		}
		n = add(n, int64(len(s)+len(sep)))
	}
	return n, nil
}

// recvSize estimates the result of a method that copies its receiver: a
// string's bytes, a dict's keys, values or items.
func recvSize(_ *loader, recv starlark.Value, _ starlark.Tuple, _ []starlark.Tuple) (int64, error) {
	if d, ok := recv.(*starlark.Dict); ok {
		return 3 * valueSize * int64(d.Len()), nil // items: a pair, a tuple header, a slot
	}
	return add(ownSize(recv), 3*valueSize), nil // partition's three parts
}

// splitSize estimates s.split(sep), rsplit and splitlines: the bytes, and
// a slot and a string header for each part.
func splitSize(_ *loader, recv starlark.Value, args starlark.Tuple, _ []starlark.Tuple) (int64, error) {
	s, ok := recv.(starlark.String)
	if !ok {
		return 0, nil
	}
	parts := int64(len(s))/2 + 1 // whitespace separates them, or line ends
	if len(args) > 0 {
		if sep, ok := args[0].(starlark.String); ok && sep != "" {
			parts = int64(strings.Count(string(s), string(sep))) + 1
		}
	}
	return add(int64(len(s)), mul(parts, 2*valueSize)), nil
}

// replaceSize estimates s.replace(old, new[, count]).
func replaceSize(_ *loader, recv starlark.Value, args starlark.Tuple, _ []starlark.Tuple) (int64, error) {
	s, ok := recv.(starlark.String)
	if !ok || len(args) < 2 {
		return 0, nil
	}
	old, ok1 := args[0].(starlark.String)
	new, ok2 := args[1].(starlark.String)
	if !ok1 || !ok2 {
		return 0, nil
	}
	k := int64(strings.Count(string(s), string(old)))
	if len(args) > 2 {
		if c, err := starlark.AsInt32(args[2]); err == nil && c >= 0 {
			k = min(k, int64(c))
		}
	}
	return add(int64(len(s)), mul(k, int64(len(new)))), nil
}

// formatSize estimates f.format(args): each replacement field prints one
// argument, any number of times.
func formatSize(l *loader, recv starlark.Value, args starlark.Tuple, kwargs []starlark.Tuple) (int64, error) {
	f, ok := recv.(starlark.String)
	if !ok {
		return 0, nil
	}
	vals := append([]starlark.Value(nil), args...)
	for _, kv := range kwargs {
		vals = append(vals, kv[1])
	}
	fields := int64(strings.Count(string(f), "{"))
	return add(int64(len(f)), mul(fields, maxPrinted(vals, nil, l.left()))), nil
}

// printSize estimates the string forms that str, repr, print and fail
// build of their arguments.
func printSize(l *loader, _ starlark.Value, args starlark.Tuple, _ []starlark.Tuple) (int64, error) {
	var n int64
	for _, a := range args {
		if s, ok := a.(starlark.String); ok {
			n = add(n, int64(len(s)))
			continue
		}
		m, err := printedSizeErr(a, l.left())
		if err != nil {
			return 0, err
		}
		n = add(n, m)
	}
	return n, nil
}

// strSize estimates str(x): a string is its own string form.
func strSize(l *loader, recv starlark.Value, args starlark.Tuple, kwargs []starlark.Tuple) (int64, error) {
	if len(args) == 1 {
		if _, ok := args[0].(starlark.String); ok {
			return 0, nil
		}
	}
	return printSize(l, recv, args, kwargs)
}

// maxPrinted is the largest printed size of vals, or of d's values for
// the keys vals when d is not nil.
func maxPrinted(vals []starlark.Value, d *starlark.Dict, limit int64) int64 {
	var m int64
	for _, v := range vals {
		if d != nil {
			v, _, _ = d.Get(v)
		}
		m = max(m, printedSize(v, limit))
	}
	return m
}

// printedSize is printedSizeErr without the error: values nested too
// deeply count as more than limit.
func printedSize(v starlark.Value, limit int64) int64 {
	n, err := printedSizeErr(v, limit)
	if err != nil {
		return math.MaxInt64
	}
	return n
}

// printedSizeErr estimates the length of v's string form. An element that
// v holds more than once prints each time: a list made by l = [l, l],
// doubled n times, prints 2^n times. Counting stops as soon as the size
// passes limit; values nested more than maxNesting deep are an error.
func printedSizeErr(v starlark.Value, limit int64) (int64, error) {
	p := printed{limit: limit, memo: map[any]int64{}, onPath: map[any]bool{}}
	return p.size(v, 0)
}

type printed struct {
	limit  int64
	memo   map[any]int64 // the sizes of containers already measured, which a DAG shares
	onPath map[any]bool  // the containers being measured: a cycle prints as [...]
}

// tupleKey identifies a tuple (a slice) in printed's maps.
type tupleKey struct {
	first *starlark.Value
	n     int
}

func (p *printed) size(v starlark.Value, depth int) (int64, error) {
	var key any
	switch v := v.(type) {
	case starlark.String:
		return int64(len(v)) + 2, nil
	case starlark.Bytes:
		return int64(len(v)) + 3, nil
	case starlark.Int:
		return intBits(v)/3 + 2, nil // decimal digits, and a sign
	case starlark.Tuple:
		if len(v) == 0 {
			return 2, nil
		}
		key = tupleKey{&v[0], len(v)}
	case *starlark.List, *starlark.Dict, *starlark.Set:
		key = v
	default:
		return int64(len(v.String())), nil // None, floats, functions, mirage values: short
	}
	if n, ok := p.memo[key]; ok {
		return n, nil
	}
	if p.onPath[key] {
		return 5, nil
	}
	if depth >= maxNesting {
		return 0, fmt.Errorf("the value nests more than %d deep", maxNesting)
	}
	p.onPath[key] = true
	n := int64(2)
	for e := range elems(v) {
		m, err := p.size(e, depth+1)
		if err != nil {
			return 0, err
		}
		if n = add(n, add(m, 2)); n > p.limit {
			break
		}
	}
	delete(p.onPath, key)
	p.memo[key] = n
	return n, nil
}

// elems yields the elements of a tuple, list or set, and the keys and
// values of a dict.
func elems(v starlark.Value) iter.Seq[starlark.Value] {
	return func(yield func(starlark.Value) bool) {
		it := starlark.Iterate(v)
		defer it.Done()
		d, _ := v.(*starlark.Dict)
		var e starlark.Value
		for it.Next(&e) {
			if !yield(e) {
				return
			}
			if d != nil {
				val, _, _ := d.Get(e)
				if !yield(val) {
					return
				}
			}
		}
	}
}
