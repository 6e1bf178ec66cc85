package cuda

import (
	"fmt"
	"strings"

	"github.com/mirage-go/mirage/launch"
	"github.com/mirage-go/mirage/ugraph"
)

// emuCase is a small program that exercises fast paths and fallbacks of the
// emitted code; each runs in the emulator and compiles with nvcc.
type emuCase struct {
	name  string
	scale float64 // inputs are drawn from [-scale, scale)
	src   []string
	opts  Options
	// uses counts the kernels of each code that the case's plan must
	// have, so that it keeps covering the path it was written for.
	uses map[launch.Code]int
}

// tb returns the lines of a one-kernel μGraph program: inputs (name,
// dims, dtype), a threadblock graph header, its body, and the customized
// call.
func oneKernel(inputs [][3]string, header string, body ...string) []string {
	var lines []string
	lines = append(lines, "g = mi.new_kernel_graph()")
	var names []string
	for _, in := range inputs {
		lines = append(lines, in[0]+" = g.new_input(dims="+in[1]+", dtype=mi."+in[2]+")")
		names = append(names, in[0])
	}
	lines = append(lines, "tb = mi.new_threadblock_graph("+header+")")
	lines = append(lines, body...)
	lines = append(lines, "outs = g.customized(["+strings.Join(names, ", ")+"], tb)")
	lines = append(lines, "for o in outs:", "    g.mark_output(o)")
	return lines
}

var emuCases = []emuCase{
	// The running example, scaled down, in bf16: mma with a 4-stage
	// pipeline, persistent accumulator, rms accumulator, fused div.
	{name: "rmsnorm_bf16", scale: 1, src: oneKernel(
		[][3]string{{"X", "(16, 256)", "bfloat16"}, {"W", "(256, 128)", "bfloat16"}},
		"grid_dim=(2, 1, 1), block_dim=(128, 1, 1), forloop_range=4, reduction_dimx=64",
		`tX = tb.new_input(dtensor=X, input_map=(-1, -1, -1), forloop_dim=1)`,
		`tW = tb.new_input(dtensor=W, input_map=(1, -1, -1), forloop_dim=0)`,
		`tb.new_output(stensor=tb.div(tb.forloop_accum(tb.matmul(tX, tW)), tb.forloop_accum(tX, "rms")), output_map=(1, -1, -1))`)},
	// fp32 tiles: the SIMT matmul, a mean accumulator, mul_scalar.
	{name: "fp32_simt", scale: 1, src: oneKernel(
		[][3]string{{"A", "(8, 96)", "float32"}, {"B", "(96, 40)", "float32"}},
		"grid_dim=(2, 1, 1), block_dim=(64, 1, 1), forloop_range=3, reduction_dimx=4",
		`tA = tb.new_input(dtensor=A, input_map=(-1, -1, -1), forloop_dim=1)`,
		`tB = tb.new_input(dtensor=B, input_map=(1, -1, -1), forloop_dim=0)`,
		`m = tb.forloop_accum(tb.matmul(tA, tB))`,
		`s = tb.forloop_accum(tA, "mean")`,
		`tb.new_output(stensor=tb.mul_scalar(tb.add(m, s), 0.5), output_map=(1, -1, -1))`)},
	// Odd mma shapes: M = 5 (padding rows), N = 24 (three n-tiles: an
	// ldmatrix.x2 for the last), K = 16; 100 threads (rounded up to 4 warps).
	{name: "mma_odd", scale: 1, src: oneKernel(
		[][3]string{{"A", "(5, 64)", "float16"}, {"B", "(64, 48)", "float16"}},
		"grid_dim=(2, 1, 1), block_dim=(100, 1, 1), forloop_range=4, reduction_dimx=1",
		`tA = tb.new_input(dtensor=A, input_map=(-1, -1, -1), forloop_dim=1)`,
		`tB = tb.new_input(dtensor=B, input_map=(1, -1, -1), forloop_dim=0)`,
		`tb.new_output(stensor=tb.forloop_accum(tb.matmul(tA, tB)), output_map=(1, -1, -1))`)},
	// Batched rank-4 mma, M = 12 per batch: m-tiles read the next batch's
	// rows as padding; the exp before the accumulator keeps it out of the
	// mma registers (streamed, added into a register accumulator).
	{name: "mma_batched", scale: 0.5, src: oneKernel(
		[][3]string{{"A", "(2, 3, 12, 32)", "float16"}, {"B", "(2, 3, 32, 16)", "float16"}},
		"grid_dim=(2, 1, 1), block_dim=(128, 1, 1), forloop_range=2, reduction_dimx=1",
		`tA = tb.new_input(dtensor=A, input_map=(0, -1, -1), forloop_dim=3)`,
		`tB = tb.new_input(dtensor=B, input_map=(0, -1, -1), forloop_dim=2)`,
		`tb.new_output(stensor=tb.forloop_accum(tb.exp(tb.matmul(tA, tB))), output_map=(0, -1, -1))`)},
	// Past the register budget the mma accumulator lives in shared memory
	// (fp32), added into by the streamed epilogue.
	{name: "mma_smem_accum", scale: 0.5, opts: Options{Launch: launch.Options{Stages: 2}}, src: oneKernel(
		[][3]string{{"A", "(128, 64)", "float16"}, {"B", "(64, 256)", "float16"}},
		"grid_dim=(1, 1, 1), block_dim=(128, 1, 1), forloop_range=2, reduction_dimx=1",
		`tA = tb.new_input(dtensor=A, input_map=(-1, -1, -1), forloop_dim=1)`,
		`tB = tb.new_input(dtensor=B, input_map=(-1, -1, -1), forloop_dim=0)`,
		`tb.new_output(stensor=tb.forloop_accum(tb.matmul(tA, tB)), output_map=(-1, -1, -1))`)},
	// A matmul after the loop, of tiles computed after it.
	{name: "mma_post_loop", scale: 0.5, src: oneKernel(
		[][3]string{{"A", "(32, 32)", "float16"}, {"B", "(64, 16)", "float16"}},
		"grid_dim=(1, 1, 1), block_dim=(64, 1, 1), forloop_range=2, reduction_dimx=1",
		`tA = tb.new_input(dtensor=A, input_map=(-1, -1, -1), forloop_dim=0)`,
		`tB = tb.new_input(dtensor=B, input_map=(-1, -1, -1), forloop_dim=0)`,
		`a = tb.exp(tb.forloop_accum(tA))`,
		`b = tb.relu(tb.forloop_accum(tB))`,
		`tb.new_output(stensor=tb.matmul(a, b), output_map=(-1, -1, -1))`)},
	// Every element-wise op, broadcasting binary ops, and a chain that
	// crosses the loop through a None accumulator on a SIMT head.
	{name: "elementwise", scale: 1, src: oneKernel(
		[][3]string{{"X", "(4, 64)", "float16"}, {"Y", "(4, 1)", "float16"}, {"Z", "(1, 64)", "float16"}},
		"grid_dim=(1, 1, 1), block_dim=(128, 1, 1), forloop_range=2, reduction_dimx=1",
		`tX = tb.new_input(dtensor=X, input_map=(-1, -1, -1), forloop_dim=1)`,
		`tY = tb.new_input(dtensor=Y, input_map=(-1, -1, -1), forloop_dim=-1)`,
		`tZ = tb.new_input(dtensor=Z, input_map=(-1, -1, -1), forloop_dim=1)`,
		`a = tb.silu(tb.gelu(tb.clamp(tb.exp(tX), 0.5, 2.0)))`,
		`b = tb.add(tb.mul(a, tY), tZ)`,
		`c = tb.forloop_accum(tb.sqrt(tb.square(b)))`,
		`d = tb.div(tb.log(tb.exp(c)), tb.forloop_accum(tY))`,
		`e = tb.sub(tb.pow(tb.exp(d), tb.forloop_accum(tZ)), tb.relu(tb.mul_scalar(d, -3.0)))`,
		`tb.new_output(stensor=e, output_map=(-1, -1, -1))`)},
	// Every accumulator kind, and post-loop ops on their results.
	{name: "accumulators", scale: 1, src: oneKernel(
		[][3]string{{"X", "(2, 16, 128)", "float16"}},
		"grid_dim=(2, 1, 1), block_dim=(96, 1, 1), forloop_range=4, reduction_dimx=8",
		`tX = tb.new_input(dtensor=X, input_map=(0, -1, -1), forloop_dim=2)`,
		`s = tb.forloop_accum(tX, "sum")`,
		`m = tb.forloop_accum(tX, "mean")`,
		`r = tb.forloop_accum(tX, "rms")`,
		`d = tb.forloop_accum(tX, "sum_todimx")`,
		`n = tb.forloop_accum(tX)`,
		`tb.new_output(stensor=tb.add(tb.mul(s, m), r), output_map=(0, -1, -1))`,
		`tb.new_output(stensor=tb.mul(d, r), output_map=(0, -1, -1))`,
		`tb.new_output(stensor=n, output_map=(0, -1, -1))`,
		`tb.new_output(stensor=r, output_map=(0, -1, -1))`)},
	// Block reductions (a warp per row, and element-wise), rms_norm,
	// concat, reduction_to_dimx; tiles read in place (one iteration).
	{name: "reductions", scale: 1, src: oneKernel(
		[][3]string{{"X", "(8, 96)", "float16"}, {"Y", "(8, 32)", "float16"}},
		"grid_dim=(1, 2, 1), block_dim=(64, 1, 1), forloop_range=1, reduction_dimx=16",
		`tX = tb.new_input(dtensor=X, input_map=(-1, 0, -1), forloop_dim=-1)`,
		`tY = tb.new_input(dtensor=Y, input_map=(-1, 0, -1), forloop_dim=-1)`,
		`c = tb.concat(tX, tY, 1)`,
		`a = tb.forloop_accum(tb.rms_norm(c))`,
		`r1 = tb.reduction(a, 1)`,
		`r0 = tb.reduction(a, 0)`,
		`rd = tb.reduction_to_dimx(a, 1)`,
		`tb.new_output(stensor=tb.add(a, r1), output_map=(-1, 0, -1))`,
		`tb.new_output(stensor=tb.mul(rd, tb.reduction(rd, 0)), output_map=(-1, 0, -1))`,
		`tb.new_output(stensor=tb.exp(r0), output_map=(-1, 0, -1))`)},
	// Rows shared by warps (thread.Group.RowWarps): 3 rows of 1000 for 8
	// warps, 2 warps a row (warps 6 and 7 idle), strides that do not divide
	// the row; an rms_norm and a reduction meeting in scratch, sum, mean
	// and rms accumulators adding with atomicAdd.
	{name: "rows_shared_by_warps", scale: 1, src: oneKernel(
		[][3]string{{"X", "(3, 1000)", "float16"}},
		"grid_dim=(1, 1, 1), block_dim=(256, 1, 1), forloop_range=1, reduction_dimx=8",
		`tX = tb.new_input(dtensor=X, input_map=(-1, -1, -1), forloop_dim=-1)`,
		`r = tb.reduction(tX, 1)`,
		`tb.new_output(stensor=tb.forloop_accum(tb.add(tb.rms_norm(tX), r)), output_map=(-1, -1, -1))`,
		`tb.new_output(stensor=tb.forloop_accum(tX, "sum"), output_map=(-1, -1, -1))`,
		`tb.new_output(stensor=tb.forloop_accum(tX, "mean"), output_map=(-1, -1, -1))`,
		`tb.new_output(stensor=tb.forloop_accum(tX, "rms"), output_map=(-1, -1, -1))`)},
	// One row per block whose warps all share it (no warp idle, the row
	// index constant): accumulators, an rms_norm and a reduction whose
	// chain goes on.
	{name: "one_row_whole_block", scale: 1, src: oneKernel(
		[][3]string{{"X", "(4, 512)", "float16"}},
		"grid_dim=(4, 1, 1), block_dim=(256, 1, 1), forloop_range=1, reduction_dimx=8",
		`tX = tb.new_input(dtensor=X, input_map=(0, -1, -1), forloop_dim=-1)`,
		`tb.new_output(stensor=tb.forloop_accum(tX, "sum"), output_map=(0, -1, -1))`,
		`tb.new_output(stensor=tb.forloop_accum(tX, "rms"), output_map=(0, -1, -1))`,
		`tb.new_output(stensor=tb.forloop_accum(tb.add(tb.rms_norm(tX), tb.silu(tb.reduction(tX, 1)))), output_map=(0, -1, -1))`)},
	// One row per block over 16 warps inside a for-loop: the scratch is
	// written again at every iteration.
	{name: "row_shared_in_loop", scale: 1, src: oneKernel(
		[][3]string{{"X", "(4, 2048)", "float16"}},
		"grid_dim=(4, 1, 1), block_dim=(512, 1, 1), forloop_range=2, reduction_dimx=8",
		`tX = tb.new_input(dtensor=X, input_map=(0, -1, -1), forloop_dim=1)`,
		`tb.new_output(stensor=tb.forloop_accum(tb.exp(tb.rms_norm(tX)), "sum"), output_map=(0, -1, -1))`,
		`tb.new_output(stensor=tb.forloop_accum(tb.reduction(tX, 1)), output_map=(0, -1, -1))`)},
	// Rows read 16 bytes a lane at a time (thread.Group.RowVector), from
	// device memory in place: a row of 4096 a block over 16 warps, for an
	// rms accumulator (atomicAdd) and a reduction of bf16 rows.
	{name: "rows_read_in_vectors", scale: 1, src: oneKernel(
		[][3]string{{"Y", "(4, 4096)", "float16"}, {"Z", "(4, 4096)", "bfloat16"}},
		"grid_dim=(4, 1, 1), block_dim=(512, 1, 1), forloop_range=1, reduction_dimx=8",
		`tY = tb.new_input(dtensor=Y, input_map=(0, -1, -1), forloop_dim=-1)`,
		`tZ = tb.new_input(dtensor=Z, input_map=(0, -1, -1), forloop_dim=-1)`,
		`tb.new_output(stensor=tb.forloop_accum(tY, "rms"), output_map=(0, -1, -1))`,
		`tb.new_output(stensor=tb.forloop_accum(tb.reduction(tZ, 1)), output_map=(0, -1, -1))`)},
	// The same from shared memory: an rms_norm (its operand copied in, as
	// it reads it twice) whose scaling pass feeds a product with γ, 8
	// warps a row of 2048.
	{name: "rms_norm_rows_in_vectors", scale: 1, src: oneKernel(
		[][3]string{{"X", "(2, 2048)", "float16"}, {"G", "(1, 2048)", "float16"}},
		"grid_dim=(2, 1, 1), block_dim=(256, 1, 1), forloop_range=1, reduction_dimx=8",
		`tX = tb.new_input(dtensor=X, input_map=(0, -1, -1), forloop_dim=-1)`,
		`tG = tb.new_input(dtensor=G, input_map=(-1, -1, -1), forloop_dim=-1)`,
		`tb.new_output(stensor=tb.forloop_accum(tb.mul(tb.rms_norm(tX), tG)), output_map=(0, -1, -1))`)},
	// An rms_norm's scaling pass stores 16 bytes a lane: fp32 rows of 512
	// two warps a row, 4 elements a store, into two outputs of the same
	// tile; bf16 rows of 1024 over four warps, 8 a store, through a scale
	// and a silu after the accumulator (three blocks).
	{name: "rms_norm_rows_stored_in_vectors", scale: 1, src: oneKernel(
		[][3]string{{"X", "(4, 512)", "float32"}},
		"grid_dim=(2, 1, 1), block_dim=(128, 1, 1), forloop_range=1, reduction_dimx=8",
		`tX = tb.new_input(dtensor=X, input_map=(0, -1, -1), forloop_dim=-1)`,
		`y = tb.forloop_accum(tb.rms_norm(tX))`,
		`tb.new_output(stensor=y, output_map=(0, -1, -1))`,
		`tb.new_output(stensor=y, output_map=(0, -1, -1))`)},
	{name: "rms_norm_bf16_rows_stored_in_vectors", scale: 1, src: oneKernel(
		[][3]string{{"Y", "(3, 1024)", "bfloat16"}, {"G", "(1, 1024)", "bfloat16"}},
		"grid_dim=(3, 1, 1), block_dim=(128, 1, 1), forloop_range=1, reduction_dimx=8",
		`tY = tb.new_input(dtensor=Y, input_map=(0, -1, -1), forloop_dim=-1)`,
		`tG = tb.new_input(dtensor=G, input_map=(-1, -1, -1), forloop_dim=-1)`,
		`tb.new_output(stensor=tb.silu(tb.forloop_accum(tb.mul(tb.rms_norm(tY), tG))), output_map=(0, -1, -1))`)},
	// An rms_norm after the loop, of an fp32 accumulator's rows (two
	// iterations' halves summed), stores them 4 fp32 a lane.
	{name: "rms_norm_after_loop_stored_in_vectors", scale: 1, src: oneKernel(
		[][3]string{{"X", "(4, 256)", "float32"}},
		"grid_dim=(2, 1, 1), block_dim=(128, 1, 1), forloop_range=2, reduction_dimx=8",
		`tX = tb.new_input(dtensor=X, input_map=(-1, -1, -1), forloop_dim=1)`,
		`tb.new_output(stensor=tb.rms_norm(tb.forloop_accum(tX)), output_map=(0, -1, -1))`)},
	// A loop of one iteration passes its accumulators through: an
	// element-wise head and a row loop, each with unary ops after the
	// accumulator, store from the loop (odd rows and columns).
	{name: "accumulators_passed_through", scale: 1, src: oneKernel(
		[][3]string{{"X", "(6, 72)", "float16"}, {"Y", "(6, 40)", "float32"}},
		"grid_dim=(3, 1, 1), block_dim=(64, 1, 1), forloop_range=1, reduction_dimx=8",
		`tX = tb.new_input(dtensor=X, input_map=(0, -1, -1), forloop_dim=-1)`,
		`tY = tb.new_input(dtensor=Y, input_map=(0, -1, -1), forloop_dim=-1)`,
		`tb.new_output(stensor=tb.silu(tb.sqrt(tb.forloop_accum(tb.exp(tX)))), output_map=(0, -1, -1))`,
		`tb.new_output(stensor=tb.exp(tb.forloop_accum(tb.rms_norm(tY))), output_map=(0, -1, -1))`)},
	// Lane partials fed 16-byte vectors of bf16 rows from a pipelined
	// tile in shared memory: 8 rows of 512 a block and iteration, two a
	// warp.
	{name: "lane_partials_in_vectors", scale: 1, src: oneKernel(
		[][3]string{{"X", "(16, 2048)", "bfloat16"}},
		"grid_dim=(2, 1, 1), block_dim=(128, 1, 1), forloop_range=4, reduction_dimx=8",
		`tX = tb.new_input(dtensor=X, input_map=(0, -1, -1), forloop_dim=1)`,
		`tb.new_output(stensor=tb.forloop_accum(tX, "rms"), output_map=(0, -1, -1))`,
		`tb.new_output(stensor=tb.forloop_accum(tX, "sum"), output_map=(0, -1, -1))`)},
	// One iteration: X, which rms_norm and a second op read, and B, read
	// broadcast along the rows, are copied into shared memory; Y, read
	// once, is copied beside them (TestCasesReadInPlace).
	{name: "copied_in_once", scale: 1, src: oneKernel(
		[][3]string{{"X", "(8, 96)", "float16"}, {"Y", "(8, 96)", "float16"}, {"B", "(8, 1)", "float16"}},
		"grid_dim=(2, 1, 1), block_dim=(64, 1, 1), forloop_range=1, reduction_dimx=16",
		`tX = tb.new_input(dtensor=X, input_map=(0, -1, -1), forloop_dim=-1)`,
		`tY = tb.new_input(dtensor=Y, input_map=(0, -1, -1), forloop_dim=-1)`,
		`tB = tb.new_input(dtensor=B, input_map=(0, -1, -1), forloop_dim=-1)`,
		`tb.new_output(stensor=tb.forloop_accum(tb.add(tb.mul(tb.rms_norm(tX), tb.exp(tY)), tb.mul(tX, tB))), output_map=(0, -1, -1))`)},
	// Copies that are not 16-byte: rows of 4 and 3 fp16 elements (8-byte
	// and element-wise copies), 6 fp32 (8-byte); a grid along two axes, the
	// for-loop walking a partitioned dim; one buffer per tile.
	{name: "copies", scale: 1, opts: Options{Launch: launch.Options{Stages: 1}}, src: oneKernel(
		[][3]string{{"A", "(4, 16, 8)", "float16"}, {"B", "(4, 16, 3)", "float16"}, {"C", "(4, 16, 6)", "float32"}},
		"grid_dim=(2, 2, 1), block_dim=(32, 1, 1), forloop_range=2, reduction_dimx=1",
		`tA = tb.new_input(dtensor=A, input_map=(0, 1, -1), forloop_dim=2)`,
		`tB = tb.new_input(dtensor=B, input_map=(0, 1, -1), forloop_dim=1)`,
		`tC = tb.new_input(dtensor=C, input_map=(0, 1, -1), forloop_dim=1)`,
		`tb.new_output(stensor=tb.forloop_accum(tA, "sum"), output_map=(0, 1, -1))`,
		`tb.new_output(stensor=tb.forloop_accum(tB), output_map=(0, 1, -1))`,
		`tb.new_output(stensor=tb.forloop_accum(tC, "rms"), output_map=(0, 1, -1))`)},
	// lora's W + A·B in one iteration: W's tile, read in the mma's
	// epilogue, is copied in (not read in place in fragment order), and
	// the sum feeds a second mma; odd rows (12) and 3 column blocks.
	{name: "epilogue_operand_copied", scale: 0.5, src: oneKernel(
		[][3]string{{"X", "(12, 64)", "float16"}, {"W", "(64, 96)", "float16"}, {"A", "(64, 16)", "float16"}, {"B", "(16, 96)", "float16"}},
		"grid_dim=(3, 1, 1), block_dim=(128, 1, 1), forloop_range=1, reduction_dimx=1",
		`tX = tb.new_input(dtensor=X, input_map=(-1, -1, -1), forloop_dim=-1)`,
		`tW = tb.new_input(dtensor=W, input_map=(1, -1, -1), forloop_dim=-1)`,
		`tA = tb.new_input(dtensor=A, input_map=(-1, -1, -1), forloop_dim=-1)`,
		`tB = tb.new_input(dtensor=B, input_map=(1, -1, -1), forloop_dim=-1)`,
		`tb.new_output(stensor=tb.forloop_accum(tb.matmul(tX, tb.add(tb.matmul(tA, tB), tW))), output_map=(1, -1, -1))`)},
	// Pipelines deeper than 2 with F not a multiple of the depth.
	{name: "pipeline", scale: 1, opts: Options{Launch: launch.Options{Stages: 3}}, src: oneKernel(
		[][3]string{{"X", "(16, 80)", "float16"}, {"W", "(80, 32)", "float16"}},
		"grid_dim=(2, 1, 1), block_dim=(64, 1, 1), forloop_range=5, reduction_dimx=1",
		`tX = tb.new_input(dtensor=X, input_map=(-1, -1, -1), forloop_dim=1)`,
		`tW = tb.new_input(dtensor=W, input_map=(1, -1, -1), forloop_dim=0)`,
		`tb.new_output(stensor=tb.forloop_accum(tb.matmul(tX, tW)), output_map=(1, -1, -1))`)},
	// Large blocks (the sizes the search offers beside 128): 16 warps on
	// an mma of 13 rows and 5 n-tiles (most warps idle, one m-tile padded),
	// with the rms accumulator's rows spread over the warps and the fused
	// div after the loop.
	{name: "rmsnorm_512_threads", scale: 1, src: oneKernel(
		[][3]string{{"X", "(13, 192)", "float16"}, {"W", "(192, 80)", "float16"}},
		"grid_dim=(2, 1, 1), block_dim=(512, 1, 1), forloop_range=3, reduction_dimx=64",
		`tX = tb.new_input(dtensor=X, input_map=(-1, -1, -1), forloop_dim=1)`,
		`tW = tb.new_input(dtensor=W, input_map=(1, -1, -1), forloop_dim=0)`,
		`tb.new_output(stensor=tb.div(tb.forloop_accum(tb.matmul(tX, tW)), tb.forloop_accum(tX, "rms")), output_map=(1, -1, -1))`)},
	// 8 warps for 6 rows of 100: row sums and element loops with more
	// threads than elements in some rows, a SIMT matmul (fp32) beside.
	{name: "rows_256_threads", scale: 1, src: oneKernel(
		[][3]string{{"X", "(6, 100)", "float16"}, {"A", "(6, 20)", "float32"}, {"B", "(20, 10)", "float32"}},
		"grid_dim=(1, 1, 1), block_dim=(256, 1, 1), forloop_range=1, reduction_dimx=1",
		`tX = tb.new_input(dtensor=X, input_map=(-1, -1, -1), forloop_dim=-1)`,
		`tA = tb.new_input(dtensor=A, input_map=(-1, -1, -1), forloop_dim=-1)`,
		`tB = tb.new_input(dtensor=B, input_map=(-1, -1, -1), forloop_dim=-1)`,
		`e = tb.forloop_accum(tb.exp(tX))`,
		`tb.new_output(stensor=tb.div(e, tb.reduction(e, 1)), output_map=(-1, -1, -1))`,
		`tb.new_output(stensor=tb.forloop_accum(tb.matmul(tA, tB)), output_map=(-1, -1, -1))`)},
	// Attention's first kernel on 16 warps: Q·K, exp, the sums of E·V and
	// of E over the loop, batched over a grid dim, rows not a multiple
	// of 16.
	{name: "attention_512_threads", scale: 0.25, src: oneKernel(
		[][3]string{{"Q", "(2, 24, 64)", "float16"}, {"K", "(2, 64, 96)", "float16"}, {"V", "(2, 96, 64)", "float16"}},
		"grid_dim=(2, 1, 1), block_dim=(512, 1, 1), forloop_range=3, reduction_dimx=64",
		`tQ = tb.new_input(dtensor=Q, input_map=(0, -1, -1), forloop_dim=-1)`,
		`tK = tb.new_input(dtensor=K, input_map=(0, -1, -1), forloop_dim=2)`,
		`tV = tb.new_input(dtensor=V, input_map=(0, -1, -1), forloop_dim=1)`,
		`e = tb.exp(tb.matmul(tQ, tK))`,
		`tb.new_output(stensor=tb.forloop_accum(tb.matmul(e, tV)), output_map=(0, -1, -1))`,
		`tb.new_output(stensor=tb.forloop_accum(e, "sum"), output_map=(0, -1, -1))`)},
	// Programmatic dependent launches: a graph-defined kernel reading
	// another's output, and one reading a runtime kernel's (the emulator
	// runs them in order; nvcc checks the sm_90 launch and waits).
	{name: "dependent_launches", scale: 0.5, opts: Options{DependentLaunch: true}, src: dependentKernels},
	// The default's dependent launch: a graph-defined kernel after a
	// cuBLASLt call (dependent on sm_90), and one after it (plain).
	{name: "dependent_after_library", scale: 1, src: dependentAfterLibrary,
		uses: map[launch.Code]int{launch.CuBLASLt: 1, launch.GraphDefined: 2}},
	// Every element-wise op of the op table, as a pre-defined kernel op
	// and as a threadblock op.
	{name: "every_elementwise", scale: 1, src: everyElementwise()},
	// Every pre-defined kernel op.
	{name: "predefined", scale: 1, src: []string{
		"g = mi.new_kernel_graph()",
		"A = g.new_input(dims=(2, 24, 40), dtype=mi.float16)",
		"B = g.new_input(dims=(2, 40, 16), dtype=mi.float16)",
		"C = g.new_input(dims=(2, 24, 1), dtype=mi.float16)",
		"M = g.matmul(A, B)",
		"E = g.add(g.exp(g.mul_scalar(M, 0.1)), C)",
		"R = g.rms_norm(E, normalized_shape=(24, 16))",
		"S = g.reduction(g.square(R), 1)",
		"T = g.reduction(g.relu(R), 2)",
		"U = g.div(g.mul(g.sqrt(g.exp(g.clamp(R, -2.0, 2.0))), S), g.gelu(g.silu(g.exp(T))))",
		"g.mark_output(g.pow(g.exp(g.mul_scalar(U, 0.01)), g.log(g.exp(C))))",
		"g.mark_output(M)",
		"g.mark_output(A)",
	}},
	// An input only a dead op reads (a layer's new K, not output): still
	// an argument of the entry point, but no variable of the host code
	// (nvcc warned of one declared and never used).
	{name: "dead_input", scale: 1, src: []string{
		"g = mi.new_kernel_graph()",
		"X = g.new_input(dims=(4, 64), dtype=mi.float16)",
		"Wk = g.new_input(dims=(64, 32), dtype=mi.float16)",
		"Wq = g.new_input(dims=(64, 32), dtype=mi.float16)",
		"K = g.matmul(X, Wk)",
		"g.mark_output(g.exp(g.matmul(X, Wq)))",
	}},
	// The runtime's rms_norm keeps 256·32 elements of a row in registers
	// (rows of up to 8192, read once); past them it reads again.
	{name: "rms_norm_long_rows", scale: 1, src: []string{
		"g = mi.new_kernel_graph()",
		"X = g.new_input(dims=(3, 8512), dtype=mi.float16)",
		"g.mark_output(g.rms_norm(X, normalized_shape=(8512,)))",
	}},
	// Sums over fewer rows than SMs, each of 256 accesses or more: a block
	// per row (reduce_rows_block_kernel). fp16 rows of whole vectors with
	// a last step that only some threads take (513 vectors), bf16 rows
	// that are not whole vectors (an element at a time), fp32's 4-element
	// vectors, rows over two dims before the summed one; and the same
	// rows a vector short of the threshold (a warp per row).
	{name: "row_sums_few_long_rows", scale: 1, src: []string{
		"g = mi.new_kernel_graph()",
		"X = g.new_input(dims=(3, 4104), dtype=mi.float16)",
		"Y = g.new_input(dims=(2, 3, 2047), dtype=mi.bfloat16)",
		"F = g.new_input(dims=(2, 1028), dtype=mi.float32)",
		"S = g.new_input(dims=(3, 2040), dtype=mi.float16)",
		"g.mark_output(g.reduction(X, 1))",
		"g.mark_output(g.reduction(g.exp(Y), 2))",
		"g.mark_output(g.div(g.exp(F), g.reduction(g.exp(F), 1)))",
		"g.mark_output(g.reduction(S, 1))",
	}, uses: map[launch.Code]int{launch.ReduceRowsBlock: 3, launch.ReduceRows: 1}},
	// Sums of a few rows of 4096 accesses or more: blocks share a row
	// (reduce_rows_split_kernel), each its chunk, the row's last block
	// adding the partials. fp16 rows of 4097 vectors (a last chunk of
	// one), bf16 rows of 4097 elements an element at a time, fp32 rows
	// under a softmax's division; and rows a vector short (a block per
	// row).
	{name: "row_sums_split", scale: 1, src: []string{
		"g = mi.new_kernel_graph()",
		"X = g.new_input(dims=(3, 32776), dtype=mi.float16)",
		"Y = g.new_input(dims=(2, 4097), dtype=mi.bfloat16)",
		"F = g.new_input(dims=(5, 16400), dtype=mi.float32)",
		"S = g.new_input(dims=(3, 32760), dtype=mi.float16)",
		"g.mark_output(g.reduction(X, 1))",
		"g.mark_output(g.reduction(g.exp(Y), 1))",
		"g.mark_output(g.div(g.exp(F), g.reduction(g.exp(F), 1)))",
		"g.mark_output(g.reduction(S, 1))",
	}, uses: map[launch.Code]int{launch.ReduceRowsSplit: 3, launch.ReduceRowsBlock: 1}},
	// Sums over a middle dim with too few outputs to fill the SMs a thread
	// each and 64 elements or more each: a block per 32 outputs, the sum
	// split among its warps (reduce_mid_split_kernel). Outputs fewer than
	// a warp, a warp's lanes across two outer indices (inner 5), a last
	// block of 24 of its 32 outputs, bf16 and fp32; and a sum one short of
	// the threshold (a thread per output).
	{name: "mid_sums_split", scale: 1, src: []string{
		"g = mi.new_kernel_graph()",
		"A = g.new_input(dims=(3, 100, 5), dtype=mi.float16)",
		"B = g.new_input(dims=(2, 77, 300), dtype=mi.bfloat16)",
		"C = g.new_input(dims=(1, 512, 40), dtype=mi.float32)",
		"D = g.new_input(dims=(4, 63, 24), dtype=mi.float16)",
		"g.mark_output(g.reduction(A, 1))",
		"g.mark_output(g.reduction(g.exp(B), 1))",
		"g.mark_output(g.reduction(C, 1))",
		"g.mark_output(g.reduction(D, 1))",
	}, uses: map[launch.Code]int{launch.ReduceMidSplit: 3, launch.ReduceMid: 1}},
	// The runtime's own matmuls (OwnGEMM): SIMT for rows that are not
	// 16-byte (fp16 K 12) and for fp32, tensor cores for bf16.
	{name: "predefined_fallbacks", scale: 1, opts: Options{Launch: launch.Options{OwnGEMM: true}}, src: []string{
		"g = mi.new_kernel_graph()",
		"A = g.new_input(dims=(20, 12), dtype=mi.float16)",
		"B = g.new_input(dims=(12, 24), dtype=mi.float16)",
		"X = g.new_input(dims=(3, 40, 33), dtype=mi.float32)",
		"Y = g.new_input(dims=(3, 33, 16), dtype=mi.float32)",
		"P = g.new_input(dims=(36, 64), dtype=mi.bfloat16)",
		"Q = g.new_input(dims=(64, 136), dtype=mi.bfloat16)",
		"g.mark_output(g.matmul(A, B))",
		"g.mark_output(g.matmul(X, Y))",
		"g.mark_output(g.matmul(P, Q))",
	}},
	// Pre-defined matmuls through cuBLASLt at odd row counts, batched and
	// not, fp16 and bf16, one reading another's output from the workspace
	// (the row-major/column-major swap, batch strides, the scratch after
	// the intermediates).
	{name: "cublaslt", scale: 1, src: predefinedMatmuls},
	// The library's 16-byte vectors and their edges: a tail past the last
	// whole vector, rows that are not whole vectors (element at a time),
	// broadcasts along and across the row, rows of exactly and just over
	// what rms_norm_warp_kernel holds (128 vectors), fp32's 4-element
	// vectors.
	{name: "vector_edges", scale: 1, src: []string{
		"g = mi.new_kernel_graph()",
		"X = g.new_input(dims=(3, 13), dtype=mi.float16)",
		"B = g.new_input(dims=(1, 13), dtype=mi.float16)",
		"Y = g.new_input(dims=(5, 1024), dtype=mi.bfloat16)",
		"Z = g.new_input(dims=(2, 1032), dtype=mi.bfloat16)",
		"C = g.new_input(dims=(5, 1), dtype=mi.bfloat16)",
		"F = g.new_input(dims=(6, 12), dtype=mi.float32)",
		"g.mark_output(g.add(g.exp(X), B))",
		"g.mark_output(g.reduction(X, 1))",
		"g.mark_output(g.rms_norm(X, normalized_shape=(13,)))",
		"g.mark_output(g.mul(g.rms_norm(Y, normalized_shape=(1024,)), C))",
		"g.mark_output(g.reduction(Y, 1))",
		"g.mark_output(g.rms_norm(Z, normalized_shape=(1032,)))",
		"g.mark_output(g.div(g.exp(F), g.reduction(g.exp(F), 1)))",
		"g.mark_output(g.rms_norm(F, normalized_shape=(12,)))",
	}},
	// The same on the runtime's own GEMM (launch.Options.OwnGEMM).
	{name: "own_gemm", scale: 1, opts: Options{Launch: launch.Options{OwnGEMM: true}}, src: predefinedMatmuls},
	// Residual adds that cuBLASLt performs in its epilogue (launch.Fold),
	// batched and not, the product on either side of the add, the addend
	// an intermediate; and adds it must not take: a broadcast addend, a
	// product the program outputs too, a product read twice.
	{name: "cublaslt_residual", scale: 0.25, src: residualMatmuls},
	{name: "own_gemm_residual", scale: 0.25, opts: Options{Launch: launch.Options{OwnGEMM: true}}, src: residualMatmuls},
}

// residualMatmuls are matmuls followed by adds, foldable into cuBLASLt's
// epilogue or not.
var residualMatmuls = []string{
	"g = mi.new_kernel_graph()",
	"X = g.new_input(dims=(13, 40), dtype=mi.float16)",
	"W = g.new_input(dims=(40, 24), dtype=mi.float16)",
	"R = g.new_input(dims=(13, 24), dtype=mi.float16)",
	"A = g.new_input(dims=(3, 5, 16), dtype=mi.bfloat16)",
	"B = g.new_input(dims=(3, 16, 8), dtype=mi.bfloat16)",
	"S = g.new_input(dims=(3, 5, 8), dtype=mi.bfloat16)",
	"V = g.new_input(dims=(1, 24), dtype=mi.float16)",
	"U = g.new_input(dims=(24, 24), dtype=mi.float16)",
	"H = g.add(R, g.matmul(X, W))", // folds, the product second
	"E = g.exp(R)",
	"g.mark_output(g.add(g.matmul(g.exp(H), U), E))", // folds, an intermediate addend
	"g.mark_output(g.add(g.matmul(H, U), g.exp(H)))", // the addend computed after: no fold
	"g.mark_output(g.add(g.matmul(A, B), S))",        // folds, batched
	"g.mark_output(g.add(g.matmul(X, W), V))",        // a broadcast: no fold
	"P = g.matmul(R, U)",
	"g.mark_output(g.add(P, R))", // P is an output too: no fold
	"g.mark_output(P)",
	"Q = g.matmul(X, W)",
	"g.mark_output(g.add(Q, g.exp(Q)))", // Q read twice: no fold
}

// predefinedMatmuls are pre-defined matmuls at odd row counts, batched and
// not, fp16 and bf16, one reading another's output from the workspace.
var predefinedMatmuls = []string{
	"g = mi.new_kernel_graph()",
	"A = g.new_input(dims=(5, 3, 24), dtype=mi.float16)",
	"B = g.new_input(dims=(5, 24, 40), dtype=mi.float16)",
	"C = g.new_input(dims=(5, 40, 8), dtype=mi.float16)",
	"P = g.new_input(dims=(13, 32), dtype=mi.bfloat16)",
	"Q = g.new_input(dims=(32, 24), dtype=mi.bfloat16)",
	"g.mark_output(g.matmul(g.exp(g.matmul(A, B)), C))",
	"g.mark_output(g.matmul(P, Q))",
	// Rows that are not whole 16 bytes (K 13, N 7 and 11), a residual in
	// the call (beta 1).
	"X = g.new_input(dims=(3, 13), dtype=mi.float16)",
	"W = g.new_input(dims=(13, 7), dtype=mi.float16)",
	"Y = g.new_input(dims=(3, 7), dtype=mi.float16)",
	"U = g.new_input(dims=(13, 11), dtype=mi.bfloat16)",
	"g.mark_output(g.add(g.matmul(X, W), Y))",
	"g.mark_output(g.matmul(g.new_input(dims=(2, 13), dtype=mi.bfloat16), U))",
}

// everyElementwise is a program that applies every element-wise op of the
// op table to positive values (exp of the inputs), at kernel level where
// the op is allowed there, and at threadblock level in one graph-defined
// kernel; ops with scalars get 0.5 and 2.0.
func everyElementwise() []string {
	lines := []string{
		"g = mi.new_kernel_graph()",
		"X = g.new_input(dims=(4, 64), dtype=mi.float16)",
		"Y = g.new_input(dims=(4, 64), dtype=mi.float16)",
		"tb = mi.new_threadblock_graph(grid_dim=(2, 1, 1), block_dim=(128, 1, 1), forloop_range=1, reduction_dimx=64)",
		"tX = tb.exp(tb.forloop_accum(tb.new_input(dtensor=X, input_map=(0, -1, -1), forloop_dim=-1)))",
		"tY = tb.exp(tb.forloop_accum(tb.new_input(dtensor=Y, input_map=(0, -1, -1), forloop_dim=-1)))",
		"eX, eY = g.exp(X), g.exp(Y)",
	}
	call := func(graph string, k ugraph.OpKind, x, y string) string {
		args := []string{x}
		if k.Info().Class == ugraph.ClassBinary {
			args = append(args, y)
		}
		args = append(args, []string{"0.5", "2.0"}[:k.Info().Scalars]...)
		return fmt.Sprintf("%s.%v(%s)", graph, k, strings.Join(args, ", "))
	}
	for _, k := range ugraph.OpKinds(ugraph.LevelKernel | ugraph.LevelBlock) {
		if !k.IsElementwise() {
			continue
		}
		if k.AllowedAt(ugraph.LevelKernel) {
			lines = append(lines, "g.mark_output("+call("g", k, "eX", "eY")+")")
		}
		lines = append(lines, "tb.new_output(stensor="+call("tb", k, "tX", "tY")+", output_map=(0, -1, -1))")
	}
	return append(lines, "for o in g.customized([X, Y], tb):", "    g.mark_output(o)")
}

// dependentAfterLibrary is a cuBLASLt matmul, a graph-defined kernel on
// its product and another on that kernel's output.
var dependentAfterLibrary = []string{
	"g = mi.new_kernel_graph()",
	"X = g.new_input(dims=(16, 64), dtype=mi.float16)",
	"W = g.new_input(dims=(64, 32), dtype=mi.float16)",
	"P = g.matmul(X, W)",
	"ta = mi.new_threadblock_graph(grid_dim=(4, 1, 1), block_dim=(128, 1, 1), forloop_range=1, reduction_dimx=16)",
	"tP = ta.new_input(dtensor=P, input_map=(0, -1, -1), forloop_dim=-1)",
	"ta.new_output(stensor=ta.forloop_accum(ta.exp(ta.mul_scalar(tP, 0.125))), output_map=(0, -1, -1))",
	"A = g.customized([P], ta)[0]",
	"tb = mi.new_threadblock_graph(grid_dim=(2, 1, 1), block_dim=(64, 1, 1), forloop_range=1, reduction_dimx=16)",
	"tA = tb.new_input(dtensor=A, input_map=(0, -1, -1), forloop_dim=-1)",
	"tQ = tb.new_input(dtensor=P, input_map=(0, -1, -1), forloop_dim=-1)",
	"tb.new_output(stensor=tb.forloop_accum(tb.mul(tA, tQ), \"sum_todimx\"), output_map=(0, -1, -1))",
	"g.mark_output(g.customized([A, P], tb)[0])",
}

// dependentKernels is a matmul's kernel, a runtime kernel on its output,
// and a kernel that reads both.
var dependentKernels = []string{
	"g = mi.new_kernel_graph()",
	"X = g.new_input(dims=(16, 64), dtype=mi.float16)",
	"W = g.new_input(dims=(64, 32), dtype=mi.float16)",
	"tb = mi.new_threadblock_graph(grid_dim=(2, 1, 1), block_dim=(128, 1, 1), forloop_range=4, reduction_dimx=16)",
	"tX = tb.new_input(dtensor=X, input_map=(-1, -1, -1), forloop_dim=1)",
	"tW = tb.new_input(dtensor=W, input_map=(1, -1, -1), forloop_dim=0)",
	"tb.new_output(stensor=tb.forloop_accum(tb.matmul(tX, tW)), output_map=(1, -1, -1))",
	"Y = g.customized([X, W], tb)[0]",
	"Z = g.exp(g.mul_scalar(Y, 0.25))",
	"tc = mi.new_threadblock_graph(grid_dim=(4, 1, 1), block_dim=(64, 1, 1), forloop_range=1, reduction_dimx=16)",
	"tY = tc.new_input(dtensor=Y, input_map=(0, -1, -1), forloop_dim=-1)",
	"tZ = tc.new_input(dtensor=Z, input_map=(0, -1, -1), forloop_dim=-1)",
	"tc.new_output(stensor=tc.forloop_accum(tc.mul(tY, tZ), \"sum_todimx\"), output_map=(0, -1, -1))",
	"g.mark_output(g.customized([Y, Z], tc)[0])",
}
