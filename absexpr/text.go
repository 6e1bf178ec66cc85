package absexpr

import (
	"slices"
	"strings"
)

// Canonical orders are orders of texts: add's and mul's operands are
// sorted by their keys, a monomial's atoms and a value's monomials by
// theirs (normal.go).
// Texts can be exponentially long (a shared operand is written wherever it
// occurs), so they are compared without being written: a node's text is a
// sequence of pieces, literals and the texts of child nodes, and two texts
// are walked side by side, skipping a child that both reach at once, which
// holds the same text in both.
//
// The walk compares the texts exactly, whatever the nodes. It is fast
// because the grammars are such that two texts that agree so far have been
// cut into the same pieces: the walks stay in step, meet every child that
// the two nodes share at the same time, and descend only into the first
// children that differ.

// A textNode's text is the concatenation of its pieces: piece(i) is the
// i-th, a literal or (when child is not the zero N) a child's text, and ok
// is false past the last.
type textNode[N comparable] interface {
	comparable
	piece(i int) (lit string, child N, ok bool)
}

// compareText compares the texts of a and b as strings.Compare would.
func compareText[N textNode[N]](a, b N) int {
	if a == b {
		return 0
	}
	x, y := textCursor[N]{next: a}, textCursor[N]{next: b}
	var none N
	for {
		x.settle()
		y.settle()
		switch {
		case x.next != none && y.next != none:
			if x.next == y.next {
				x.next, y.next = none, none
			} else {
				x.open()
				y.open()
			}
		case x.next != none:
			x.open()
		case y.next != none:
			y.open()
		case x.lit == "" || y.lit == "": // one text ended
			return min(len(x.lit), 1) - min(len(y.lit), 1)
		default:
			n := min(len(x.lit), len(y.lit))
			if c := strings.Compare(x.lit[:n], y.lit[:n]); c != 0 {
				return c
			}
			x.lit, y.lit = x.lit[n:], y.lit[n:]
		}
	}
}

// mergeSorted merges a and b, both sorted by compare. It places each
// element of the shorter by binary search, so adding a few elements to a
// long sorted list (a value to a long sum) costs few comparisons.
func mergeSorted[T any](a, b []T, compare func(T, T) int) []T {
	if len(a) < len(b) {
		a, b = b, a
	}
	out := make([]T, 0, len(a)+len(b))
	i := 0
	for _, x := range b {
		j, _ := slices.BinarySearchFunc(a[i:], x, compare)
		out = append(append(out, a[i:i+j]...), x)
		i += j
	}
	return append(out, a[i:]...)
}

// writeText writes n's text, or as much of it as makes b limit bytes
// long.
func writeText[N textNode[N]](b *strings.Builder, n N, limit int) {
	var none N
	for i := 0; b.Len() < limit; i++ {
		lit, child, ok := n.piece(i)
		if !ok {
			return
		}
		b.WriteString(lit[:min(len(lit), limit-b.Len())])
		if child != none {
			writeText(b, child, limit)
		}
	}
}

// textCursor is a position in a text: before the rest of the literal lit,
// or before the text of next, which is not yet open; then the rest of the
// open nodes' texts, innermost last. The first ones are kept in an array,
// so that a comparison that descends a few levels does not allocate.
type textCursor[N textNode[N]] struct {
	lit   string
	next  N
	depth int // open nodes
	near  [8]openNode[N]
	far   []openNode[N] // the open nodes past len(near)
}

type openNode[N textNode[N]] struct {
	n    N
	next int // the next piece
}

func (c *textCursor[N]) top() *openNode[N] {
	if c.depth <= len(c.near) {
		return &c.near[c.depth-1]
	}
	return &c.far[c.depth-1-len(c.near)]
}

// settle moves c to a byte of a literal, a child not yet open, or the end
// of the text (where lit is "" and next is the zero N).
func (c *textCursor[N]) settle() {
	var none N
	for c.lit == "" && c.next == none && c.depth > 0 {
		top := c.top()
		lit, child, ok := top.n.piece(top.next)
		if !ok {
			c.depth--
			if c.depth >= len(c.near) {
				c.far = c.far[:c.depth-len(c.near)]
			}
			continue
		}
		top.next++
		c.lit, c.next = lit, child
	}
}

// open moves c into next's text.
func (c *textCursor[N]) open() {
	var none N
	if c.depth < len(c.near) {
		c.near[c.depth] = openNode[N]{n: c.next}
	} else {
		c.far = append(c.far, openNode[N]{n: c.next})
	}
	c.depth++
	c.next = none
}
