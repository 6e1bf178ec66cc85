package thread

import (
	"testing"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
)

// qkv is a grouped-query layer's projections at 8 rows, as the matmul
// rule writes them: X (8 × 4096) walked by the loop, q's weight 4096 wide
// and k's and v's 1024, each cut into as many column tiles as there are
// blocks, summed in registers over the loop.
func qkv(t testing.TB, blocks, threads int) *block.Graph {
	b := newBuilder(t, block.Dim3{blocks, 1, 1}, threads, 16, 64)
	x := b.in(sh(8, 4096), fp16, block.Map{-1, -1, -1}, 1)
	for _, n := range []int{4096, 1024, 1024} {
		w := b.in(sh(4096, n), fp16, block.Map{1, -1, -1}, 0)
		b.out(b.acc(b.op(ugraph.OpMatmul, none, x, w), ugraph.AccumNone), block.Map{1, -1, -1})
	}
	return b.g
}

// TestBalance: a matmul that leaves warps idle begins on the warps the
// matmuls before it in the part loaded least, so that no warp runs all
// three products; one that keeps every warp busy begins on warp 0.
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
		g, err := Derive(qkv(t, tt.blocks, 32*tt.warps), sm90, Options{})
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		checkPlan(t, tt.name, g)
		var mmas []*MMA
		for i := range g.Ops {
			if p := g.Ops[i].MMA; p != nil {
				mmas = append(mmas, p)
			}
		}
		if len(mmas) != 3 {
			t.Fatalf("%s: %d matmuls on tensor cores, want 3\n%v", tt.name, len(mmas), g)
		}
		parts := make([]int, tt.warps)
		for k, p := range mmas {
			if p.Base != tt.bases[k] || p.BusyWarps() != tt.busy[k] {
				t.Errorf("%s: matmul %d from warp %d on %d warps, want from %d on %d\n%v", tt.name, k, p.Base, p.BusyWarps(), tt.bases[k], tt.busy[k], g)
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
