package rewrite

import "github.com/mirage-go/mirage/frontend/pylex"

// Starlark has no `is` operator. Python programs use it almost only to test
// for a singleton, `x is None`, `x is not None` (an argparse option left
// unset, an optional parameter), and for None, True and False identity is
// Starlark's equality: there nothing else equals None, True or False (bools
// are not ints there: 1 == True is false, as `1 is True` is in Python). So
// Source turns such a test into a comparison on the same columns, without
// changing how the expression groups (`is` and `==` have the same
// precedence in both languages), and records its position
// (Result.Identity): the loader gives the program's own == Python's
// meaning (1 == True), and these comparisons Starlark's:
//
//	x is None       ->  x == None
//	x is not False  ->  x !=     False
//
// `is` between other values stays an error (Constructs names it): the
// identity of lists, dicts or graphs is not their equality, and mapping it
// to == would silently change what a program computes.

// identityTest reports whether toks[i], the name "is", is the operator of a
// test against None, True or False that Source turns into == or !=.
// negated says whether it is `is not`.
func identityTest(toks []pylex.Token, i int) (negated, ok bool) {
	t := toks[i]
	if t.Kind != pylex.Name || t.Text != "is" || i == 0 || !endsOperand(toks[i-1]) {
		return false, false
	}
	j := i + 1
	if j < len(toks) && toks[j].Kind == pylex.Name && toks[j].Text == "not" {
		negated = true
		j++
	}
	if j >= len(toks) || toks[j].Kind != pylex.Name {
		return false, false
	}
	switch toks[j].Text {
	case "None", "True", "False":
	default:
		return false, false
	}
	// The singleton must be the whole right operand: `x is None + 1` or
	// `x is None.attr` compares with something else.
	if j+1 < len(toks) && !endsComparison(toks[j+1]) {
		return false, false
	}
	return negated, true
}

// endsComparison reports whether t can follow the right operand of a
// comparison that is complete.
func endsComparison(t pylex.Token) bool {
	switch t.Kind {
	case pylex.Newline:
		return true
	case pylex.Op:
		switch t.Text {
		case ")", "]", "}", ",", ":", ";":
			return true
		}
	case pylex.Name:
		switch t.Text {
		case "and", "or", "if", "else", "for":
			return true
		}
	}
	return false
}
