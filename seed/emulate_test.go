package seed_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/mirage-go/mirage/codegen/cuda"
	"github.com/mirage-go/mirage/interp"
	"github.com/mirage-go/mirage/launch"
	"github.com/mirage-go/mirage/seed"
	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/templates"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
	"github.com/mirage-go/mirage/ugraph/thread"
)

// TestSeedsRunInTheEmulator emits one seed of each rule's forms (a row
// kernel with a broadcast weight; a column kernel (sums over dim 1); a matmul kernel with a weighted norm in
// its prologue and a gated epilogue; one with a residual epilogue; batched
// ones, heads on grid z, a norm broadcast over them or a per-head bias; split-K
// kernels and the kernel combining their splits), runs
// it in the CPU emulator and compares its outputs with the float64
// interpreter's: the code generator takes seeds as it takes any μGraph.
func TestSeedsRunInTheEmulator(t *testing.T) {
	if _, err := templates.EmulatorCompiler(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"rms_norm with a weight", "a norm of each key, written out", "a LayerNorm written out with sub", "gated MLP with a weighted norm", "residual epilogue", "attention, normalized before ·V", "one head's attention (rank 2), scaled", "q, k and v of a normed activation, batched over heads", "batched matmuls with a per-head bias", "grouped-query attention of rank 4, K and V repeated", "multi-query attention, Q scaled per head", "q of a normed row over groups and heads, with a bias per head", "attention over 1000 keys", "grouped-query attention over 777 keys", "multi-query attention with one mask for every head", "attention with ALiBi", "grouped-query attention of rank 4 with a causal mask"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			body := caseBody(t, name)
			seeds := seed.Build(load(t, body), seed.Options{})
			if len(seeds) == 0 {
				t.Fatal("no seeds")
			}
			g := seeds[len(seeds)/2].Graph
			// K and V repeated over the heads by a product: both
			// products folded into their matmuls (thread.Scaled).
			if repeated[name] {
				if n := folded(t, g); n != 2 {
					t.Errorf("%d products folded into their matmuls, want K's and V's", n)
				}
			}
			emulate(t, g, 1)
		})
	}
	// Split-K seeds: partial products stacked by split, the combining
	// kernel's for-loop over the splits, the norm's rms there, from a
	// prologue it recomputes (odd tiles: 3 or 6 columns of the reduced
	// dim per block); two matmuls with a gated epilogue; a product that
	// is an output beside the epilogue's, from 5 rows scaled by a column;
	// k and v of a grouped layer (rank 4), the groups on grid z in both
	// kernels; its q, the heads of a group on grid x.
	for _, name := range []string{"a norm of a sum, weighted, before a matmul", "gated MLP with a weighted norm", "a norm of a row-scaled input, weighted, an output that is a product", "k and v of a normed row, grouped (rank 4)", "q of a normed row over groups and heads", "q, k and v of a normed row, k and v narrower"} {
		t.Run("split_k: "+name, func(t *testing.T) {
			t.Parallel()
			body := caseBody(t, name)
			var splits []seed.Seed
			for _, s := range seed.Build(load(t, body), seed.Options{}) {
				if s.Rule == "split_k" {
					splits = append(splits, s)
				}
			}
			if len(splits) == 0 {
				t.Fatal("no split_k seeds")
			}
			emulate(t, splits[0].Graph, 1)
			// And the last that fits of those whose combining kernel
			// sums a tile of splits an iteration (reduction_to_dimx,
			// rows of a split apart: 5 in the row-scaled case).
			tiled := -1
			for i, s := range splits {
				if _, err := launch.Graph(s.Graph, target.MustLookup("sm_90"), launch.Options{}); err == nil && sumsTiles(s.Graph) {
					tiled = i
				}
			}
			if tiled < 0 {
				t.Fatal("no split_k seed that fits sums a tile of splits an iteration")
			}
			emulate(t, splits[tiled].Graph, 1)
		})
	}
	// The attention form with the norms as kernels of their own and the
	// sums of f(Q·K) combined late.
	t.Run("attention with Q and V normalized, prologues apart, sums late", func(t *testing.T) {
		t.Parallel()
		body := caseBody(t, "attention with Q and V normalized (qknorm_gqa)")
		for _, s := range seed.Build(load(t, body), seed.Options{}) {
			if formOf(s.Graph) == (attentionForm{late: true, apart: true}) {
				emulate(t, s.Graph, 0.1) // Q·K of normalized rows: exp past fp16 at 1
				return
			}
		}
		t.Fatal("no seed of that form")
	})
	// Grouped-query attention with a group's heads in one block (grid z
	// of 1): the block multiplies its K and V tiles by the repeating
	// factor's whole tile; the keys split, so a combining kernel follows.
	t.Run("grouped-query attention, a group's heads in one block", func(t *testing.T) {
		t.Parallel()
		body := caseBody(t, "grouped-query attention of rank 4, K and V repeated")
		for _, s := range seed.Build(load(t, body), seed.Options{}) {
			if g := firstBlock(s.Graph).Grid; g[2] == 1 && g[1] > 1 {
				// The block's 4 heads of 3 rows stacked as 12 rows
				// of one mma, the scale applied per head.
				if n := folded(t, s.Graph); n != 2 {
					t.Errorf("%d products folded into their matmuls, want K's and V's", n)
				}
				emulate(t, s.Graph, 1)
				return
			}
		}
		t.Fatal("no seed of that form")
	})
	// Inputs the epilogue reads after a for-loop of several iterations
	// (loadInvariant: loaded every iteration, summed, scaled by 1/R): a
	// residual after the matmul rule's loop, in split_k's combining
	// kernel, and after head_sum's loop over the heads, in one kernel or
	// in the combining one.
	t.Run("epilogue inputs read after a loop", func(t *testing.T) {
		t.Parallel()
		forms := map[string]bool{}
		for _, name := range []string{"residual epilogue", "heads summed, then a residual", "a residual that is the norm's operand"} {
			for _, s := range seed.Build(load(t, caseBody(t, name)), seed.Options{}) {
				b := firstBlock(s.Graph)
				form := fmt.Sprintf("%s: %s, split %v", name, s.Rule, b.Grid[1] > 1)
				// The loop that reads the input: the kernel's own, or
				// the combining kernel's over the splits (grid y).
				if (b.ForloopRange > 1 || b.Grid[1] > 1) && !forms[form] && (s.Rule != "matmul" || b.Grid[1] == 1) {
					forms[form] = true
					emulate(t, s.Graph, 1)
				}
			}
		}
		for _, want := range []string{"residual epilogue: matmul, split false", "residual epilogue: split_k, split true",
			"heads summed, then a residual: head_sum, split false", "heads summed, then a residual: head_sum, split true",
			"a residual that is the norm's operand: matmul, split false", "a residual that is the norm's operand: split_k, split true"} {
			if !forms[want] {
				t.Errorf("emulated the forms %v, want %q among them", forms, want)
			}
		}
	})
	// The library rule's kernel after the library's products: whole rows
	// (each block computes its rows' rms once) and column tiles (each
	// recomputes it), with a norm (6 rows; a normed product an output
	// too; the norm's operand also the residual; the norm's operand a
	// sum, and a weight after it, both run before the products; bf16,
	// with a column and a scalar after silu; 3000 columns, in tiles of
	// 1500) and without (197 rows, a bias and silu).
	t.Run("library", func(t *testing.T) {
		t.Parallel()
		forms := map[string]bool{}
		for name, scale := range map[string]float64{
			"a gated MLP of 6 rows, a normed product an output": 1,
			"a residual that is the norm's operand, after silu": 1,
			"a norm of a sum, weighted, before a matmul":        1,
			"an encoder's projection with a bias, 197 rows":     1,
			"a bf16 projection, then a column and a scalar":     1,
			"a norm and silu over 3000 columns":                 1,
		} {
			for _, s := range seed.Build(load(t, caseBody(t, name)), seed.Options{}) {
				form := fmt.Sprintf("%s: column tiles %v", name, firstKernel(s.Graph).Grid[0] > 1)
				if s.Rule == "library" && !forms[form] {
					forms[form] = true
					emulate(t, s.Graph, scale)
				}
			}
		}
		if len(forms) != 8 {
			t.Errorf("emulated the forms %v, want 8: 768 and 3000 columns tiled and not, 64, 96, 128 (bf16) and 256 whole", forms)
		}
	})
	// Multi-query attention of rank 3 with every head in one block: Q's
	// heads stacked in the block's tiles, K and V read once (bf16, Q and
	// K scaled per head; fp16, one mask for every head).
	t.Run("multi-query heads in one block", func(t *testing.T) {
		t.Parallel()
		for _, name := range []string{"multi-query attention, Q scaled per head", "multi-query attention with one mask for every head"} {
			found := false
			for _, s := range seed.Build(load(t, caseBody(t, name)), seed.Options{}) {
				if b := firstKernel(s.Graph); b.Grid[0] == 1 && b.Grid[1] > 1 {
					emulate(t, s.Graph, 1)
					found = true
					break
				}
			}
			if !found {
				t.Errorf("%s: no seed with every head in one block and the keys split", name)
			}
		}
	})
	// Low-rank adapters: X·A accumulated whole beside X·W, its product
	// with B's column tile after the loop; one row tile and three (grid
	// y, B read whole along its rank of 12 by each); and the library's
	// kernel after X·W and X·A.
	t.Run("low-rank", func(t *testing.T) {
		t.Parallel()
		want := map[string]bool{
			"a low-rank adapter, scaled: matmul, row tiles 1":                             false,
			"a low-rank adapter, scaled: library, row tiles 1":                            false,
			"a low-rank adapter on a normed row, 192 rows, a bias: matmul, row tiles 3":   false,
			"a low-rank adapter on a normed row, 192 rows, a bias: library, row tiles 12": false,
		}
		for _, name := range []string{"a low-rank adapter, scaled", "a low-rank adapter on a normed row, 192 rows, a bias"} {
			for _, s := range seed.Build(load(t, caseBody(t, name)), seed.Options{}) {
				form := fmt.Sprintf("%s: %s, row tiles %d", name, s.Rule, firstKernel(s.Graph).Grid[1])
				if done, ok := want[form]; ok && !done {
					want[form] = true
					emulate(t, s.Graph, 1)
				}
			}
		}
		for form, done := range want {
			if !done {
				t.Errorf("no seed of the form %q", form)
			}
		}
	})
	// Matmuls of different widths in one block (a grouped-query layer's q
	// beside its narrower k and v): k's and v's mma tiles leave warps
	// idle, and the thread plan begins them on other warps than q's
	// (thread.MMA.Base); at 512 threads the matmuls leave most warps idle,
	// and each takes slices of K whose sums meet after the loop
	// (thread.MMA.WarpsK).
	t.Run("matmuls of different widths, on different warps, K in slices", func(t *testing.T) {
		t.Parallel()
		body := caseBody(t, "q, k and v of a normed row, k and v narrower")
		threads := []block.Dim3{{128, 1, 1}, {256, 1, 1}, {512, 1, 1}}
		done := map[string]bool{}
		for _, s := range seed.Build(load(t, body), seed.Options{Threads: threads}) {
			p, err := launch.Graph(s.Graph, target.MustLookup("sm_90"), launch.Options{})
			if err != nil || s.Rule != "matmul" {
				continue
			}
			for _, k := range p.Kernels {
				if k.Thread == nil {
					continue
				}
				form := warpsForm(k.Thread)
				if form != "" && !done[form] {
					done[form] = true
					emulate(t, s.Graph, 1)
				}
			}
		}
		if !done["begun past warp 0"] || !done["K in slices"] {
			t.Errorf("emulated matmul seeds of the forms %v, want one begun past warp 0 and one with K in slices", done)
		}
	})
	// Head sums: the for-loop over the heads alone (one kernel), the heads
	// split among the blocks too (partials stacked by split, combined by a
	// second kernel), and grouped heads of rank 4, the groups on grid y,
	// 3 rows and an epilogue in the combining kernel.
	t.Run("head_sum", func(t *testing.T) {
		t.Parallel()
		forms := map[string]bool{}
		for _, name := range []string{"an output projection summed over the heads", "an output projection of grouped heads, with an epilogue"} {
			body := caseBody(t, name)
			for _, s := range seed.Build(load(t, body), seed.Options{}) {
				b := firstKernel(s.Graph)
				form := fmt.Sprintf("rank %d, split %v", b.Tensors[0].Shape.Rank(), b.Grid[1] > 1)
				if s.Rule == "head_sum" && !forms[form] {
					forms[form] = true
					emulate(t, s.Graph, 1)
				}
			}
		}
		if len(forms) != 3 {
			t.Errorf("emulated the forms %v, want rank 3 split and not, rank 4 split", forms)
		}
	})
}

// emulate runs g's emitted code in the emulator on random inputs in
// [-scale, scale) and checks its outputs against the interpreter's on the same
// (rounded) inputs, within 2% of each output's largest magnitude.
// warpsForm names how tg's matmuls use the warps: "K in slices" where one
// takes slices of K, "begun past warp 0" where one begins past warp 0,
// else "".
func warpsForm(tg *thread.Graph) string {
	form := ""
	for _, op := range tg.Ops {
		switch {
		case op.MMA == nil:
		case op.MMA.Slices() > 1:
			return "K in slices"
		case op.MMA.Base != 0:
			form = "begun past warp 0"
		}
	}
	return form
}

// sumsTiles reports whether a kernel of g sums a tile by reduction_to_dimx.
func sumsTiles(g *kernel.Graph) bool {
	for _, op := range g.Ops {
		if op.Block == nil {
			continue
		}
		for _, bop := range op.Block.Ops {
			if bop.Kind == ugraph.OpReductionToDimx {
				return true
			}
		}
	}
	return false
}

// repeated are the cases whose K and V a product with a tensor of ones
// repeats over the heads.
var repeated = map[string]bool{
	"grouped-query attention of rank 4, K and V repeated":  true,
	"multi-query attention, Q scaled per head":             true,
	"grouped-query attention of rank 4 with a causal mask": true,
}

// folded counts the matmuls of g's graph-defined kernels that take a
// product of their B operand folded in (thread.Scaled), as sm_90's plan
// makes them.
func folded(t *testing.T, g *kernel.Graph) int {
	t.Helper()
	plan, err := launch.Graph(g, target.MustLookup("sm_90"), launch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, k := range plan.Kernels {
		if k.Thread == nil {
			continue
		}
		for _, op := range k.Thread.Ops {
			if op.MMA != nil && op.MMA.Scaled != nil {
				n++
			}
		}
	}
	return n
}

func emulate(t *testing.T, g *kernel.Graph, scale float64) {
	t.Helper()
	res, err := cuda.Emit("seed", g, cuda.Options{})
	if err != nil {
		t.Fatalf("Emit: %v", err)
	}
	dir := t.TempDir()
	emu, _, err := cuda.BuildEmulation(context.Background(), dir, g, res)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	in, out := filepath.Join(dir, "in.bin"), filepath.Join(dir, "out.bin")
	if err := emu.WriteInputs(in, func(int, int) float32 { return float32(scale * (2*r.Float64() - 1)) }); err != nil {
		t.Fatal(err)
	}
	if err := emu.Run(context.Background(), in, out); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	// The executable writes the inputs as rounded, then the outputs.
	rd := bytes.NewReader(data)
	next := func(n int) []float64 {
		v := make([]float32, n)
		if err := binary.Read(rd, binary.LittleEndian, v); err != nil {
			t.Fatalf("reading the program's output: %v", err)
		}
		x := make([]float64, n)
		for i := range v {
			x[i] = float64(v[i])
		}
		return x
	}
	var ins []*interp.Tensor
	for _, id := range g.Inputs() {
		x, err := interp.FromSlice(g.Tensors[id].Shape, next(g.Tensors[id].Shape.NumElements()))
		if err != nil {
			t.Fatal(err)
		}
		ins = append(ins, x)
	}
	want, err := interp.Run(g, ins)
	if err != nil {
		t.Fatal(err)
	}
	for j, id := range g.Outputs {
		got := next(g.Tensors[id].Shape.NumElements())
		scale, worst := 0.0, 0.0
		for i, w := range want[j].Data {
			scale = max(scale, math.Abs(w))
			if d := math.Abs(got[i] - w); !(d <= worst) {
				worst = d
			}
		}
		if !(worst <= 2e-2*scale) {
			t.Errorf("output %d: off by %g of a largest magnitude %g", j, worst, scale)
		}
	}
}
