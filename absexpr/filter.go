package absexpr

import (
	"math"
	"sync"
)

// The Go-side decisions, made before Z3 is asked, cheapest first.
//
// Yes, by structure: q is a subterm of a target, or q = add(Q) (mul(Q))
// where a target has add(S) (mul(S)) with Q a sub-multiset of S (by
// associativity and commutativity), or q = sum(m, x) where a target has
// sum(n, x) with m dividing n (by sum-split).
//
// No, by signature: the laws move opaque functions (exp, silu, ...) around
// whole and never create, drop or rename variables, so each expression has a
// signature that equal expressions share and that a subexpression's can
// only shrink from. A query whose signature is not within the targets' is
// not a subexpression. TestSignatureInvariant checks this against every law.
//
// Between the two, normal forms (normal.go) decide yes or no exactly, save
// where a query divides by a sum of several monomials or a normal form
// grows too large; the signature is what is left for those.

// targetIndex is what the decisions need from the targets.
type targetIndex struct {
	subterms map[*Expr]bool
	// assoc lists the add and mul subterms, for sub-multiset containment.
	assoc []*Expr
	// sumSizes lists the sizes at which each expression is summed.
	sumSizes map[*Expr][]int
	sigs     *sigTable
	sig      *set     // union of the targets' signatures
	nf       *nfIndex // nil when a target's normal form is too large
}

func newTargetIndex(targets []*Expr) *targetIndex {
	ix := &targetIndex{
		subterms: make(map[*Expr]bool),
		sumSizes: make(map[*Expr][]int),
		sigs:     newSigTable(),
	}
	for _, t := range targets {
		t.Walk(func(s *Expr) bool {
			if ix.subterms[s] {
				return false // seen, with everything below it
			}
			ix.subterms[s] = true
			switch s.op {
			case OpAdd, OpMul:
				ix.assoc = append(ix.assoc, s)
			case OpSum:
				ix.sumSizes[s.args[0]] = append(ix.sumSizes[s.args[0]], s.size)
			}
			return true
		})
		ix.sig = ix.sigs.union(ix.sig, ix.sigs.of(t))
	}
	ix.nf = newNFIndex(targets)
	return ix
}

// decide answers q when the structure, the normal forms or the signature
// settle it.
func (ix *targetIndex) decide(q *Expr) (isSubexpr, decided bool) {
	if ix.containsStructurally(q) {
		return true, true
	}
	if v := ix.nf.decide(q); v != maybe {
		return v == yes, true
	}
	if !subset(ix.sigs.of(q), ix.sig) {
		return false, true
	}
	return false, false
}

// holdsInModel reports whether q may be a subexpression of a target in
// the model of the axioms (normal.go): false only where the normal forms
// refute it. The signature does not serve here: it follows the laws, and
// the model equates more than they do (rms(1, x) and sqrt(square(x))).
func (ix *targetIndex) holdsInModel(q *Expr) bool {
	return ix.containsStructurally(q) || ix.nf.decide(q) != no
}

func (ix *targetIndex) containsStructurally(q *Expr) bool {
	if ix.subterms[q] {
		return true
	}
	switch q.op {
	case OpAdd, OpMul:
		for _, s := range ix.assoc {
			if s.op == q.op && isSubMultiset(q.args, s.args) {
				return true
			}
		}
	case OpSum:
		for _, n := range ix.sumSizes[q.args[0]] {
			if n%q.size == 0 {
				return true
			}
		}
	}
	return false
}

// isSubMultiset reports whether sorted sub is contained in sorted super.
func isSubMultiset(sub, super []*Expr) bool {
	i := 0
	for _, s := range super {
		if i < len(sub) && sub[i] == s {
			i++
		}
	}
	return i == len(sub)
}

// A signature is what every expression equal to e under the laws shares:
// its variables, whether it reduces (holds a sum or rms), and its opaque
// applications (atoms), each named by the function (with clamp bounds)
// and its operands' signatures. rms(n, x) counts as sqrt(sum(n, square(x))),
// which rms-def makes it equal to. A signature is a set of elements:
// reduces, and ids that a sigTable gives variables and atoms.
//
// A subexpression's signature is within its expression's, so an
// expression with a signature not within the union of the targets' is a
// subexpression of none.
const reduces uint32 = 0

// sigAtom is an atom of a signature: an opaque function with its clamp
// bounds (as bits, which tell -0 from 0) and its operands' signatures.
type sigAtom struct {
	op     Op
	lo, hi uint64
	args   [maxOpaqueArity]*set
}

// maxOpaqueArity bounds the operands of an opaque op.
const maxOpaqueArity = 2

var _ = func() bool {
	for op := range numOps {
		if ops[op].opaque && (ops[op].arity == nary || ops[op].arity > maxOpaqueArity) {
			panic("absexpr: opaque op " + ops[op].name + " has more operands than a sigAtom holds")
		}
	}
	return true
}()

// sigTable computes signatures, interning their sets so that equal
// signatures are one *set and an expression's costs little more than its
// operands'. It is safe for concurrent use.
type sigTable struct {
	mu    sync.Mutex
	sets  setTable
	memo  map[*Expr]*set
	vars  map[string]uint32
	atoms map[sigAtom]uint32
	last  uint32 // the last id given
}

func newSigTable() *sigTable {
	return &sigTable{memo: map[*Expr]*set{}, vars: map[string]uint32{}, atoms: map[sigAtom]uint32{}}
}

// of is e's signature.
func (st *sigTable) of(e *Expr) *set {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.signature(e)
}

// union is a ∪ b.
func (st *sigTable) union(a, b *set) *set {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.sets.union(a, b)
}

func (st *sigTable) signature(e *Expr) *set {
	if s, ok := st.memo[e]; ok {
		return s
	}
	var s *set
	switch e.op {
	case OpVar:
		id, ok := st.vars[e.name]
		if !ok {
			id = st.newID()
			st.vars[e.name] = id
		}
		s = st.sets.leaf(id)
	case OpRms:
		// rms(n, x) = sqrt(sum(n, square(x))): square(x) and the sqrt are
		// its atoms.
		x := st.signature(e.args[0])
		inner := st.sets.insert(st.sets.insert(x, st.atom(sigAtom{op: OpSquare, args: [maxOpaqueArity]*set{x}})), reduces)
		s = st.sets.insert(inner, st.atom(sigAtom{op: OpSqrt, args: [maxOpaqueArity]*set{inner}}))
	default:
		var a sigAtom
		for i, arg := range e.args {
			as := st.signature(arg)
			s = st.sets.union(s, as)
			if i < len(a.args) {
				a.args[i] = as
			}
		}
		if e.op == OpSum {
			s = st.sets.insert(s, reduces)
		}
		if ops[e.op].opaque {
			a.op = e.op
			if ops[e.op].bounded {
				a.lo, a.hi = math.Float64bits(e.lo), math.Float64bits(e.hi)
			}
			s = st.sets.insert(s, st.atom(a))
		}
	}
	st.memo[e] = s
	return s
}

// atom is a's id.
func (st *sigTable) atom(a sigAtom) uint32 {
	id, ok := st.atoms[a]
	if !ok {
		id = st.newID()
		st.atoms[a] = id
	}
	return id
}

func (st *sigTable) newID() uint32 {
	if st.last == math.MaxUint32 {
		panic("absexpr: out of signature ids")
	}
	st.last++
	return st.last
}
