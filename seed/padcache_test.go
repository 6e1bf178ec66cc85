package seed_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/interp"
	"github.com/mirage-go/mirage/seed"
	"github.com/mirage-go/mirage/ugraph"
)

// TestPadCache checks the attention over a padded cache against the
// program: with the keys added masked out (−inf, by the mask PadCache adds
// or by the program's own mask, padded), it computes the program's output
// exactly, whatever the cache holds past the keys in use; and the rule
// takes it.
func TestPadCache(t *testing.T) {
	for _, tc := range []struct {
		name    string
		body    string
		padded  int
		mask    bool  // PadCache adds a mask input
		masking []int // the program's inputs that are masks: padded with −inf
	}{
		{"attention over 47 keys", `
Q = g.new_input(dims=(2, 3, 16), dtype=mi.float16)
K = g.new_input(dims=(2, 16, 47), dtype=mi.float16)
V = g.new_input(dims=(2, 47, 8), dtype=mi.float16)
E = g.exp(g.mul_scalar(g.matmul(Q, K), 0.25))
g.mark_output(g.matmul(g.div(E, g.reduction(E, 2)), V))
`, 64, true, nil},
		{"one head (rank 2), divided after ·V, 100 keys", `
Q = g.new_input(dims=(3, 16), dtype=mi.float16)
K = g.new_input(dims=(16, 100), dtype=mi.float16)
V = g.new_input(dims=(100, 8), dtype=mi.float16)
E = g.exp(g.matmul(Q, K))
g.mark_output(g.div(g.matmul(E, V), g.reduction(E, 1)))
`, 128, true, nil},
		{"a mask of its own, padded", `
Q = g.new_input(dims=(2, 3, 16), dtype=mi.float16)
K = g.new_input(dims=(2, 16, 47), dtype=mi.float16)
V = g.new_input(dims=(2, 47, 8), dtype=mi.float16)
M = g.new_input(dims=(1, 3, 47), dtype=mi.float16)
E = g.exp(g.add(g.mul_scalar(g.matmul(Q, K), 0.25), M))
g.mark_output(g.matmul(g.div(E, g.reduction(E, 2)), V))
`, 64, false, []int{3}},
		{"a bias per row only: a mask added", `
Q = g.new_input(dims=(2, 3, 16), dtype=mi.float16)
K = g.new_input(dims=(2, 16, 47), dtype=mi.float16)
V = g.new_input(dims=(2, 47, 8), dtype=mi.float16)
B = g.new_input(dims=(1, 3, 1), dtype=mi.float16)
E = g.exp(g.add(g.matmul(Q, K), B))
g.mark_output(g.matmul(g.div(E, g.reduction(E, 2)), V))
`, 64, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			program := load(t, tc.body)
			pc, ok := seed.PadCache(program, seed.CacheAligns[0])
			if !ok {
				t.Fatal("PadCache declined")
			}
			if pc.Padded != tc.padded || pc.Mask != tc.mask {
				t.Fatalf("padded to %d keys, mask added %v; want %d, %v", pc.Padded, pc.Mask, tc.padded, tc.mask)
			}
			pins, gins := program.Inputs(), pc.Graph.Inputs()
			extra := 0
			if tc.mask {
				extra = 1
			}
			if len(gins) != len(pins)+extra {
				t.Fatalf("%d inputs, want %d", len(gins), len(pins)+extra)
			}
			ins := interp.RandomInputs(program, 3)
			padded := make([]*interp.Tensor, len(gins))
			for i, id := range gins {
				shape := pc.Graph.Tensors[id].Shape
				fill := 7.0 // what a cache holds past the keys in use
				if i >= len(pins) || slices.Contains(tc.masking, i) {
					fill = math.Inf(-1)
				}
				var from *interp.Tensor
				if i < len(pins) {
					from = ins[i]
				}
				padded[i] = padInto(t, from, shape, pc.Keys, fill)
			}
			want, err := interp.Run(program, ins)
			if err != nil {
				t.Fatal(err)
			}
			got, err := interp.Run(pc.Graph, padded)
			if err != nil {
				t.Fatal(err)
			}
			d, err := interp.CompareAll(want, got)
			if err != nil || d.MaxRelErr > 1e-12 {
				t.Fatalf("the padded attention differs from the program: %v %v", d, err)
			}
			rules := map[string]bool{}
			for _, s := range seed.Build(pc.Graph, seed.Options{}) {
				rules[s.Rule] = true
			}
			if !rules["attention"] {
				t.Errorf("the attention rule gave the padded program no seed (rules %v)", rules)
			}
		})
	}
	for _, tc := range []struct{ name, body string }{
		{"keys a multiple of 64 already", `
Q = g.new_input(dims=(2, 3, 16), dtype=mi.float16)
K = g.new_input(dims=(2, 16, 128), dtype=mi.float16)
V = g.new_input(dims=(2, 128, 8), dtype=mi.float16)
E = g.exp(g.matmul(Q, K))
g.mark_output(g.matmul(g.div(E, g.reduction(E, 2)), V))
`},
		{"not attention", `
X = g.new_input(dims=(3, 47), dtype=mi.float16)
W = g.new_input(dims=(47, 47), dtype=mi.float16)
g.mark_output(g.matmul(g.rms_norm(X, normalized_shape=(47,)), W))
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, ok := seed.PadCache(load(t, tc.body), seed.CacheAligns[0]); ok {
				t.Error("PadCache padded it")
			}
		})
	}
}

// padInto is x (nil: none) in a tensor of shape, whose dims may be longer
// than x's where x's extent is keys: fill at the positions x lacks.
func padInto(t *testing.T, x *interp.Tensor, shape ugraph.Shape, keys int, fill float64) *interp.Tensor {
	t.Helper()
	dims := shape.Dims()
	data := make([]float64, shape.NumElements())
	idx := make([]int, len(dims))
	for i := range data {
		rem := i
		for d := len(dims) - 1; d >= 0; d-- {
			idx[d] = rem % dims[d]
			rem /= dims[d]
		}
		data[i] = fill
		if x == nil {
			if idx[len(idx)-1] < keys {
				data[i] = 0
			}
			continue
		}
		xd := x.Shape.Dims()
		at, in := 0, true
		for d := range dims {
			if idx[d] >= xd[d] {
				in = false
				break
			}
			at = at*xd[d] + idx[d]
		}
		if in {
			data[i] = x.Data[at]
		}
	}
	y, err := interp.FromSlice(shape, data)
	if err != nil {
		t.Fatal(err)
	}
	return y
}

// TestPadCacheTakesOnlyMasksThatPass: padded as the driver's note says
// (−inf past the keys in use in the mask, PadCache's or the program's
// per-key term), the attention is the program's, or PadCache declines
// (found by review: a 0/1 mask multiplied after exp and a penalty
// subtracted were taken for masks, and gave NaN; clamped scores gave the
// added keys weight e⁻⁵). An added mask, after a scaling, is taken.
func TestPadCacheTakesOnlyMasksThatPass(t *testing.T) {
	for _, tc := range []struct{ name, body string }{
		{"a 0/1 mask multiplied after exp", `
Q = g.new_input(dims=(2, 3, 16), dtype=mi.float16)
K = g.new_input(dims=(2, 16, 47), dtype=mi.float16)
V = g.new_input(dims=(2, 47, 8), dtype=mi.float16)
M = g.new_input(dims=(1, 1, 47), dtype=mi.float16)
E = g.mul(g.exp(g.matmul(Q, K)), M)
g.mark_output(g.matmul(g.div(E, g.reduction(E, 2)), V))
`},
		{"a penalty subtracted from the scores", `
Q = g.new_input(dims=(2, 3, 16), dtype=mi.float16)
K = g.new_input(dims=(2, 16, 47), dtype=mi.float16)
V = g.new_input(dims=(2, 47, 8), dtype=mi.float16)
P = g.new_input(dims=(1, 1, 47), dtype=mi.float16)
E = g.exp(g.sub(g.matmul(Q, K), P))
g.mark_output(g.matmul(g.div(E, g.reduction(E, 2)), V))
`},
		// Scores clamped before exp: the mask PadCache adds goes in
		// before clamp, which takes −inf to −5: the keys added get weight
		// exp(−5).
		{"scores clamped", `
Q = g.new_input(dims=(2, 3, 16), dtype=mi.float16)
K = g.new_input(dims=(2, 16, 47), dtype=mi.float16)
V = g.new_input(dims=(2, 47, 8), dtype=mi.float16)
E = g.exp(g.clamp(g.matmul(Q, K), -5.0, 5.0))
g.mark_output(g.matmul(g.div(E, g.reduction(E, 2)), V))
`},
		{"a mask added after a scaling", `
Q = g.new_input(dims=(2, 3, 16), dtype=mi.float16)
K = g.new_input(dims=(2, 16, 47), dtype=mi.float16)
V = g.new_input(dims=(2, 47, 8), dtype=mi.float16)
M = g.new_input(dims=(1, 1, 47), dtype=mi.float16)
E = g.exp(g.add(g.mul_scalar(g.matmul(Q, K), 0.25), M))
g.mark_output(g.matmul(g.div(E, g.reduction(E, 2)), V))
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			program := load(t, tc.body)
			pc, ok := seed.PadCache(program, seed.CacheAligns[0])
			if !ok {
				if strings.HasPrefix(tc.name, "a mask added") {
					t.Fatal("PadCache declines an added mask")
				}
				return // declining is right too
			}
			pins, gins := program.Inputs(), pc.Graph.Inputs()
			ins := interp.RandomInputsIn(program, 3, 0, 1)
			padded := make([]*interp.Tensor, len(gins))
			for i, id := range gins {
				fill := 7.0 // what a cache holds past the keys in use
				// the mask: PadCache's own, or (Mask false) the program's
				// per-key term, −inf past the keys in use as the note says
				if i >= len(pins) || !pc.Mask && i == 3 {
					fill = math.Inf(-1)
				}
				var from *interp.Tensor
				if i < len(pins) {
					from = ins[i]
				}
				padded[i] = padInto(t, from, pc.Graph.Tensors[id].Shape, pc.Keys, fill)
			}
			want, err := interp.Run(program, ins)
			if err != nil {
				t.Fatal(err)
			}
			got, err := interp.Run(pc.Graph, padded)
			if err != nil {
				t.Fatal(err)
			}
			if d, err := interp.CompareAll(want, got); err != nil || d.MaxRelErr > 1e-12 {
				t.Fatalf("mask added %v; padded as advised, the attention differs from the program: %v %v", pc.Mask, d, err)
			}
		})
	}
}
