package ffverify

import (
	"math"
	"math/big"
)

// scalarRat is the rational a finite float scalar denotes: the simplest
// rational number that rounds to it (simplestRational): 0.5 is 1/2, 0.1 is 1/10, float64(1)/3
// is 1/3, 1/sqrt(128) the simplest of the rationals that round to
// 0.08838834764831845. So products of scalars are exact where their
// rationals' are (0.1·0.3 = 3/100 = 0.03), and mul_scalar(x, 1/n) is the
// mean accumulator's x/n. Its element is constants.scalar's.
//
// The model has taken scalars two other ways, both unsound (the tests in
// scalar_test.go are what they let through): as their rationals' residues
// modulo P and Q, where a float can be built whose rational is another's
// modulo P·Q, or 0 modulo Q (1073.740571 is Q/10⁶), or such that sums of
// terms vanish; and, for the small ones, the same with every other scalar
// a variable, where products of several small ones can still be chosen to
// collide (9199·13834·6927 is 1/(10359·8143·149) modulo P·Q).
func scalarRat(x float64) *big.Rat {
	if x == 0 {
		return new(big.Rat)
	}
	r := simplestRational(math.Abs(x))
	if x < 0 {
		r.Neg(r)
	}
	return r
}

// simplestRational returns, for a finite x > 0, the rational with the
// smallest denominator among those that round to x, choosing the nearest to
// x when several share that denominator.
func simplestRational(x float64) *big.Rat {
	exact := new(big.Rat).SetFloat64(x)
	// The rounding interval is (x - ulp⁻/2, x + ulp⁺/2); its open interior is
	// enough (an endpoint is a dyadic rational with a huge denominator).
	below := new(big.Rat).SetFloat64(math.Nextafter(x, 0))
	lo := mid(below, exact)
	var hi *big.Rat
	if next := math.Nextafter(x, math.Inf(1)); math.IsInf(next, 1) {
		hi = new(big.Rat).Add(exact, exact) // the largest float: any bound above it
	} else {
		hi = mid(exact, new(big.Rat).SetFloat64(next))
	}
	den := simplestIn(lo, hi).Denom()
	// The nearest numerator for that denominator is in the interval too.
	num := new(big.Rat).Mul(exact, new(big.Rat).SetInt(den))
	return new(big.Rat).SetFrac(roundRat(num), den)
}

func mid(a, b *big.Rat) *big.Rat {
	s := new(big.Rat).Add(a, b)
	return s.Mul(s, big.NewRat(1, 2))
}

// simplestIn returns the rational with the smallest denominator in the open
// interval (lo, hi), 0 <= lo < hi, by the continued-fraction (Stern–Brocot)
// descent: if an integer lies inside, the smallest one does; otherwise both
// ends share the integer part a, and the answer is a + 1/y for the simplest
// y in (1/(hi-a), 1/(lo-a)).
func simplestIn(lo, hi *big.Rat) *big.Rat {
	a := floorRat(lo)
	next := new(big.Rat).SetInt(new(big.Int).Add(a, big.NewInt(1)))
	if next.Cmp(hi) < 0 {
		return next
	}
	fa := new(big.Rat).SetInt(a)
	dlo := new(big.Rat).Sub(lo, fa) // in [0, 1)
	dhi := new(big.Rat).Sub(hi, fa) // in (0, 1]
	ylo := new(big.Rat).Inv(dhi)
	var y *big.Rat
	if dlo.Sign() == 0 {
		// (a, hi): y ranges over (1/(hi-a), ∞); the smallest integer in it.
		y = new(big.Rat).SetInt(new(big.Int).Add(floorRat(ylo), big.NewInt(1)))
	} else {
		y = simplestIn(ylo, new(big.Rat).Inv(dlo))
	}
	return fa.Add(fa, y.Inv(y))
}

func floorRat(r *big.Rat) *big.Int {
	return new(big.Int).Div(r.Num(), r.Denom()) // Euclidean division: floor for den > 0
}

func roundRat(r *big.Rat) *big.Int {
	h := new(big.Rat).Add(r, big.NewRat(1, 2))
	return floorRat(h)
}
