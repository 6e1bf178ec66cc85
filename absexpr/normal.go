package absexpr

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"unique"
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

// An atom is a variable or an opaque function applied to values.
type atom struct {
	args []*poly
	key  string // the variable's name, or f(args) with clamp bounds after f
}

// A mono is size·atoms/den. Cofactors may have no atoms; values' monomials
// always have some.
type mono struct {
	size  int
	atoms []*atom // sorted by key
	den   *poly   // nil: none
	key   string
}

// A poly is a value: a formal sum of monomials.
type poly struct {
	terms []*mono // sorted by key, at least one
	key   string
}

// newAtom is the atom head(args): a variable when args is nil.
func newAtom(head string, args []*poly) *atom {
	if args == nil {
		return &atom{key: head}
	}
	keys := make([]string, len(args))
	for i, a := range args {
		keys[i] = a.key
	}
	return &atom{args: args, key: head + "(" + strings.Join(keys, "; ") + ")"}
}

// newMono builds size·atoms/den; atoms must be sorted.
func newMono(size int, atoms []*atom, den *poly) *mono {
	var b strings.Builder
	b.WriteString(strconv.Itoa(size))
	for _, a := range atoms {
		b.WriteString("·")
		b.WriteString(a.key)
	}
	if den != nil {
		b.WriteString(" / (")
		b.WriteString(den.key)
		b.WriteByte(')')
	}
	return &mono{size: size, atoms: atoms, den: den, key: b.String()}
}

// newPoly builds the sum of terms, which it sorts.
func newPoly(terms []*mono) (*poly, error) {
	if len(terms) > maxTerms {
		return nil, errTooLarge
	}
	slices.SortFunc(terms, func(a, b *mono) int { return strings.Compare(a.key, b.key) })
	keys := make([]string, len(terms))
	for i, t := range terms {
		keys[i] = t.key
	}
	return &poly{terms: terms, key: strings.Join(keys, " + ")}, nil
}

func single(t *mono) *poly { return &poly{terms: []*mono{t}, key: t.key} }

func atomPoly(a *atom) *poly { return single(newMono(1, []*atom{a}, nil)) }

// mulSize multiplies sizes, failing on overflow. Sizes are positive.
func mulSize(a, b int) (int, error) {
	if a > math.MaxInt/b {
		return 0, errTooLarge
	}
	return a * b, nil
}

func mulMono(s, t *mono) (*mono, error) {
	size, err := mulSize(s.size, t.size)
	if err != nil {
		return nil, err
	}
	den, err := mulDen(s.den, t.den)
	if err != nil {
		return nil, err
	}
	atoms := make([]*atom, 0, len(s.atoms)+len(t.atoms))
	atoms = append(append(atoms, s.atoms...), t.atoms...)
	slices.SortFunc(atoms, func(a, b *atom) int { return strings.Compare(a.key, b.key) })
	return newMono(size, atoms, den), nil
}

// mulDen multiplies denominators, nil being none.
func mulDen(a, b *poly) (*poly, error) {
	switch {
	case a == nil:
		return b, nil
	case b == nil:
		return a, nil
	}
	return mulPoly(a, b)
}

func mulPoly(a, b *poly) (*poly, error) {
	if len(a.terms)*len(b.terms) > maxTerms {
		return nil, errTooLarge
	}
	terms := make([]*mono, 0, len(a.terms)*len(b.terms))
	for _, s := range a.terms {
		for _, t := range b.terms {
			st, err := mulMono(s, t)
			if err != nil {
				return nil, err
			}
			terms = append(terms, st)
		}
	}
	return newPoly(terms)
}

// mapTerms applies f to each monomial of u.
func mapTerms(u *poly, f func(*mono) (*mono, error)) (*poly, error) {
	terms := make([]*mono, len(u.terms))
	for i, t := range u.terms {
		var err error
		if terms[i], err = f(t); err != nil {
			return nil, err
		}
	}
	return newPoly(terms)
}

// normalizer computes normal forms, sharing repeated subexpressions.
type normalizer struct {
	memo map[unique.Handle[string]]*poly
	// unitRms records an rms(1, x), which the model equates with
	// sqrt(square(x)) and the laws do not (see "Why a yes is provable").
	unitRms bool
}

func newNormalizer() *normalizer {
	return &normalizer{memo: make(map[unique.Handle[string]]*poly)}
}

// normal is e's normal form, or errTooLarge.
func (nz *normalizer) normal(e *Expr) (*poly, error) {
	if p, ok := nz.memo[e.key]; ok {
		return p, nil
	}
	args := make([]*poly, len(e.args))
	for i, a := range e.args {
		var err error
		if args[i], err = nz.normal(a); err != nil {
			return nil, err
		}
	}
	var p *poly
	var err error
	switch e.op {
	case OpVar:
		p = atomPoly(newAtom(e.name, nil))
	case OpAdd:
		var terms []*mono
		for _, a := range args {
			terms = append(terms, a.terms...)
		}
		p, err = newPoly(terms)
	case OpMul:
		p = args[0]
		for _, a := range args[1:] {
			if p, err = mulPoly(p, a); err != nil {
				break
			}
		}
	case OpDiv:
		z := args[1]
		p, err = mapTerms(args[0], func(t *mono) (*mono, error) {
			den, err := mulDen(t.den, z)
			return newMono(t.size, t.atoms, den), err
		})
	case OpSum:
		p, err = scale(e.size, args[0])
	case OpRms:
		// rms(n, x) = sqrt(sum(n, square(x))).
		nz.unitRms = nz.unitRms || e.size == 1
		var sq *poly
		if sq, err = scale(e.size, atomPoly(newAtom(OpSquare.String(), args))); err == nil {
			p = atomPoly(newAtom(OpSqrt.String(), []*poly{sq}))
		}
	default: // opaque
		head := e.op.String()
		if e.op == OpClamp {
			head += "[" + realKey(e.lo) + ", " + realKey(e.hi) + "]"
		}
		p = atomPoly(newAtom(head, args))
	}
	if err != nil {
		return nil, err
	}
	nz.memo[e.key] = p
	return p, nil
}

// realKey writes a clamp bound as the real Z3 reads it, where -0 is 0.
func realKey(f float64) string {
	if f == 0 {
		f = 0
	}
	return formatFloat(f)
}

// scale is sum(n, u).
func scale(n int, u *poly) (*poly, error) {
	return mapTerms(u, func(t *mono) (*mono, error) {
		size, err := mulSize(n, t.size)
		return newMono(size, t.atoms, t.den), err
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
	pieces  []*poly
	targets []string // the targets' normal forms' keys
	// provable reports that a yes is provable: no target has rms(1, x).
	provable bool
}

// newNFIndex indexes targets, or returns nil when a normal form is too
// large.
func newNFIndex(targets []*Expr) *nfIndex {
	nz := newNormalizer()
	ix := &nfIndex{}
	seen := map[string]bool{}
	var add func(p *poly)
	add = func(p *poly) {
		if seen[p.key] {
			return
		}
		seen[p.key] = true
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
		p, err := nz.normal(t)
		if err != nil {
			return nil
		}
		ix.targets = append(ix.targets, p.key)
		add(p)
	}
	ix.provable = !nz.unitRms
	return ix
}

// decide reports whether q is a subexpression of a target: yes, no, or
// maybe, which leaves it to Z3.
func (ix *nfIndex) decide(q *Expr) verdict {
	if ix == nil {
		return maybe
	}
	nz := newNormalizer()
	p, err := nz.normal(q)
	if err != nil {
		return maybe
	}
	v := no
	for _, w := range ix.pieces {
		v = max(v, within(p, w))
		if v == yes {
			break
		}
	}
	if v == yes && (!ix.provable || nz.unitRms) {
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
	p, err := newNormalizer().normal(q)
	if err != nil {
		return maybe
	}
	if slices.Contains(ix.targets, p.key) {
		return yes
	}
	return no
}

// within reports whether q·c ⊆ w for some cofactor c.
func within(q, w *poly) verdict {
	v := no
	for i, t := range w.terms {
		if i > 0 && t.key == w.terms[i-1].key {
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
	qc, err := mapTerms(q, func(t *mono) (*mono, error) { return mulMono(t, c) })
	if err != nil {
		return false, err
	}
	j := 0
	for _, t := range qc.terms { // both sorted: a merge
		for j < len(w.terms) && w.terms[j].key < t.key {
			j++
		}
		if j == len(w.terms) || w.terms[j].key != t.key {
			return false, nil
		}
		j++
	}
	return true, nil
}

// quotient finds the cofactor c with s·c = t: yes with c, no when there is
// none, maybe when it would divide sums of several monomials.
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
	return newMono(t.size/s.size, atoms, den), yes
}

// denQuotient finds the denominator z with s·z = t (nil being none). z is a
// value, so a monomial one has atoms.
func denQuotient(t, s *poly) (*poly, verdict) {
	switch {
	case s == nil:
		return t, yes
	case t == nil:
		return nil, no
	case s.key == t.key:
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
		z, err := newPoly(terms) // no larger than t
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
		if i < len(small) && small[i].key == a.key {
			i++
		} else {
			rest = append(rest, a)
		}
	}
	return rest, i == len(small)
}
