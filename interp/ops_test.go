package interp_test

import (
	"math"
	"testing"

	"github.com/mirage-go/mirage/interp"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

var nan = math.NaN()

// An opCase is one op applied to small tensors, with the result worked out
// by hand. Each case runs at every level its op is allowed at: as a kernel op,
// and as a block op in a one-block, one-iteration kernel (where the None
// accumulator of a single iteration is the identity).
type opCase struct {
	name string
	kind ugraph.OpKind
	attr ugraph.Attr
	dimx int // block level: reduction_dimx (default 1)
	in   []*interp.Tensor
	want *interp.Tensor
}

var opCases = []opCase{
	// Unary ops, each at a few points.
	{"exp", ugraph.OpExp, ugraph.Attr{}, 0,
		[]*interp.Tensor{ten(dims(1, 3), 0, 1, -1)}, ten(dims(1, 3), 1, 2.718281828459045, 0.36787944117144233)},
	{"square", ugraph.OpSquare, ugraph.Attr{}, 0,
		[]*interp.Tensor{ten(dims(3), -3, 0.5, 0)}, ten(dims(3), 9, 0.25, 0)},
	{"sqrt", ugraph.OpSqrt, ugraph.Attr{}, 0,
		[]*interp.Tensor{ten(dims(3), 4, 2, -1)}, ten(dims(3), 2, 1.4142135623730951, nan)},
	{"silu", ugraph.OpSilu, ugraph.Attr{}, 0,
		[]*interp.Tensor{ten(dims(4), 0, 1, -1, -800)}, ten(dims(4), 0, 0.7310585786300049, -0.2689414213699951, 0)},
	{"gelu", ugraph.OpGelu, ugraph.Attr{}, 0, // x·Φ(x), the exact erf form
		[]*interp.Tensor{ten(dims(4), 0, 1, -1, 2)}, ten(dims(4), 0, 0.8413447460685429, -0.15865525393145707, 1.9544997361036416)},
	{"relu", ugraph.OpRelu, ugraph.Attr{}, 0,
		[]*interp.Tensor{ten(dims(4), -2, 0, 3, nan)}, ten(dims(4), 0, 0, 3, nan)},
	{"clamp", ugraph.OpClamp, ugraph.Attr{Scalars: [2]float64{-1, 2}}, 0,
		[]*interp.Tensor{ten(dims(4), -3, 0.5, 5, 2)}, ten(dims(4), -1, 0.5, 2, 2)},
	{"mul_scalar", ugraph.OpMulScalar, ugraph.Attr{Scalars: [2]float64{2.5}}, 0,
		[]*interp.Tensor{ten(dims(2), 2, -4)}, ten(dims(2), 5, -10)},
	{"tanh", ugraph.OpTanh, ugraph.Attr{}, 0,
		[]*interp.Tensor{ten(dims(4), 0, 1, -2, nan)}, ten(dims(4), 0, 0.7615941559557649, -0.9640275800758169, nan)},
	{"sigmoid", ugraph.OpSigmoid, ugraph.Attr{}, 0,
		[]*interp.Tensor{ten(dims(4), 0, 2, -800, nan)}, ten(dims(4), 0.5, 0.8807970779778823, 0, nan)},
	{"log", ugraph.OpLog, ugraph.Attr{}, 0,
		[]*interp.Tensor{ten(dims(4), 1, math.E, -1, 0)}, ten(dims(4), 0, 1, nan, math.Inf(-1))},

	// Binary ops, broadcasting through size-1 dims.
	{"add/row broadcast", ugraph.OpAdd, ugraph.Attr{}, 0,
		[]*interp.Tensor{ten(dims(2, 3), 1, 2, 3, 4, 5, 6), ten(dims(1, 3), 10, 20, 30)},
		ten(dims(2, 3), 11, 22, 33, 14, 25, 36)},
	{"sub", ugraph.OpSub, ugraph.Attr{}, 0,
		[]*interp.Tensor{ten(dims(2, 1), 10, 20), ten(dims(2, 3), 1, 2, 3, 4, 5, 6)},
		ten(dims(2, 3), 9, 8, 7, 16, 15, 14)},
	{"mul", ugraph.OpMul, ugraph.Attr{}, 0,
		[]*interp.Tensor{ten(dims(2, 2), 1, 2, 3, 4), ten(dims(2, 2), 5, 6, 7, -8)},
		ten(dims(2, 2), 5, 12, 21, -32)},
	{"div/column broadcast", ugraph.OpDiv, ugraph.Attr{}, 0,
		[]*interp.Tensor{ten(dims(2, 3), 2, 4, 6, 3, 6, 9), ten(dims(2, 1), 2, 3)},
		ten(dims(2, 3), 1, 2, 3, 1, 2, 3)},
	{"div/both broadcast", ugraph.OpDiv, ugraph.Attr{}, 0,
		[]*interp.Tensor{ten(dims(2, 1), 1, 2), ten(dims(1, 3), 1, 2, 4)},
		ten(dims(2, 3), 1, 0.5, 0.25, 2, 1, 0.5)},
	{"div/rank 3 middle broadcast", ugraph.OpDiv, ugraph.Attr{}, 0,
		[]*interp.Tensor{ten(dims(2, 2, 2), 1, 2, 3, 4, 5, 6, 7, 8), ten(dims(2, 1, 2), 1, 2, 10, 20)},
		ten(dims(2, 2, 2), 1, 1, 3, 2, 0.5, 0.3, 0.7, 0.4)},
	{"pow", ugraph.OpPow, ugraph.Attr{}, 0,
		[]*interp.Tensor{ten(dims(1, 3), 2, 3, 4), ten(dims(1, 3), 2, 0.5, -1)},
		ten(dims(1, 3), 4, 1.7320508075688772, 0.25)},

	// Matmul; k = 3 and 5 also exercise the loop tail after blocks of 4.
	{"matmul/2x3", ugraph.OpMatmul, ugraph.Attr{}, 0,
		[]*interp.Tensor{ten(dims(2, 3), 1, 2, 3, 4, 5, 6), ten(dims(3, 2), 7, 8, 9, 10, 11, 12)},
		ten(dims(2, 2), 58, 64, 139, 154)},
	{"matmul/k=5", ugraph.OpMatmul, ugraph.Attr{}, 0,
		[]*interp.Tensor{ten(dims(1, 5), 1, 2, 3, 4, 5), ten(dims(5, 2), 1, 0, 1, 0, 1, 0, 1, 0, 1, 1)},
		ten(dims(1, 2), 15, 5)},
	{"matmul/batched", ugraph.OpMatmul, ugraph.Attr{}, 0,
		[]*interp.Tensor{ten(dims(2, 2, 2), 1, 2, 3, 4, 5, 6, 7, 8), ten(dims(2, 2, 1), 1, 1, 2, -1)},
		ten(dims(2, 2, 1), 3, 7, 4, 6)},

	// Reductions.
	{"reduction/dim 0", ugraph.OpReduction, ugraph.Attr{Dim: 0}, 0,
		[]*interp.Tensor{ten(dims(2, 3), 1, 2, 3, 4, 5, 6)}, ten(dims(1, 3), 5, 7, 9)},
	{"reduction/dim 1", ugraph.OpReduction, ugraph.Attr{Dim: 1}, 0,
		[]*interp.Tensor{ten(dims(2, 3), 1, 2, 3, 4, 5, 6)}, ten(dims(2, 1), 6, 15)},
	{"reduction/middle dim", ugraph.OpReduction, ugraph.Attr{Dim: 1}, 0,
		[]*interp.Tensor{ten(dims(2, 2, 2), 1, 2, 3, 4, 5, 6, 7, 8)}, ten(dims(2, 1, 2), 4, 6, 12, 14)},
	{"reduction_to_dimx/strided", ugraph.OpReductionToDimx, ugraph.Attr{Dim: 1}, 2, // j sums t·2+j
		[]*interp.Tensor{ten(dims(1, 6), 1, 2, 3, 4, 5, 6)}, ten(dims(1, 2), 1+3+5, 2+4+6)},
	{"reduction_to_dimx/dim 0", ugraph.OpReductionToDimx, ugraph.Attr{Dim: 0}, 2,
		[]*interp.Tensor{ten(dims(4, 2), 1, 2, 3, 4, 5, 6, 7, 8)}, ten(dims(2, 2), 1+5, 2+6, 3+7, 4+8)},
	{"reduction_to_dimx/identity", ugraph.OpReductionToDimx, ugraph.Attr{Dim: 1}, 3,
		[]*interp.Tensor{ten(dims(1, 3), 1, 2, 3)}, ten(dims(1, 3), 1, 2, 3)},

	// rms_norm: x / sqrt(mean(x²)), no epsilon, so a zero row is 0/0.
	{"rms_norm/last dim", ugraph.OpRMSNorm, ugraph.Attr{Dim: 1}, 0,
		[]*interp.Tensor{ten(dims(2, 2), 3, 4, 0, 0)}, ten(dims(2, 2), 3/math.Sqrt(12.5), 4/math.Sqrt(12.5), nan, nan)},
	{"rms_norm/two dims", ugraph.OpRMSNorm, ugraph.Attr{Dim: 0}, 0, // kernel only: blocks normalize the last dim
		[]*interp.Tensor{ten(dims(2, 2), 3, 0, 0, 4)}, ten(dims(2, 2), 1.2, 0, 0, 1.6)},

	// concat.
	{"concat/dim 0", ugraph.OpConcat, ugraph.Attr{Dim: 0}, 0,
		[]*interp.Tensor{ten(dims(1, 2), 1, 2), ten(dims(2, 2), 3, 4, 5, 6)}, ten(dims(3, 2), 1, 2, 3, 4, 5, 6)},
	{"concat/dim 1", ugraph.OpConcat, ugraph.Attr{Dim: 1}, 0,
		[]*interp.Tensor{ten(dims(2, 1), 1, 2), ten(dims(2, 2), 3, 4, 5, 6)}, ten(dims(2, 3), 1, 3, 4, 2, 5, 6)},
	{"concat/rank 3 middle", ugraph.OpConcat, ugraph.Attr{Dim: 1}, 0,
		[]*interp.Tensor{ten(dims(2, 1, 2), 1, 2, 3, 4), ten(dims(2, 1, 2), 5, 6, 7, 8)},
		ten(dims(2, 2, 2), 1, 2, 5, 6, 3, 4, 7, 8)},
}

func TestOps(t *testing.T) {
	for _, c := range opCases {
		ran := false
		if c.kind.AllowedAt(ugraph.LevelKernel) {
			ran = true
			t.Run("kernel/"+c.name, func(t *testing.T) {
				g := kernel.New()
				out := must(g.Add(c.kind, c.attr, addInputs(g, c.in)...))
				check(g.MarkOutput(out))
				expectClose(t, c.want, run(t, g, c.in)[0], 1e-15)
			})
		}
		if c.kind.AllowedAt(ugraph.LevelBlock) && (c.kind != ugraph.OpRMSNorm || c.attr.Dim == c.in[0].Shape.Rank()-1) {
			ran = true
			t.Run("block/"+c.name, func(t *testing.T) {
				b := must(block.New(block.Dim3{1, 1, 1}, block.Dim3{128, 1, 1}, 1, max(c.dimx, 1)))
				var tiles []block.TensorID
				for _, x := range c.in {
					tiles = append(tiles, must(b.AddInput(x.Shape, dt, block.Replicate, -1)))
				}
				y := must(b.Add(c.kind, c.attr, tiles...))
				check(b.AddOutput(must(b.Add(ugraph.OpForloopAccum, ugraph.Attr{}, y)), block.Replicate))
				expectClose(t, c.want, run(t, blockKernel(b, c.in), c.in)[0], 1e-15)
			})
		}
		if !ran {
			t.Errorf("%s: ran at no level", c.name)
		}
	}
}

// loopCase is a one-input block graph with a for-loop and, possibly, a grid:
// x is loaded with imap and fmap, accumulated by accum, and stored by omap.
type loopCase struct {
	name    string
	grid    block.Dim3
	f, dimx int
	imap    block.Map
	fmap    int
	accum   ugraph.Accum
	omap    block.Map
	x, want *interp.Tensor
}

var x2x4 = ten(dims(2, 4), 1, 2, 3, 4, 5, 6, 7, 8)
var x1x8 = ten(dims(1, 8), 1, 2, 3, 4, 5, 6, 7, 8)

var loopCases = []loopCase{
	// Every accumulator with F = 2: iteration 0 reads columns 0-1, iteration
	// 1 columns 2-3.
	{"accum none", block.Dim3{1, 1, 1}, 2, 1, block.Replicate, 1, ugraph.AccumNone, block.Replicate,
		x2x4, ten(dims(2, 2), 1+3, 2+4, 5+7, 6+8)},
	{"accum sum", block.Dim3{1, 1, 1}, 2, 1, block.Replicate, 1, ugraph.AccumSum, block.Replicate,
		x2x4, ten(dims(2, 1), 10, 26)},
	{"accum mean", block.Dim3{1, 1, 1}, 2, 1, block.Replicate, 1, ugraph.AccumMean, block.Replicate,
		x2x4, ten(dims(2, 1), 2.5, 6.5)},
	{"accum rms", block.Dim3{1, 1, 1}, 2, 1, block.Replicate, 1, ugraph.AccumRMS, block.Replicate,
		x2x4, ten(dims(2, 1), math.Sqrt((1+4+9+16)/4.0), math.Sqrt((25+36+49+64)/4.0))},
	{"accum sum_todimx", block.Dim3{1, 1, 1}, 2, 2, block.Replicate, 1, ugraph.AccumSumToDimx, block.Replicate,
		x1x8, ten(dims(1, 2), 1+3+5+7, 2+4+6+8)}, // tiles [1,4]; j sums t·2+j over both
	{"accum sum_todimx to 1", block.Dim3{1, 1, 1}, 2, 1, block.Replicate, 1, ugraph.AccumSumToDimx, block.Replicate,
		x2x4, ten(dims(2, 1), 10, 26)},
	{"accum sum_todimx identity", block.Dim3{1, 1, 1}, 2, 2, block.Replicate, 1, ugraph.AccumSumToDimx, block.Replicate,
		x2x4, ten(dims(2, 2), 1+3, 2+4, 5+7, 6+8)},
	{"accum none over rows", block.Dim3{1, 1, 1}, 2, 1, block.Replicate, 0, ugraph.AccumNone, block.Replicate,
		x2x4, ten(dims(1, 4), 6, 8, 10, 12)},

	// Tiling. Block b of 2 owns columns 4b..4b+3 and walks them in 2 steps:
	// tile index b·F + i. (Interleaving, i·grid + b, would give 6, 8, 10, 12.)
	{"fmap dim partitioned by the grid", block.Dim3{2, 1, 1}, 2, 1, block.Map{1, -1, -1}, 1, ugraph.AccumNone, block.Map{1, -1, -1},
		x1x8, ten(dims(1, 4), 1+3, 2+4, 5+7, 6+8)},
	{"fmap dim partitioned by grid y", block.Dim3{1, 2, 1}, 2, 1, block.Map{-1, 1, -1}, 1, ugraph.AccumSum, block.Map{-1, 1, -1},
		x1x8, ten(dims(1, 2), 1+2+3+4, 5+6+7+8)},
	// A 2x2 grid: x splits columns, y rows; tile (bx, by) = x[by, 2bx:2bx+2]
	// lands at out[bx, 2by:2by+2].
	{"2-D grid, maps transposed", block.Dim3{2, 2, 1}, 1, 1, block.Map{1, 0, -1}, -1, ugraph.AccumNone, block.Map{0, 1, -1},
		x2x4, ten(dims(2, 4), 1, 2, 5, 6, 3, 4, 7, 8)},
	{"2-D grid, identity", block.Dim3{2, 2, 1}, 1, 1, block.Map{1, 0, -1}, -1, ugraph.AccumNone, block.Map{1, 0, -1},
		x2x4, x2x4},
	// A 3-axis grid over a rank-3 tensor, plus a for-loop over the last dim.
	{"3-D grid", block.Dim3{2, 2, 2}, 2, 1, block.Map{2, 0, 1}, 2, ugraph.AccumNone, block.Map{2, 0, 1},
		ten(dims(2, 2, 8), seq(32)...), ten(dims(2, 2, 4),
			0+2, 1+3, 4+6, 5+7, 8+10, 9+11, 12+14, 13+15,
			16+18, 17+19, 20+22, 21+23, 24+26, 25+27, 28+30, 29+31)},
}

// seq returns 0, 1, ..., n-1.
func seq(n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = float64(i)
	}
	return s
}

func TestLoopAndGrid(t *testing.T) {
	for _, c := range loopCases {
		t.Run(c.name, func(t *testing.T) {
			b := must(block.New(c.grid, block.Dim3{128, 1, 1}, c.f, c.dimx))
			x := must(b.AddInput(c.x.Shape, dt, c.imap, c.fmap))
			acc := must(b.Add(ugraph.OpForloopAccum, ugraph.Attr{Accum: c.accum}, x))
			check(b.AddOutput(acc, c.omap))
			ins := []*interp.Tensor{c.x}
			expectClose(t, c.want, run(t, blockKernel(b, ins), ins)[0], 1e-15)
		})
	}
}

// A tile that does not depend on the iteration (fmap -1) is combined with
// one that does, in every iteration: Σ_i x·y_i. A dead op that would make
// NaN must not matter, and post-loop ops run on the accumulated tile.
func TestLoopInvariantTileAndPostLoop(t *testing.T) {
	x, y := ten(dims(1, 2), 1, 2), ten(dims(1, 4), 1, 2, 3, 4)
	b := must(block.New(block.Dim3{1, 1, 1}, block.Dim3{128, 1, 1}, 2, 1))
	tx := must(b.AddInput(x.Shape, dt, block.Replicate, -1))
	ty := must(b.AddInput(y.Shape, dt, block.Replicate, 1))
	must(b.Add(ugraph.OpLog, ugraph.Attr{}, must(b.Add(ugraph.OpMulScalar, ugraph.Attr{Scalars: [2]float64{-1}}, tx)))) // dead
	acc := must(b.Add(ugraph.OpForloopAccum, ugraph.Attr{}, must(b.Add(ugraph.OpMul, ugraph.Attr{}, tx, ty))))
	check(b.AddOutput(must(b.Add(ugraph.OpMulScalar, ugraph.Attr{Scalars: [2]float64{10}}, acc)), block.Replicate))
	check(b.AddOutput(acc, block.Replicate))
	ins := []*interp.Tensor{x, y}
	outs := run(t, blockKernel(b, ins), ins)
	expectClose(t, ten(dims(1, 2), 40, 120), outs[0], 0)
	expectClose(t, ten(dims(1, 2), 4, 12), outs[1], 0)
}

// A replicated input (imap -1 on an axis of size 2) is read whole by both
// blocks; the partitioned one is split.
func TestReplicatedInput(t *testing.T) {
	a, w := ten(dims(2, 2), 1, 2, 3, 4), ten(dims(2, 4), 1, 0, 2, 1, 0, 1, 1, -1)
	b := must(block.New(block.Dim3{2, 1, 1}, block.Dim3{128, 1, 1}, 1, 1))
	ta := must(b.AddInput(a.Shape, dt, block.Replicate, -1))
	tw := must(b.AddInput(w.Shape, dt, block.Map{1, -1, -1}, -1))
	acc := must(b.Add(ugraph.OpForloopAccum, ugraph.Attr{}, must(b.Add(ugraph.OpMatmul, ugraph.Attr{}, ta, tw))))
	check(b.AddOutput(acc, block.Map{1, -1, -1}))
	ins := []*interp.Tensor{a, w}
	expectClose(t, ten(dims(2, 4), 1, 2, 4, -1, 3, 4, 10, -1), run(t, blockKernel(b, ins), ins)[0], 0)
}

// TestEveryOpHasACase ranges over the op table: every compute op, at
// whichever level, has a hand-worked case above (accumulators have tests
// of their own).
func TestEveryOpHasACase(t *testing.T) {
	covered := map[ugraph.OpKind]bool{}
	for _, c := range opCases {
		covered[c.kind] = true
	}
	for _, k := range ugraph.OpKinds(ugraph.LevelKernel | ugraph.LevelBlock) {
		switch k.Info().Class {
		case ugraph.ClassIO, ugraph.ClassCustomized, ugraph.ClassAccum:
			continue
		}
		if !covered[k] {
			t.Errorf("%v has no case in opCases", k)
		}
	}
}

// NaN propagates through every op but pow, which is C's powf (and torch's
// pow): pow(NaN, 0) and pow(1, NaN) are 1 (DESIGN §3).
func TestPowOfNaN(t *testing.T) {
	g := kernel.New()
	x := must(g.AddInput(ugraph.MustShape(3), dt))
	y := must(g.AddInput(ugraph.MustShape(3), dt))
	check(g.MarkOutput(must(g.Add(ugraph.OpPow, ugraph.Attr{}, x, y))))
	nan := math.NaN()
	out := run(t, g, []*interp.Tensor{ten(dims(3), nan, 1, nan), ten(dims(3), 0, nan, 2)})[0]
	if out.Data[0] != 1 || out.Data[1] != 1 || !math.IsNaN(out.Data[2]) {
		t.Errorf("pow(NaN, 0), pow(1, NaN), pow(NaN, 2) = %v, want 1, 1, NaN", out.Data)
	}
}
