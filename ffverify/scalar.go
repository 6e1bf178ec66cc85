package ffverify

import (
	"fmt"
	"math"
	"math/big"
)

// scalarElem maps a float scalar (mul_scalar's factor) to the model.
//
// A float64 is taken to denote the simplest rational number that rounds to
// it: the one with the smallest denominator inside its rounding interval
// (and, among those, the nearest to it). So 0.5 is 1/2, 0.1 is 1/10, and
// float64(1)/3 is exactly 1/3, which makes mul_scalar(x, 1/n) equal to the
// mean accumulator's x·inv(n) for every n, and products of such scalars
// exact (0.1·0.3 = 3/100 = 0.03). A scalar with no simple rational near it
// (1/sqrt(128)) denotes the rational with the smallest denominator that
// rounds to it, whatever that is; it is still one fixed field element, so
// rewritings that move the scalar around (mul_scalar(a·b, s) =
// mul_scalar(a, s)·b) are exact.
func scalarElem(x float64) (elem, error) {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return elem{}, fmt.Errorf("scalar %v has no value in a finite field", x)
	}
	r := scalarRat(x)
	return ratElem(r.Num(), r.Denom()), nil
}

// scalarRat is the rational a finite float scalar denotes (scalarElem).
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

// ratElem is num/den in the model (den > 0).
func ratElem(num, den *big.Int) elem {
	res := func(v *big.Int, m uint32) uint32 {
		return uint32(new(big.Int).Mod(v, big.NewInt(int64(m))).Uint64())
	}
	n := elem{res(num, modP), res(num, modQ)}
	d := elem{res(den, modP), res(den, modQ)}
	return n.mul(d.inv())
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
