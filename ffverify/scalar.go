package ffverify

import (
	"math"
	"math/big"
)

// exactScalarBound bounds the numerator and the denominator of a scalar
// the model takes at its value (scalarModel); exactInverseBound the n of
// a scalar ±1/n it takes at its value.
const (
	exactScalarBound  = 1 << 14
	exactInverseBound = 1 << 20
)

// scalarModel is mul_scalar's factor x on the trial whose random-function
// key is key.
//
// A float64 is taken to denote the simplest rational number that rounds to
// it (simplestRational): 0.5 is 1/2, 0.1 is 1/10, float64(1)/3 is 1/3. Where
// its numerator and denominator are at most 2¹⁴ (0.5, 0.1, 1/3, 3/16), or
// it is ±1/n with n up to 2²⁰ (1/4096, 1/28672), the factor is that
// rational's element: mul_scalar(x, 1/n) is then the mean accumulator's
// x·inv(n) for every n up to 2²⁰ (LLaMA-70B's MLP is 28672 wide), and
// products of such scalars are exact (0.1·0.3 = 3/100 = 0.03). Two such
// rationals differ by (ad-bc)/(bd) with 0 < |ad-bc| ≤ 2³⁵, which is not a
// multiple of P·Q, so no two of them, nor one and 0, share an element.
//
// Combinations of several are another matter: exact scalars and counts
// multiply in the field, and six factors of at most 2¹⁴ can be chosen
// whose product is 1 + k·P·Q (9199·13834·6927·10359·8143·149, found by
// review): X·9199·13834·6927 is then X/(10359·8143·149) in the model, and
// such a program's wrong candidates pass; under an exp, four chosen to
// agree modulo Q alone do as much. No factors a user writes are chosen so
// (a product of random ones lands on 1 modulo P·Q once in 2⁶²); moduli
// drawn from a hash of the two graphs would close it, at the price of the
// constant moduli the vector code is built on.
//
// Any other factor (1/sqrt(128), 1e-6, a float built for P and Q) is a
// variable: a random element per draw, keyed by its magnitude (its sign
// kept, so -s is the negation of s), the same in the program and the
// candidate. A rewriting that moves it around (mul_scalar(a·b, s) =
// mul_scalar(a, s)·b, or s applied to Q rather than to the scores) holds
// for every value of s, so it holds for the variable; one that needs its
// value (s·s = 1/128) is rejected. Mapping such a scalar to its
// rational's element, as the model once did, let a float be built whose
// rational is another's modulo P·Q, or 0 modulo Q (1073.740571 is
// Q/10⁶), or such that sums of terms vanish, and wrong candidates passed
// at exit 0 (TestScalarsSharingAnElement and the tests after it).
func scalarModel(x float64, key uint64) elem {
	r := scalarRat(x)
	small := r.Num().CmpAbs(big.NewInt(exactScalarBound)) <= 0 && r.Denom().Cmp(big.NewInt(exactScalarBound)) <= 0
	inverse := r.Num().CmpAbs(big.NewInt(1)) == 0 && r.Denom().Cmp(big.NewInt(exactInverseBound)) <= 0
	if small || inverse {
		return ratElem(r.Num(), r.Denom())
	}
	v := uniform(hash(hash(key, 0x7363616c6172), math.Float64bits(math.Abs(x)))) // "scalar"
	if x < 0 {
		return elem{}.sub(v)
	}
	return v
}

// scalarRat is the rational a finite float scalar denotes.
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
