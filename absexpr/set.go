package absexpr

import "math/bits"

// A set is a finite set of uint32s: a big-endian Patricia trie (Okasaki and
// Gill, "Fast Mergeable Integer Maps"), nil being the empty set. Sets are
// hash-consed in a setTable, so equal sets are the same *set, and union and
// inclusion skip the subtrees two sets share: adding an element to a set
// of n builds O(log n) nodes, and a union costs in proportion to where the
// two sets differ. So the signatures of a chain of ops, each its operands'
// and one more element, take space linear in the chain's length.
type set struct {
	prefix uint32 // a leaf's element, or a branch's elements' bits above bit
	bit    uint32 // a branch's branching bit: left holds the elements without it; 0 for a leaf
	left   *set
	right  *set
}

// setTable interns sets. It is not safe for concurrent use.
type setTable struct {
	nodes map[set]*set
}

func (t *setTable) node(n set) *set {
	if p, ok := t.nodes[n]; ok {
		return p
	}
	if t.nodes == nil {
		t.nodes = make(map[set]*set)
	}
	p := &n
	t.nodes[n] = p
	return p
}

func (t *setTable) leaf(k uint32) *set { return t.node(set{prefix: k}) }

// highBits is k's bits above m.
func highBits(k, m uint32) uint32 { return k &^ (m | (m - 1)) }

// inBranch reports whether k belongs under a branch at prefix p and bit m.
func inBranch(k, p, m uint32) bool { return highBits(k, m) == p }

// join is the set of two disjoint non-empty sets whose elements start with
// the prefixes p0 and p1.
func (t *setTable) join(p0 uint32, s0 *set, p1 uint32, s1 *set) *set {
	m := uint32(1) << (31 - bits.LeadingZeros32(p0^p1))
	if p0&m != 0 {
		s0, s1 = s1, s0
	}
	return t.node(set{prefix: highBits(p0, m), bit: m, left: s0, right: s1})
}

// insert is s ∪ {k}.
func (t *setTable) insert(s *set, k uint32) *set {
	switch {
	case s == nil:
		return t.leaf(k)
	case s.bit == 0 && s.prefix == k:
		return s
	case s.bit == 0 || !inBranch(k, s.prefix, s.bit):
		return t.join(k, t.leaf(k), s.prefix, s)
	case k&s.bit == 0:
		return t.node(set{s.prefix, s.bit, t.insert(s.left, k), s.right})
	}
	return t.node(set{s.prefix, s.bit, s.left, t.insert(s.right, k)})
}

// union is a ∪ b.
func (t *setTable) union(a, b *set) *set {
	switch {
	case a == b || b == nil:
		return a
	case a == nil:
		return b
	case a.bit == 0:
		return t.insert(b, a.prefix)
	case b.bit == 0:
		return t.insert(a, b.prefix)
	case a.bit < b.bit:
		a, b = b, a // a branches higher
	}
	switch {
	case a.bit == b.bit && a.prefix == b.prefix:
		return t.node(set{a.prefix, a.bit, t.union(a.left, b.left), t.union(a.right, b.right)})
	case a.bit > b.bit && inBranch(b.prefix, a.prefix, a.bit):
		if b.prefix&a.bit == 0 {
			return t.node(set{a.prefix, a.bit, t.union(a.left, b), a.right})
		}
		return t.node(set{a.prefix, a.bit, a.left, t.union(a.right, b)})
	}
	return t.join(a.prefix, a, b.prefix, b)
}

// has reports whether k ∈ s.
func (s *set) has(k uint32) bool {
	for s != nil && s.bit != 0 {
		if !inBranch(k, s.prefix, s.bit) {
			return false
		}
		if k&s.bit == 0 {
			s = s.left
		} else {
			s = s.right
		}
	}
	return s != nil && s.prefix == k
}

// subset reports whether a ⊆ b.
func subset(a, b *set) bool {
	switch {
	case a == b || a == nil:
		return true
	case b == nil:
		return false
	case a.bit == 0:
		return b.has(a.prefix)
	case b.bit == 0 || a.bit > b.bit:
		return false // a has two elements, or elements apart at a bit where b's agree
	case a.bit == b.bit:
		return a.prefix == b.prefix && subset(a.left, b.left) && subset(a.right, b.right)
	case !inBranch(a.prefix, b.prefix, b.bit):
		return false
	case a.prefix&b.bit == 0:
		return subset(a, b.left)
	}
	return subset(a, b.right)
}

// each calls f on s's elements in increasing order.
func (s *set) each(f func(uint32)) {
	switch {
	case s == nil:
	case s.bit == 0:
		f(s.prefix)
	default:
		s.left.each(f)
		s.right.each(f)
	}
}
