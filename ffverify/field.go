package ffverify

import "math/bits"

// The two moduli of the model (see the package documentation).
//
// P is a safe prime, P = 2Q+1 with Q prime, so the squares of Z_P* form a
// subgroup of order Q, and G = 2² generates it. Both primes are 3 mod 4, so a
// square root is one exponentiation. Both are below 2³¹: a product of two
// residues is below 2⁶², so four products and a residue add up in a uint64
// without overflow (matmul reduces once per four multiply-adds).
const (
	modP = 2147481143
	modQ = 1073740571
	gen  = 4
)

// elem is one value of the model: its residue modulo P and modulo Q. Both
// residues are always reduced (p < P, q < Q).
type elem struct{ p, q uint32 }

// one is the multiplicative identity.
var one = elem{1, 1}

func (a elem) add(b elem) elem { return elem{addMod(a.p, b.p, modP), addMod(a.q, b.q, modQ)} }
func (a elem) sub(b elem) elem { return elem{subMod(a.p, b.p, modP), subMod(a.q, b.q, modQ)} }
func (a elem) mul(b elem) elem { return elem{mulMod(a.p, b.p, modP), mulMod(a.q, b.q, modQ)} }

// inv is the multiplicative inverse per residue, with inv(0) = 0: it is
// x^(m-2) by Fermat, which maps 0 to 0. So x/0 = 0 on both sides of a
// comparison, and (a+b)/c = a/c + b/c holds even where c is 0.
func (a elem) inv() elem { return elem{powMod(a.p, modP-2, modP), powMod(a.q, modQ-2, modQ)} }

// exp maps its argument a to G^(a mod Q) mod P and, modulo Q, to h(a), h
// the random function of the trial whose key is key. Since G has order Q,
// the P-residue is a homomorphism from (Z_Q, +); but no homomorphism from
// (Z_Q, +) to (Z_Q*, ·) but the trivial one exists (Q does not divide Q-1),
// and a constant Q-residue made every value computed from an exp blind
// there: an exp of such a value was one constant, softmax(softmax(x))
// was 1/n whatever x, and wrong candidates passed. So the Q-residue is a
// random function of the whole argument, which also tells apart scalars
// under an exp that agree modulo Q. exp(a+b) = exp(a)·exp(b) then no
// longer holds: a rewriting that rests on it is rejected, as the search
// (whose axioms lack it) never needs it.
func (a elem) exp(key uint64) elem { return elem{expG(a.q), uniform(hash(key, a.pack())).q} }

// The m argument of these helpers is always modP or modQ, a constant once
// they are inlined, so the compiler turns % into multiplications.

func addMod(a, b, m uint32) uint32 {
	s := a + b // < 2³² since both are < m < 2³¹
	if s >= m {
		s -= m
	}
	return s
}

func subMod(a, b, m uint32) uint32 {
	if a >= b {
		return a - b
	}
	return a + (m - b)
}

func mulMod(a, b, m uint32) uint32 {
	x := uint64(a) * uint64(b)
	if m == modP {
		return uint32(x % modP)
	}
	return uint32(x % modQ)
}

func powMod(b uint32, e uint64, m uint32) uint32 {
	r := uint32(1)
	for ; e > 0; e >>= 1 {
		if e&1 != 0 {
			r = mulMod(r, b, m)
		}
		b = mulMod(b, b, m)
	}
	return r
}

// expTable[i][j] = G^(j·2^(10i)) mod P: an exponent below Q < 2³⁰ splits into
// three 10-bit digits, so G^x is three lookups and two products.
var expTable = func() (t [3][1 << 10]uint32) {
	for i := range t {
		base := powMod(gen, 1<<(10*i), modP)
		t[i][0] = 1
		for j := 1; j < len(t[i]); j++ {
			t[i][j] = mulMod(t[i][j-1], base, modP)
		}
	}
	return t
}()

func expG(x uint32) uint32 {
	lo := mulMod(expTable[0][x&1023], expTable[1][x>>10&1023], modP)
	return mulMod(lo, expTable[2][x>>20&1023], modP)
}

// invertAll replaces every element of xs by its inverse (0 stays 0) with one
// exponentiation per residue for the whole slice (Montgomery's trick):
// prefix products forward, one inverse, then peel the prefixes backward.
func invertAll(xs []elem) {
	prefix := make([]elem, len(xs))
	acc := one
	for i, x := range xs {
		prefix[i] = acc
		acc = acc.mul(nonzero(x))
	}
	acc = acc.inv()
	for i := len(xs) - 1; i >= 0; i-- {
		x := xs[i]
		xs[i] = keepZero(acc.mul(prefix[i]), x)
		acc = acc.mul(nonzero(x))
	}
}

// nonzero replaces zero residues by 1, so that the prefix products of
// invertAll skip them.
func nonzero(x elem) elem {
	if x.p == 0 {
		x.p = 1
	}
	if x.q == 0 {
		x.q = 1
	}
	return x
}

// keepZero returns y with the residues that are zero in x set to zero.
func keepZero(y, x elem) elem {
	if x.p == 0 {
		y.p = 0
	}
	if x.q == 0 {
		y.q = 0
	}
	return y
}

// mix is SplitMix64's finalizer: a bijection of uint64 whose outputs on
// distinct inputs look independent and uniform.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// hash combines a key with a value into a new key.
func hash(key, v uint64) uint64 { return mix(key ^ mix(v+0x9e3779b97f4a7c15)) }

// uniform maps a 64-bit hash to an element whose residues are independent
// and uniform up to a statistical distance below 2⁻³²: each residue is the
// high word of a 64-bit value times the modulus.
func uniform(h uint64) elem {
	p, _ := bits.Mul64(mix(h), modP)
	q, _ := bits.Mul64(mix(h^0x5851f42d4c957f2d), modQ)
	return elem{uint32(p), uint32(q)}
}

// pack is the 64-bit value of an element, for hashing.
func (a elem) pack() uint64 { return uint64(a.p)<<32 | uint64(a.q) }
