package absexpr

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Normal forms: a model of the axioms in which the subexpression relation
// is decidable, which lets Go answer what Z3 cannot refute.
//
// # The model
//
// A value is a formal sum of monomials: a multiset, for no law merges like
// terms (add(x, x) is not sum(2, x)). A monomial k·a₁·…·aⱼ / d has
//
//   - a size k: the product of the sizes summed over, 1 when none (no law
//     adds sizes; they only multiply);
//   - atoms a₁…aⱼ, j ≥ 1, a multiset: variables, and opaque functions
//     (exp, sqrt, square, silu, clamp, pow, ...) applied to values;
//   - a denominator d: a value, or none.
//
// The ops act on values as follows (none is the unit of denominators):
//
//	add(u, v)  = u ⊎ v
//	mul(u, v)  = { s·t : s ∈ u, t ∈ v },  (k, A, d)·(k', A', d') = (kk', A ⊎ A', d·d')
//	div(u, z)  = { (k, A, d·z) : (k, A, d) ∈ u }
//	sum(n, u)  = { (nk, A, d) : (k, A, d) ∈ u }
//	rms(n, u)  = sqrt(sum(n, square(u)))
//	f(u, ...)  = { (1, {f(u, ...)}, none) }     for an opaque f
//
// Every law of the axiom table holds here, for all values and all integer
// sizes (Z3's sizes are integers): add and mul are associative and
// commutative, mul is bilinear (distrib), div acts on each monomial of its
// numerator (div-add) and multiplies denominators (mul-div, div-div), sum
// multiplies each monomial's size (sum-add, sum-mul, sum-div), sizes
// multiply (sum-nest, and sum-split where m divides n), and rms-def is the
// definition. TestNormalFormModelsTheAxioms checks each law on random
// values. So expressions the laws make equal have equal normal forms.
//
// # Subexpressions
//
// The prover's S ("is a subexpression of a target") holds of the targets
// and of every operand of anything it holds of. Its counterpart in the
// model is V, the smallest set of values that holds the targets' normal
// forms and, whenever an op of the model maps operands to a value in V,
// those operands. Reading S(e) as "e's normal form is in V" satisfies every
// fact the prover asserts, so the axioms prove S of no expression whose
// normal form is outside V: for those, "no" is the answer Z3 would give if
// it could. V is
//
//	V = { q : q·c ⊆ w for some piece w and some cofactor c }
//
// where the pieces are the targets' normal forms and, recursively, the
// denominators of their monomials and the operands of their atoms; a
// cofactor is a monomial whose atoms may be none; and q·c ⊆ w says that
// q₁·c, …, qᵢ·c are distinct monomials of w. That set holds the targets
// (c = 1) and is closed under taking operands: if x·c ⊆ w, an operand of
// add(u, v) = x is a sub-multiset of x; of sum(n, u) = x, u·(n·c) ⊆ w; of
// div(u, z) = x, u·(c/z) ⊆ w, and z divides a denominator of w, a piece; of
// mul(u, y) = x, u·(y₁·c) ⊆ x·c ⊆ w; and an atom's operands are pieces.
// Each piece, and each such q, is also reached by taking operands: strip
// c's denominator (div), its size (sum), its atoms (mul), drop monomials
// (add).
//
// Given q, the cofactor is fixed by whichever monomial of w is q₁·c: it is
// that monomial divided by q₁. So the test is exact, with one gap: the
// quotient of two denominators that are both sums of several monomials is
// not computed, and such queries go to Z3.
//
// # Why a yes is provable
//
// Over sizes ≥ 2, all that expressions hold and all that Z3's instances of
// the laws make, the model identifies no more than the laws do: the laws
// make every expression equal to the canonical expression of its normal
// form (sums out of products and numerators, products distributed over
// additions, one denominator per monomial, rms as sqrt of a sum of
// squares), so expressions with one normal form are provably equal, and
// each step above is a law and then an operand. A yes is thus provable,
// though Z3 may need more instances than its cap allows to find the proof
// (on the recorded workload it finds every one: TestWorkloadAgreesWithZ3).
// The exception is rms(1, x), whose normal form is that of sqrt(square(x))
// although no law says sum(1, y) = y; where it occurs, a yes is left to Z3.

// maxTerms bounds the monomials of one value; products of sums multiply
// them. A larger value is left to the other checks.
const maxTerms = 256

var errTooLarge = errors.New("absexpr: normal form too large")

// Normal forms are interned like expressions (intern.go), in a normalizer
// shared by the targets and the queries: atoms, monomials and values are
// built once each and compared by identity, and a value's monomials are
// named by their ids, not by their texts, which nest the texts of every
// value an atom applies to and so can be exponentially long. The cofactors
// and products that a decision tries (within) are not interned: they are
// built with a nil normalizer, and compared with the interned ones by text
// (timesWithin).
//
// The canonical orders are those of the texts (text.go), as Key writes
// them: a monomial's atoms, and a value's monomials, are sorted by text.

// An atom is a variable or an opaque function applied to values.
type atom struct {
	// open is the text up to the first operand: the variable's name, or
	// f( with clamp bounds after f.
	open string
	args []*poly // nil for a variable
	id   uint64
}

// A mono is size·atoms/den. Cofactors may have no atoms; values' monomials
// always have some.
type mono struct {
	size  int
	atoms []*atom // sorted by text
	den   *poly   // nil: none
	id    uint64  // 0 when not interned
}

// A poly is a value: a formal sum of monomials.
type poly struct {
	terms []*mono // sorted by text, at least one
	id    uint64  // 0 when not interned
}

// nfNode is an atom, mono or poly, as a textNode.
type nfNode interface {
	piece(i int) (string, nfNode, bool)
}

// piece: a variable's name, or f(args; ...).
func (a *atom) piece(i int) (string, nfNode, bool) {
	switch j := i - 1; {
	case i == 0:
		return a.open, nil, true
	case a.args == nil:
	case j < 2*len(a.args)-1 && j%2 == 0:
		return "", a.args[j/2], true
	case j < 2*len(a.args)-1:
		return "; ", nil, true
	case j == 2*len(a.args)-1:
		return ")", nil, true
	}
	return "", nil, false
}

// piece: size·atom·atom / (den).
func (m *mono) piece(i int) (string, nfNode, bool) {
	switch j := i - 2*len(m.atoms); {
	case i == 0:
		return strconv.Itoa(m.size), nil, true
	case j <= 0 && i%2 == 1:
		return "·", nil, true
	case j <= 0:
		return "", m.atoms[i/2-1], true
	case m.den == nil:
	case j == 1:
		return " / (", nil, true
	case j == 2:
		return "", m.den, true
	case j == 3:
		return ")", nil, true
	}
	return "", nil, false
}

// piece: term + term.
func (p *poly) piece(i int) (string, nfNode, bool) {
	switch {
	case i >= 2*len(p.terms)-1:
		return "", nil, false
	case i%2 == 0:
		return "", p.terms[i/2], true
	}
	return " + ", nil, true
}

func (p *poly) String() string {
	var b strings.Builder
	writeText[nfNode](&b, p, math.MaxInt)
	return b.String()
}

func compareAtoms(a, b *atom) int { return compareText[nfNode](a, b) }
func compareMonos(a, b *mono) int { return compareText[nfNode](a, b) }

// ids names interned nodes in the key of a node that holds them.
func ids[N interface{ *atom | *mono | *poly }](ns []N, id func(N) uint64) string {
	b := make([]byte, 0, 8*len(ns))
	for _, n := range ns {
		b = binary.LittleEndian.AppendUint64(b, id(n))
	}
	return string(b)
}

type atomKey struct {
	open string
	args string // the values' ids
}

type monoKey struct {
	size  int
	atoms string // the atoms' ids
	den   uint64 // 0: none
}

// newAtom is the atom open(args): a variable when args is nil. nz is never
// nil: atoms are always interned.
func (nz *normalizer) newAtom(open string, args []*poly) *atom {
	k := atomKey{open: open, args: ids(args, func(p *poly) uint64 { return p.id })}
	if a, ok := nz.atoms.Load(k); ok {
		return a.(*atom)
	}
	a, _ := nz.atoms.LoadOrStore(k, &atom{open: open, args: args, id: nz.lastID.Add(1)})
	return a.(*atom)
}

// newMono builds size·atoms/den; atoms must be sorted. It interns the
// result unless nz is nil.
func (nz *normalizer) newMono(size int, atoms []*atom, den *poly) *mono {
	m := &mono{size: size, atoms: atoms, den: den}
	if nz == nil {
		return m
	}
	k := monoKey{size: size, atoms: ids(atoms, func(a *atom) uint64 { return a.id })}
	if den != nil {
		k.den = den.id
	}
	if old, ok := nz.monos.Load(k); ok {
		return old.(*mono)
	}
	m.id = nz.lastID.Add(1)
	old, _ := nz.monos.LoadOrStore(k, m)
	return old.(*mono)
}

// newPoly builds the sum of terms, which it sorts. It interns the result
// unless nz is nil.
func (nz *normalizer) newPoly(terms []*mono) (*poly, error) {
	if len(terms) > maxTerms {
		return nil, errTooLarge
	}
	slices.SortFunc(terms, compareMonos)
	return nz.sortedPoly(terms), nil
}

// sortedPoly is newPoly for sorted terms, at most maxTerms.
func (nz *normalizer) sortedPoly(terms []*mono) *poly {
	p := &poly{terms: terms}
	if nz == nil {
		return p
	}
	k := ids(terms, func(m *mono) uint64 { return m.id })
	if old, ok := nz.polys.Load(k); ok {
		return old.(*poly)
	}
	p.id = nz.lastID.Add(1)
	old, _ := nz.polys.LoadOrStore(k, p)
	return old.(*poly)
}

func (nz *normalizer) single(t *mono) *poly { return nz.sortedPoly([]*mono{t}) }

func (nz *normalizer) atomPoly(a *atom) *poly { return nz.single(nz.newMono(1, []*atom{a}, nil)) }

// mulSize multiplies sizes, failing on overflow. Sizes are positive.
func mulSize(a, b int) (int, error) {
	if a > math.MaxInt/b {
		return 0, errTooLarge
	}
	return a * b, nil
}

func (nz *normalizer) mulMono(s, t *mono) (*mono, error) {
	size, err := mulSize(s.size, t.size)
	if err != nil {
		return nil, err
	}
	den, err := nz.mulDen(s.den, t.den)
	if err != nil {
		return nil, err
	}
	atoms := make([]*atom, 0, len(s.atoms)+len(t.atoms))
	atoms = append(append(atoms, s.atoms...), t.atoms...)
	slices.SortFunc(atoms, compareAtoms)
	return nz.newMono(size, atoms, den), nil
}

// mulDen multiplies denominators, nil being none.
func (nz *normalizer) mulDen(a, b *poly) (*poly, error) {
	switch {
	case a == nil:
		return b, nil
	case b == nil:
		return a, nil
	}
	return nz.mulPoly(a, b)
}

func (nz *normalizer) mulPoly(a, b *poly) (*poly, error) {
	if len(a.terms)*len(b.terms) > maxTerms {
		return nil, errTooLarge
	}
	terms := make([]*mono, 0, len(a.terms)*len(b.terms))
	for _, s := range a.terms {
		for _, t := range b.terms {
			st, err := nz.mulMono(s, t)
			if err != nil {
				return nil, err
			}
			terms = append(terms, st)
		}
	}
	return nz.newPoly(terms)
}

// mapTerms applies f to each monomial of u.
func (nz *normalizer) mapTerms(u *poly, f func(*mono) (*mono, error)) (*poly, error) {
	terms := make([]*mono, len(u.terms))
	for i, t := range u.terms {
		var err error
		if terms[i], err = f(t); err != nil {
			return nil, err
		}
	}
	return nz.newPoly(terms)
}

// normalizer computes normal forms, interning them, and remembers each
// expression's. It is safe for concurrent use.
type normalizer struct {
	atoms  sync.Map // atomKey -> *atom
	monos  sync.Map // monoKey -> *mono
	polys  sync.Map // the terms' ids -> *poly
	memo   sync.Map // *Expr -> normalForm, where the expression's slot is another normalizer's
	lastID atomic.Uint64
}

// normalForm is an expression's normal form: p, or nil when it is too
// large. unitRms reports an rms(1, x) in the expression, which the model
// equates with sqrt(square(x)) and the laws do not (see "Why a yes is
// provable").
type normalForm struct {
	p       *poly
	unitRms bool
}

func newNormalizer() *normalizer { return &normalizer{} }

// formSlot is an expression's normal form under one normalizer, kept in
// the expression (Expr.form) for the first that made it.
type formSlot struct {
	nz *normalizer
	nf normalForm
}

// remember keeps e's normal form nf in e's slot, or in the memo where the
// slot is another normalizer's.
func (nz *normalizer) remember(e *Expr, nf normalForm) {
	if !e.form.CompareAndSwap(nil, &formSlot{nz, nf}) && e.form.Load().nz != nz {
		nz.memo.Store(e, nf)
	}
}

// normal is e's normal form, or errTooLarge.
func (nz *normalizer) normal(e *Expr) (*poly, error) {
	nf := nz.form(e)
	if nf.p == nil {
		return nil, errTooLarge
	}
	return nf.p, nil
}

// form is e's normal form, computed once.
func (nz *normalizer) form(e *Expr) normalForm {
	if f := e.form.Load(); f != nil && f.nz == nz {
		return f.nf
	}
	if nf, ok := nz.memo.Load(e); ok {
		return nf.(normalForm)
	}
	nf := normalForm{unitRms: e.op == OpRms && e.size == 1}
	args := make([]*poly, len(e.args))
	for i, a := range e.args {
		af := nz.form(a)
		nf.unitRms = nf.unitRms || af.unitRms
		if args[i] = af.p; af.p == nil {
			nz.remember(e, nf)
			return nf
		}
	}
	var err error
	switch e.op {
	case OpVar:
		nf.p = nz.atomPoly(nz.newAtom(e.name, nil))
	case OpAdd:
		var terms []*mono // the operands' terms are sorted: merge them
		for _, a := range args {
			if len(terms)+len(a.terms) > maxTerms {
				err = errTooLarge
				break
			}
			terms = mergeSorted(terms, a.terms, compareMonos)
		}
		if err == nil {
			nf.p = nz.sortedPoly(terms)
		}
	case OpMul:
		nf.p = args[0]
		for _, a := range args[1:] {
			if nf.p, err = nz.mulPoly(nf.p, a); err != nil {
				break
			}
		}
	case OpDiv:
		z := args[1]
		nf.p, err = nz.mapTerms(args[0], func(t *mono) (*mono, error) {
			den, err := nz.mulDen(t.den, z)
			if err != nil {
				return nil, err
			}
			return nz.newMono(t.size, t.atoms, den), nil
		})
	case OpSum:
		nf.p, err = nz.scale(e.size, args[0])
	case OpRms:
		// rms(n, x) = sqrt(sum(n, square(x))).
		var sq *poly
		if sq, err = nz.scale(e.size, nz.atomPoly(nz.newAtom(OpSquare.String()+"(", args))); err == nil {
			nf.p = nz.atomPoly(nz.newAtom(OpSqrt.String()+"(", []*poly{sq}))
		}
	default: // opaque
		open := e.op.String()
		if ops[e.op].bounded {
			open += "[" + realKey(e.lo) + ", " + realKey(e.hi) + "]"
		}
		nf.p = nz.atomPoly(nz.newAtom(open+"(", args))
	}
	if err != nil {
		nf.p = nil
	}
	nz.remember(e, nf)
	return nf
}

// realKey writes a clamp bound as the real Z3 reads it, where -0 is 0.
func realKey(f float64) string {
	if f == 0 {
		f = 0
	}
	return formatFloat(f)
}

// scale is sum(n, u).
func (nz *normalizer) scale(n int, u *poly) (*poly, error) {
	return nz.mapTerms(u, func(t *mono) (*mono, error) {
		size, err := mulSize(n, t.size)
		if err != nil {
			return nil, err
		}
		return nz.newMono(size, t.atoms, t.den), nil
	})
}

// verdict is a three-valued answer.
type verdict uint8

const (
	no verdict = iota
	maybe
	yes
)

// nfIndex decides queries by normal forms (see the comment at the top).
type nfIndex struct {
	nz      *normalizer // the targets' and the queries' normal forms
	pieces  []*poly
	targets []*poly // the targets' normal forms
	// provable reports that a yes is provable: no target has rms(1, x).
	provable bool
}

// newNFIndex indexes targets, or returns nil when a normal form is too
// large.
func newNFIndex(targets []*Expr) *nfIndex {
	ix := &nfIndex{nz: newNormalizer(), provable: true}
	seen := map[*poly]bool{}
	var add func(p *poly)
	add = func(p *poly) {
		if seen[p] {
			return
		}
		seen[p] = true
		ix.pieces = append(ix.pieces, p)
		for _, t := range p.terms {
			if t.den != nil {
				add(t.den)
			}
			for _, a := range t.atoms {
				for _, arg := range a.args {
					add(arg)
				}
			}
		}
	}
	for _, t := range targets {
		nf := ix.nz.form(t)
		if nf.p == nil {
			return nil
		}
		ix.targets = append(ix.targets, nf.p)
		ix.provable = ix.provable && !nf.unitRms
		add(nf.p)
	}
	return ix
}

// decide reports whether q is a subexpression of a target: yes, no, or
// maybe, which leaves it to Z3.
func (ix *nfIndex) decide(q *Expr) verdict {
	if ix == nil {
		return maybe
	}
	nf := ix.nz.form(q)
	if nf.p == nil {
		return maybe
	}
	v := no
	for _, w := range ix.pieces {
		v = max(v, within(nf.p, w))
		if v == yes {
			break
		}
	}
	if v == yes && (!ix.provable || nf.unitRms) {
		return maybe
	}
	return v
}

// equalsTarget reports whether q equals a target: no when q's normal form
// is none of theirs (the laws equate only expressions with one normal
// form), maybe when a normal form is too large, and otherwise yes.
func (ix *nfIndex) equalsTarget(q *Expr) verdict {
	if ix == nil {
		return maybe
	}
	p := ix.nz.form(q).p
	if p == nil {
		return maybe
	}
	if slices.Contains(ix.targets, p) {
		return yes
	}
	return no
}

// within reports whether q·c ⊆ w for some cofactor c. The cofactors and
// their products are not interned.
func within(q, w *poly) verdict {
	v := no
	for i, t := range w.terms {
		if i > 0 && t == w.terms[i-1] {
			continue // the same cofactor again
		}
		c, cv := quotient(t, q.terms[0])
		if cv != yes {
			v = max(v, cv)
			continue
		}
		if ok, err := timesWithin(q, c, w); err == nil && ok {
			return yes
		} else if err != nil {
			v = maybe
		}
	}
	return v
}

// timesWithin reports whether the monomials q₁·c, …, qᵢ·c are distinct
// members of w.
func timesWithin(q *poly, c *mono, w *poly) (bool, error) {
	var nz *normalizer // not interned
	qc, err := nz.mapTerms(q, func(t *mono) (*mono, error) { return nz.mulMono(t, c) })
	if err != nil {
		return false, err
	}
	j := 0
	for _, t := range qc.terms { // both sorted: a merge
		order := -1
		for j < len(w.terms) {
			if order = compareMonos(w.terms[j], t); order >= 0 {
				break
			}
			j++
		}
		if order != 0 {
			return false, nil
		}
		j++
	}
	return true, nil
}

// quotient finds the cofactor c with s·c = t: yes with c, no when there is
// none, maybe when it would divide sums of several monomials. c is not
// interned.
func quotient(t, s *mono) (*mono, verdict) {
	if t.size%s.size != 0 {
		return nil, no
	}
	atoms, ok := subtractAtoms(t.atoms, s.atoms)
	if !ok {
		return nil, no
	}
	den, v := denQuotient(t.den, s.den)
	if v != yes {
		return nil, v
	}
	var nz *normalizer
	return nz.newMono(t.size/s.size, atoms, den), yes
}

// denQuotient finds the denominator z with s·z = t (nil being none). z is a
// value, so a monomial one has atoms.
func denQuotient(t, s *poly) (*poly, verdict) {
	switch {
	case s == nil:
		return t, yes
	case t == nil:
		return nil, no
	case s == t: // both are interned
		return nil, yes
	case len(s.terms) == 1:
		// z is t with s divided out of each monomial.
		terms := make([]*mono, len(t.terms))
		for i, ti := range t.terms {
			zi, v := quotient(ti, s.terms[0])
			if v == yes && len(zi.atoms) == 0 {
				v = no
			}
			if v != yes {
				return nil, v
			}
			terms[i] = zi
		}
		var nz *normalizer
		z, err := nz.newPoly(terms) // no larger than t
		if err != nil {
			return nil, maybe
		}
		return z, yes
	case len(t.terms)%len(s.terms) != 0:
		return nil, no // s·z has len(s)·len(z) monomials
	}
	return nil, maybe
}

// subtractAtoms is the multiset big minus small, if small is within big;
// both are sorted.
func subtractAtoms(big, small []*atom) ([]*atom, bool) {
	rest := make([]*atom, 0, len(big)-min(len(small), len(big)))
	i := 0
	for _, a := range big {
		if i < len(small) && small[i] == a {
			i++
		} else {
			rest = append(rest, a)
		}
	}
	return rest, i == len(small)
}
