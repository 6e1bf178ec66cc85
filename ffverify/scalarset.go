package ffverify

import (
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// A scalar is a rational in the model (scalarElem), and two different
// rationals can be one field element: their difference's numerator is a
// multiple of P·Q. Graphs that differ only in such scalars (X·a + Y·b
// against (X+Y)·b, with a ≡ b) agree on every draw, so the draws cannot
// decide between them. No scalar a user writes comes near (the chance for
// a pair is about 2⁻⁶²), but one can be built for P and Q, and the verdict
// must then be refused rather than given. The check covers every term of
// degree up to two: 0, ±1, ±s and ±s·t for scalars s, t of the program and
// the candidate. A collision that needs a longer product, or a count of a
// sum, is not looked for.

// ConfusedScalars returns two different terms of g's own scalars that the
// model maps to one field element, or nil. When it returns them, every
// verdict on a candidate for g is refused (Result.Confused), a correct
// one too.
func ConfusedScalars(g *kernel.Graph) []string {
	if c := newScalarSet(graphScalars(g)).confused; c != nil {
		return c[:]
	}
	return nil
}

// scalarTerm is a product of at most two scalars, or 0 or 1, possibly
// negated: its text, its exact value and its field element.
type scalarTerm struct {
	text  string
	value *big.Rat
	e     elem
}

func scalarFactor(x float64) scalarTerm {
	e, _ := scalarElem(x) // validate has checked that x is finite
	return scalarTerm{strconv.FormatFloat(x, 'g', -1, 64), scalarRat(x), e}
}

func (t scalarTerm) times(u scalarTerm) scalarTerm {
	return scalarTerm{t.text + "·" + u.text, new(big.Rat).Mul(t.value, u.value), t.e.mul(u.e)}
}

func (t scalarTerm) neg() scalarTerm {
	text, found := strings.CutPrefix(t.text, "-")
	switch {
	case found:
	case strings.Contains(text, "·"):
		text = "-(" + text + ")"
	default:
		text = "-" + text
	}
	return scalarTerm{text, new(big.Rat).Neg(t.value), elem{}.sub(t.e)}
}

// scalarSet is the terms of a program's scalars by field element, and the
// first two different terms found to share one. It is read-only once made.
type scalarSet struct {
	floats   []float64 // the scalars, sorted, distinct
	terms    map[elem]scalarTerm
	confused *[2]string
}

// graphScalars returns the distinct mul_scalar factors of g at every level,
// sorted.
func graphScalars(g *kernel.Graph) []float64 {
	var s []float64
	for i := range g.Ops {
		op := &g.Ops[i]
		if op.Kind == ugraph.OpMulScalar {
			s = append(s, op.Attr.Scalars[0]+0) // +0: -0 is 0
		}
		if op.Block != nil {
			for j := range op.Block.Ops {
				if b := &op.Block.Ops[j]; b.Kind == ugraph.OpMulScalar {
					s = append(s, b.Attr.Scalars[0]+0)
				}
			}
		}
	}
	slices.Sort(s)
	return slices.Compact(s)
}

// newScalarSet returns the set of floats' terms (sorted and distinct).
func newScalarSet(floats []float64) *scalarSet {
	s := &scalarSet{terms: make(map[elem]scalarTerm)}
	for _, c := range []int64{0, 1} {
		s.confused = s.add(nil, nil, []scalarTerm{{strconv.FormatInt(c, 10), big.NewRat(c, 1), fromInt(int(c))}})
	}
	if s.confused == nil {
		s.confused = s.add(nil, floats, nil)
	}
	s.floats = floats
	return s
}

// confusedWith returns two different terms of the program's and the
// candidate's scalars (floats) that share a field element, or nil.
func (s *scalarSet) confusedWith(floats []float64) *[2]string {
	if s.confused != nil {
		return s.confused
	}
	var extra []float64
	for _, x := range floats {
		if _, found := slices.BinarySearch(s.floats, x); !found {
			extra = append(extra, x)
		}
	}
	if len(extra) == 0 {
		return nil
	}
	overlay := &scalarSet{floats: s.floats, terms: make(map[elem]scalarTerm)}
	return overlay.add(s.terms, extra, nil)
}

// add puts into s.terms the given terms and those that the scalars extra
// bring (each, and its product with itself, with the others and with
// s.floats), each also negated, and returns the first two different terms
// that share an element in base or s.terms.
func (s *scalarSet) add(base map[elem]scalarTerm, extra []float64, terms []scalarTerm) *[2]string {
	var factors []scalarTerm
	for _, x := range s.floats {
		factors = append(factors, scalarFactor(x))
	}
	for _, x := range extra {
		a := scalarFactor(x)
		factors = append(factors, a)
		terms = append(terms, a)
		for _, b := range factors {
			terms = append(terms, a.times(b))
		}
	}
	for _, t := range terms {
		for _, u := range [2]scalarTerm{t, t.neg()} {
			for _, m := range [2]map[elem]scalarTerm{base, s.terms} {
				if v, ok := m[u.e]; ok && v.value.Cmp(u.value) != 0 {
					return &[2]string{v.text, u.text}
				}
			}
			if _, ok := s.terms[u.e]; !ok {
				s.terms[u.e] = u
			}
		}
	}
	return nil
}
