package interp

import (
	"math/rand/v2"
	"testing"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// advance(n) lands where n draws do, for small and large n, from any
// state.
func TestAdvance(t *testing.T) {
	for _, seed := range []uint64{0, 1, 1 << 63} {
		for _, n := range []uint64{0, 1, 2, 3, 7, 64, 1000, 4097} {
			walked, jumped := rand.NewPCG(seed, 12345), rand.NewPCG(advance(seed, 12345, n))
			for range n {
				walked.Uint64()
			}
			for i := range 3 {
				if w, j := walked.Uint64(), jumped.Uint64(); w != j {
					t.Fatalf("seed %d, %d steps: draw %d after advancing %#x, after walking %#x", seed, n, i, j, w)
				}
			}
		}
	}
	// Advances compose: 2^40 steps as two of 2^39.
	hi, lo := advance(7, 8, 1<<39)
	hi, lo = advance(hi, lo, 1<<39)
	if a, b := rand.NewPCG(advance(7, 8, 1<<40)).Uint64(), rand.NewPCG(hi, lo).Uint64(); a != b {
		t.Errorf("2^40 steps at once %#x, as two halves %#x", a, b)
	}
}

// Each input drawn alone is the one the whole stream gives, as the stream
// was written before Draws: one PCG, input after input, row-major.
func TestDrawsAreTheStream(t *testing.T) {
	g := kernel.New()
	for _, d := range [][]int{{3, 5}, {7}, {2, 3, 4}} {
		if _, err := g.AddInput(ugraph.MustShape(d...), ugraph.Float16); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(42, 0x6d697261676521)) // "mirage!", as the stream was written
	d := NewDraws(g, 42, -0.5, 2)
	var want [][]float64
	for _, id := range g.Inputs() {
		v := make([]float64, g.Tensors[id].Shape.NumElements())
		for i := range v {
			v[i] = -0.5 + 2.5*rng.Float64()
		}
		want = append(want, v)
	}
	for _, k := range []int{2, 0, 1, 2} { // out of order, and again: each jumps on its own
		got := d.Input(k).Data
		for i := range got {
			if got[i] != want[k][i] {
				t.Fatalf("input %d element %d: drawn alone %v, from the stream %v", k, i, got[i], want[k][i])
			}
		}
	}
}
