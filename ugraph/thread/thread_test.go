package thread

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
)

// groupsOf summarizes the fusion decisions: one line per group, its ops
// by kind and its stores.
func groupsOf(g *Graph) []string {
	var s []string
	for gi := range g.Groups {
		gr := &g.Groups[gi]
		var names []string
		for _, i := range gr.Ops() {
			op := &g.Block.Ops[i]
			names = append(names, op.Kind.String()+accumSuffix(op.Attr, op.Kind))
		}
		line := strings.Join(names, "+")
		if n := len(gr.Stores); n > 0 {
			line += fmt.Sprintf(" >%d", n)
		}
		s = append(s, line)
	}
	return s
}

// storageOf lists each live tile's storage in tile order: r(egisters),
// s(hared), d(evice).
func storageOf(g *Graph) string {
	var b strings.Builder
	for _, t := range g.Tiles {
		switch t.Storage {
		case Registers:
			b.WriteByte('r')
		case Shared:
			b.WriteByte('s')
		case Device:
			b.WriteByte('d')
		default:
			b.WriteByte('-')
		}
	}
	return b.String()
}

func TestFusion(t *testing.T) {
	tests := []struct {
		name    string
		build   func(testing.TB) *block.Graph
		groups  []string
		storage string
	}{
		{"rmsnorm_matmul", rmsnormMatmul,
			[]string{"matmul+forloop_accum(none)+div >1", "forloop_accum(rms)"}, "ssrrsr"},
		// silu fuses into A1's group; mul joins it too, reading A2, which
		// its own group writes out after the loop.
		{"gated_mlp", gatedMLP,
			[]string{"matmul+forloop_accum(none)+silu+mul >1", "matmul+forloop_accum(none)"}, "sssrrrsrr"},
		// exp's tile has two uses (sum and the second matmul): it ends its
		// group and is materialized for both.
		{"gqa kernel 1", gqa1,
			[]string{"matmul+exp", "forloop_accum(sum) >1", "matmul+forloop_accum(none) >1"}, "sssrssrr"},
		{"gqa kernel 2", gqa2,
			[]string{"forloop_accum(sum_todimx)+div >1", "forloop_accum(sum)"}, "ddssr"},
		{"unary chain on an input starts at the first op", func(t testing.TB) *block.Graph {
			b := newBuilder(t, block.Dim3{1, 1, 1}, 128, 2, 1)
			x := b.in(sh(16, 32), fp16, block.Replicate, 1)
			y := b.op(ugraph.OpSqrt, none, b.op(ugraph.OpExp, none, x))
			b.out(b.acc(y, ugraph.AccumNone), block.Replicate)
			return b.g
		}, []string{"exp+sqrt+forloop_accum(none) >1"}, "srrs"},
		{"a tile read twice ends its chain", func(t testing.TB) *block.Graph {
			b := newBuilder(t, block.Dim3{1, 1, 1}, 128, 1, 1)
			x := b.in(sh(16, 32), fp16, block.Replicate, -1)
			a := b.acc(x, ugraph.AccumNone)
			e := b.op(ugraph.OpExp, none, a)
			b.out(b.op(ugraph.OpMul, none, e, e), block.Replicate)
			return b.g
		}, []string{"forloop_accum(none)+exp", "mul >1"}, "dssr"},
		{"a broadcast chain operand is not fused", func(t testing.TB) *block.Graph {
			b := newBuilder(t, block.Dim3{1, 1, 1}, 64, 1, 1)
			x := b.in(sh(16, 32), fp16, block.Replicate, -1)
			s := b.op(ugraph.OpReduction, ugraph.Attr{Dim: 1}, x) // [16, 1]
			e := b.op(ugraph.OpExp, none, s)
			big := b.op(ugraph.OpSquare, none, x)
			b.out(b.acc(b.op(ugraph.OpAdd, none, e, big), ugraph.AccumNone), block.Replicate)
			return b.g
		}, []string{"reduction+exp", "square+add+forloop_accum(none) >1"}, "srsrrr"}, // x, read by two ops, is copied in once; one iteration passes the sums through
		{"one accumulator per group", func(t testing.TB) *block.Graph {
			b := newBuilder(t, block.Dim3{1, 1, 1}, 128, 4, 1)
			x := b.in(sh(16, 32), fp16, block.Replicate, 1)
			s := b.acc(b.op(ugraph.OpExp, none, x), ugraph.AccumMean)
			b.out(b.op(ugraph.OpSqrt, none, s), block.Replicate)
			return b.g
		}, []string{"exp", "forloop_accum(mean)+sqrt >1"}, "sssr"},
		{"dead ops are left out", func(t testing.TB) *block.Graph {
			b := newBuilder(t, block.Dim3{1, 1, 1}, 128, 1, 1)
			x := b.in(sh(16, 32), fp16, block.Replicate, -1)
			b.op(ugraph.OpExp, none, x)
			b.out(b.acc(x, ugraph.AccumSum), block.Replicate)
			return b.g
		}, []string{"forloop_accum(sum) >1"}, "d-s"},
	}
	for _, tt := range tests {
		g, err := Derive(tt.build(t), sm90, Options{})
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if got := groupsOf(g); !reflect.DeepEqual(got, tt.groups) {
			t.Errorf("%s: groups %q, want %q\n%v", tt.name, got, tt.groups, g)
		}
		if got := storageOf(g); got != tt.storage {
			t.Errorf("%s: storage %q, want %q\n%v", tt.name, got, tt.storage, g)
		}
		checkPlan(t, tt.name, g)
	}
}

// TestSmemBytes pins the peak shared memory of the examples and how a
// limit lowers the pipeline depth.
func TestSmemBytes(t *testing.T) {
	tests := []struct {
		name   string
		build  func(testing.TB) *block.Graph
		opts   Options
		arch   target.Arch
		stages int
		bytes  int
	}{
		// X 16x64 and W 64x64 fp16 with rows padded to 72 elements, 4
		// buffers each, and the 16 fp32 rms sums.
		{"rmsnorm_matmul", rmsnormMatmul, Options{}, sm90, 4, 4*(16*72*2) + 4*(64*72*2) + 128},
		{"rmsnorm_matmul 2 stages", rmsnormMatmul, Options{Stages: 2}, sm90, 2, 2*(16*72*2) + 2*(64*72*2) + 128},
		// A graph's own depth replaces the default, deeper or shallower,
		// and Options still bound it.
		{"rmsnorm_matmul, the graph's 3 stages", withStages(rmsnormMatmul, 3), Options{}, sm90, 3, 3*(16*72*2) + 3*(64*72*2) + 128},
		{"rmsnorm_matmul, the graph's 6 stages", withStages(rmsnormMatmul, 6), Options{}, sm90, 6, 6*(16*72*2) + 6*(64*72*2) + 128},
		{"rmsnorm_matmul, the graph's 6 stages under 2", withStages(rmsnormMatmul, 6), Options{Stages: 2}, sm90, 2, 2*(16*72*2) + 2*(64*72*2) + 128},
		{"gqa kernel 1, the graph's 3 stages, tight limit", withStages(gqa1, 3), Options{}, smemLimit(120000), 2, 256*72*2 + 2*2*(64*72*2) + 256*4 + 256*72*2},
		// X has 8 rows padded to 16 for mma; A2 (8x64 fp32) reuses the
		// input buffers after the loop.
		{"gated_mlp", gatedMLP, Options{}, sm90, 4, 4*(16*72*2) + 2*4*(64*72*2)},
		{"gqa kernel 1", gqa1, Options{}, sm90, 4, 256*72*2 + 2*4*(64*72*2) + 256*4 + 256*72*2},
		{"gqa kernel 1 on sm_80 with a tight limit", gqa1, Options{}, smemLimit(120000), 2, 256*72*2 + 2*2*(64*72*2) + 256*4 + 256*72*2},
		// The inputs stay in device memory: one iteration, no mma.
		{"gqa kernel 2", gqa2, Options{}, sm90, 1, 64*68*4 + 256},
	}
	for _, tt := range tests {
		g, err := Derive(tt.build(t), tt.arch, tt.opts)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if g.Stages != tt.stages || g.SmemBytes != tt.bytes {
			t.Errorf("%s: %d stages, %d bytes; want %d, %d\n%v", tt.name, g.Stages, g.SmemBytes, tt.stages, tt.bytes, g)
		}
	}
	_, err := Derive(gqa1(t), smemLimit(48<<10), Options{})
	var se *SmemError
	if !errors.As(err, &se) || se.Limit != 48<<10 || se.Bytes != 256*72*2+2*(64*72*2)+256*4+256*72*2 {
		t.Errorf("gqa kernel 1 under 48 KiB: error %v, want a *SmemError with the 1-stage bytes", err)
	}
}

// withStages builds a graph with build and sets its pipeline depth.
func withStages(build func(testing.TB) *block.Graph, n int) func(testing.TB) *block.Graph {
	return func(t testing.TB) *block.Graph {
		b := build(t)
		if err := b.SetStages(n); err != nil {
			t.Fatal(err)
		}
		return b
	}
}

func TestPitch(t *testing.T) {
	tests := []struct {
		n    int
		dt   ugraph.DType
		want int
	}{
		{64, ugraph.Float16, 72},   // 128 B -> 144 B
		{8, ugraph.Float16, 8},     // 16 B is already odd
		{16, ugraph.Float16, 24},   // 32 B -> 48 B
		{24, ugraph.Float16, 24},   // 48 B
		{64, ugraph.Float32, 68},   // 256 B -> 272 B
		{1, ugraph.Float32, 1},     // not a multiple of 16 B: packed
		{100, ugraph.Float16, 100}, // 200 B: packed
		{1024, ugraph.BFloat16, 1032},
	}
	for _, tt := range tests {
		if got := Pitch(tt.n, tt.dt); got != tt.want {
			t.Errorf("Pitch(%d, %v) = %d, want %d", tt.n, tt.dt, got, tt.want)
		}
	}
}

func TestWarpGrid(t *testing.T) {
	tests := []struct {
		mTiles, nTiles, warps int
		wm, wn                int
	}{
		{1, 8, 4, 1, 4},  // 16x64: each warp takes 16 columns
		{16, 8, 4, 4, 1}, // 256x64: each warp takes 64 rows
		{4, 16, 4, 2, 2}, // 64x128
		{8, 1, 4, 4, 1},  // N = 8: only one warp along N
		{1, 1, 8, 8, 1},  // a single tile: the other warps idle
		{2, 6, 4, 2, 2},  // 6 n-tiles do not split 4 ways
		{3, 4, 1, 1, 1},  // one warp does everything
		{1, 7, 8, 1, 7},  // 7 n-tiles on 7 of 8 warps, the eighth idle
		{1, 10, 8, 1, 5}, // 10 n-tiles on 5 of 8 warps, 2 each
		{1, 7, 4, 4, 1},  // 7 n-tiles do not split 2 or 4 ways: one warp
	}
	for _, tt := range tests {
		if wm, wn := warpGrid(tt.mTiles, tt.nTiles, tt.warps); wm != tt.wm || wn != tt.wn {
			t.Errorf("warpGrid(%d, %d, %d) = %d, %d; want %d, %d", tt.mTiles, tt.nTiles, tt.warps, wm, wn, tt.wm, tt.wn)
		}
	}
}

func TestMMALowering(t *testing.T) {
	mm := func(dt ugraph.DType, a, b ugraph.Shape) *block.Graph {
		bd := newBuilder(t, block.Dim3{1, 1, 1}, 128, 1, 1)
		x := bd.in(a, dt, block.Replicate, -1)
		y := bd.in(b, dt, block.Replicate, -1)
		bd.out(bd.acc(bd.op(ugraph.OpMatmul, none, x, y), ugraph.AccumNone), block.Replicate)
		return bd.g
	}
	tests := []struct {
		name string
		g    *block.Graph
		mma  bool
	}{
		{"fp16 16x64x64", mm(ugraph.Float16, sh(16, 64), sh(64, 64)), true},
		{"bf16 batched", mm(ugraph.BFloat16, sh(2, 3, 32, 16), sh(2, 3, 16, 8)), true},
		{"M not a multiple of 16", mm(ugraph.Float16, sh(5, 16), sh(16, 8)), true},
		{"fp32", mm(ugraph.Float32, sh(16, 64), sh(64, 64)), false},
		{"K = 8", mm(ugraph.Float16, sh(16, 8), sh(8, 64)), false},
		{"N = 12", mm(ugraph.Float16, sh(16, 16), sh(16, 12)), false},
	}
	// An accumulator's tile is kept in fp32 whatever its dtype: a matmul
	// reading one runs SIMT (mma.sync takes 16-bit operands; superopt once
	// emitted CUDA that did not compile for such a μGraph).
	accIn := func() *block.Graph {
		bd := newBuilder(t, block.Dim3{1, 1, 1}, 128, 1, 1)
		x := bd.acc(bd.in(sh(16, 64), ugraph.Float16, block.Replicate, -1), ugraph.AccumNone)
		y := bd.acc(bd.in(sh(64, 64), ugraph.Float16, block.Replicate, -1), ugraph.AccumNone)
		bd.out(bd.op(ugraph.OpMatmul, none, x, y), block.Replicate)
		return bd.g
	}
	g, err := Derive(accIn(), sm90, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if g.Ops[4].MMA != nil {
		t.Errorf("a matmul of an fp32 accumulator tile runs on tensor cores")
	}
	for _, tt := range tests {
		g, err := Derive(tt.g, sm90, Options{})
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		p := g.Ops[2].MMA
		if (p != nil) != tt.mma {
			t.Errorf("%s: mma %v, want %v", tt.name, p != nil, tt.mma)
		}
		// Input tiles a matmul reads (each element once per column of
		// the other operand) are copied to shared memory, even with one
		// iteration, whether it runs on tensor cores or not.
		if s := g.Tiles[0].Storage; s != Shared {
			t.Errorf("%s: operand storage %v, want shared", tt.name, s)
		}
		checkPlan(t, tt.name, g)
	}
}

// TestInputsReadInPlace: with one iteration, an input tile stays in device
// memory exactly when the kernel reads each of its elements once; a tile
// read more often is copied into shared memory once, so that the kernel
// requests no more of it than its size (issue #17's weights criterion).
func TestInputsReadInPlace(t *testing.T) {
	tests := []struct {
		name    string
		x       ugraph.Shape // the input tile asked about
		inPlace bool
		ops     func(b *builder, x block.TensorID) block.TensorID // x's readers; returns the tile to accumulate
	}{
		{"one element-wise reader", sh(16, 32), true, func(b *builder, x block.TensorID) block.TensorID {
			return b.op(ugraph.OpExp, none, x)
		}},
		{"one reduction", sh(16, 32), true, func(b *builder, x block.TensorID) block.TensorID {
			return b.op(ugraph.OpReduction, ugraph.Attr{Dim: 1}, x)
		}},
		{"rms_norm reads the row twice", sh(16, 32), false, func(b *builder, x block.TensorID) block.TensorID {
			return b.op(ugraph.OpRMSNorm, none, x)
		}},
		{"two readers in one chain", sh(16, 32), false, func(b *builder, x block.TensorID) block.TensorID {
			return b.op(ugraph.OpMul, none, x, b.op(ugraph.OpExp, none, x))
		}},
		{"one op reading it twice", sh(16, 32), false, func(b *builder, x block.TensorID) block.TensorID {
			return b.op(ugraph.OpMul, none, x, x)
		}},
		{"a broadcast operand", sh(16, 1), false, func(b *builder, x block.TensorID) block.TensorID {
			y := b.in(sh(16, 32), fp16, block.Replicate, -1) // each element of x is read along a row of y
			return b.op(ugraph.OpAdd, none, x, b.op(ugraph.OpExp, none, y))
		}},
		{"the operand broadcast against", sh(16, 32), true, func(b *builder, x block.TensorID) block.TensorID {
			y := b.in(sh(16, 1), fp16, block.Replicate, -1)
			return b.op(ugraph.OpAdd, none, b.op(ugraph.OpExp, none, y), x)
		}},
		{"read in an mma's epilogue (lora's W + A·B)", sh(64, 32), false, func(b *builder, x block.TensorID) block.TensorID {
			a := b.in(sh(64, 16), fp16, block.Replicate, -1)
			c := b.in(sh(16, 32), fp16, block.Replicate, -1)
			return b.op(ugraph.OpAdd, none, b.op(ugraph.OpMatmul, none, a, c), x)
		}},
		// The matmul's operands are copied in: x comes with them, not a
		// round trip after the product.
		{"read in a SIMT matmul's epilogue", sh(8, 8), false, func(b *builder, x block.TensorID) block.TensorID {
			a := b.in(sh(8, 4), fp16, block.Replicate, -1) // K = 4: no mma
			c := b.in(sh(4, 8), fp16, block.Replicate, -1)
			return b.op(ugraph.OpAdd, none, b.op(ugraph.OpMatmul, none, a, c), x)
		}},
		{"read once beside a tile rms_norm reads (ntrans's alpha)", sh(16, 32), false, func(b *builder, x block.TensorID) block.TensorID {
			h := b.in(sh(16, 32), fp16, block.Replicate, -1)
			return b.op(ugraph.OpMul, none, x, b.op(ugraph.OpRMSNorm, none, h))
		}},
		{"read once beside tiles read once", sh(16, 32), true, func(b *builder, x block.TensorID) block.TensorID {
			h := b.in(sh(16, 32), fp16, block.Replicate, -1)
			return b.op(ugraph.OpMul, none, x, b.op(ugraph.OpExp, none, h))
		}},
	}
	for _, tt := range tests {
		b := newBuilder(t, block.Dim3{1, 1, 1}, 128, 1, 1)
		x := b.in(tt.x, fp16, block.Replicate, -1)
		b.out(b.acc(tt.ops(b, x), ugraph.AccumNone), block.Replicate)
		g, err := Derive(b.g, sm90, Options{})
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := g.Tiles[x].Storage == Device; got != tt.inPlace {
			t.Errorf("%s: read in place %v, want %v\n%v", tt.name, got, tt.inPlace, g)
		}
		checkPlan(t, tt.name, g)
	}
}

// TestInputsReadInPlaceWhenCopiesOverflow: an input tile copied in only to
// be read once from device memory stays there when the copy would put the
// plan over the limit; the kernel still runs.
func TestInputsReadInPlaceWhenCopiesOverflow(t *testing.T) {
	b := newBuilder(t, block.Dim3{1, 1, 1}, 128, 1, 1)
	x := b.in(sh(16, 512), fp16, block.Replicate, -1)
	b.out(b.acc(b.op(ugraph.OpRMSNorm, none, x), ugraph.AccumNone), block.Replicate)
	copied, err := Derive(b.g, sm90, Options{})
	if err != nil || copied.Tiles[x].Storage != Shared {
		t.Fatalf("without a tight limit: %v; want x copied in\n%v", err, copied)
	}
	inPlace, err := Derive(b.g, smemLimit(copied.SmemBytes-1), Options{})
	if err != nil {
		t.Fatalf("a limit the copy would pass: %v", err)
	}
	if inPlace.Tiles[x].Storage != Device || inPlace.SmemBytes != copied.SmemBytes-copied.Tiles[x].Bytes {
		t.Errorf("under the limit: x %v, %d bytes; want device, %d bytes\n%v", inPlace.Tiles[x].Storage, inPlace.SmemBytes, copied.SmemBytes-copied.Tiles[x].Bytes, inPlace)
	}
	checkPlan(t, "in place under the limit", inPlace)
}

// TestInputsReadOnceGoBackFirst: when a plan that copies a once-read tile
// beside an rms_norm tile overflows, the once-read tile goes back to device
// memory first (a round trip more), before the tile rms_norm reads twice.
func TestInputsReadOnceGoBackFirst(t *testing.T) {
	b := newBuilder(t, block.Dim3{1, 1, 1}, 128, 1, 1)
	x := b.in(sh(16, 512), fp16, block.Replicate, -1)
	y := b.in(sh(16, 512), fp16, block.Replicate, -1)
	b.out(b.acc(b.op(ugraph.OpMul, none, y, b.op(ugraph.OpRMSNorm, none, x)), ugraph.AccumNone), block.Replicate)
	both, err := Derive(b.g, sm90, Options{})
	if err != nil || both.Tiles[x].Storage != Shared || both.Tiles[y].Storage != Shared {
		t.Fatalf("without a tight limit: %v; want x and y copied in\n%v", err, both)
	}
	g, err := Derive(b.g, smemLimit(both.SmemBytes-1), Options{})
	if err != nil {
		t.Fatalf("a limit that the copy of x alone passes: %v", err)
	}
	if g.Tiles[x].Storage != Shared || g.Tiles[y].Storage != Device {
		t.Errorf("under the limit: x %v, y %v; want x shared, y in place\n%v", g.Tiles[x].Storage, g.Tiles[y].Storage, g)
	}
	checkPlan(t, "y in place under the limit", g)
}

// TestRegisterBudget: accumulators past the budget go to shared memory.
func TestRegisterBudget(t *testing.T) {
	g, err := Derive(gqa1(t), sm90, Options{RegFloats: 64})
	if err != nil {
		t.Fatal(err)
	}
	if p := g.Ops[6].MMA; p.Persistent || g.RegFloats != 0 {
		t.Errorf("E·V accumulator (128 floats) stays in registers under a 64-float budget")
	}
	if tl := g.Tiles[7]; tl.Storage != Shared || !tl.Accum || tl.DType != ugraph.Float32 {
		t.Errorf("the accumulator tile is %+v, want a shared fp32 accumulator", tl)
	}
	checkPlan(t, "gqa kernel 1, small budget", g)
}

// TestRegisterBudgetFollowsTheBlockSize: a block's accumulators take at
// most half the registers each of its threads can have, so that a
// 512-thread block (128 registers a thread) never spills them.
func TestRegisterBudgetFollowsTheBlockSize(t *testing.T) {
	// 16x272: 34 n-tiles, which split 2 ways among up to 16 warps (68
	// floats a lane), or 17 ways among 32 (8 floats).
	for _, c := range []struct {
		threads, floats int
		persistent      bool
	}{
		{128, 68, true},
		{256, 68, true},
		{512, 68, false}, // over 64
		{1024, 8, true},  // 2 n-tiles on each of 17 warps: under 32
	} {
		bd := newBuilder(t, block.Dim3{1, 1, 1}, c.threads, 1, 1)
		x := bd.in(sh(16, 64), fp16, block.Replicate, -1)
		y := bd.in(sh(64, 272), fp16, block.Replicate, -1)
		bd.out(bd.acc(bd.op(ugraph.OpMatmul, none, x, y), ugraph.AccumNone), block.Replicate)
		g, err := Derive(bd.g, sm90, Options{})
		if err != nil {
			t.Fatal(err)
		}
		p := g.Ops[2].MMA
		if p == nil || p.Floats() != c.floats || p.Persistent != c.persistent {
			t.Errorf("%d threads: mma %+v, want %d floats a lane, persistent %v", c.threads, p, c.floats, c.persistent)
		}
		if budget := min(DefaultRegFloats, target.RegsPerBlock/c.threads/2); g.RegFloats > budget {
			t.Errorf("%d threads: %d accumulator registers a thread, over %d", c.threads, g.RegFloats, budget)
		}
		checkPlan(t, fmt.Sprintf("%d threads", c.threads), g)
	}
}

// TestLanePartials: a sum, mean or rms accumulator fed by several
// iterations keeps a partial per row of each warp in its lanes' registers,
// while the bound and the register budget allow, first come first served.
// (The emitted code runs in codegen/cuda's emulator cases accumulators,
// rmsnorm_512_threads and attention_512_threads, whose rows are not a
// multiple of the warps: 16 over 3, 13 over 16, 24 over 16.)
func TestLanePartials(t *testing.T) {
	for _, c := range []struct {
		name      string
		rows, f   int
		threads   int
		accums    []ugraph.Accum
		regFloats int   // Options.RegFloats (0: the default)
		want      []int // LaneRows by accumulator
	}{
		{"rms, 4 rows a warp", 16, 4, 128, []ugraph.Accum{ugraph.AccumRMS}, 0, []int{4}},
		{"sum and mean, rows not a multiple of the warps", 13, 2, 512, []ugraph.Accum{ugraph.AccumSum, ugraph.AccumMean}, 0, []int{1, 1}},
		{"one iteration: nothing to defer", 16, 1, 128, []ugraph.Accum{ugraph.AccumRMS}, 0, []int{0}},
		{"too many rows a warp", 64, 4, 128, []ugraph.Accum{ugraph.AccumSum}, 0, []int{0}},
		{"the bound is for all groups", 16, 4, 96, []ugraph.Accum{ugraph.AccumSum, ugraph.AccumMean, ugraph.AccumRMS}, 0, []int{6, 0, 0}},
		{"two fit the bound", 16, 4, 128, []ugraph.Accum{ugraph.AccumSum, ugraph.AccumRMS, ugraph.AccumMean}, 0, []int{4, 4, 0}},
		{"the register budget", 16, 4, 128, []ugraph.Accum{ugraph.AccumRMS}, 3, []int{0}},
		{"no reduction: elements, not rows", 16, 4, 128, []ugraph.Accum{ugraph.AccumNone, ugraph.AccumSumToDimx}, 0, []int{0, 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			bd := newBuilder(t, block.Dim3{1, 1, 1}, c.threads, c.f, 8)
			x := bd.in(sh(c.rows, 64*c.f), fp16, block.Replicate, 1)
			var accs []block.TensorID
			for _, a := range c.accums {
				y := bd.acc(x, a)
				accs = append(accs, y)
				bd.out(y, block.Replicate)
			}
			g, err := Derive(bd.g, sm90, Options{RegFloats: c.regFloats})
			if err != nil {
				t.Fatal(err)
			}
			for i, y := range accs {
				if got := g.Groups[groupOfTile(g, y)].LaneRows; got != c.want[i] {
					t.Errorf("accumulator %d (%v): %d lane partials, want %d", i, c.accums[i], got, c.want[i])
				}
			}
			checkPlan(t, c.name, g)
		})
	}
}

// TestRowWarps: a row-at-a-time head whose tile has fewer rows than the
// block has warps shares each row among warps, the most that fit the
// block and leave each a whole 32-element stride; its scratch follows
// the tiles unless it is an accumulator (atomicAdd).
func TestRowWarps(t *testing.T) {
	for _, c := range []struct {
		name       string
		rows, n, f int
		threads    int
		kind       ugraph.OpKind // rms_norm, reduction, or forloop_accum (accum)
		accum      ugraph.Accum
		want       int
	}{
		{"one row of 4096, 16 warps", 1, 4096, 1, 512, ugraph.OpRMSNorm, 0, 16},
		{"three rows, 8 warps: 2 a row", 3, 1000, 1, 256, ugraph.OpRMSNorm, 0, 2},
		{"a reduction", 2, 512, 1, 256, ugraph.OpReduction, 0, 4},
		{"rows fill the warps", 16, 1024, 1, 256, ugraph.OpRMSNorm, 0, 1},
		{"short rows: a stride each", 1, 64, 1, 512, ugraph.OpRMSNorm, 0, 2},
		{"a row shorter than a stride", 1, 16, 1, 512, ugraph.OpRMSNorm, 0, 1},
		{"an rms accumulator, one iteration", 1, 4096, 1, 256, ugraph.OpForloopAccum, ugraph.AccumRMS, 8},
		{"a sum accumulator with lane partials", 1, 4096, 4, 256, ugraph.OpForloopAccum, ugraph.AccumSum, 1},
		{"no reduction", 1, 4096, 1, 256, ugraph.OpForloopAccum, ugraph.AccumNone, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := rowPlan(t, c.rows, c.n, c.f, c.threads, fp16, c.kind, c.accum)
			gi := 0 // the row-at-a-time head leads the first group
			if got := g.Groups[gi].RowWarps; got != c.want {
				t.Errorf("%d warps a row, want %d\n%v", got, c.want, g)
			}
			if scratch := g.Groups[gi].Scratch >= 0; scratch != (c.want > 1 && c.kind != ugraph.OpForloopAccum) {
				t.Errorf("scratch at %d\n%v", g.Groups[gi].Scratch, g)
			}
			checkPlan(t, c.name, g)
		})
	}
}

// TestRowVectors: a row loop reads 16-byte vectors (8 fp16 or bf16, 4
// fp32) where its rows are whole vectors and give every lane of the warps
// sharing a row one or more; elements otherwise. An rms_norm that stores
// its rows from its scaling pass (here a loop of one iteration passing
// its accumulator through) stores them as it reads them (StoreVector).
func TestRowVectors(t *testing.T) {
	for _, c := range []struct {
		name        string
		rows, n, f  int
		threads     int
		dt          ugraph.DType
		kind        ugraph.OpKind // rms_norm, reduction, or forloop_accum (accum)
		accum       ugraph.Accum
		read, store int
	}{
		{"one row of 4096 over 16 warps", 1, 4096, 1, 512, fp16, ugraph.OpRMSNorm, 0, 8, 8},
		{"one row of 2048 over 16 warps: 4 elements a lane", 1, 2048, 1, 512, fp16, ugraph.OpRMSNorm, 0, 1, 1},
		{"bf16 rows a warp each", 16, 256, 1, 256, ugraph.BFloat16, ugraph.OpReduction, 0, 8, 1}, // a value a row stored
		{"bf16 norms a warp each", 16, 256, 1, 256, ugraph.BFloat16, ugraph.OpRMSNorm, 0, 8, 8},
		{"fp32 rows, 4 to a vector", 16, 128, 1, 256, ugraph.Float32, ugraph.OpReduction, 0, 4, 1},
		{"fp32 norms, 4 to a vector", 16, 128, 1, 256, ugraph.Float32, ugraph.OpRMSNorm, 0, 4, 4},
		{"rows of 1000, 2 warps a row", 3, 1000, 1, 256, fp16, ugraph.OpRMSNorm, 0, 8, 8},
		{"rows of 1004: no whole vectors", 3, 1004, 1, 256, fp16, ugraph.OpRMSNorm, 0, 1, 1},
		{"two iterations: stored from the accumulator after the loop", 1, 2048, 2, 256, fp16, ugraph.OpRMSNorm, 0, 8, 1},
		{"an rms accumulator read in place", 1, 4096, 1, 256, fp16, ugraph.OpForloopAccum, ugraph.AccumRMS, 8, 1},
		{"lane partials", 8, 512, 4, 128, fp16, ugraph.OpForloopAccum, ugraph.AccumSum, 8, 1},
		{"no row loop", 1, 4096, 1, 256, fp16, ugraph.OpForloopAccum, ugraph.AccumNone, 1, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := rowPlan(t, c.rows, c.n, c.f, c.threads, c.dt, c.kind, c.accum)
			if gr := g.Groups[0]; gr.RowVector != c.read || gr.StoreVector != c.store {
				t.Errorf("rows read %d and stored %d elements at a time, want %d and %d\n%v", gr.RowVector, gr.StoreVector, c.read, c.store, g)
			}
			checkPlan(t, c.name, g)
		})
	}
}

// rowPlan plans one block of threads over rows × n·f elements of dt, the
// for-loop walking n at a time, through a row-at-a-time op (kind:
// rms_norm or reduction, then a None accumulator) or an accumulator of
// the given kind; the row op heads the first group.
func rowPlan(t *testing.T, rows, n, f, threads int, dt ugraph.DType, kind ugraph.OpKind, accum ugraph.Accum) *Graph {
	t.Helper()
	bd := newBuilder(t, block.Dim3{1, 1, 1}, threads, f, 8)
	x := bd.in(sh(rows, n*f), dt, block.Replicate, 1)
	var y block.TensorID
	if kind == ugraph.OpForloopAccum {
		y = bd.acc(x, accum)
	} else {
		y = bd.acc(bd.op(kind, ugraph.Attr{Dim: 1}, x), ugraph.AccumNone)
	}
	bd.out(y, block.Replicate)
	g, err := Derive(bd.g, sm90, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestRowVector is the rule alone, at its edges.
func TestRowVector(t *testing.T) {
	for _, c := range []struct {
		n, rw int
		dt    ugraph.DType
		want  int
	}{
		{256, 1, ugraph.Float16, 8},   // a vector a lane
		{248, 1, ugraph.Float16, 1},   // 31 vectors: a lane idle
		{512, 2, ugraph.Float16, 8},   // 2 warps, a vector a lane each
		{4096, 32, ugraph.Float16, 1}, // 32 warps share 512 vectors
		{128, 1, ugraph.Float32, 4},
		{132, 1, ugraph.Float32, 4}, // 33 vectors: a second pass for lane 0
		{130, 1, ugraph.Float32, 1}, // no whole vectors
	} {
		if got := RowVector(c.n, c.rw, c.dt); got != c.want {
			t.Errorf("RowVector(%d, %d, %v) = %d, want %d", c.n, c.rw, c.dt, got, c.want)
		}
	}
}

// TestRandomGraphs checks the plan's invariants on many valid block graphs.
func TestRandomGraphs(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	unlimited := smemLimit(0) // random tiles are large
	n := 0
	for range 12000 {
		bg := randomGraph(r)
		if bg == nil {
			continue
		}
		n++
		opts := Options{Stages: 1 + r.IntN(4), RegFloats: 16 + r.IntN(128)}
		g, err := Derive(bg, unlimited, opts)
		if err != nil {
			t.Fatalf("Derive: %v", err)
		}
		checkPlan(t, fmt.Sprintf("random graph %d", n), g)
		if again, _ := Derive(bg, unlimited, opts); !reflect.DeepEqual(again, g) {
			t.Fatalf("random graph %d: two derivations differ", n)
		}
	}
	if n < 500 {
		t.Fatalf("only %d random graphs built", n)
	}
}

func TestDeterministic(t *testing.T) {
	a, _ := Derive(gqa1(t), sm90, Options{})
	b, _ := Derive(gqa1(t), sm90, Options{})
	a.Block, b.Block = nil, nil
	if !reflect.DeepEqual(a, b) {
		t.Error("two derivations of the same graph differ")
	}
}

func TestNoOutput(t *testing.T) {
	b := newBuilder(t, block.Dim3{1, 1, 1}, 128, 1, 1)
	b.in(sh(4), fp16, block.Replicate, -1)
	if _, err := Derive(b.g, sm90, Options{}); !errors.Is(err, ErrNoOutput) {
		t.Errorf("error %v, want ErrNoOutput", err)
	}
}

// checkPlan checks the invariants every plan keeps.
func checkPlan(t *testing.T, name string, g *Graph) {
	t.Helper()
	bg := g.Block
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf("%s: %s\n%v", name, fmt.Sprintf(format, args...), g)
	}
	end := 0
	for i := range g.Tiles {
		ti := &g.Tiles[i]
		if ti.Storage != Shared {
			continue
		}
		end = max(end, ti.Offset+ti.Bytes)
		if ti.Offset%SmemAlign != 0 || ti.StageBytes%SmemAlign != 0 || ti.Bytes != ti.StageBytes*ti.Stages {
			fail("tile s%d: offset %d, stage bytes %d, bytes %d", i, ti.Offset, ti.StageBytes, ti.Bytes)
		}
		shape := bg.Tensors[i].Shape
		if ti.Pitch < shape.Last() || ti.Rows < shape.NumElements()/shape.Last() || ti.StageBytes < ti.Rows*ti.Pitch*ti.DType.Size() {
			fail("tile s%d %v: %d rows of pitch %d in %d bytes", i, shape, ti.Rows, ti.Pitch, ti.StageBytes)
		}
		for j := range i {
			tj := &g.Tiles[j]
			if tj.Storage == Shared && ti.Live.Overlaps(tj.Live) && ti.Offset < tj.Offset+tj.Bytes && tj.Offset < ti.Offset+ti.Bytes {
				fail("tiles s%d and s%d are live together and overlap", j, i)
			}
		}
	}
	// Row vectors: 1, or a 16-byte vector's worth of a row loop's operand,
	// whose rows are whole vectors at aligned addresses, at least one a
	// lane.
	for gi := range g.Groups {
		gr := &g.Groups[gi]
		v := gr.RowVector
		if v == 1 {
			continue
		}
		x := bg.Ops[gr.Head].In[0]
		tl, n := &g.Tiles[x], bg.Tensors[x].Shape.Last()
		es := tl.DType.Size()
		rowLoop := RowLoop(bg, gr)
		aligned := tl.Storage == Device || tl.Storage == Shared && tl.Pitch*es%16 == 0
		if !rowLoop || v*es != 16 || n%v != 0 || n < 32*max(1, gr.RowWarps)*v || !aligned {
			fail("group %d reads %d elements at a time: a row loop %v, rows of %d, %v pitch %d", gi, v, rowLoop, n, tl.Storage, tl.Pitch)
		}
	}
	// Store vectors: 1, or the row vector of an rms_norm that stores from
	// its row loop into device memory alone, 16 bytes of its result a
	// store.
	for gi := range g.Groups {
		gr := &g.Groups[gi]
		if gr.StoreVector == 1 {
			continue
		}
		fromLoop := gr.Through || !g.InLoop(gr.Head)
		if bg.Ops[gr.Head].Kind != ugraph.OpRMSNorm || gr.StoreVector != gr.RowVector || !fromLoop || len(gr.Stores) == 0 ||
			g.Tiles[gr.Result].Storage == Shared || gr.StoreVector*bg.Tensors[gr.Result].DType.Size() != 16 {
			fail("group %d stores %d elements at a time: head %v, rows read %d at a time, stores from the row loop %v", gi, gr.StoreVector, bg.Ops[gr.Head].Kind, gr.RowVector, fromLoop)
		}
	}
	// Split rows: RowWarps warps share each row of a row-at-a-time head,
	// a power of two whose rows fit the block and leave each warp a whole
	// stride; their scratch (a float a warp) lies past the tiles.
	for gi := range g.Groups {
		gr := &g.Groups[gi]
		if p := g.Ops[gr.Head].MMA; p != nil && p.Slices() > 1 {
			steps := (p.K + p.Instr.K - 1) / p.Instr.K
			if !g.SummedInRegisters(gr) || p.Batch != 1 || p.Scaled != nil || steps%p.WarpsK != 0 || p.BusyWarps() > g.Warps() {
				fail("group %d: %d slices of %d k-steps, %d warps busy of %d", gi, p.WarpsK, steps, p.BusyWarps(), g.Warps())
			}
			if p.Scratch < end || p.Scratch%SmemAlign != 0 {
				fail("group %d: the slices' scratch at %d, among the tiles (they end at %d) or unaligned", gi, p.Scratch, end)
			}
			end = max(end, p.Scratch+p.ScratchBytes())
		}
		rw := gr.RowWarps
		if rw < 1 || rw&(rw-1) != 0 {
			fail("group %d: %d warps a row", gi, rw)
			continue
		}
		if rw == 1 {
			if gr.Scratch != -1 {
				fail("group %d: a warp a row, but scratch at %d", gi, gr.Scratch)
			}
			continue
		}
		if !RowHead(bg, gr) {
			fail("group %d: %d warps a row, but its head does not work by rows", gi, rw)
			continue
		}
		x := bg.Tensors[bg.Ops[gr.Head].In[0]].Shape
		if rows := x.NumElements() / x.Last(); rows*rw > g.Warps() || x.Last() < rw*32 {
			fail("group %d: %d warps a row for %d rows of %d in %d warps", gi, rw, rows, x.Last(), g.Warps())
		}
		switch {
		case gr.Accum == gr.Head && gr.Scratch != -1:
			fail("group %d: an accumulator with scratch at %d", gi, gr.Scratch)
		case gr.Accum != gr.Head && (gr.Scratch < end || gr.Scratch%SmemAlign != 0):
			fail("group %d: scratch at %d, among the tiles (they end at %d) or unaligned", gi, gr.Scratch, end)
		case gr.Accum != gr.Head:
			end = max(end, gr.Scratch+g.Warps()*4)
		}
	}
	if end != g.SmemBytes {
		fail("SmemBytes %d, but the tiles and scratch end at %d", g.SmemBytes, end)
	}
	// Every op of a group runs in one of its parts; every shared tile is
	// live where it is produced and where it is read.
	stepOf := func(i int) int {
		gr := &g.Groups[g.Ops[i].Group]
		if g.RunsInLoop(i) {
			return g.LoopStep(gr.Loop)
		}
		return g.PostStep(gr.Post)
	}
	for i := range bg.Ops {
		op := &bg.Ops[i]
		role := g.Ops[i].Role
		if role == RoleDead || role == RoleLoad {
			continue
		}
		gr := &g.Groups[g.Ops[i].Group]
		if g.RunsInLoop(i) && gr.Loop < 0 || !g.RunsInLoop(i) && gr.Post < 0 {
			fail("op %d (%v) of group %d has no step to run in", i, op.Kind, g.Ops[i].Group)
			continue
		}
		for _, x := range g.Reads(i) {
			tx := &g.Tiles[x]
			switch tx.Storage {
			case Shared:
				if s := stepOf(i); s < tx.Live.First || s > tx.Live.Last {
					fail("op %d reads s%d at step %d, outside its live steps %v", i, x, s, tx.Live)
				}
			case Registers:
				if g.Ops[i].Group != groupOfTile(g, x) {
					fail("op %d reads s%d from another group's registers", i, x)
				}
			case StorageNone:
				fail("op %d reads s%d, which is nowhere", i, x)
			}
		}
		if op.Out >= 0 && g.Tiles[op.Out].Storage == Shared && !g.Tiles[op.Out].Accum && op.Kind != ugraph.OpForloopAccum {
			if s := stepOf(i); s < g.Tiles[op.Out].Live.First {
				fail("op %d writes s%d at step %d, before its live steps %v", i, op.Out, s, g.Tiles[op.Out].Live)
			}
		}
		if role == RoleFused || role == RoleHead {
			if g.Ops[i].MMA != nil && role != RoleHead {
				fail("mma op %d is fused", i)
			}
		}
		if p := g.Ops[i].MMA; p != nil && (p.Base < 0 || p.Base >= g.Warps() || p.BusyWarps() < 1 || p.BusyWarps() > g.Warps()) {
			fail("mma op %d from warp %d on %d of %d warps", i, p.Base, p.BusyWarps(), g.Warps())
		}
	}
	// A group's parts run after the groups that produce what it reads.
	for gi := range g.Groups {
		gr := &g.Groups[gi]
		for _, i := range append(gr.Ops(), gr.Stores...) {
			for _, x := range bg.Ops[i].Operands() {
				p := groupOfTile(g, x)
				if p < 0 || p == gi {
					continue
				}
				pg := &g.Groups[p]
				if gr.Loop >= 0 && g.InLoop(i) && bg.Ops[i].Kind != ugraph.OpOutput && (pg.Loop < 0 || pg.Loop >= gr.Loop) {
					fail("group %d reads s%d in the loop before group %d produces it", gi, x, p)
				}
				if !g.InLoop(i) && pg.Post >= 0 && pg.Post >= gr.Post {
					fail("group %d reads s%d after the loop before group %d finishes it", gi, x, p)
				}
			}
		}
	}
	// Lane partials: only for a row-summing accumulator fed by several
	// iterations, one per row a warp owns, within the bound; registers
	// held across the loop are the mma tiles' and the partials'.
	regs, partials := 0, 0
	for gi := range g.Groups {
		gr := &g.Groups[gi]
		if p := g.Ops[gr.Head].MMA; p != nil && p.Persistent {
			regs += p.Floats()
		}
		if gr.LaneRows == 0 {
			continue
		}
		head := &bg.Ops[gr.Head]
		if gr.Accum != gr.Head || bg.ForloopRange == 1 || (head.Attr.Accum != ugraph.AccumSum && head.Attr.Accum != ugraph.AccumMean && head.Attr.Accum != ugraph.AccumRMS) {
			fail("group %d keeps lane partials, but is not a row sum fed by several iterations", gi)
		}
		x := bg.Tensors[head.In[0]].Shape
		if want := ceilDiv(x.NumElements()/x.Last(), g.Warps()); gr.LaneRows != want {
			fail("group %d: %d lane partials for %d rows over %d warps", gi, gr.LaneRows, x.NumElements()/x.Last(), g.Warps())
		}
		partials += gr.LaneRows
	}
	if partials > MaxLanePartials || g.RegFloats != regs+partials {
		fail("%d lane partials (at most %d), RegFloats %d (want %d)", partials, MaxLanePartials, g.RegFloats, regs+partials)
	}
}

func groupOfTile(g *Graph, x block.TensorID) int {
	for i := range g.Block.Ops {
		if g.Block.Ops[i].Out == x {
			return g.Ops[i].Group
		}
	}
	return -1
}

// randomGraph builds a random valid block graph with the builders, or nil.
func randomGraph(r *rand.Rand) *block.Graph {
	dims := []int{1, 2, 4, 8, 16, 32, 64}
	pick := func(xs []int) int { return xs[r.IntN(len(xs))] }
	grid := block.Dim3{pick([]int{1, 1, 2, 4}), pick([]int{1, 1, 2}), 1}
	g, err := block.New(grid, block.Dim3{pick([]int{32, 64, 100, 128, 256}), 1, 1}, pick([]int{1, 2, 4}), pick([]int{1, 2, 4, 8}))
	if err != nil {
		return nil
	}
	dt := []ugraph.DType{ugraph.Float16, ugraph.BFloat16, ugraph.Float32}[r.IntN(3)]
	rank := 1 + r.IntN(3)
	for range 1 + r.IntN(3) {
		d := make([]int, rank)
		for i := range d {
			d[i] = pick(dims) * 4
		}
		imap := block.Map{r.IntN(rank+1) - 1, r.IntN(rank+1) - 1, -1}
		g.AddInput(ugraph.MustShape(d...), dt, imap, r.IntN(rank+1)-1)
	}
	if len(g.Tensors) == 0 {
		return nil
	}
	kinds := ugraph.OpKinds(ugraph.LevelBlock)
	for range 4 + r.IntN(10) {
		k := kinds[r.IntN(len(kinds))]
		info := k.Info()
		if info.Class == ugraph.ClassIO {
			continue
		}
		var xs []block.TensorID
		for range info.Arity {
			xs = append(xs, block.TensorID(r.IntN(len(g.Tensors))))
		}
		a := ugraph.Attr{Dim: r.IntN(4), Accum: ugraph.Accum(r.IntN(5)), Scalars: [2]float64{-1, 1}}
		g.Add(k, a, xs...)
	}
	for range 1 + r.IntN(2) {
		x := block.TensorID(r.IntN(len(g.Tensors)))
		omap := block.Map{-1, -1, -1}
		for a := range 2 {
			if grid[a] > 1 {
				omap[a] = r.IntN(g.Tensors[x].Shape.Rank())
			}
		}
		g.AddOutput(x, omap)
	}
	if len(g.OutputOps()) == 0 {
		return nil
	}
	return g
}

// sm90 is the arch the plans are made for unless a test says otherwise.
var sm90 = target.MustLookup("sm_90")

// smemLimit is sm90 with another shared-memory limit per block (0: none).
func smemLimit(bytes int) target.Arch {
	a := sm90
	a.MaxSmemPerBlock = bytes
	return a
}

// TestByRow: rms_norm and a reduction of a last dim at least a warp wide
// run a warp per row; a narrower or an inner reduction, and other ops, do
// not.
func TestByRow(t *testing.T) {
	tests := []struct {
		shape []int
		kind  ugraph.OpKind
		dim   int
		want  bool
	}{
		{[]int{16, 64}, ugraph.OpRMSNorm, 1, true},
		{[]int{16, 64}, ugraph.OpReduction, 1, true},
		{[]int{16, 32}, ugraph.OpReduction, 1, true},
		{[]int{16, 16}, ugraph.OpReduction, 1, false}, // narrower than a warp
		{[]int{16, 64}, ugraph.OpReduction, 0, false}, // not the last dim
		{[]int{16, 64}, ugraph.OpExp, 0, false},
	}
	for _, tt := range tests {
		g, err := block.New(block.Dim3{1, 1, 1}, block.Dim3{128, 1, 1}, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		x, err := g.AddInput(ugraph.MustShape(tt.shape...), ugraph.Float16, block.Replicate, -1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.Add(tt.kind, ugraph.Attr{Dim: tt.dim}, x); err != nil {
			t.Fatal(err)
		}
		if got := ByRow(g, &g.Ops[1]); got != tt.want {
			t.Errorf("%v over dim %d of %v: %v, want %v", tt.kind, tt.dim, tt.shape, got, tt.want)
		}
	}
}

// TestFoldedScale: a matmul whose B operand is the product of an input
// tile the same for every batch and one value per batch (K repeated over
// a group's heads by a tensor of ones) takes the tile itself, with the
// batches' rows stacked, and the product is not made; any other product
// stays an op of its own.
func TestFoldedScale(t *testing.T) {
	build := func(k, s ugraph.Shape, sFirst, twice bool) *block.Graph {
		bd := newBuilder(t, block.Dim3{1, 1, 1}, 128, 1, 1)
		a := bd.in(sh(1, 4, 3, 64), ugraph.Float16, block.Replicate, -1)
		x := bd.in(k, ugraph.Float16, block.Replicate, -1)
		by := bd.in(s, ugraph.Float16, block.Replicate, -1)
		b := bd.op(ugraph.OpMul, none, x, by)
		if sFirst {
			b = bd.op(ugraph.OpMul, none, by, x)
		}
		bd.out(bd.acc(bd.op(ugraph.OpMatmul, none, a, b), ugraph.AccumNone), block.Replicate)
		if twice {
			bd.out(bd.acc(b, ugraph.AccumNone), block.Replicate)
		}
		return bd.g
	}
	tests := []struct {
		name   string
		g      *block.Graph
		folded bool
	}{
		{"K times ones per head", build(sh(1, 1, 64, 32), sh(1, 4, 1, 1), false, false), true},
		{"ones per head times K", build(sh(1, 1, 64, 32), sh(1, 4, 1, 1), true, false), true},
		{"the product read again", build(sh(1, 1, 64, 32), sh(1, 4, 1, 1), false, true), false},
		{"a scale per column", build(sh(1, 1, 64, 32), sh(1, 4, 1, 32), false, false), false},
		{"K of each head", build(sh(1, 4, 64, 32), sh(1, 4, 1, 1), false, false), false},
	}
	for _, tt := range tests {
		g, err := Derive(tt.g, sm90, Options{})
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		checkPlan(t, tt.name, g)
		mm := slices.IndexFunc(tt.g.Ops, func(op block.Op) bool { return op.Kind == ugraph.OpMatmul })
		mul := slices.IndexFunc(tt.g.Ops, func(op block.Op) bool { return op.Kind == ugraph.OpMul })
		p := g.Ops[mm].MMA
		if p == nil {
			t.Fatalf("%s: the matmul runs SIMT", tt.name)
		}
		if (p.Scaled != nil) != tt.folded {
			t.Fatalf("%s: folded %v, want %v", tt.name, p.Scaled != nil, tt.folded)
		}
		if !tt.folded {
			if g.Ops[mul].Role == RoleDead || p.Batch != 4 || p.M != 3 {
				t.Errorf("%s: the product is %v, the mma %d batches of %d rows; want it made and 4 of 3", tt.name, g.Ops[mul].Role, p.Batch, p.M)
			}
			continue
		}
		x, by := tt.g.Ops[0].Out+1, tt.g.Ops[0].Out+2
		switch {
		case g.Ops[mul].Role != RoleDead:
			t.Errorf("%s: the folded product is %v, want dead", tt.name, g.Ops[mul].Role)
		case p.Batch != 1 || p.M != 12 || p.MTiles != 1 || p.Scaled.Rows != 3:
			t.Errorf("%s: the mma takes %d batches of %d rows (%d m-tiles), a batch %d rows; want the 4 heads' 3 rows stacked, 12 in one m-tile", tt.name, p.Batch, p.M, p.MTiles, p.Scaled.Rows)
		case p.Scaled.X != x || p.Scaled.By != by:
			t.Errorf("%s: X s%d, By s%d; want s%d and s%d", tt.name, p.Scaled.X, p.Scaled.By, x, by)
		case !slices.Equal(g.Reads(mm), []block.TensorID{tt.g.Ops[0].Out, x, by}):
			t.Errorf("%s: the matmul reads %v", tt.name, g.Reads(mm))
		case g.Tiles[tt.g.Ops[mul].Out].Storage != StorageNone || g.Tiles[x].Storage != Shared:
			t.Errorf("%s: the product's tile %v, K's %v; want none and shared", tt.name, g.Tiles[tt.g.Ops[mul].Out].Storage, g.Tiles[x].Storage)
		case p.TensorFlops() != 2*16*32*64:
			t.Errorf("%s: the mmas do %d flops, want one m-tile's, %d (made: four padded m-tiles)", tt.name, p.TensorFlops(), 2*16*32*64)
		}
	}
	// Folded, the block holds one K tile rather than one per head.
	kept, made := tests[0].g, tests[4].g
	a, _ := Derive(kept, sm90, Options{})
	b, _ := Derive(made, sm90, Options{})
	if a.SmemBytes >= b.SmemBytes {
		t.Errorf("shared memory folded %d, made %d: want less", a.SmemBytes, b.SmemBytes)
	}
}

// TestPassThrough checks which accumulators a loop of one iteration
// passes through (Group.Through): the group then runs whole in the loop,
// stores there, and keeps no accumulator tile.
func TestPassThrough(t *testing.T) {
	x16 := func(b *builder) block.TensorID { return b.in(sh(16, 256), fp16, block.Map{0, -1, -1}, -1) }
	tests := []struct {
		name    string
		build   func(testing.TB) *block.Graph
		through []bool // per group
	}{
		{"a norm and a scale, one iteration", func(t testing.TB) *block.Graph {
			b := newBuilder(t, block.Dim3{8, 1, 1}, 128, 1, 64)
			x, w := x16(b), b.in(sh(1, 256), fp16, block.Replicate, -1)
			b.out(b.acc(b.op(ugraph.OpMul, none, b.op(ugraph.OpRMSNorm, none, x), w), ugraph.AccumNone), block.Map{0, -1, -1})
			return b.g
		}, []bool{true}},
		{"the same over two iterations", func(t testing.TB) *block.Graph {
			b := newBuilder(t, block.Dim3{8, 1, 1}, 128, 2, 64)
			x := b.in(sh(16, 256), fp16, block.Map{0, -1, -1}, 1)
			b.out(b.acc(b.op(ugraph.OpExp, none, x), ugraph.AccumNone), block.Map{0, -1, -1})
			return b.g
		}, []bool{false}},
		{"unary ops after the accumulator", func(t testing.TB) *block.Graph {
			b := newBuilder(t, block.Dim3{8, 1, 1}, 128, 1, 64)
			a := b.acc(b.op(ugraph.OpExp, none, x16(b)), ugraph.AccumNone)
			b.out(b.op(ugraph.OpSilu, none, b.op(ugraph.OpSqrt, none, a)), block.Map{0, -1, -1})
			return b.g
		}, []bool{true}},
		{"an op after the accumulator reads another accumulator", func(t testing.TB) *block.Graph {
			b := newBuilder(t, block.Dim3{8, 1, 1}, 128, 1, 64)
			x := x16(b)
			s := b.acc(x, ugraph.AccumRMS) // [16, 1], whole after the loop
			b.out(b.op(ugraph.OpDiv, none, b.acc(b.op(ugraph.OpExp, none, x), ugraph.AccumNone), s), block.Map{0, -1, -1})
			return b.g
		}, []bool{false, false}},
		{"the accumulator read by another group", func(t testing.TB) *block.Graph {
			b := newBuilder(t, block.Dim3{8, 1, 1}, 128, 1, 64)
			a := b.acc(b.op(ugraph.OpExp, none, x16(b)), ugraph.AccumNone)
			b.out(a, block.Map{0, -1, -1})
			b.out(b.op(ugraph.OpSqrt, none, a), block.Map{0, -1, -1})
			return b.g
		}, []bool{false, false}},
		{"an mma's accumulator", func(t testing.TB) *block.Graph {
			b := newBuilder(t, block.Dim3{8, 1, 1}, 128, 1, 64)
			x, w := x16(b), b.in(sh(256, 64), fp16, block.Replicate, -1)
			b.out(b.acc(b.op(ugraph.OpMatmul, none, x, w), ugraph.AccumNone), block.Map{0, -1, -1})
			return b.g
		}, []bool{false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := Derive(tt.build(t), sm90, Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkPlan(t, tt.name, g)
			var through []bool
			for _, gr := range g.Groups {
				through = append(through, gr.Through)
				if !gr.Through {
					continue
				}
				if gr.Post >= 0 || gr.InLoop != len(gr.Chain) || g.Tiles[g.Block.Ops[gr.Accum].Out].Storage != Registers {
					t.Errorf("a group passing its accumulator through has post part %d, %d of %d chain ops in the loop, accumulator in %v",
						gr.Post, gr.InLoop, len(gr.Chain), g.Tiles[g.Block.Ops[gr.Accum].Out].Storage)
				}
			}
			if !slices.Equal(through, tt.through) {
				t.Errorf("Through %v, want %v\n%s", through, tt.through, g)
			}
		})
	}
}
