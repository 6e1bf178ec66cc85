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
	tr := p.trial(seed, t)
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
