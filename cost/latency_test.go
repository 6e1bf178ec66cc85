package cost

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/launch"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
	"github.com/mirage-go/mirage/ugraph/thread"
)

// measuredKernel plans the first graph-defined kernel of the measured
// graph with the given entry, stale or not (its steps are today's code's).
func measuredKernel(t *testing.T, workload, entry string) *launch.Kernel {
	t.Helper()
	for _, m := range loadMeasured(t, filepath.Join("testdata", "h100-2026-11-27"), true)["sm_90"][workload] {
		if m.entry != entry {
			continue
		}
		p, err := launch.Graph(m.g, mustArch(t, "sm_90"), launch.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range p.Kernels {
			if p.Kernels[i].Code == launch.GraphDefined {
				return &p.Kernels[i]
			}
		}
	}
	t.Fatalf("%s: no graph-defined kernel in %s", workload, entry)
	return nil
}

// TestGraphStepsFollowTheEmittedCode counts the steps of rmsnorm_matmul's
// best kernel (grid 96, 128 threads, forloop_range 16, a 4-stage
// pipeline) as its emitted code runs them, read off that code
// (codegen/cuda writes it; `mirage emit` shows it):
//
//	before the loop: the rms accumulator's 16 floats zeroed (one a thread).
//	per iteration: cp_async_wait + __syncthreads; load_s0 (X's 16x256
//	tile, 512 16-byte chunks: 4 a thread) and load_s1 (W's 256x64 tile,
//	2048 chunks: 16 a thread); g0, the rms accumulator, a warp per row:
//	16 rows over 4 warps, 256/32 = 8 elements a lane each, read as one
//	16-byte vector (its other 7 elements from registers) and added into
//	the lane's 4 partial sums; g1, mma_tiles<1, 2, K=256>: 16 k-steps of
//	one A and one B ldmatrix and two mma.sync.
//	after the loop: the warp sums of its 4 rows' partials; __syncthreads;
//	g0 finishes the rms in place (16 elements: one a thread);
//	__syncthreads (g1 reads s2); g1's 8 fragment values a lane (4 pairs),
//	divided by the rms and stored.
func TestGraphStepsFollowTheEmittedCode(t *testing.T) {
	k := measuredKernel(t, "rmsnorm_matmul", "run3:complete-set#0")
	if k.Grid != [3]int{96, 1, 1} || k.Threads != 128 || k.Stages != 4 || k.Thread.Block.ForloopRange != 16 {
		t.Fatalf("not the kernel described: %+v", k)
	}
	bs := graphSteps(k.Thread)
	want := blockSteps{
		Iters: 16, Stages: 4, Warps: 4,
		// X: 16 rows of 512 bytes, 4 lines each; W: 256 rows of 128 bytes.
		FetchIter: fetch{Bytes: 16*256*2 + 256*64*2, Lines: 16*4 + 256},
		Iter:      steps{Barriers: 1, Copies: 4 + 16, RowElems: 4, Elements: 4 * 7, LdMatrix: 16 * 2, MMAs: 16 * 2},
		Once:      steps{Barriers: 2, Rows: 4, Elements: 1 + 1 + 4, Flops: 8 * 5, Stores: 8},
	}
	if bs != want {
		t.Errorf("steps\n%+v\nwant\n%+v", bs, want)
	}
}

// TestLibraryStepsFollowTheRuntime counts the runtime GEMM's steps for the
// unfused RMSNorm+MatMul's matmul (16x4096 @ 4096x6144: 16x64 tiles of
// 1x4 warps, 96 blocks), from gemm_kernel in templates/mirage_runtime.cuh:
// K/32 = 128 iterations, each a wait and barrier, (16·32 + 32·64)/8 = 320
// chunks over 128 threads (3 a thread), and mma_tiles<1, 2, K=32>: 2
// k-steps of one A and one B ldmatrix and two mma.sync; then 1x2 tiles of
// 4 values a lane stored.
func TestLibraryStepsFollowTheRuntime(t *testing.T) {
	g := loadExample(t, "rmsnorm_matmul.py")
	p, err := launch.Graph(g, mustArch(t, "sm_90"), launch.Options{OwnGEMM: true})
	if err != nil {
		t.Fatal(err)
	}
	lk := p.Kernel(3)
	if lk == nil || lk.Code != launch.GEMM || lk.Grid != [3]int{96, 1, 1} {
		t.Fatalf("op 3: %+v, want the runtime GEMM on 96 blocks", lk)
	}
	op := &g.Ops[3]
	in := []kernel.Tensor{g.Tensors[op.In[0]], g.Tensors[op.In[1]]}
	bs := librarySteps(lk, shapesOf(in), g.Tensors[op.Out[0]].Shape, g.Tensors[op.Out[0]].DType, op.Attr, op.Kind)
	want := blockSteps{
		Iters: 128, Stages: 3, Warps: 4,
		// A: 16 rows of 64 bytes; B: 32 rows of 128 bytes, a line each.
		FetchIter: fetch{Bytes: (16*32 + 32*64) * 2, Lines: 16 + 32},
		Iter:      steps{Barriers: 1, Copies: 3, LdMatrix: 2 * 2, MMAs: 2 * 2},
		Once:      steps{Stores: 8},
	}
	if bs != want {
		t.Errorf("steps\n%+v\nwant\n%+v", bs, want)
	}
}

// TestSumStepsFollowTheRuntime counts the steps of the runtime's sums as
// reduce_rows_kernel, reduce_rows_block_kernel, reduce_rows_split_kernel
// and reduce_mid_split_kernel run them:
//
//	4 rows of 16000 fp32 (fewer rows than SMs, each long): a block of 256
//	threads per row; 16000/(256·4) → 16 vector loads a thread, 3 adds a
//	vector past the first, a warp sum, a barrier, lane 0 of warp 0 adding
//	the 8 warps' sums and storing, a barrier.
//	16 rows of 128256 fp32 (32064 vectors): 16 blocks a row (264 blocks
//	for 132 SMs would take 1887 vectors each, rounded up to 2048, 8 a
//	thread); 8 vector loads a thread, 3 adds each past the first, a warp
//	sum, a barrier, lane 0 adding the 8 warps' sums, storing its partial,
//	its count's atomic (a load's wait); in the last block a load of the
//	row's 16 partials a lane, one add, a second warp sum, the store.
//	2048 rows of 4096 fp16: a warp per row, 8 a block (256 blocks, one
//	row a warp); 4096/(32·8) = 16 vector loads a lane, 7 adds past the
//	first of each, a warp sum, lane 0's store.
//	a sum over 512 of 1x512x4096 fp16 (4096 outputs: 16 blocks a thread
//	each): a block per 32 outputs (128 blocks); each thread reads every
//	eighth of its output's 512 elements (64), stores its partial; a
//	barrier; warp 0 adds the 8 and stores; a barrier.
func TestSumStepsFollowTheRuntime(t *testing.T) {
	for _, c := range []struct {
		name, src string
		code      launch.Code
		want      blockSteps
	}{
		{"few long rows", "x = g.new_input(dims=(4, 16000), dtype=mi.float32)", launch.ReduceRowsBlock,
			blockSteps{Iters: 1, Stages: 1, Warps: 8,
				Once: steps{Barriers: 2, Global: 16, Elements: 16*3 + 8, Rows: 1, RowElems: 16, Stores: 1}}},
		{"few very long rows", "x = g.new_input(dims=(16, 128256), dtype=mi.float32)", launch.ReduceRowsSplit,
			blockSteps{Iters: 1, Stages: 1, Warps: 8,
				Once: steps{Barriers: 1, Global: 8 + 1 + 1, Elements: 8*3 + 8 + 1, Rows: 2, RowElems: 8, Stores: 2}}},
		{"many rows", "x = g.new_input(dims=(2048, 4096), dtype=mi.float16)", launch.ReduceRows,
			blockSteps{Iters: 1, Stages: 1, Warps: 8,
				Once: steps{Global: 16, Elements: 16 * 7, Rows: 1, RowElems: 16, Stores: 1}}},
		{"few outputs of long middle sums", "x = g.new_input(dims=(1, 512, 4096), dtype=mi.float16)", launch.ReduceMidSplit,
			blockSteps{Iters: 1, Stages: 1, Warps: 8,
				Once: steps{Barriers: 2, Global: 64, Elements: 64 + 1 + 8, Stores: 1}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := loadSource(t, c.name, "import mirage as mi\ng = mi.new_kernel_graph()\n"+c.src+"\ng.mark_output(g.reduction(x, 1))\n")
			p, err := launch.Graph(g, mustArch(t, "sm_90"), launch.Options{})
			if err != nil {
				t.Fatal(err)
			}
			lk := p.Kernel(1)
			if lk == nil || lk.Code != c.code {
				t.Fatalf("op 1: %+v, want %v", lk, c.code)
			}
			op := &g.Ops[1]
			bs := librarySteps(lk, shapesOf([]kernel.Tensor{g.Tensors[op.In[0]]}), g.Tensors[op.Out[0]].Shape, g.Tensors[op.Out[0]].DType, op.Attr, op.Kind)
			if bs != c.want {
				t.Errorf("steps\n%+v\nwant\n%+v", bs, c.want)
			}
		})
	}
}

func shapesOf(ts []kernel.Tensor) (out []ugraph.Shape) {
	for _, t := range ts {
		out = append(out, t.Shape)
	}
	return out
}

// TestPipelineHidesTheFetch: with two or more stages an iteration that
// refills a buffer takes the longest of its own steps, its transfer, and
// its round trip and transfer over stages-1, and the last stages-1 take
// their steps (FR fetches in all, stages-1 of them before the loop, as
// the code issues them); with one stage, its steps and then the fetch of
// the next iteration's tiles, in turn: the code fetches iteration 0's
// before the loop and refills after each iteration but the last. The
// transfer is the slower of the bytes at the block's bandwidth and the
// lines at the SM's memory pipeline's rate.
func TestPipelineHidesTheFetch(t *testing.T) {
	arch := mustArch(t, "sm_90")
	c := fitted
	busy := steps{MMAs: 2000} // longer than any fetch below
	idle := steps{MMAs: 1}
	wide := fetch{Bytes: 32 << 10, Lines: 256}    // 256 rows of 128 bytes
	narrow := fetch{Bytes: 32 << 10, Lines: 2048} // 2048 rows of 16 bytes
	perBlock := min(arch.SMBandwidth, arch.MemBandwidth*memEfficiency/100)
	latency := arch.MemLatencyNs * 1e-9
	refill := steps{Barriers: 1}
	barrier := refill.cycles(&c) / arch.ClockHz
	tests := []struct {
		name   string
		iter   steps
		stages int
		f      fetch
		want   func(compute, x float64) float64
	}{
		{"deep pipeline, busy", busy, 4, wide, func(c, x float64) float64 { return c }},
		{"deep pipeline, idle", idle, 4, wide, func(c, x float64) float64 { return max(x, (latency+x)/3) }},
		{"deep pipeline, idle, short rows", idle, 4, narrow, func(c, x float64) float64 { return max(x, (latency+x)/3) }},
		// 10 iterations, 9 refills, each after its barrier.
		{"no pipeline, busy", busy, 1, wide, func(c, x float64) float64 { return c + 0.9*(barrier+latency+x) }},
		{"no pipeline, idle", idle, 1, narrow, func(c, x float64) float64 { return c + 0.9*(barrier+latency+x) }},
	}
	for _, tt := range tests {
		bs := blockSteps{Iter: tt.iter, Iters: 10, Stages: tt.stages, FetchIter: tt.f, Warps: 4}
		if tt.stages == 1 {
			bs.Refill = refill
		}
		x := max(tt.f.Bytes/perBlock, tt.f.Lines*c.Line/arch.ClockHz)
		compute := tt.iter.cycles(&c) / arch.ClockHz
		n := float64(max(1, tt.stages-1))
		prologue := latency + max(n*tt.f.Bytes/perBlock, n*tt.f.Lines*c.Line/arch.ClockHz)
		want := prologue + 10*tt.want(compute, x) // per iteration
		if tt.stages >= 2 {
			// The first stages-1 iterations' tiles come before the
			// loop: each refill paces one iteration, and the last
			// stages-1 iterations only work.
			want = prologue + float64(10-(tt.stages-1))*tt.want(compute, x) + float64(tt.stages-1)*compute
		}
		if got := blockTime(arch, &c, bs, 1, 100); !within(got, want, 1e-9) {
			t.Errorf("%s: %.4g s, want %.4g s", tt.name, got, want)
		}
	}
	// Short rows cost more lines than their bytes: the transfer is the
	// lines'.
	if !(narrow.Lines*c.Line/arch.ClockHz > narrow.Bytes/perBlock) {
		t.Errorf("16-byte rows: %.3g s of lines, %.3g s of bytes; want the lines slower", narrow.Lines*c.Line/arch.ClockHz, narrow.Bytes/perBlock)
	}
}

// TestIssueSaturates: blocks that share an SM overlap their latencies
// until their warps issue as fast as the schedulers can; past that, each
// more warp slows them all.
func TestIssueSaturates(t *testing.T) {
	arch := mustArch(t, "sm_90")
	c := fitted
	bs := blockSteps{Iter: steps{MMAs: 100}, Iters: 10, Stages: 1, Warps: 4}
	one := blockTime(arch, &c, bs, 1, 132)
	for b := 1; b <= 8; b++ {
		got := blockTime(arch, &c, bs, b, 132)
		want := one * max(1, float64(b)/c.Saturation)
		if !within(got, want, 1e-9) {
			t.Errorf("%d blocks an SM: %.3g s, want %.3g s", b, got, want)
		}
	}
}

// TestUnevenWaveSharesTheHBM: a wave's blocks share the HBM's bandwidth,
// and an SM holding fewer of them than the busiest leaves its share to
// the rest when it is done. 172 blocks on 132 SMs (two on 40 of them)
// move their bytes as fast as 86 blocks, one an SM, moving twice as much
// each: at the HBM's rate, not at a 132nd of it for each busiest SM.
func TestUnevenWaveSharesTheHBM(t *testing.T) {
	arch := mustArch(t, "sm_90")
	c := fitted
	tile := fetch{Bytes: 32 << 10, Lines: 256}
	half := blockSteps{Iters: 64, Stages: 4, FetchIter: tile, Warps: 4}
	whole := half
	whole.FetchIter.add(tile, 1)
	uneven := blockTime(arch, &c, half, 2, 172)
	even := blockTime(arch, &c, whole, 1, 86)
	if !within(uneven, even, 1e-9) {
		t.Errorf("172 blocks, two an SM: %.4g s; 86 blocks of twice the bytes: %.4g s; want the same", uneven, even)
	}
	// The HBM bounds both: the wave's bytes at its rate.
	if hbm := 172 * half.FetchIter.Bytes * float64(half.Iters) / (arch.MemBandwidth * memEfficiency); uneven < hbm {
		t.Errorf("172 blocks: %.4g s, under the %.4g s their bytes take at the HBM's rate", uneven, hbm)
	}
}

// A loop of one iteration copies every input tile once, before it, whether
// or not the input names a dim for the loop to walk: the emitted code is
// the same (codegen/cuda's loadLambdas, by thread.CopiedEachIteration), and
// so must the steps and the estimate be. The model once counted a named
// dim's tile as pipelined: 7.80 µs against 5.72 for one kernel.
func TestOneIterationCopiesOnce(t *testing.T) {
	src, err := os.ReadFile("../examples/gated_mlp_mugraph.py")
	if err != nil {
		t.Fatal(err)
	}
	form := func(xdim, wdim string) *kernel.Graph {
		body := strings.NewReplacer("(8, 4096)", "(8, 256)", "(4096, 4096)", "(256, 512)",
			"grid_dim=(64, 1, 1), block_dim=(128, 1, 1), forloop_range=64", "grid_dim=(8, 1, 1), block_dim=(512, 1, 1), forloop_range=1",
			"forloop_dim=1)", "forloop_dim="+xdim+")", "forloop_dim=0)", "forloop_dim="+wdim+")").Replace(string(src))
		return loadSource(t, "gated_mlp_mugraph.py", body)
	}
	named, unnamed := form("1", "0"), form("-1", "-1")
	if kernel.Hash(named) == kernel.Hash(unnamed) {
		t.Fatal("the two forms are one graph: the case tests nothing")
	}
	arch := mustArch(t, "sm_90")
	steps := func(g *kernel.Graph) blockSteps {
		p, err := launch.Graph(g, arch, launch.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return graphSteps(p.Kernels[0].Thread)
	}
	if a, b := steps(named), steps(unnamed); a != b {
		t.Errorf("steps with the loop's dim named\n%+v\nwithout\n%+v", a, b)
	} else if a.FetchIter.Bytes != 0 {
		t.Errorf("one iteration fetches %g bytes an iteration, want every tile fetched once", a.FetchIter.Bytes)
	}
	if a, b := estimate(t, named, arch), estimate(t, unnamed, arch); a.Micros != b.Micros {
		t.Errorf("estimated %.2f µs with the loop's dim named, %.2f without", a.Micros, b.Micros)
	}
}

// A loop of fewer iterations than its pipeline has stages fetches only the
// tiles of the iterations there are (the runtime GEMM, 3 stages, over one
// 32-deep k-tile: gemm_kernel's `if (s < ktiles)`): the stages beyond them
// change nothing.
func TestPrologueFetchesOnlyTheIterationsThereAre(t *testing.T) {
	arch := mustArch(t, "sm_90")
	c := fitted
	tile := fetch{Bytes: 16 << 10, Lines: 128}
	one := blockSteps{Iter: steps{MMAs: 8}, Iters: 1, Stages: 1, FetchIter: tile, Warps: 4}
	for _, stages := range []int{2, 3, 4} {
		deep := one
		deep.Stages = stages
		if a, b := blockTime(arch, &c, deep, 1, 100), blockTime(arch, &c, one, 1, 100); !within(a, b, 1e-12) {
			t.Errorf("one iteration, %d stages: %.4g s; one stage: %.4g s", stages, a, b)
		}
	}
}

// TestSplitSumCountsItsMemset: a split row sum's entry point zeroes the
// rows' counts on the stream before the launch (launch.Kernel.Memsets),
// which the model charges as a second launch; a block a row has none.
func TestSplitSumCountsItsMemset(t *testing.T) {
	arch := mustArch(t, "sm_90")
	for _, c := range []struct {
		dims     string
		code     launch.Code
		launches float64
	}{
		{"(16, 128256)", launch.ReduceRowsSplit, 2},
		{"(16, 16000)", launch.ReduceRowsBlock, 1},
	} {
		g := loadSource(t, c.dims, "import mirage as mi\ng = mi.new_kernel_graph()\nx = g.new_input(dims="+c.dims+", dtype=mi.float32)\ng.mark_output(g.reduction(x, 1))\n")
		e, err := EstimateGraph(g, arch)
		if err != nil {
			t.Fatal(err)
		}
		k := e.Kernels[0]
		if k.Launch.Code != c.code {
			t.Fatalf("%s: %v, want %v", c.dims, k.Launch.Code, c.code)
		}
		if want := c.launches * arch.LaunchMicros; k.OverheadMicros != want {
			t.Errorf("%s: overhead %.2f µs, want %.2f", c.dims, k.OverheadMicros, want)
		}
	}
}

// A tile's lines are its contiguous runs' (the SM's memory pipeline
// serves a 128-byte line a wavefront): a row of a wider tensor is a run
// of its own, while a tile of whole rows is one run across them.
func TestInputFetchCountsContiguousRuns(t *testing.T) {
	for _, tc := range []struct {
		name        string
		tile, whole []int
		elem        int
		lines       float64
	}{
		{"a weight's column tile, 128 bytes a row", []int{256, 64}, []int{4096, 4096}, 2, 256},
		{"a weight's narrow column tile, 32 bytes a row", []int{256, 16}, []int{4096, 4096}, 2, 256},
		{"an adapter's whole rows, 32 bytes each", []int{256, 16}, []int{4096, 16}, 2, 64},
		{"whole rows of 200 bytes", []int{4, 100}, []int{64, 100}, 2, 7},
		{"a batch of whole matrices", []int{2, 8, 64}, []int{4, 8, 64}, 2, 16},
		{"whole rows of part of each batch", []int{2, 4, 64}, []int{2, 8, 64}, 2, 8},
		{"a row of activations", []int{8, 256}, []int{8, 4096}, 2, 32},
	} {
		f := inputFetch(ugraph.MustShape(tc.tile...), ugraph.MustShape(tc.whole...), tc.elem)
		if bytes := float64(ugraph.MustShape(tc.tile...).NumElements() * tc.elem); f.Bytes != bytes || f.Lines != tc.lines {
			t.Errorf("%s: %v bytes in %v lines, want %v in %v", tc.name, f.Bytes, f.Lines, bytes, tc.lines)
		}
	}
}

// TestBusiestWarpOfTheParts: a grouped-query layer's q, k and v
// projections at 8 rows, 128 blocks of 16 warps. q's 4 n-tiles keep 4
// warps busy and k's and v's one n-tile one warp each: thread's slices
// pass gives each 2 slices of the iteration's 16 k-steps (6 warps busy
// of 16), and its balance pass puts q on warps 0-7, k on 8-9 and v on
// 10-11: the busiest warp issues 8 mma.sync an iteration, where it would
// issue 48 if every matmul ran whole from warp 0.
func TestBusiestWarpOfTheParts(t *testing.T) {
	g := check[*block.Graph](t)(block.New(block.Dim3{128, 1, 1}, block.Dim3{512, 1, 1}, 16, 64))
	x := check[block.TensorID](t)(g.AddInput(sh(8, 4096), fp16, block.Map{-1, -1, -1}, 1))
	for _, n := range []int{4096, 1024, 1024} {
		w := check[block.TensorID](t)(g.AddInput(sh(4096, n), fp16, block.Map{1, -1, -1}, 0))
		m := check[block.TensorID](t)(g.Add(ugraph.OpMatmul, ugraph.Attr{}, x, w))
		acc := check[block.TensorID](t)(g.Add(ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumNone}, m))
		if err := g.AddOutput(acc, block.Map{1, -1, -1}); err != nil {
			t.Fatal(err)
		}
	}
	tg, err := thread.Derive(g, mustArch(t, "sm_90"), thread.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// K = 4096/16 = 256 per iteration: 16 k-steps of one mma.sync (one
	// m-tile, one n-tile a warp), in slices.
	bs := graphSteps(tg)
	if got := bs.Iter.MMAs; got != 8 {
		t.Errorf("the busiest warp issues %v mma.sync an iteration, want 8\n%v", got, tg)
	}
	// Past the loop: 4 floats a lane of each warp's one tile, in 2
	// slices, put in shared memory and added up.
	if got := bs.Once.Elements; got < 3*2*4 {
		t.Errorf("the slices' sums cost %v element steps past the loop, want at least %v", got, 3*2*4)
	}
}
