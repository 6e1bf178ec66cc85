package thread

import (
	"testing"

	"github.com/mirage-go/mirage/target"
)

// LdMatrix counts as mma_tiles runs (templates/mirage_runtime.cuh): per
// call and k-step, one A load per m-tile below MTiles, and ⌈CN/2⌉ B loads
// (x4 for a pair of n-tiles, x2 for an odd last one) for the first m-tile
// and for each that begins another batch; a chunked warp calls it once per
// chunk, reloading A for every n-chunk and B for every m-chunk.
func TestLdMatrix(t *testing.T) {
	instr := target.MMA{M: 16, N: 8, K: 16}
	tests := []struct {
		name  string
		mma   MMA
		whole bool
		want  int
	}{
		{"whole tile: 2 A + 2 B", MMA{Instr: instr, Batch: 1, M: 128, N: 128, K: 64, MTiles: 8, NTiles: 16,
			WarpsM: 4, WarpsN: 4, MPer: 2, NPer: 4, ChunkM: 1, ChunkN: 2}, true, 4},
		{"chunks of 1x2: each of 4 calls 1 A + 1 B", MMA{Instr: instr, Batch: 1, M: 128, N: 128, K: 64, MTiles: 8, NTiles: 16,
			WarpsM: 4, WarpsN: 4, MPer: 2, NPer: 4, ChunkM: 1, ChunkN: 2}, false, 8},
		{"chunks of 1x8 over 2x8 tiles: 2 calls of 1 A + 4 B", MMA{Instr: instr, Batch: 1, M: 128, N: 128, K: 64, MTiles: 8, NTiles: 16,
			WarpsM: 4, WarpsN: 2, MPer: 2, NPer: 8, ChunkM: 1, ChunkN: 8}, false, 10},
		{"odd n-tiles: an x4 and an x2", MMA{Instr: instr, Batch: 1, M: 16, N: 24, K: 64, MTiles: 1, NTiles: 3,
			WarpsM: 1, WarpsN: 1, MPer: 1, NPer: 3, ChunkM: 1, ChunkN: 3}, true, 3},
		{"three batches of 12 rows: B again for each", MMA{Instr: instr, Batch: 3, M: 12, N: 16, K: 32, MTiles: 3, NTiles: 2,
			WarpsM: 1, WarpsN: 1, MPer: 3, NPer: 2, ChunkM: 3, ChunkN: 2}, true, 6},
		{"the busiest warp: the last owns one m-tile of 3", MMA{Instr: instr, Batch: 1, M: 48, N: 16, K: 32, MTiles: 3, NTiles: 2,
			WarpsM: 2, WarpsN: 1, MPer: 2, NPer: 2, ChunkM: 2, ChunkN: 2}, true, 3},
		{"a warp's tiles that cross into another batch", MMA{Instr: instr, Batch: 2, M: 24, N: 16, K: 32, MTiles: 4, NTiles: 2,
			WarpsM: 2, WarpsN: 1, MPer: 3, NPer: 2, ChunkM: 3, ChunkN: 2}, true, 5},
	}
	for _, tt := range tests {
		if got := tt.mma.LdMatrix(tt.whole); got != tt.want {
			t.Errorf("%s: LdMatrix(%v) = %d, want %d", tt.name, tt.whole, got, tt.want)
		}
	}
}

// EpilogueValues counts as the fragment loops run (codegen/cuda fragLoop):
// 4 values a lane per m-tile and n-tile, 2 where the row guard skips the
// m-tile's second half for the whole warp, none past MTiles.
func TestEpilogueValues(t *testing.T) {
	instr := target.MMA{M: 16, N: 8, K: 16}
	tests := []struct {
		name string
		mma  MMA
		want int
	}{
		{"8 rows: the second half skipped", MMA{Instr: instr, Batch: 1, M: 8, N: 32, K: 64, MTiles: 1, NTiles: 4,
			WarpsM: 1, WarpsN: 1, MPer: 1, NPer: 4, ChunkM: 1, ChunkN: 4}, 2 * 4},
		{"12 rows: lanes of rows 8-11 run the second half", MMA{Instr: instr, Batch: 1, M: 12, N: 32, K: 64, MTiles: 1, NTiles: 4,
			WarpsM: 1, WarpsN: 1, MPer: 1, NPer: 4, ChunkM: 1, ChunkN: 4}, 4 * 4},
		{"128 rows over 4 warps", MMA{Instr: instr, Batch: 1, M: 128, N: 128, K: 64, MTiles: 8, NTiles: 16,
			WarpsM: 4, WarpsN: 4, MPer: 2, NPer: 4, ChunkM: 1, ChunkN: 2}, 2 * 4 * 4},
		{"three batches of 8 rows", MMA{Instr: instr, Batch: 3, M: 8, N: 16, K: 32, MTiles: 3, NTiles: 2,
			WarpsM: 1, WarpsN: 1, MPer: 3, NPer: 2, ChunkM: 3, ChunkN: 2}, 3 * 2 * 2},
		{"24 rows: the last m-tile's 8 rows", MMA{Instr: instr, Batch: 1, M: 24, N: 8, K: 32, MTiles: 2, NTiles: 1,
			WarpsM: 1, WarpsN: 1, MPer: 2, NPer: 1, ChunkM: 2, ChunkN: 1}, 4 + 2},
		{"the busiest warp: the last owns one m-tile of 3", MMA{Instr: instr, Batch: 1, M: 48, N: 16, K: 32, MTiles: 3, NTiles: 2,
			WarpsM: 2, WarpsN: 1, MPer: 2, NPer: 2, ChunkM: 2, ChunkN: 2}, 2 * 4 * 2},
	}
	for _, tt := range tests {
		if got := tt.mma.EpilogueValues(); got != tt.want {
			t.Errorf("%s: EpilogueValues() = %d, want %d", tt.name, got, tt.want)
		}
	}
}
