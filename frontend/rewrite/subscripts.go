package rewrite

import (
	"strconv"

	"github.com/mirage-go/mirage/frontend/pylex"
)

// Subscripts with several indices, and unpacking assignments. Python's x[a, b:c, ...] indexes x with
// the tuple (a, slice(b, c), Ellipsis); Starlark's parser takes one index
// or one slice. Mirage's own demos index the torch tensors their kernels
// return that way (Xqkv[:, :n_heads * head_dim]), and those tensors are
// stubs here, so the subscript becomes the tuple it stands for:
//
//	x[a, b:c]     ->  x[(a, SliceFunc(b, c))]
//	x[:, None]    ->  x[(SliceFunc(None, None), None)]
//	x[..., 0]     ->  x[(EllipsisValue, 0)]
//
// A stub indexed by it is a stub, a dict looks the tuple up as Python's
// does, and a list refuses it, as Python's does. Every token keeps its
// line; Columns maps the columns the edits move.

// SliceFunc is the predeclared built-in that stands for a slice within a
// subscript with several indices: SliceFunc(lo, hi) or (lo, hi, step).
const SliceFunc = "__mirage_slice__"

// EllipsisValue is the predeclared value of `...`.
const EllipsisValue = "__mirage_ellipsis__"

// tokenEdit is how the rewrite changes one token: text written before it,
// if replace, text written instead of it, and text written after it.
type tokenEdit struct {
	before  string
	replace bool
	with    string
	after   string
}

// subscriptEdits adds to edits those that turn the subscript opened by
// toks[open] into Starlark, if it has several indices or an ellipsis; it
// leaves a subscript Starlark parses as it is.
func subscriptEdits(toks []pylex.Token, open int, edits map[int]tokenEdit) {
	depth := toks[open].Depth + 1
	end := -1 // the closing bracket
	var commas, colons, ellipses []int
	for k := open + 1; k < len(toks); k++ {
		t := toks[k]
		if t.Depth < depth {
			return // unbalanced: Starlark's parser reports it
		}
		if t.Depth > depth {
			continue
		}
		switch {
		case t.Is("]"):
			end = k
		case t.Is(","):
			commas = append(commas, k)
		case t.Is(":"):
			colons = append(colons, k)
		case t.Is("..."):
			ellipses = append(ellipses, k)
		}
		if end >= 0 {
			break
		}
	}
	if end < 0 || len(commas) == 0 && len(ellipses) == 0 {
		return
	}
	insert := func(k int, s string) {
		e := edits[k]
		e.before += s
		edits[k] = e
	}
	replace := func(k int, s string) {
		e := edits[k]
		e.replace, e.with = true, s
		edits[k] = e
	}
	if len(commas) > 0 {
		insert(open+1, "(")
	}
	// Each index runs from first to the comma or bracket that ends it.
	first := open + 1
	for _, stop := range append(commas, end) {
		var inside []int
		for _, c := range colons {
			if c >= first && c < stop {
				inside = append(inside, c)
			}
		}
		if len(inside) > 0 {
			open := SliceFunc + "("
			if inside[0] == first {
				open += "None"
			}
			insert(first, open)
			for _, c := range inside {
				with := ", "
				if next := toks[c+1]; c+1 == stop || next.Is(":") {
					with += "None"
				}
				replace(c, with)
			}
			insert(stop, ")")
		}
		first = stop + 1
	}
	for _, k := range ellipses {
		// A name or number touching the ellipsis (x[A...], not Python)
		// must not run into the name it becomes.
		with := EllipsisValue
		if k > 0 && touches(toks[k-1], toks[k]) {
			with = " " + with
		}
		if k+1 < len(toks) && touches(toks[k], toks[k+1]) {
			with += " "
		}
		replace(k, with)
	}
	if len(commas) > 0 {
		insert(end, ")")
	}
}

// touches reports whether tokens a and b, in that order, meet with no
// space between them and either is a name or a number, which a name put
// in place of the other would run into.
func touches(a, b pylex.Token) bool {
	return a.End == b.Off && (a.Kind == pylex.Name || a.Kind == pylex.Number || b.Kind == pylex.Name || b.Kind == pylex.Number)
}

// UnpackFunc is the predeclared built-in that an unpacking assignment
// calls on its value: a, b = x -> a, b = UnpackFunc(2, (x)). It returns x,
// or, for a stub (the chunks of a torch tensor, Xk, Xv = X.chunk(2, 1)),
// as many stubs as there are names: a stub iterates as empty, so Starlark
// would find no values to unpack.
const UnpackFunc = "__mirage_unpack__"

// unpackEdits adds to edits those that pass the value of the assignment
// statement starting at toks[start] through UnpackFunc, if its targets are
// names separated by commas (a, b = x; a, = x).
func unpackEdits(toks []pylex.Token, start int, edits map[int]tokenEdit) {
	commas, eq := 0, -1
	k := start
	for ; k < len(toks) && !toks[k].EndsStmt(); k++ {
		t := toks[k]
		switch {
		case t.Depth > 0 || eq >= 0:
		case t.Is("lambda"):
			return // its parameters' commas and defaults' "=" are no targets
		case t.Is(","):
			commas++
		case t.Is("="):
			eq = k
		}
	}
	last := k - 1
	if commas == 0 || eq < 0 || eq == last {
		return
	}
	n := commas + 1
	if toks[eq-1].Is(",") {
		n-- // a, = x
	}
	e := edits[eq+1]
	e.before += UnpackFunc + "(" + strconv.Itoa(n) + ", ("
	edits[eq+1] = e
	e = edits[last]
	e.after += "))"
	edits[last] = e
}
