package ffverify

import (
	"fmt"
	"math"
	"math/big"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// LazyMismatch evaluates g on draw t both densely and element by element
// (the fast path's evaluator) and reports the first output position where
// they differ, for the external tests. It compares at most limit positions
// per output, spread evenly.
func LazyMismatch(g *kernel.Graph, seed uint64, t, limit int) error {
	p, err := newPlan(g)
	if err != nil {
		return err
	}
	tr := p.trial(Options{Seed: seed}, t)
	l := newLazy(p, tr, math.MaxInt, int(p.denseSize()))
	for k, want := range p.run(tr) {
		step := max(1, len(want.v)/limit)
		for idx := 0; idx < len(want.v); idx += step {
			if got, w := l.value(int(g.Outputs[k]), idx), want.v[idx]; got != w {
				return fmt.Errorf("output %d at %d: lazy %v, dense %v", k, idx, got, w)
			}
		}
	}
	return nil
}

// SharesInputs reports whether v shares its draws' inputs between
// candidates.
func SharesInputs(v *Verifier) bool { return v.dense != nil }

// KernelStoppedAt runs the first graph-defined kernel of candidate c on
// draw 0 through v's products memo, and stops it (as a closed StopWhen
// channel does) at its n-th check. It reports whether the kernel ran
// through the memo and was stopped.
func KernelStoppedAt(v *Verifier, c *kernel.Graph, n int) (stopped bool, err error) {
	p, err := v.plan(c)
	if err != nil {
		return false, err
	}
	tr := v.trial(p, 0)
	if tr.products == nil {
		return false, fmt.Errorf("no products memo for the candidate")
	}
	for i := range c.Ops {
		op := &c.Ops[i]
		if op.Block == nil {
			continue
		}
		var args []source
		for _, id := range op.In {
			args = append(args, source{tr: tr, input: p.inputPos[id], shape: c.Tensors[id].Shape})
		}
		calls := 0
		check := func() {
			if calls++; calls == n {
				panic(errStopped)
			}
		}
		defer func() {
			if e := recover(); e == errStopped {
				stopped = true
			} else if e != nil {
				panic(e)
			}
		}()
		tr.products.kernel(p.blocks[i], tr.used)(tr.block[i], args, tr.products, check)
		return false, nil
	}
	return false, fmt.Errorf("the candidate has no graph-defined kernel")
}

// WholeSums is the number of accumulators that v's candidates' kernels
// summed from whole products (wholeSums), over all draws.
func WholeSums(v *Verifier) int64 {
	var n int64
	for _, ps := range v.products {
		n += ps.summed.Load()
	}
	return n
}

// CollidingFloat returns a float scalar whose element in the model is the
// product of the factors' elements but whose value is not their product:
// an integer N, which denotes itself, with N ≡ r (mod P·Q) for the
// factors' product r. It solves N ≡ 0 (mod 2^s) beside that, for s = 0,
// 1, ..., until N fits in a float's 53 bits of mantissa (about one s in
// 500 does).
func CollidingFloat(factors ...float64) float64 {
	e, value := one, big.NewRat(1, 1)
	for _, x := range factors {
		s, err := scalarElem(x)
		if err != nil {
			panic(err)
		}
		e = e.mul(s)
		value.Mul(value, scalarRat(x))
	}
	p, q := big.NewInt(modP), big.NewInt(modQ)
	pq := new(big.Int).Mul(p, q)
	// r mod PQ from its residues: r = e.p + P·((e.q - e.p)·P⁻¹ mod Q).
	k := new(big.Int).Sub(big.NewInt(int64(e.q)), big.NewInt(int64(e.p)))
	k.Mul(k, new(big.Int).ModInverse(p, q))
	k.Mod(k, q)
	r := k.Mul(k, p).Add(k, big.NewInt(int64(e.p)))
	for s := uint(0); s < 1000; s++ {
		// N = r + PQ·j ≡ 0 (mod 2^s): j = -r·PQ⁻¹ (mod 2^s).
		two := new(big.Int).Lsh(big.NewInt(1), s)
		j := new(big.Int).ModInverse(pq, two)
		if s == 0 {
			j = new(big.Int)
		}
		j.Mul(j, new(big.Int).Neg(r)).Mod(j, two)
		n := j.Mul(j, pq).Add(j, r)
		if n.BitLen() <= 53+int(s) && new(big.Rat).SetInt(n).Cmp(value) != 0 {
			f, _ := new(big.Float).SetInt(n).Float64()
			return f
		}
	}
	panic("no colliding float found")
}

// scalarElem is the field's own image of the rational a finite float
// denotes (its residues modulo P and Q): what the model once took every
// scalar for, and then the small ones, before constants.
func scalarElem(x float64) (elem, error) {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return elem{}, fmt.Errorf("scalar %v has no value in a finite field", x)
	}
	r := scalarRat(x)
	return ratElem(r.Num(), r.Denom()), nil
}

// ratElem is num/den's residues (den > 0).
func ratElem(num, den *big.Int) elem {
	res := func(v *big.Int, m uint32) uint32 {
		return uint32(new(big.Int).Mod(v, big.NewInt(int64(m))).Uint64())
	}
	n := elem{res(num, modP), res(num, modQ)}
	d := elem{res(den, modP), res(den, modQ)}
	return n.mul(d.inv())
}

// ScaledProducts is the number of whole products v's draws made by
// scaling the rows of one they kept (scaled.go).
func ScaledProducts(v *Verifier) int64 {
	var n int64
	for _, ps := range v.products {
		n += ps.scaledHits.Load()
	}
	return n
}

// SharedAccumulators is, per graph-defined kernel of g in order, the
// accumulators whose sums all but the first block of a class copy
// (sharedAccums), and the kinds of the loop ops a block that copies all
// of them still runs.
func SharedAccumulators(g *kernel.Graph) (shared [][]ugraph.Accum, runs [][]ugraph.OpKind, err error) {
	p, err := newPlan(g)
	if err != nil {
		return nil, nil, err
	}
	for _, bp := range p.blocks {
		if bp == nil {
			continue
		}
		s := bp.sharedAccums(wholeSums{}, make([]bool, len(bp.g.Ops)))
		var accs []ugraph.Accum
		for _, i := range s.ops {
			accs = append(accs, bp.g.Ops[i].Attr.Accum)
		}
		var kinds []ugraph.OpKind
		need := bp.loopNeeds(s.ops, s.reads)
		for _, i := range bp.loop {
			if need[i] {
				kinds = append(kinds, bp.g.Ops[i].Kind)
			}
		}
		shared, runs = append(shared, accs), append(runs, kinds)
	}
	return shared, runs, nil
}

// RowPrefix is rowPrefix.
var RowPrefix = rowPrefix
