package absexpr

import (
	"slices"
	"strings"
	"unique"
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
	subterms map[unique.Handle[string]]bool
	// assoc lists the add and mul subterms, for sub-multiset containment.
	assoc []*Expr
	// sumSizes lists the sizes at which each expression is summed.
	sumSizes map[unique.Handle[string]][]int
	sig      signature // union of the targets' signatures
	nf       *nfIndex  // nil when a target's normal form is too large
}

func newTargetIndex(targets []*Expr) *targetIndex {
	ix := &targetIndex{
		subterms: make(map[unique.Handle[string]]bool),
		sumSizes: make(map[unique.Handle[string]][]int),
		sig:      newSignature(),
	}
	for _, t := range targets {
		t.Walk(func(s *Expr) bool {
			if ix.subterms[s.key] {
				return false // seen, with everything below it
			}
			ix.subterms[s.key] = true
			switch s.op {
			case OpAdd, OpMul:
				ix.assoc = append(ix.assoc, s)
			case OpSum:
				ix.sumSizes[s.args[0].key] = append(ix.sumSizes[s.args[0].key], s.size)
			}
			return true
		})
		ix.sig.add(signatureOf(t, make(map[unique.Handle[string]]signature)))
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
	if !ix.sig.covers(signatureOf(q, make(map[unique.Handle[string]]signature))) {
		return false, true
	}
	return false, false
}

func (ix *targetIndex) containsStructurally(q *Expr) bool {
	if ix.subterms[q.key] {
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
		for _, n := range ix.sumSizes[q.args[0].key] {
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
		if i < len(sub) && sub[i].key == s.key {
			i++
		}
	}
	return i == len(sub)
}

// signature is what every expression equal to e under the laws shares:
// its variables, whether it reduces (holds a sum or rms), and its opaque
// applications, each named by the function (with clamp bounds) and its
// operands' signatures. rms(n, x) counts as sqrt(sum(n, square(x))), which
// rms-def makes it equal to.
type signature struct {
	vars    map[string]bool
	reduces bool
	atoms   map[string]bool
}

func newSignature() signature {
	return signature{vars: map[string]bool{}, atoms: map[string]bool{}}
}

// add makes s the signature of an expression that contains o's.
func (s *signature) add(o signature) {
	for v := range o.vars {
		s.vars[v] = true
	}
	for a := range o.atoms {
		s.atoms[a] = true
	}
	s.reduces = s.reduces || o.reduces
}

// covers reports whether o is within s: a subexpression of an expression
// with signature s has a signature within s.
func (s signature) covers(o signature) bool {
	if o.reduces && !s.reduces {
		return false
	}
	for v := range o.vars {
		if !s.vars[v] {
			return false
		}
	}
	for a := range o.atoms {
		if !s.atoms[a] {
			return false
		}
	}
	return true
}

// key renders s canonically, to name the atoms that contain it.
func (s signature) key() string {
	var b strings.Builder
	b.WriteByte('{')
	b.WriteString(strings.Join(sortedKeys(s.vars), ","))
	if s.reduces {
		b.WriteString("|Σ")
	}
	b.WriteByte('|')
	b.WriteString(strings.Join(sortedKeys(s.atoms), ","))
	b.WriteByte('}')
	return b.String()
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// signatureOf computes e's signature; memo shares the work between repeated
// subterms (rms_norm mentions its operand twice).
func signatureOf(e *Expr, memo map[unique.Handle[string]]signature) signature {
	if s, ok := memo[e.key]; ok {
		return s
	}
	s := newSignature()
	switch e.op {
	case OpVar:
		s.vars[e.name] = true
	case OpRms:
		// rms(n, x) = sqrt(sum(n, square(x))): square(x) and the sqrt are
		// its atoms.
		x := signatureOf(e.args[0], memo)
		s.add(x)
		s.atoms[atomKey(OpSquare, e, []signature{x})] = true
		inner := newSignature()
		inner.add(x)
		inner.atoms[atomKey(OpSquare, e, []signature{x})] = true
		inner.reduces = true
		s.atoms[atomKey(OpSqrt, e, []signature{inner})] = true
		s.reduces = true
	default:
		args := make([]signature, len(e.args))
		for i, a := range e.args {
			args[i] = signatureOf(a, memo)
			s.add(args[i])
		}
		if e.op == OpSum {
			s.reduces = true
		}
		if ops[e.op].opaque {
			s.atoms[atomKey(e.op, e, args)] = true
		}
	}
	memo[e.key] = s
	return s
}

// atomKey names an opaque application of op (with e's clamp bounds) to
// operands with the given signatures.
func atomKey(op Op, e *Expr, args []signature) string {
	var b strings.Builder
	b.WriteString(op.String())
	if op == OpClamp {
		b.WriteString("[" + formatFloat(e.lo) + "," + formatFloat(e.hi) + "]")
	}
	for _, a := range args {
		b.WriteString(a.key())
	}
	return b.String()
}
