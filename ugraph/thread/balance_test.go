package thread

import (
	"fmt"
	"testing"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
)

// qkv is a grouped-query layer's projections at 8 rows, as the matmul
// rule writes them: X (8 × 4096) walked by the loop, q's weight 4096 wide
// and k's and v's 1024, each cut into as many column tiles as there are
// blocks, summed in registers over the loop; with scaled, each product is
// scaled in the loop before its sum (so not summed straight into the
// registers, and not sliced).
func qkv(t testing.TB, blocks, threads int, scaled bool) *block.Graph {
	return projections(t, blocks, threads, scaled, 4096, 1024, 1024)
}

// projections is qkv's form for matmuls of the given widths.
func projections(t testing.TB, blocks, threads int, scaled bool, widths ...int) *block.Graph {
	b := newBuilder(t, block.Dim3{blocks, 1, 1}, threads, 16, 64)
	x := b.in(sh(8, 4096), fp16, block.Map{-1, -1, -1}, 1)
	for _, n := range widths {
		w := b.in(sh(4096, n), fp16, block.Map{1, -1, -1}, 0)
		m := b.op(ugraph.OpMatmul, none, x, w)
		if scaled {
			m = b.op(ugraph.OpMulScalar, ugraph.Attr{Scalars: [2]float64{0.5}}, m)
		}
		b.out(b.acc(m, ugraph.AccumNone), block.Map{1, -1, -1})
	}
	return b.g
}

// mmasOf derives g's plan and returns its mma plans, want of them.
func mmasOf(t *testing.T, name string, g *block.Graph, want int) (*Graph, []*MMA) {
	t.Helper()
	tg, err := Derive(g, sm90, Options{})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	checkPlan(t, name, tg)
	var mmas []*MMA
	for i := range tg.Ops {
		if p := tg.Ops[i].MMA; p != nil {
			mmas = append(mmas, p)
		}
	}
	if len(mmas) != want {
		t.Fatalf("%s: %d matmuls on tensor cores, want %d\n%v", name, len(mmas), want, tg)
	}
	return tg, mmas
}

// TestBalance: a matmul that leaves warps idle begins on the warps the
// matmuls before it in the part loaded least, so that no warp runs all
// three products; one that keeps every warp busy begins on warp 0. (The
// products are scaled in the loop: sliceK leaves them whole.)
func TestBalance(t *testing.T) {
	tests := []struct {
		name          string
		blocks, warps int
		bases         [3]int // q's, k's, v's
		busy          [3]int
		mostParts     int // the mma parts the busiest warp runs
	}{
		// q: 8 n-tiles, a warp each; k and v: 2 n-tiles, on 2 warps each.
		{"64 blocks, 8 warps", 64, 8, [3]int{0, 0, 2}, [3]int{8, 2, 2}, 2},
		// q: 4 n-tiles, a warp each; k and v: 1 n-tile, one warp each.
		{"128 blocks, 4 warps", 128, 4, [3]int{0, 0, 1}, [3]int{4, 1, 1}, 2},
		// q: 4 n-tiles on 4 of 16 warps; k and v beside it.
		{"128 blocks, 16 warps", 128, 16, [3]int{0, 4, 5}, [3]int{4, 1, 1}, 1},
		// Every matmul keeps every warp busy: all begin on warp 0.
		{"16 blocks, 4 warps", 16, 4, [3]int{0, 0, 0}, [3]int{4, 4, 4}, 3},
	}
	for _, tt := range tests {
		tg, mmas := mmasOf(t, tt.name, qkv(t, tt.blocks, 32*tt.warps, true), 3)
		parts := make([]int, tt.warps)
		for k, p := range mmas {
			if p.Slices() != 1 {
				t.Errorf("%s: matmul %d in %d slices of K, want 1 (scaled in the loop)", tt.name, k, p.Slices())
			}
			if p.Base != tt.bases[k] || p.BusyWarps() != tt.busy[k] {
				t.Errorf("%s: matmul %d from warp %d on %d warps, want from %d on %d\n%v", tt.name, k, p.Base, p.BusyWarps(), tt.bases[k], tt.busy[k], tg)
			}
			for w := range parts {
				if p.Busy(w, tt.warps) {
					parts[w]++
				}
			}
		}
		if most := slicesMax(parts); most != tt.mostParts {
			t.Errorf("%s: the busiest warp runs %d mma parts, want %d (per warp: %v)", tt.name, most, tt.mostParts, parts)
		}
	}
}

// TestSliceK: where a block's matmuls, summed straight into registers,
// leave idle as many warps as they keep busy, each takes as many slices
// of K as the block's warps allow them all and divide the iteration's 16
// k-steps (K 256); where they keep more than half the warps busy, none
// (the balance pass places them side by side).
func TestSliceK(t *testing.T) {
	tests := []struct {
		name          string
		blocks, warps int
		widths        []int
		slices        []int
		steps         []int // the k-steps a warp takes an iteration
	}{
		// q: 8 n-tiles, k and v 2: 12 warps busy of 8.
		{"q, k, v: 64 blocks, 8 warps", 64, 8, []int{4096, 1024, 1024}, []int{1, 1, 1}, []int{16, 16, 16}},
		// q: 4 n-tiles, k and v 1: 6 of 4.
		{"q, k, v: 128 blocks, 4 warps", 128, 4, []int{4096, 1024, 1024}, []int{1, 1, 1}, []int{16, 16, 16}},
		// 6 of 16: two slices each.
		{"q, k, v: 128 blocks, 16 warps", 128, 16, []int{4096, 1024, 1024}, []int{2, 2, 2}, []int{8, 8, 8}},
		// One matmul of 4 n-tiles: 4 warps of 16, 4 slices.
		{"one matmul: 128 blocks, 16 warps", 128, 16, []int{4096}, []int{4}, []int{4}},
		// 2 n-tiles: 2 warps of 8, 4 slices.
		{"one matmul: 256 blocks, 8 warps", 256, 8, []int{4096}, []int{4}, []int{4}},
		// q 32 n-tiles, k and v 8, over 4 warps: 8 and 2 tiles a warp.
		{"q, k, v: 16 blocks, 4 warps", 16, 4, []int{4096, 1024, 1024}, []int{1, 1, 1}, []int{16, 16, 16}},
	}
	for _, tt := range tests {
		tg, mmas := mmasOf(t, tt.name, projections(t, tt.blocks, 32*tt.warps, false, tt.widths...), len(tt.widths))
		for k, p := range mmas {
			if p.Slices() != tt.slices[k] || p.KSteps() != tt.steps[k] {
				t.Errorf("%s: matmul %d in %d slices of %d k-steps, want %d of %d\n%v", tt.name, k, p.Slices(), p.KSteps(), tt.slices[k], tt.steps[k], tg)
			}
			if p.Slices() > 1 && (p.BusyWarps() > tt.warps || p.Scratch < 0 || p.Scratch+p.ScratchBytes() > tg.SmemBytes) {
				t.Errorf("%s: matmul %d on %d warps, scratch %d+%d of %d", tt.name, k, p.BusyWarps(), p.Scratch, p.ScratchBytes(), tg.SmemBytes)
			}
		}
	}
}

func slicesMax(xs []int) int {
	m := xs[0]
	for _, x := range xs[1:] {
		m = max(m, x)
	}
	return m
}

func TestLeastLoaded(t *testing.T) {
	tests := []struct {
		load []int
		busy int
		want int
	}{
		{[]int{0, 0, 0, 0}, 2, 0},       // a tie: the lowest
		{[]int{3, 3, 0, 0}, 2, 2},       // the idle pair
		{[]int{0, 3, 3, 0}, 2, 3},       // wrapping around: warps 3 and 0
		{[]int{5, 1, 2, 1}, 1, 1},       // the first of the least loaded
		{[]int{5, 1, 2, 1}, 4, 0},       // every warp: warp 0
		{[]int{2, 2, 2, 2, 0, 0}, 2, 4}, // the idle pair at the end
	}
	for _, tt := range tests {
		if got := leastLoaded(tt.load, tt.busy); got != tt.want {
			t.Errorf("leastLoaded(%v, %d) = %d, want %d", tt.load, tt.busy, got, tt.want)
		}
	}
}

// Busy follows the rank (w − Base) mod warps: warps of rank below
// BusyWarps own tiles.
func TestBusy(t *testing.T) {
	p := MMA{MTiles: 1, NTiles: 2, WarpsM: 4, WarpsN: 2, MPer: 1, NPer: 1, Base: 7}
	var busy []int
	for w := range 8 {
		if p.Busy(w, 8) {
			busy = append(busy, w)
		}
	}
	if len(busy) != 2 || busy[0] != 0 || busy[1] != 7 {
		t.Errorf("from warp 7, 2 of 8 warps busy: got warps %v, want [0 7]", busy)
	}
}

// TestSlicesGiveWayToTheTiles: a matmul of 8 rows and 32 columns (4
// n-tiles) on 16 warps takes 4 slices of K, whose scratch comes after the
// tiles; where the scratch would not fit beside the tiles (K 2048 an
// iteration, two stages: the plan fits without it and not with it), or
// would cost a pipeline stage (K 1024), the plan takes the slices back.
func TestSlicesGiveWayToTheTiles(t *testing.T) {
	for _, tt := range []struct {
		k, f   int
		slices int
		stages int
	}{
		{256, 4, 4, 4},  // room for all: 4 slices, 4 stages
		{1024, 2, 1, 2}, // the scratch would cost the second stage
		{2048, 2, 1, 1}, // the scratch would not fit at all
	} {
		b := newBuilder(t, block.Dim3{1, 1, 1}, 512, tt.f, 64)
		x := b.in(sh(8, tt.k*tt.f), fp16, block.Map{-1, -1, -1}, 1)
		w := b.in(sh(tt.k*tt.f, 32), fp16, block.Map{1, -1, -1}, 0)
		b.out(b.acc(b.op(ugraph.OpMatmul, none, x, w), ugraph.AccumNone), block.Map{1, -1, -1})
		name := fmt.Sprintf("K %d an iteration", tt.k)
		g, err := Derive(b.g, sm90, Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		checkPlan(t, name, g)
		p := g.Ops[2].MMA
		if p.Slices() != tt.slices || g.Stages != tt.stages {
			t.Errorf("%s: %d slices, %d stages; want %d, %d\n%v", name, p.Slices(), g.Stages, tt.slices, tt.stages, g)
		}
	}
}
