package search

import (
	"cmp"
	"slices"

	"github.com/mirage-go/mirage/ugraph"
)

// opKey orders the ops of a graph under construction. The generator only
// adds an op whose key is greater than the key of the op added before it.
//
// Why this generates every graph exactly once: a key depends only on the
// op and its operands, which exist before it, so it never changes once the
// op could be added. Given a graph, consider the order that always takes,
// among the ops whose operands exist, the one with the least key. The next
// op's key is not less: it was either available already (and not least) or
// became available through the op just taken, and then its largest operand
// is that op's result, newer than every operand of every earlier op, so its
// key is greater. Keys are distinct (two ops with equal keys would compute
// the same thing twice, which no candidate needs), so the order is strictly
// increasing; and it is the only such order, since any other takes some op
// before a ready op of smaller key, which is then added too late. (Mirage
// compares operand lists lexicographically without the largest operand
// first, which misses graphs such as div(x, exp(y)).)
type opKey struct {
	newest int32    // the largest operand id; -1 for ops without operands
	in     [4]int32 // the operand ids, in operand order, padded with -1
	kind   ugraph.OpKind
	attr   ugraph.Attr
	sub    uint64 // customized ops: the hash of the block graph
}

func keyOf(kind ugraph.OpKind, attr ugraph.Attr, operands []int32, sub uint64) opKey {
	k := opKey{newest: -1, in: [4]int32{-1, -1, -1, -1}, kind: kind, attr: attr, sub: sub}
	for i, t := range operands {
		k.newest = max(k.newest, t)
		if i < len(k.in) {
			k.in[i] = t
		}
	}
	return k
}

// compare orders keys by the largest operand, then operand by operand, then
// kind, attributes and block graph.
func (a opKey) compare(b opKey) int {
	if c := cmp.Compare(a.newest, b.newest); c != 0 {
		return c
	}
	if c := slices.Compare(a.in[:], b.in[:]); c != 0 {
		return c
	}
	if c := cmp.Compare(a.kind, b.kind); c != 0 {
		return c
	}
	if c := cmp.Compare(a.attr.Dim, b.attr.Dim); c != 0 {
		return c
	}
	if c := slices.Compare(a.attr.Scalars[:], b.attr.Scalars[:]); c != 0 {
		return c
	}
	if c := cmp.Compare(a.attr.Accum, b.attr.Accum); c != 0 {
		return c
	}
	return cmp.Compare(a.sub, b.sub)
}
