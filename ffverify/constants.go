package ffverify

import (
	"maps"
	"math"
	"math/big"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// constants is the model of the rational constants of one draw: the
// factors of mul_scalar, the counts that mean and rms divide by, and the
// number of iterations that sum a loop-invariant tile.
//
// A nonzero rational ±∏ pᵉ (p prime) is ±∏ φ(p)ᵉ, φ(p) a random nonzero
// element per prime and draw: a map that is multiplicative (φ(ab) =
// φ(a)·φ(b), so mean = Σ·(1/n), 0.1·0.3 = 0.03 and 1e-6·1e6 = 1 hold,
// and F iterations of n terms count as F·n) and keeps -1 and 0, but is
// not additive (φ(2) is not 1+1). The field's own image of a rational,
// which the model once used, is additive too, and that is what let
// constants be chosen to collide: 9199·13834·6927 is 1/(10359·8143·149)
// modulo P·Q, being 1 + 4805·P·Q times it. Under φ two rationals share an
// element only where their primes' images satisfy a relation, which has
// probability about 2⁻⁶⁰ per draw; and the key of φ is a hash of the
// program (ConstantsKey), so constants cannot be chosen for it without
// changing it.
//
// Why this is sound (doc.go, "The error bound"): read every constant as
// a formal product of variables y_p, one per prime. Each graph's output
// is then a polynomial in the inputs and the y_p with small integer
// coefficients (the sums' multiplicities); substituting y_p = p gives its
// value in the reals. Graphs that differ in the reals have different
// polynomials, which differ at a random point (inputs and φ) but with
// probability degree/P. Where the model reads a count as its field element
// (a sum over a broadcast dim, x + x) rather than through φ, it is still
// a polynomial with that coefficient: the model may then reject a correct
// rewriting (x + x for x·2); only a multiplicity that is itself a multiple
// of P·Q, built so, could make it accept a wrong one (doc.go).
type constants struct {
	key uint64
	// counts holds, by count n, n's element and its inverse: evaluators
	// ask for them element by element. Copied on write, so that reads
	// take no lock.
	counts atomic.Pointer[map[int]countElems]
}

type countElems struct{ n, inv elem }

func newConstants(key uint64) *constants {
	return &constants{key: hash(key, 0x636f6e7374)} // "const"
}

// atom is φ of one factor of a factorization: a prime, or a cofactor
// that has no prime factor below 2¹⁶ and was not split (see factorize).
func (c *constants) atom(f factor) elem {
	k := c.key
	if f.wide {
		k = hash(k, 1)
	}
	e := uniform(hash(k, f.atom))
	if e.p == 0 {
		e.p = 1
	}
	if e.q == 0 {
		e.q = 1
	}
	return e
}

// of is the element of the positive integer whose factorization is fs.
func (c *constants) of(fs []factor) elem {
	r := one
	for _, f := range fs {
		a := c.atom(f)
		for range f.exp {
			r = r.mul(a)
		}
	}
	return r
}

// count is the element of the count n ≥ 1 (and 0 for 0).
func (c *constants) count(n int) elem { return c.countElems(n).n }

// invCount is the inverse of count(n).
func (c *constants) invCount(n int) elem { return c.countElems(n).inv }

func (c *constants) countElems(n int) countElems {
	if m := c.counts.Load(); m != nil {
		if e, ok := (*m)[n]; ok {
			return e
		}
	}
	var e countElems
	if n > 0 {
		e.n = c.of(factorsOf(uint64(n)))
		e.inv = e.n.inv()
	}
	for {
		old := c.counts.Load()
		next := map[int]countElems{n: e}
		if old != nil {
			maps.Copy(next, *old)
		}
		if c.counts.CompareAndSwap(old, &next) {
			return e
		}
	}
}

// scalar is the element of the rational that the finite float x denotes
// (scalarRat).
func (c *constants) scalar(x float64) elem {
	f := scalarFactorsOf(x)
	if f.zero {
		return elem{}
	}
	v := c.of(f.num).mul(c.of(f.den).inv())
	if f.neg {
		return elem{}.sub(v)
	}
	return v
}

// ConstantsKey is a key of the model's constants for the program g
// (Options.Constants): a hash of every constant of g (its ops' scalars,
// its tensors' shapes, its kernels' grids and loop ranges), from which the
// counts and scalars of the model come. A program built so that its
// constants satisfy a relation of φ would have to contain φ's own key:
// hash-chasing, not arithmetic.
func ConstantsKey(g *kernel.Graph) uint64 {
	h := uint64(0x6b6579) // "key"
	for _, t := range g.Tensors {
		h = hash(h, t.Shape.StructHash())
	}
	for i := range g.Ops {
		op := &g.Ops[i]
		h = hash(hash(h, uint64(op.Kind)), uint64(len(op.In)))
		h = hash(hash(h, math.Float64bits(op.Attr.Scalars[0])), math.Float64bits(op.Attr.Scalars[1]))
		if op.Block != nil {
			h = hash(h, blockConstantsKey(op.Block))
		}
	}
	return h
}

func blockConstantsKey(g *block.Graph) uint64 {
	h := hash(hash(hash(hash(0, uint64(g.ForloopRange)), uint64(g.Grid[0])), uint64(g.Grid[1])), uint64(g.Grid[2]))
	for _, t := range g.Tensors {
		h = hash(h, t.Shape.StructHash())
	}
	for i := range g.Ops {
		op := &g.Ops[i]
		h = hash(h, uint64(op.Kind))
		h = hash(hash(h, math.Float64bits(op.Attr.Scalars[0])), math.Float64bits(op.Attr.Scalars[1]))
	}
	return h
}

// factor is a prime and its exponent, or an unsplit cofactor wider than
// 64 bits (wide), whose atom is then a hash of its digits.
type factor struct {
	atom uint64
	wide bool
	exp  int
}

// scalarFactors is a float's rational as a sign and the factorizations
// of its numerator and denominator.
type scalarFactors struct {
	zero, neg bool
	num, den  []factor
}

// Factorizations are kept by value, for the process: a search compiles
// the same few scalars and counts for every candidate and draw, and a
// float's rational (simplestRational) and its factors take microseconds.
// At most factorCacheSize of each are kept; past that, they are computed
// each time.
const factorCacheSize = 1 << 12

type factorCache struct {
	m sync.Map
	n atomic.Int64
}

func (c *factorCache) get(k any, compute func() any) any {
	if v, ok := c.m.Load(k); ok {
		return v
	}
	v := compute()
	if c.n.Load() < factorCacheSize {
		if _, loaded := c.m.LoadOrStore(k, v); !loaded {
			c.n.Add(1)
		}
	}
	return v
}

var integerFactors, floatFactors factorCache

// factorsOf is the factorization of n ≥ 1 into primes, in increasing
// order, each with its exponent.
func factorsOf(n uint64) []factor {
	return integerFactors.get(n, func() any { return factorize(n) }).([]factor)
}

// scalarFactorsOf is factorize of the rational the finite float x
// denotes.
func scalarFactorsOf(x float64) scalarFactors {
	return floatFactors.get(math.Float64bits(x), func() any {
		r := scalarRat(x)
		if r.Sign() == 0 {
			return scalarFactors{zero: true}
		}
		return scalarFactors{neg: r.Sign() < 0, num: factorizeBig(new(big.Int).Abs(r.Num())), den: factorizeBig(r.Denom())}
	}).(scalarFactors)
}

// smallPrimes are the primes below 2¹⁶, which trial division takes out.
var smallPrimes = func() []uint32 {
	const n = 1 << 16
	composite := make([]bool, n)
	var ps []uint32
	for i := 2; i < n; i++ {
		if composite[i] {
			continue
		}
		ps = append(ps, uint32(i))
		for j := i * i; j < n; j += i {
			composite[j] = true
		}
	}
	return ps
}()

// factorize splits n ≥ 1 into primes: trial division by the primes below
// 2¹⁶, then what is left (above 2³², a product of at most three primes
// above 2¹⁶) by Pollard's rho.
func factorize(n uint64) []factor {
	var fs []factor
	for _, p := range smallPrimes {
		q := uint64(p)
		if q*q > n {
			break
		}
		if n%q == 0 {
			f := factor{atom: q}
			for n%q == 0 {
				n /= q
				f.exp++
			}
			fs = append(fs, f)
		}
	}
	if n == 1 {
		return fs
	}
	var large []uint64
	var split func(m uint64)
	split = func(m uint64) {
		// No factor below 2¹⁶: a prime if below 2³². ProbablyPrime is exact
		// below 2⁶⁴ (Baillie–PSW).
		if m < 1<<32 || new(big.Int).SetUint64(m).ProbablyPrime(0) {
			large = append(large, m)
			return
		}
		d := rho(m)
		split(d)
		split(m / d)
	}
	split(n)
	slices.Sort(large)
	for _, p := range slices.Compact(slices.Clone(large)) {
		f := factor{atom: p}
		for _, q := range large {
			if q == p {
				f.exp++
			}
		}
		fs = append(fs, f)
	}
	return fs
}

// factorizeBig is factorize for any n ≥ 1: a part wider than 64 bits
// left after trial division stays one factor (an atom of its own, keyed
// by its digits). That is sound: two graphs whose constants are written
// with the same rationals factor them alike, and distinct rationals have
// distinct factorizations whatever the atoms (only a rewriting that needs
// such a cofactor split is rejected). A float's rational has such a part
// only for a magnitude past 2⁶⁴ or below 2⁻⁶⁴ that is not a power of two
// times a small integer.
func factorizeBig(n *big.Int) []factor {
	if n.IsUint64() {
		return factorsOf(n.Uint64())
	}
	var fs []factor
	n = new(big.Int).Set(n)
	q, r := new(big.Int), new(big.Int)
	for _, p := range smallPrimes {
		bp := big.NewInt(int64(p))
		f := factor{atom: uint64(p)}
		for {
			q.QuoRem(n, bp, r)
			if r.Sign() != 0 {
				break
			}
			n.Set(q)
			f.exp++
		}
		if f.exp > 0 {
			fs = append(fs, f)
		}
		if n.IsUint64() {
			break
		}
	}
	if n.IsUint64() {
		return mergeFactors(fs, factorsOf(n.Uint64()))
	}
	h := uint64(0)
	for _, w := range n.Bits() {
		h = hash(h, uint64(w))
	}
	return append(fs, factor{atom: h, wide: true, exp: 1})
}

// mergeFactors is the factorization of the product of a and b.
func mergeFactors(a, b []factor) []factor {
	out := append([]factor(nil), a...)
	for _, f := range b {
		found := false
		for i := range out {
			if out[i].atom == f.atom && out[i].wide == f.wide {
				out[i].exp += f.exp
				found = true
			}
		}
		if !found {
			out = append(out, f)
		}
	}
	return out
}

// mulMod64 is a·b mod m for a, b < m.
func mulMod64(a, b, m uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	_, r := bits.Div64(hi, lo, m)
	return r
}

// rho returns a nontrivial factor of the odd composite n (Pollard's rho
// with Floyd's cycle finding; n has no factor below 2¹⁶, so a factor
// turns up within about 2⁸ to 2¹⁶ steps).
func rho(n uint64) uint64 {
	for c := uint64(1); ; c++ {
		f := func(x uint64) uint64 {
			s, carry := bits.Add64(mulMod64(x, x, n), c, 0)
			if carry != 0 || s >= n {
				s -= n // wraps back below n
			}
			return s
		}
		x, y, d := uint64(2), uint64(2), uint64(1)
		for d == 1 {
			x, y = f(x), f(f(y))
			diff := x - y
			if x < y {
				diff = y - x
			}
			d = gcd(diff, n)
		}
		if d != n {
			return d
		}
	}
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
