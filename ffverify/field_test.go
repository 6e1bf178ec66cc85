package ffverify

import (
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"testing"

	"github.com/mirage-go/mirage/ugraph"
)

func TestModuli(t *testing.T) {
	for _, m := range []int64{modP, modQ} {
		if !big.NewInt(m).ProbablyPrime(32) {
			t.Errorf("%d is not prime", m)
		}
		if m%4 != 3 {
			t.Errorf("%d is not 3 mod 4", m)
		}
	}
	if (modP-1)%modQ != 0 {
		t.Errorf("Q does not divide P-1")
	}
	if modP >= 1<<31 || 4*uint64(modP-1)*uint64(modP-1)+modP < 4*uint64(modP-1)*uint64(modP-1) {
		t.Errorf("P too large for four lazy products")
	}
	if powMod(gen, modQ, modP) != 1 || gen == 1 {
		t.Errorf("G does not have order Q")
	}
}

// samples returns n pseudo-random elements, some of them with a zero
// residue.
func samples(n int) []elem {
	xs := []elem{{0, 0}, {0, 5}, {7, 0}, {1, 1}, {modP - 1, modQ - 1}}
	for i := range n {
		xs = append(xs, uniform(uint64(i)))
	}
	return xs
}

func TestFieldIdentities(t *testing.T) {
	xs := samples(200)
	for i, a := range xs {
		b := xs[(i*7+3)%len(xs)]
		c := xs[(i*13+5)%len(xs)]
		check := func(name string, got, want elem) {
			t.Helper()
			if got != want {
				t.Errorf("%s: a=%v b=%v c=%v: got %v, want %v", name, a, b, c, got, want)
			}
		}
		check("a-b+b", a.sub(b).add(b), a)
		check("distributivity", a.mul(b.add(c)), a.mul(b).add(a.mul(c)))
		check("(a+b)/c", a.add(b).mul(c.inv()), a.mul(c.inv()).add(b.mul(c.inv())))
		if got, want := a.add(b).exp(1).p, a.exp(1).mul(b.exp(1)).p; got != want {
			t.Errorf("exp(a+b) modulo P: a=%v b=%v: got %d, want %d", a, b, got, want)
		}
		if a.p != 0 && a.q != 0 {
			check("a·inv(a)", a.mul(a.inv()), one)
		}
	}
	if got := (elem{}).inv(); got != (elem{}) {
		t.Errorf("inv(0) = %v, want 0", got)
	}
}

func TestExpTable(t *testing.T) {
	for _, x := range []uint32{0, 1, 2, 1023, 1024, 1 << 20, modQ - 1, 123456789} {
		if got, want := expG(x), powMod(gen, uint64(x), modP); got != want {
			t.Errorf("G^%d = %d, want %d", x, got, want)
		}
	}
}

func TestInvertAll(t *testing.T) {
	xs := samples(100)
	got := append([]elem(nil), xs...)
	invertAll(got)
	for i, x := range xs {
		if want := x.inv(); got[i] != want {
			t.Errorf("invertAll(%v) = %v, want %v", x, got[i], want)
		}
	}
}

func TestScalarElem(t *testing.T) {
	rat := func(n, d int64) elem { return ratElem(big.NewInt(n), big.NewInt(d)) }
	for _, c := range []struct {
		x    float64
		want elem
	}{
		{0, elem{}},
		{1, one},
		{2, rat(2, 1)},
		{-3, rat(-3, 1)},
		{0.5, rat(1, 2)},
		{0.125, rat(1, 8)}, // 1/sqrt(64)
		{1.0 / 3, rat(1, 3)},
		{-1.0 / 3, rat(-1, 3)},
		{0.1, rat(1, 10)},
		{0.3, rat(3, 10)},
		{1.0 / 4096, rat(1, 4096)},
		{1 << 60, rat(1<<60, 1)},
	} {
		got, err := scalarElem(c.x)
		if err != nil {
			t.Fatalf("scalarElem(%v): %v", c.x, err)
		}
		if got != c.want {
			r := simplestRational(math.Abs(c.x))
			t.Errorf("scalarElem(%v) = %v (%v), want %v", c.x, got, r, c.want)
		}
	}
	for _, x := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := scalarElem(x); err == nil {
			t.Errorf("scalarElem(%v): no error", x)
		}
	}
}

// TestSimplestRationalRounds checks the defining property: the rational
// rounds back to the float.
func TestSimplestRationalRounds(t *testing.T) {
	for _, x := range []float64{1.0 / 3, 0.1, math.Pi, 1 / math.Sqrt(128), 1e-300, 1e300, math.MaxFloat64, 5e-324, 2.5, 1 << 53, 1<<53 + 2} {
		r := simplestRational(x)
		if f, _ := r.Float64(); f != x {
			t.Errorf("simplestRational(%v) = %v, which rounds to %v", x, r, f)
		}
	}
}

func TestMatmulMatchesDefinition(t *testing.T) {
	for _, dims := range [][3]int{{1, 1, 1}, {3, 5, 7}, {4, 8, 4}, {2, 9, 3}} {
		m, k, n := dims[0], dims[1], dims[2]
		a, b := newTensor(ugraph.MustShape(2, m, k)), newTensor(ugraph.MustShape(2, k, n))
		for i := range a.v {
			a.v[i] = uniform(uint64(i))
		}
		for i := range b.v {
			b.v[i] = uniform(uint64(i + 1000))
		}
		c := newTensor(ugraph.MustShape(2, m, n))
		matmul(c, a, b, nil)
		for bt := range 2 {
			for i := range m {
				for j := range n {
					var s elem
					for l := range k {
						s = s.add(a.v[bt*m*k+i*k+l].mul(b.v[bt*k*n+l*n+j]))
					}
					if got := c.v[bt*m*n+i*n+j]; got != s {
						t.Fatalf("%v: c[%d,%d,%d] = %v, want %v", dims, bt, i, j, got, s)
					}
				}
			}
		}
	}
}

// The inner loop of matmul, c[j] += Σ_l a_l·b_l[j] over four rows of b,
// with 31-bit primes (four products and one reduction per element, as
// matmul does) against 63-bit primes, where every product needs a 128-bit
// multiply and its own reduction. Per op: 4·axpyLen multiply-adds of one
// residue.
const axpyLen = 1024

func axpyInputs(m uint64) (a [4]uint64, b [4][]uint64, c []uint64) {
	for l := range 4 {
		a[l] = mix(uint64(l)) % m
		for j := range axpyLen {
			b[l] = append(b[l], mix(uint64(l*axpyLen+j+7))%m)
		}
	}
	return a, b, make([]uint64, axpyLen)
}

func BenchmarkAxpy31(bb *testing.B) {
	a, b, c := axpyInputs(modP)
	for bb.Loop() {
		b0, b1, b2, b3 := b[0][:len(c)], b[1][:len(c)], b[2][:len(c)], b[3][:len(c)]
		for j := range c {
			c[j] = (c[j] + a[0]*b0[j] + a[1]*b1[j] + a[2]*b2[j] + a[3]*b3[j]) % modP
		}
	}
}

const p63 = 9223372036854775783 // the largest prime below 2^63

func BenchmarkAxpy63Rem(bb *testing.B) {
	a, b, c := axpyInputs(p63)
	mulRem := func(x, y uint64) uint64 {
		hi, lo := bits.Mul64(x, y)
		return bits.Rem64(hi, lo, p63)
	}
	for bb.Loop() {
		b0, b1, b2, b3 := b[0][:len(c)], b[1][:len(c)], b[2][:len(c)], b[3][:len(c)]
		for j := range c {
			s := c[j] + mulRem(a[0], b0[j]) + mulRem(a[1], b1[j]) // < 3·2^63 would overflow: reduce in pairs
			s %= p63
			s += mulRem(a[2], b2[j]) + mulRem(a[3], b3[j])
			c[j] = s % p63
		}
	}
}

// BenchmarkAxpy63Montgomery is the fastest 63-bit alternative: Montgomery
// multiplication (operands in Montgomery form), three 64-bit multiplies
// per product.
func BenchmarkAxpy63Montgomery(bb *testing.B) {
	a, b, c := axpyInputs(p63)
	inv := uint64(p63) // p⁻¹ mod 2^64 by Newton's iteration
	for range 6 {
		inv *= 2 - p63*inv
	}
	ninv := -inv
	mont := func(x, y uint64) uint64 {
		hi, lo := bits.Mul64(x, y)
		mh, ml := bits.Mul64(lo*ninv, p63)
		_, carry := bits.Add64(lo, ml, 0)
		r := hi + mh + carry
		if r >= p63 {
			r -= p63
		}
		return r
	}
	add := func(x, y uint64) uint64 {
		if s := x + y; s < p63 {
			return s
		} else {
			return s - p63
		}
	}
	for bb.Loop() {
		b0, b1, b2, b3 := b[0][:len(c)], b[1][:len(c)], b[2][:len(c)], b[3][:len(c)]
		for j := range c {
			s := add(mont(a[0], b0[j]), mont(a[1], b1[j]))
			s = add(s, add(mont(a[2], b2[j]), mont(a[3], b3[j])))
			c[j] = add(c[j], s)
		}
	}
}

// FuzzSimplestRational checks that the rational a scalar denotes rounds
// back to the scalar, and that -x denotes the opposite field element.
func FuzzSimplestRational(f *testing.F) {
	for _, x := range []float64{0.5, 1.0 / 3, 0.1, 1e-300, 1e300, 7, 1 / math.Sqrt(128)} {
		f.Add(x)
	}
	f.Fuzz(func(t *testing.T, x float64) {
		if math.IsNaN(x) || math.IsInf(x, 0) || x == 0 {
			return
		}
		r := simplestRational(math.Abs(x))
		if got, _ := r.Float64(); got != math.Abs(x) {
			t.Fatalf("simplestRational(%v) = %v, which rounds to %v", x, r, got)
		}
		e, err := scalarElem(x)
		if err != nil {
			t.Fatal(err)
		}
		neg, _ := scalarElem(-x)
		if e.add(neg) != (elem{}) {
			t.Fatalf("scalarElem(%v) + scalarElem(%v) != 0", x, -x)
		}
	})
}

// TestEveryOpHasAModel guards the op table: an element-wise kind added to
// ugraph without a model here fails this test rather than panicking in the
// verifier.
func TestEveryOpHasAModel(t *testing.T) {
	for _, k := range ugraph.OpKinds(ugraph.LevelKernel | ugraph.LevelBlock) {
		f := compileFn(k, ugraph.Attr{Scalars: [2]float64{-1, 1}}, 1, newConstants(1))
		switch k.Info().Class {
		case ugraph.ClassUnary:
			if f.unary == nil {
				t.Errorf("%v has no unary model", k)
			}
		case ugraph.ClassBinary:
			if f.bin == nil {
				t.Errorf("%v has no binary model", k)
			}
		case ugraph.ClassIO, ugraph.ClassMatmul, ugraph.ClassReduction, ugraph.ClassNorm,
			ugraph.ClassConcat, ugraph.ClassAccum, ugraph.ClassCustomized:
		default:
			t.Errorf("%v: class %v has no evaluation scheme", k, k.Info().Class)
		}
	}
}

// TestEveryElementwiseOpIsModelled ranges over the op table: every
// element-wise op compiles to a function of its arity, which tells it apart
// from every other op on a few inputs (an op silently modelled as another
// would let a candidate that swaps them pass).
func TestEveryElementwiseOpIsModelled(t *testing.T) {
	xs := samples(8)
	seen := map[string]ugraph.OpKind{}
	for _, k := range ugraph.OpKinds(ugraph.LevelKernel | ugraph.LevelBlock) {
		if !k.IsElementwise() {
			continue
		}
		f := compileFn(k, ugraph.Attr{Scalars: [2]float64{0.5, 2}}, 12345, newConstants(12345))
		var vals []elem
		switch k.Info().Class {
		case ugraph.ClassUnary:
			if f.unary == nil {
				t.Errorf("%v has no unary model", k)
				continue
			}
			for _, x := range xs {
				vals = append(vals, f.unary(x))
			}
		case ugraph.ClassBinary:
			if f.bin == nil {
				t.Errorf("%v has no binary model", k)
				continue
			}
			for i, x := range xs {
				vals = append(vals, f.bin(x, xs[(i+3)%len(xs)]))
			}
		}
		key := fmt.Sprint(vals)
		if other, dup := seen[key]; dup {
			t.Errorf("%v and %v are modelled alike", k, other)
		}
		seen[key] = k
	}
}
