package ffverify

import (
	"math"
	"math/big"
	"testing"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

func TestFactorize(t *testing.T) {
	type pe = [2]uint64 // prime, exponent
	for _, c := range []struct {
		n    uint64
		want []pe
	}{
		{1, nil},
		{2, []pe{{2, 1}}},
		{4096, []pe{{2, 12}}},
		{11008, []pe{{2, 8}, {43, 1}}},
		{28672, []pe{{2, 12}, {7, 1}}},
		{65537 * 64, []pe{{2, 6}, {65537, 1}}},
		{2147483647, []pe{{2147483647, 1}}}, // 2³¹-1, past the primes trial division takes out
		{65537 * 65539, []pe{{65537, 1}, {65539, 1}}},
		{4294967291 * 4294967279, []pe{{4294967279, 1}, {4294967291, 1}}}, // two 32-bit primes: rho
		{65537 * 65537 * 65539, []pe{{65537, 2}, {65539, 1}}},
		{1<<61 - 1, []pe{{1<<61 - 1, 1}}}, // a Mersenne prime
		{3 * (1<<61 - 1), []pe{{3, 1}, {1<<61 - 1, 1}}},
		{math.MaxUint64, []pe{{3, 1}, {5, 1}, {17, 1}, {257, 1}, {641, 1}, {65537, 1}, {6700417, 1}}},
	} {
		var got []pe
		for _, f := range factorize(c.n) {
			got = append(got, pe{f.atom, uint64(f.exp)})
		}
		if len(got) != len(c.want) {
			t.Errorf("factorize(%d) = %v, want %v", c.n, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("factorize(%d) = %v, want %v", c.n, got, c.want)
				break
			}
		}
	}
}

// FuzzFactorize checks the definition: increasing primes whose powers
// multiply to n.
func FuzzFactorize(f *testing.F) {
	for _, n := range []uint64{1, 6, 4096, 4294967291 * 4294967279, 65537 * 65537 * 65539, math.MaxUint64} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, n uint64) {
		if n == 0 {
			return
		}
		prod := big.NewInt(1)
		last := uint64(1)
		for _, f := range factorize(n) {
			if f.wide || f.exp < 1 || f.atom <= last || !new(big.Int).SetUint64(f.atom).ProbablyPrime(20) {
				t.Fatalf("factorize(%d): %+v is not a prime power above %d", n, f, last)
			}
			last = f.atom
			p := new(big.Int).SetUint64(f.atom)
			prod.Mul(prod, p.Exp(p, big.NewInt(int64(f.exp)), nil))
		}
		if prod.Cmp(new(big.Int).SetUint64(n)) != 0 {
			t.Fatalf("factorize(%d) multiplies to %v", n, prod)
		}
	})
}

// The model of constants is multiplicative, keeps signs and 0, and is not
// the field's own image of the rationals (which is additive too).
func TestConstantsMultiply(t *testing.T) {
	c := newConstants(7)
	for _, ab := range [][2]int{{2, 3}, {4, 1024}, {64, 65537}, {43, 256}, {65537, 65539}} {
		if c.count(ab[0]*ab[1]) != c.count(ab[0]).mul(c.count(ab[1])) {
			t.Errorf("count(%d·%d) is not count(%d)·count(%d)", ab[0], ab[1], ab[0], ab[1])
		}
	}
	for _, tc := range []struct {
		name string
		got  elem
		want elem
	}{
		{"0.1·0.3", c.scalar(0.1).mul(c.scalar(0.3)), c.scalar(0.03)},
		{"1e-6·1e6", c.scalar(1e-6).mul(c.scalar(1e6)), one},
		{"1/4096", c.scalar(1.0 / 4096), c.invCount(4096)},
		{"1/28672", c.scalar(1.0 / 28672), c.count(28672).inv()},
		{"-0.5", c.scalar(-0.5), elem{}.sub(c.scalar(0.5))},
		{"-1", c.scalar(-1), elem{}.sub(one)},
		{"1", c.scalar(1), one},
		{"0", c.scalar(0), elem{}},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	if c.scalar(2) == (elem{}).add(one).add(one) {
		t.Error("scalar(2) = 1+1: the model is additive")
	}
	if c.scalar(2) == newConstants(8).scalar(2) {
		t.Error("scalar(2) is the same under two keys")
	}
}

// A part wider than 64 bits, once the primes below 2¹⁶ are out, is one
// atom; a number that fits in 64 bits by then is factored whole.
func TestFactorizeBig(t *testing.T) {
	m127 := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 127), big.NewInt(1)) // prime
	n := new(big.Int).Mul(m127, big.NewInt(243))
	fs := factorizeBig(n)
	if len(fs) != 2 || fs[0] != (factor{atom: 3, exp: 5}) || !fs[1].wide || fs[1].exp != 1 {
		t.Errorf("factorizeBig(3⁵·(2¹²⁷-1)) = %+v", fs)
	}
	if again := factorizeBig(n); again[1] != fs[1] {
		t.Errorf("the wide atom is %+v, then %+v", fs[1], again[1])
	}
	n = new(big.Int).Lsh(big.NewInt(7*65537), 100)
	if fs := factorizeBig(n); len(fs) != 3 || fs[0] != (factor{atom: 2, exp: 100}) || fs[1] != (factor{atom: 7, exp: 1}) || fs[2] != (factor{atom: 65537, exp: 1}) {
		t.Errorf("factorizeBig(2¹⁰⁰·7·65537) = %+v", fs)
	}
}

// ConstantsKey changes with every constant of the program: a scalar, a
// shape, a loop range.
func TestConstantsKey(t *testing.T) {
	build := func(scalar float64, cols int) *kernel.Graph {
		g := kernel.New()
		x, _ := g.AddInput(ugraph.MustShape(8, cols), ugraph.Float16)
		y, _ := g.Add(ugraph.OpMulScalar, ugraph.Attr{Scalars: [2]float64{scalar}}, x)
		g.MarkOutput(y)
		return g
	}
	base := ConstantsKey(build(0.5, 64))
	if ConstantsKey(build(0.5, 64)) != base {
		t.Error("the same program has two keys")
	}
	if ConstantsKey(build(0.25, 64)) == base || ConstantsKey(build(0.5, 128)) == base {
		t.Error("a program with another constant has the same key")
	}
}
