package interp

import (
	"math/bits"
	"math/rand/v2"

	"github.com/mirage-go/mirage/ugraph/kernel"
)

// RandomInputs returns one tensor per input of g, in order, with elements
// drawn uniformly from [-1, 1). The same graph and seed always give the
// same tensors (math/rand/v2's PCG is a fixed algorithm).
//
// Why [-1, 1): both signs exercise the ops that treat them differently
// (relu, clamp, silu, gelu), magnitudes at most 1 keep products, exp of dot
// products and sums of thousands of terms far from overflow, and zero mean
// keeps long sums small. The price is that sqrt, log, pow and rms-based ops
// applied to values that can be negative yield NaN; Compare counts NaN in
// the same position on both sides as agreement. Use RandomInputsIn with a
// positive range for programs that need positive inputs.
func RandomInputs(g *kernel.Graph, seed int64) []*Tensor {
	return RandomInputsIn(g, seed, -1, 1)
}

// RandomInputsIn is RandomInputs with elements drawn uniformly from [lo, hi).
// Tensors are filled in input order, each row-major, from one stream.
func RandomInputsIn(g *kernel.Graph, seed int64, lo, hi float64) []*Tensor {
	d := NewDraws(g, seed, lo, hi)
	ins := make([]*Tensor, len(d.ids))
	for k := range ins {
		ins[k] = d.Input(k)
	}
	return ins
}

// Draws are the inputs RandomInputsIn(g, seed, lo, hi) returns, each drawn
// when asked for: input k is the same tensor either way (the stream is
// advanced to where input k begins), so that an evaluation (RunDrawn) need
// hold only the inputs it is reading, not a LLaMA-70B layer's 7.4 GiB of
// weights at once.
type Draws struct {
	g      *kernel.Graph
	ids    []kernel.TensorID
	seed   int64
	lo, hi float64
	start  []uint64 // per input: the stream's position at its first element
}

// NewDraws returns the draws of RandomInputsIn(g, seed, lo, hi).
func NewDraws(g *kernel.Graph, seed int64, lo, hi float64) *Draws {
	d := &Draws{g: g, ids: g.Inputs(), seed: seed, lo: lo, hi: hi}
	var at uint64
	for _, id := range d.ids {
		d.start = append(d.start, at)
		at += uint64(g.Tensors[id].Shape.NumElements())
	}
	return d
}

// streamKey is the PCG's second seed: "mirage!".
const streamKey = 0x6d697261676521

// Input returns a new tensor holding input k.
func (d *Draws) Input(k int) *Tensor {
	rng := rand.New(rand.NewPCG(advance(uint64(d.seed), streamKey, d.start[k])))
	t := NewTensor(d.g.Tensors[d.ids[k]].Shape)
	for i := range t.Data {
		t.Data[i] = d.lo + (d.hi-d.lo)*rng.Float64() // one step of the stream each
	}
	return t
}

// advance is the state of a PCG seeded (hi, lo) after n steps, as n calls
// of its Uint64 leave it, in O(log n): the state follows s ← a·s + c
// modulo 2^128, and n steps are the one affine map aⁿ·s + c·(aⁿ⁻¹ + … + 1),
// built by squaring (Brown, "Random Number Generation with Arbitrary
// Strides", 1994). The constants are math/rand/v2's (pcg.go), whose
// NewPCG(hi, lo) starts at that state.
func advance(hi, lo, n uint64) (uint64, uint64) {
	mul := u128{2549297995355413924, 4865540595714422341}
	inc := u128{6364136223846793005, 1442695040888963407}
	accMul, accInc := u128{0, 1}, u128{}
	for ; n > 0; n >>= 1 {
		if n&1 == 1 {
			accMul = accMul.mul(mul)
			accInc = accInc.mul(mul).add(inc)
		}
		inc = mul.add(u128{0, 1}).mul(inc)
		mul = mul.mul(mul)
	}
	s := accMul.mul(u128{hi, lo}).add(accInc)
	return s.hi, s.lo
}

// u128 is an unsigned integer modulo 2^128.
type u128 struct{ hi, lo uint64 }

func (x u128) add(y u128) u128 {
	lo, c := bits.Add64(x.lo, y.lo, 0)
	hi, _ := bits.Add64(x.hi, y.hi, c)
	return u128{hi, lo}
}

func (x u128) mul(y u128) u128 {
	hi, lo := bits.Mul64(x.lo, y.lo)
	return u128{hi + x.hi*y.lo + x.lo*y.hi, lo}
}
