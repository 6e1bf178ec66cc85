package launch

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/frontend"
	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph/kernel"
	"github.com/mirage-go/mirage/ugraph/thread"
)

func load(t *testing.T, src ...string) *kernel.Graph {
	t.Helper()
	p, err := frontend.Load("p.py", []byte("import mirage as mi\ng = mi.new_kernel_graph()\n"+strings.Join(src, "\n")+"\n"), frontend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p.Graph
}

var sm90 = target.MustLookup("sm_90")

// TestLibraryLaunches checks the runtime library's launch rules against
// what its kernels are written for (templates/mirage_runtime.cuh): 256
// threads for the grid-stride kernels, 16-byte vectors where rows are whole
// vectors; a warp per row for reduce_rows and rms_norm_warp, 8 a block or 2
// when 8 would leave SMs idle; a block per row for rms_norm's long rows,
// and for sums whose rows would give an SM under 8 warps a warp a row
// (a vector a thread or more, two from 4 warps an SM); a
// block per 32 outputs of middle sums too few to fill the SMs a thread
// each, of 64 elements or more;
// cuBLASLt for tensor-core matmuls, or the runtime's GEMM: its tile by M, its
// threads WM·WN warps and its STAGES·(BM·40 + 32·(BN+8)) elements of
// shared memory.
func TestLibraryLaunches(t *testing.T) {
	lt := Kernel{Code: CuBLASLt, Stages: 1, Vector: 16, Split: 1, Workspace: LibraryWorkspace}
	tests := []struct {
		name string
		src  []string
		want Kernel
		opts Options
	}{
		{"exp", []string{`x = g.new_input(dims=(3, 1000), dtype=mi.float16)`, `g.mark_output(g.exp(x))`},
			Kernel{Code: Unary, Grid: [3]int{2, 1, 1}, Threads: 256, Stages: 1, Vector: 16, Split: 1}, Options{}},
		{"huge unary: the grid-stride loop caps the grid", []string{`x = g.new_input(dims=(65536, 1024), dtype=mi.float32)`, `g.mark_output(g.exp(x))`},
			Kernel{Code: Unary, Grid: [3]int{65535, 1, 1}, Threads: 256, Stages: 1, Vector: 16, Split: 1}, Options{}},
		{"add", []string{`x = g.new_input(dims=(16, 64), dtype=mi.bfloat16)`, `y = g.new_input(dims=(1, 64), dtype=mi.bfloat16)`, `g.mark_output(g.add(x, y))`},
			Kernel{Code: Binary, Grid: [3]int{1, 1, 1}, Threads: 256, Stages: 1, Vector: 16, Split: 1}, Options{}},
		{"add, rows not whole vectors: an element at a time", []string{`x = g.new_input(dims=(16, 60), dtype=mi.float16)`, `y = g.new_input(dims=(16, 1), dtype=mi.float16)`, `g.mark_output(g.add(x, y))`},
			Kernel{Code: Binary, Grid: [3]int{4, 1, 1}, Threads: 256, Stages: 1, Vector: 2, Split: 1}, Options{}},
		{"row sum: a warp per row", []string{`x = g.new_input(dims=(2, 33, 100), dtype=mi.float16)`, `g.mark_output(g.reduction(x, 2))`},
			Kernel{Code: ReduceRows, Grid: [3]int{33, 1, 1}, Threads: 64, Stages: 1, Vector: 2, Split: 1}, Options{}},
		{"long rows sum: vectors, 8 warps a block when that fills the SMs", []string{`x = g.new_input(dims=(4096, 4096), dtype=mi.float16)`, `g.mark_output(g.reduction(x, 1))`},
			Kernel{Code: ReduceRows, Grid: [3]int{512, 1, 1}, Threads: 256, Stages: 1, Vector: 16, Split: 1}, Options{}},
		{"few long rows: a block per row", []string{`x = g.new_input(dims=(4, 16380), dtype=mi.float32)`, `g.mark_output(g.reduction(x, 1))`},
			Kernel{Code: ReduceRowsBlock, Grid: [3]int{4, 1, 1}, Threads: 256, Stages: 1, Vector: 16, Split: 1}, Options{}},
		// 16 rows of 32064 vectors: 264 blocks (two an SM) would sum 1887
		// each, a whole number of strides 2048: 16 a row, the last 1344.
		{"few very long rows: blocks share a row", []string{`x = g.new_input(dims=(16, 128256), dtype=mi.float32)`, `g.mark_output(g.reduction(x, 1))`},
			Kernel{Code: ReduceRowsSplit, Grid: [3]int{16, 16, 1}, Threads: 256, Stages: 1, Vector: 16, Split: 16, Chunk: 2048, Workspace: 4 * 16 * 17}, Options{}},
		// 4 rows of 8000 vectors: 66 blocks a row would sum under
		// minSplitChunk (1024) each: 8 of 1024, the last 832.
		{"few very long rows, each block at least 1024 accesses", []string{`x = g.new_input(dims=(4, 32000), dtype=mi.float32)`, `g.mark_output(g.reduction(x, 1))`},
			Kernel{Code: ReduceRowsSplit, Grid: [3]int{8, 4, 1}, Threads: 256, Stages: 1, Vector: 16, Split: 8, Chunk: 1024, Workspace: 4 * 4 * 9}, Options{}},
		{"few very long rows, an element at a time", []string{`x = g.new_input(dims=(2, 4097), dtype=mi.bfloat16)`, `g.mark_output(g.reduction(x, 1))`},
			Kernel{Code: ReduceRowsSplit, Grid: [3]int{5, 2, 1}, Threads: 256, Stages: 1, Vector: 2, Split: 5, Chunk: 1024, Workspace: 4 * 2 * 6}, Options{}},
		{"a vector short of a split: a block per row", []string{`x = g.new_input(dims=(3, 32760), dtype=mi.float16)`, `g.mark_output(g.reduction(x, 1))`},
			Kernel{Code: ReduceRowsBlock, Grid: [3]int{3, 1, 1}, Threads: 256, Stages: 1, Vector: 16, Split: 1}, Options{}},
		{"few long rows, not whole vectors: a block per row, an element at a time", []string{`x = g.new_input(dims=(3, 5, 2047), dtype=mi.bfloat16)`, `g.mark_output(g.reduction(x, 2))`},
			Kernel{Code: ReduceRowsBlock, Grid: [3]int{15, 1, 1}, Threads: 256, Stages: 1, Vector: 2, Split: 1}, Options{}},
		{"few rows, each under 8 vectors a lane: a warp per row", []string{`x = g.new_input(dims=(16, 2040), dtype=mi.float16)`, `g.mark_output(g.reduction(x, 1))`},
			Kernel{Code: ReduceRows, Grid: [3]int{8, 1, 1}, Threads: 64, Stages: 1, Vector: 16, Split: 1}, Options{}},
		{"as many long rows as SMs: a block per row, not a warp per SM", []string{`x = g.new_input(dims=(132, 4096), dtype=mi.float16)`, `g.mark_output(g.reduction(x, 1))`},
			Kernel{Code: ReduceRowsBlock, Grid: [3]int{132, 1, 1}, Threads: 256, Stages: 1, Vector: 16, Split: 1}, Options{}},
		{"under 4 warps an SM, a vector a thread: a block per row", []string{`x = g.new_input(dims=(527, 2048), dtype=mi.float16)`, `g.mark_output(g.reduction(x, 1))`},
			Kernel{Code: ReduceRowsBlock, Grid: [3]int{527, 1, 1}, Threads: 256, Stages: 1, Vector: 16, Split: 1}, Options{}},
		{"4 warps an SM, a vector a thread: a warp per row", []string{`x = g.new_input(dims=(528, 2048), dtype=mi.float16)`, `g.mark_output(g.reduction(x, 1))`},
			Kernel{Code: ReduceRows, Grid: [3]int{264, 1, 1}, Threads: 64, Stages: 1, Vector: 16, Split: 1}, Options{}},
		{"4 warps an SM, two vectors a thread: a block per row", []string{`x = g.new_input(dims=(2, 264, 4096), dtype=mi.float16)`, `g.mark_output(g.reduction(x, 2))`},
			Kernel{Code: ReduceRowsBlock, Grid: [3]int{528, 1, 1}, Threads: 256, Stages: 1, Vector: 16, Split: 1}, Options{}},
		{"under 8 warps an SM, two vectors a thread: a block per row", []string{`x = g.new_input(dims=(1055, 4096), dtype=mi.float16)`, `g.mark_output(g.reduction(x, 1))`},
			Kernel{Code: ReduceRowsBlock, Grid: [3]int{1055, 1, 1}, Threads: 256, Stages: 1, Vector: 16, Split: 1}, Options{}},
		{"8 warps an SM: a warp per row", []string{`x = g.new_input(dims=(1056, 4096), dtype=mi.float16)`, `g.mark_output(g.reduction(x, 1))`},
			Kernel{Code: ReduceRows, Grid: [3]int{132, 1, 1}, Threads: 256, Stages: 1, Vector: 16, Split: 1}, Options{}},
		{"middle sum of 100: a block per 32 outputs", []string{`x = g.new_input(dims=(4, 100, 300), dtype=mi.float16)`, `g.mark_output(g.reduction(x, 1))`},
			Kernel{Code: ReduceMidSplit, Grid: [3]int{38, 1, 1}, Threads: 256, Stages: 1, Vector: 2, Split: 1}, Options{}},
		{"few outputs of long middle sums: a block per 32, the sum split among its warps", []string{`x = g.new_input(dims=(1, 512, 4096), dtype=mi.float16)`, `g.mark_output(g.reduction(x, 1))`},
			Kernel{Code: ReduceMidSplit, Grid: [3]int{128, 1, 1}, Threads: 256, Stages: 1, Vector: 2, Split: 1}, Options{}},
		{"few outputs of short middle sums: a thread per output", []string{`x = g.new_input(dims=(1, 63, 4096), dtype=mi.float16)`, `g.mark_output(g.reduction(x, 1))`},
			Kernel{Code: ReduceMid, Grid: [3]int{16, 1, 1}, Threads: 256, Stages: 1, Vector: 2, Split: 1}, Options{}},
		{"outputs that fill the SMs a thread each: a thread per output", []string{`x = g.new_input(dims=(9, 512, 4096), dtype=mi.float16)`, `g.mark_output(g.reduction(x, 1))`},
			Kernel{Code: ReduceMid, Grid: [3]int{144, 1, 1}, Threads: 256, Stages: 1, Vector: 2, Split: 1}, Options{}},
		{"rms_norm: a block per row", []string{`x = g.new_input(dims=(8, 4096), dtype=mi.float16)`, `g.mark_output(g.rms_norm(x, normalized_shape=(4096,)))`},
			Kernel{Code: RMSNorm, Grid: [3]int{8, 1, 1}, Threads: 256, Stages: 1, Vector: 2, Split: 1}, Options{}},
		{"rms_norm of short rows: a warp per row", []string{`x = g.new_input(dims=(8192, 64), dtype=mi.float16)`, `g.mark_output(g.rms_norm(x, normalized_shape=(64,)))`},
			Kernel{Code: RMSNormWarp, Grid: [3]int{1024, 1, 1}, Threads: 256, Stages: 1, Vector: 16, Split: 1}, Options{}},
		{"rms_norm of 1032 bf16: over what a warp holds", []string{`x = g.new_input(dims=(4, 1032), dtype=mi.bfloat16)`, `g.mark_output(g.rms_norm(x, normalized_shape=(1032,)))`},
			Kernel{Code: RMSNorm, Grid: [3]int{4, 1, 1}, Threads: 256, Stages: 1, Vector: 2, Split: 1}, Options{}},
		{"decode matmul: cuBLASLt", []string{`a = g.new_input(dims=(8, 4096), dtype=mi.float16)`, `w = g.new_input(dims=(4096, 11008), dtype=mi.float16)`, `g.mark_output(g.matmul(a, w))`},
			lt, Options{}},
		{"batched bf16 matmul: cuBLASLt", []string{`a = g.new_input(dims=(2, 256, 64), dtype=mi.bfloat16)`, `w = g.new_input(dims=(2, 64, 4096), dtype=mi.bfloat16)`, `g.mark_output(g.matmul(a, w))`},
			lt, Options{}},
		{"decode matmul, own GEMM: 16x64 tiles", []string{`a = g.new_input(dims=(8, 4096), dtype=mi.float16)`, `w = g.new_input(dims=(4096, 11008), dtype=mi.float16)`, `g.mark_output(g.matmul(a, w))`},
			Kernel{Code: GEMM, Grid: [3]int{172, 1, 1}, Threads: 128, SmemBytes: 3 * (16*40 + 32*72) * 2, Stages: 3, Vector: 16, Split: 1,
				Tile: GEMMTile{16, 64, 1, 4}, RowTile: 16}, Options{OwnGEMM: true}},
		{"32 rows, own GEMM", []string{`a = g.new_input(dims=(32, 256), dtype=mi.float16)`, `w = g.new_input(dims=(256, 128), dtype=mi.float16)`, `g.mark_output(g.matmul(a, w))`},
			Kernel{Code: GEMM, Grid: [3]int{2, 1, 1}, Threads: 128, SmemBytes: 3 * (32*40 + 32*72) * 2, Stages: 3, Vector: 16, Split: 1,
				Tile: GEMMTile{32, 64, 2, 2}, RowTile: 32}, Options{OwnGEMM: true}},
		{"batched 256 rows, own GEMM: 128x128 tiles, batch on z", []string{`a = g.new_input(dims=(2, 256, 64), dtype=mi.float16)`, `w = g.new_input(dims=(2, 64, 4096), dtype=mi.float16)`, `g.mark_output(g.matmul(a, w))`},
			Kernel{Code: GEMM, Grid: [3]int{32, 2, 2}, Threads: 128, SmemBytes: 3 * (128*40 + 32*136) * 2, Stages: 3, Vector: 16, Split: 1,
				Tile: GEMMTile{128, 128, 2, 2}, RowTile: 128}, Options{OwnGEMM: true}},
		{"fp32: cuBLASLt", []string{`a = g.new_input(dims=(20, 64), dtype=mi.float32)`, `w = g.new_input(dims=(64, 40), dtype=mi.float32)`, `g.mark_output(g.matmul(a, w))`},
			lt, Options{}},
		{"fp32, own GEMM: SIMT", []string{`a = g.new_input(dims=(20, 64), dtype=mi.float32)`, `w = g.new_input(dims=(64, 40), dtype=mi.float32)`, `g.mark_output(g.matmul(a, w))`},
			Kernel{Code: GEMMSIMT, Grid: [3]int{3, 2, 1}, Threads: 256, Stages: 1, Vector: 4, Split: 1, Tile: GEMMTile{BM: 16, BN: 16}, RowTile: 16}, Options{OwnGEMM: true}},
		{"N not a multiple of 8, own GEMM: SIMT", []string{`a = g.new_input(dims=(16, 64), dtype=mi.float16)`, `w = g.new_input(dims=(64, 20), dtype=mi.float16)`, `g.mark_output(g.matmul(a, w))`},
			Kernel{Code: GEMMSIMT, Grid: [3]int{2, 1, 1}, Threads: 256, Stages: 1, Vector: 2, Split: 1, Tile: GEMMTile{BM: 16, BN: 16}, RowTile: 16}, Options{OwnGEMM: true}},
		// A hidden size of 4100 (rows of 8200 bytes) goes to cuBLASLt, as
		// eager's does: the SIMT fallback took 8x its time.
		{"K and N not multiples of 8: cuBLASLt", []string{`a = g.new_input(dims=(3, 4100), dtype=mi.bfloat16)`, `w = g.new_input(dims=(4100, 11002), dtype=mi.bfloat16)`, `g.mark_output(g.matmul(a, w))`},
			lt, Options{}},
		// Decode attention's scores over 2,048 sequences × 32 heads: more
		// matrices than a grid's z axis takes, but cuBLASLt launches no
		// grid (found by review: refused, with no answer at exit 0).
		{"70,000 batched matrices: cuBLASLt", []string{`a = g.new_input(dims=(70000, 1, 128), dtype=mi.float16)`, `w = g.new_input(dims=(70000, 128, 16), dtype=mi.float16)`, `g.mark_output(g.matmul(a, w))`},
			lt, Options{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := load(t, tt.src...)
			p, err := Graph(g, sm90, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Kernels) != 1 {
				t.Fatalf("%d kernels, want 1", len(p.Kernels))
			}
			got := p.Kernels[0]
			tt.want.Op = got.Op
			if got != tt.want {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
			if got.Op != len(g.Ops)-1 || p.Kernel(got.Op) != &p.Kernels[0] {
				t.Errorf("the kernel is op %d, want the last op %d", got.Op, len(g.Ops)-1)
			}
		})
	}
}

// TestDeadOpsLaunchNothing: an op no output depends on is not planned.
func TestDeadOpsLaunchNothing(t *testing.T) {
	g := load(t,
		`x = g.new_input(dims=(16, 64), dtype=mi.float16)`,
		`unused = g.exp(x)`,
		`g.mark_output(g.square(x))`)
	p, err := Graph(g, sm90, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []bool{true, false, true}; !slices.Equal(p.Live, want) {
		t.Errorf("live %v, want %v", p.Live, want)
	}
	if len(p.Kernels) != 1 || p.Kernels[0].Op != 2 || p.Kernel(1) != nil || p.Kernel(0) != nil {
		t.Errorf("kernels %+v: want op 2 only", p.Kernels)
	}
}

// TestFold: an add of a cuBLASLt matmul's product and a tensor of its shape
// goes into the call's epilogue when the add is the product's only reader,
// the product no output, the addend there before the call; never on the
// runtime's own GEMM.
func TestFold(t *testing.T) {
	const ins = `x = g.new_input(dims=(8, 64), dtype=mi.float16)
w = g.new_input(dims=(64, 32), dtype=mi.float16)
r = g.new_input(dims=(8, 32), dtype=mi.float16)`
	for _, c := range []struct {
		name   string
		src    string
		own    bool
		folds  bool
		addend int // the addend's tensor, when folded
	}{
		{"residual after", "g.mark_output(g.add(g.matmul(x, w), r))", false, true, 2},
		{"residual before", "g.mark_output(g.add(r, g.matmul(x, w)))", false, true, 2},
		{"own GEMM", "g.mark_output(g.add(g.matmul(x, w), r))", true, false, 0},
		{"broadcast", "b = g.new_input(dims=(1, 32), dtype=mi.float16)\ng.mark_output(g.add(g.matmul(x, w), b))", false, false, 0},
		{"product an output", "p = g.matmul(x, w)\ng.mark_output(g.add(p, r))\ng.mark_output(p)", false, false, 0},
		{"product read twice", "p = g.matmul(x, w)\ng.mark_output(g.add(p, g.exp(p)))", false, false, 0},
		{"product doubled", "p = g.matmul(x, w)\ng.mark_output(g.add(p, p))", false, false, 0},
		{"addend after the matmul", "p = g.matmul(x, w)\ng.mark_output(g.add(p, g.exp(r)))", false, false, 0},
		{"an input added after the matmul", "p = g.matmul(x, w)\nq = g.new_input(dims=(8, 32), dtype=mi.float16)\ng.mark_output(g.add(p, q))", false, true, 4},
		{"a mul is no add", "g.mark_output(g.mul(g.matmul(x, w), r))", false, false, 0},
		{"a dead reader does not count", "p = g.matmul(x, w)\nunused = g.exp(p)\ng.mark_output(g.add(p, r))", false, true, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := load(t, ins, c.src)
			p, err := Graph(g, sm90, Options{OwnGEMM: c.own})
			if err != nil {
				t.Fatal(err)
			}
			// Every op's lookups agree with a scan of the launches.
			for i := range g.Ops {
				var own *Kernel
				folded := -1
				for k := range p.Kernels {
					if p.Kernels[k].Op == i {
						own = &p.Kernels[k]
					}
					if f := p.Kernels[k].Fold; f != nil && f.Op == i {
						folded = p.Kernels[k].Op
					}
				}
				if p.Kernel(i) != own || p.FoldedInto(i) != folded {
					t.Errorf("op %d: Kernel %v, FoldedInto %d; a scan finds %v, %d", i, p.Kernel(i), p.FoldedInto(i), own, folded)
				}
			}
			var folds []*Fold
			for _, k := range p.Kernels {
				if k.Fold != nil {
					folds = append(folds, k.Fold)
					if p.FoldedInto(k.Fold.Op) != k.Op || p.Kernel(k.Fold.Op) != nil || g.Ops[k.Fold.Op].Kind.String() != "add" {
						t.Errorf("op %d folds op %d: FoldedInto %d, its own launch %v", k.Op, k.Fold.Op, p.FoldedInto(k.Fold.Op), p.Kernel(k.Fold.Op))
					}
				}
			}
			switch {
			case !c.folds && len(folds) > 0:
				t.Errorf("folded %+v, want no fold", *folds[0])
			case c.folds && (len(folds) != 1 || int(folds[0].Addend) != c.addend):
				t.Errorf("folds %v, want one adding tensor %d", folds, c.addend)
			}
		})
	}
}

// TestGraphDefined: a customized op's launch is its block graph's grid and
// its thread plan's threads, shared memory and stages; the stages option
// reaches the thread plan; a block over the arch's shared memory is a
// FitError that errors.Is ErrDoesNotFit, named by its op.
func TestGraphDefined(t *testing.T) {
	src := func(cols int) []string {
		return []string{
			`x = g.new_input(dims=(16, 1024), dtype=mi.float16)`,
			`w = g.new_input(dims=(1024, ` + strconv.Itoa(cols) + `), dtype=mi.float16)`,
			`tb = mi.new_threadblock_graph(grid_dim=(4, 1, 1), block_dim=(100, 1, 1), forloop_range=4, reduction_dimx=64)`,
			`tx = tb.new_input(dtensor=x, input_map=(-1, -1, -1), forloop_dim=1)`,
			`tw = tb.new_input(dtensor=w, input_map=(1, -1, -1), forloop_dim=0)`,
			`tb.new_output(stensor=tb.forloop_accum(tb.matmul(tx, tw)), output_map=(1, -1, -1))`,
			`g.mark_output(g.customized([x, w], tb)[0])`,
		}
	}
	g := load(t, src(256)...)
	for _, stages := range []int{0, 1, 2} {
		p, err := Graph(g, sm90, Options{Stages: stages})
		if err != nil {
			t.Fatal(err)
		}
		k := p.Kernels[0]
		want := stages
		if stages == 0 {
			want = 4 // thread.DefaultStages, at most forloop_range
		}
		if k.Code != GraphDefined || k.Grid != [3]int{4, 1, 1} || k.Threads != 128 || k.Stages != want || k.Thread == nil ||
			k.SmemBytes != k.Thread.SmemBytes || k.Split != 1 {
			t.Errorf("stages %d: %+v", stages, k)
		}
		if k.Thread.Tiles[k.Thread.Block.Ops[0].Out].Vector != 16 {
			t.Errorf("stages %d: x's tile is not copied in 16-byte pieces", stages)
		}
	}
	// 1024 rows of 256 columns of W per iteration do not fit 227 KB.
	g = load(t, src(256*64)...)
	_, err := Graph(g, sm90, Options{})
	var oe *OpError
	var fe *FitError
	if !errors.As(err, &oe) || oe.Op != 2 || !errors.As(err, &fe) || !errors.Is(err, ErrDoesNotFit) || fe.Arch != "sm_90" || fe.Limit != sm90.MaxSmemPerBlock {
		t.Fatalf("err = %v, want an OpError for op 2 wrapping a FitError", err)
	}
	if !strings.HasPrefix(err.Error(), "op 2 (customized): the graph-defined kernel needs ") {
		t.Errorf("message %q", err)
	}
}

// Each code prints its own name: the table of names follows the constants.
func TestCodeNames(t *testing.T) {
	for c, want := range map[Code]string{GraphDefined: "graph-defined", Unary: "unary", Binary: "binary", ReduceRows: "reduce_rows", ReduceRowsBlock: "reduce_rows_block", ReduceMidSplit: "reduce_mid_split", ReduceRowsSplit: "reduce_rows_split",
		ReduceMid: "reduce_mid", RMSNorm: "rms_norm", RMSNormWarp: "rms_norm_warp", GEMM: "gemm", GEMMSIMT: "gemm_simt", CuBLASLt: "cublaslt"} {
		if got := c.String(); got != want {
			t.Errorf("Code(%d) prints %q, want %q", uint8(c), got, want)
		}
	}
	if got := Code(len(codeNames)).String(); got != fmt.Sprintf("Code(%d)", len(codeNames)) {
		t.Errorf("past the table: %q", got)
	}
}

// A graph-defined kernel's blocks also leave each thread the registers its
// plan needs (Registers): MinRegisters, or twice the accumulators it keeps
// in registers; MinBlocksPerSM, its __launch_bounds__, asks for no more.
func TestBlocksPerSMByRegisters(t *testing.T) {
	for _, tt := range []struct {
		threads, accumulators, blocks, want int
	}{
		{128, 0, 1000, 8},  // 65536 / (128 · 64); the threads alone allow 16
		{256, 0, 1000, 4},  // 65536 / (256 · 64)
		{1024, 0, 1000, 1}, // the threads allow 2
		{256, 64, 1000, 2}, // 64 accumulators a thread: 128 registers
		{512, 64, 1000, 1}, // a 128x256 mma tile on 512 threads
		{256, 0, 200, 4},   // the SM's blocks, not the first wave's
	} {
		k := Kernel{Code: GraphDefined, Grid: [3]int{tt.blocks, 1, 1}, Threads: tt.threads, Thread: &thread.Graph{RegFloats: tt.accumulators}}
		got, err := k.BlocksPerSM(sm90)
		if err != nil || got != tt.want {
			t.Errorf("%d threads, %d accumulators: %d blocks an SM, %v; want %d", tt.threads, tt.accumulators, got, err, tt.want)
		}
		if min := k.MinBlocksPerSM(sm90); min != got && tt.blocks >= got*sm90.SMs {
			t.Errorf("%d threads, %d accumulators: __launch_bounds__ asks for %d blocks, the model counts %d", tt.threads, tt.accumulators, min, got)
		}
		if regs := target.RegsPerSM / (got * k.Threads); regs < k.Registers() {
			t.Errorf("%d threads, %d accumulators: %d blocks leave %d registers a thread, want %d", tt.threads, tt.accumulators, got, regs, k.Registers())
		}
	}
}

func TestBlocksPerSM(t *testing.T) {
	const kb = 1 << 10
	tests := []struct {
		arch          string
		smem, threads int
		want          int // 0: does not fit
	}{
		{"sm_80", 0, 128, 16},         // threads: 2048/128
		{"sm_80", 1 * kb, 32, 32},     // the block limit
		{"sm_80", 0, 100, 16},         // 100 threads take 4 warps
		{"sm_80", 0, 1024, 2},         // threads
		{"sm_80", 48 * kb, 128, 3},    // smem: 164 KB / 49 KB
		{"sm_80", 81 * kb, 128, 2},    // 164 KB / 82 KB
		{"sm_80", 82 * kb, 128, 1},    // one byte over half, with the reserved KB
		{"sm_80", 163 * kb, 256, 1},   // the per-block maximum
		{"sm_80", 163*kb + 1, 256, 0}, // over it
		{"sm_90", 100 * kb, 128, 2},   // 228 KB / 101 KB
		{"sm_90", 227 * kb, 128, 1},   // the per-block maximum
		{"sm_90", 163*kb + 1, 128, 1}, // fits on sm_90 only
		{"sm_90", 227*kb + 1, 128, 0}, // over it
		{"sm_90", 6 * kb, 64, 32},     // the block limit
		{"sm_90", 12 * kb, 64, 17},    // 228 KB / 13 KB
	}
	for _, tt := range tests {
		// A library kernel: its registers are its template's.
		k := Kernel{Code: Unary, Grid: [3]int{1, 1, 1}, Threads: tt.threads, SmemBytes: tt.smem}
		got, err := k.BlocksPerSM(target.MustLookup(tt.arch))
		if tt.want == 0 {
			if !errors.Is(err, ErrDoesNotFit) {
				t.Errorf("%s, %d B, %d threads: %d, %v; want ErrDoesNotFit", tt.arch, tt.smem, tt.threads, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s, %d B, %d threads: %d, %v; want %d", tt.arch, tt.smem, tt.threads, got, err, tt.want)
		}
	}
}

// The blocks a kernel's __launch_bounds__ asks ptxas to keep room for are
// those the busiest SM of the first wave holds, at most those that leave a
// thread 64 registers.
func TestMinBlocksPerSM(t *testing.T) {
	const kb = 1 << 10
	tests := []struct {
		name                string
		arch                string
		blocks, threads, kb int
		want                int
	}{
		{"LLaMA-7B attention: 128 blocks of 512, two an SM by smem, one by the grid", "sm_90", 128, 512, 98, 1},
		{"its gate/up: 86 blocks", "sm_90", 86, 512, 110, 1},
		{"a second wave: two an SM by smem", "sm_90", 512, 512, 98, 2},
		{"the same on sm_80: one an SM by smem", "sm_80", 512, 512, 98, 1},
		{"small tiles, many blocks: 16 an SM by threads, 8 by registers", "sm_90", 4096, 128, 4, 8},
		{"512 threads, little smem: 4 by threads, 2 by registers", "sm_90", 4096, 512, 4, 2},
		{"three an SM by the grid", "sm_90", 3 * 132, 256, 40, 3},
		{"too large a block: 1", "sm_90", 1000, 128, 300, 1},
	}
	for _, tt := range tests {
		k := Kernel{Grid: [3]int{tt.blocks, 1, 1}, Threads: tt.threads, SmemBytes: tt.kb * kb}
		if got := k.MinBlocksPerSM(target.MustLookup(tt.arch)); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
}

// The runtime's own GEMM puts the batch on the grid's z axis: past 65,535
// matrices it has no launch, and says why.
func TestOwnGEMMBatchBound(t *testing.T) {
	g := load(t, `a = g.new_input(dims=(70000, 1, 128), dtype=mi.float16)`, `w = g.new_input(dims=(70000, 128, 16), dtype=mi.float16)`, `g.mark_output(g.matmul(a, w))`)
	if _, err := Graph(g, sm90, Options{OwnGEMM: true}); err == nil || !strings.Contains(err.Error(), "70000 batched matrices; at most 65535") {
		t.Errorf("own GEMM over 70,000 matrices: %v", err)
	}
}

// An rms_norm over rows of 2^31 elements or more has no runtime launch:
// its kernel counts a row in an int, which wrapped to a negative length,
// and the emitted code wrote nothing at exit 0 (found by review); nor
// over rows within 255 of it, where the index's last step would wrap.
func TestRMSNormRowBound(t *testing.T) {
	g := load(t, `x = g.new_input(dims=(2, 32768, 65536), dtype=mi.float16)`, `g.mark_output(g.rms_norm(x, normalized_shape=(32768, 65536)))`)
	if _, err := Graph(g, sm90, Options{}); err == nil || !strings.Contains(err.Error(), "rows of 2147483648 elements") {
		t.Errorf("rms_norm over rows of 2^31: %v", err)
	}
	// 2^31 - 2: the last index's step of 256 would pass 2^31 - 1.
	g = load(t, `x = g.new_input(dims=(2, 3, 715827882), dtype=mi.float16)`, `g.mark_output(g.rms_norm(x, normalized_shape=(3, 715827882)))`)
	if _, err := Graph(g, sm90, Options{}); err == nil || !strings.Contains(err.Error(), "rows of 2147483646 elements") || !strings.Contains(err.Error(), "at most 2147483392") {
		t.Errorf("rms_norm over rows of 2^31 - 2: %v", err)
	}
	g = load(t, `x = g.new_input(dims=(2, 32768, 65535), dtype=mi.float16)`, `g.mark_output(g.rms_norm(x, normalized_shape=(32768, 65535)))`)
	if _, err := Graph(g, sm90, Options{}); err != nil {
		t.Errorf("rms_norm over rows of 2^31 - 32768: %v", err)
	}
}

// TestDependent: by default, on sm_90, a graph-defined kernel launches
// dependent where a cuBLASLt call precedes it in the stream, and no other
// kernel does (after our own kernels, after the runtime's, after the
// runtime's GEMM); AllDependent makes every graph-defined kernel
// dependent, NoDependent none, and an arch before sm_90 has none at all.
func TestDependent(t *testing.T) {
	// p = x·w (a library matmul), then kernel A reading it, kernel B
	// reading A's output, exp of B's output, and kernel C reading that.
	rowKernel := func(name, in string) []string {
		return []string{
			"tb" + name + " = mi.new_threadblock_graph(grid_dim=(4, 1, 1), block_dim=(128, 1, 1), forloop_range=1, reduction_dimx=16)",
			"t" + name + " = tb" + name + ".new_input(dtensor=" + in + ", input_map=(0, -1, -1), forloop_dim=-1)",
			"tb" + name + ".new_output(stensor=tb" + name + ".forloop_accum(tb" + name + ".exp(t" + name + ")), output_map=(0, -1, -1))",
			name + " = g.customized([" + in + "], tb" + name + ")[0]",
		}
	}
	src := []string{"x = g.new_input(dims=(16, 64), dtype=mi.float16)", "w = g.new_input(dims=(64, 32), dtype=mi.float16)", "p = g.matmul(x, w)"}
	src = append(src, rowKernel("A", "p")...)
	src = append(src, rowKernel("B", "A")...)
	src = append(src, "e = g.exp(B)")
	src = append(src, rowKernel("C", "e")...)
	src = append(src, "g.mark_output(C)")
	g := load(t, src...)
	sm80 := target.MustLookup("sm_80")
	for _, c := range []struct {
		name string
		arch target.Arch
		opts Options
		want []bool // per launch: matmul, A, B, exp, C
	}{
		{"default", sm90, Options{}, []bool{false, true, false, false, false}},
		{"default on the h200", target.MustLookup("h200"), Options{}, []bool{false, true, false, false, false}},
		{"the runtime's GEMM", sm90, Options{OwnGEMM: true}, []bool{false, false, false, false, false}},
		{"none", sm90, Options{Dependent: NoDependent}, []bool{false, false, false, false, false}},
		{"all", sm90, Options{Dependent: AllDependent}, []bool{false, true, true, false, true}},
		{"sm_80", sm80, Options{}, []bool{false, false, false, false, false}},
		{"sm_80, all", sm80, Options{Dependent: AllDependent}, []bool{false, false, false, false, false}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := Graph(g, c.arch, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]bool, len(p.Kernels))
			for i, k := range p.Kernels {
				got[i] = k.Dependent
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("dependent %v, want %v", got, c.want)
			}
		})
	}
}

// Each Dependence reads back from the name it writes; other names are refused.
func TestDependenceText(t *testing.T) {
	for _, d := range []Dependence{AfterLibrary, NoDependent, AllDependent} {
		text, err := d.MarshalText()
		var back Dependence
		if err != nil || back.UnmarshalText(text) != nil || back != d || string(text) != d.String() {
			t.Errorf("%v: %q (%v), read back %v", d, text, err, back)
		}
	}
	var d Dependence
	if err := d.UnmarshalText([]byte("All")); err == nil {
		t.Error(`"All" read as a dependence`)
	}
	if _, err := Dependence(9).MarshalText(); err == nil {
		t.Error("Dependence(9) written")
	}
}
