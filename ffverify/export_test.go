package ffverify

import (
	"fmt"
	"math"

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
