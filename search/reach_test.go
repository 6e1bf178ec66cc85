package search

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/mirage-go/mirage/frontend"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
)

// TestReachPrunesNoCandidate checks the closures of reach.go against the
// search they prune: with them, the enumeration finds every candidate it
// finds without them (the same hashes), in fewer states. The attention
// programs run on a few grids (qknorm_gqa on one), so that the search
// without pruning stays short: a few tens of seconds.
func TestReachPrunesNoCandidate(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: each program is searched twice")
	}
	attentionGrids := []block.Dim3{{2, 1, 1}, {2, 4, 1}, {2, 16, 1}, {4, 16, 1}}
	for _, tt := range []struct {
		program string // under the repository's root
		grids   []block.Dim3
		fewer   int64 // at least this many times fewer states with the closures
	}{
		{"examples/gqa.py", attentionGrids, 4},
		{"bench/workloads/qknorm_gqa.py", []block.Dim3{{2, 16, 1}}, 4},
		{"examples/rmsnorm_matmul.py", nil, 1},
		{"examples/gated_mlp.py", nil, 1},
	} {
		t.Run(filepath.Base(tt.program), func(t *testing.T) {
			enumerate := func(closable bool) ([]uint64, int64) {
				p, err := frontend.LoadFile(filepath.Join("..", tt.program), frontend.Options{})
				if err != nil {
					t.Fatal(err)
				}
				cfg := writtenConfig(t, p)
				cfg.Restrict(Restrictions{Grids: tt.grids})
				cfg.Complete(p.Graph)
				s, err := newSearcher(t.Context(), p.Graph, cfg, Options{Workers: 2})
				if err != nil {
					t.Fatal(err)
				}
				defer s.close()
				s.closable = s.closable && closable
				var hashes []uint64
				for _, c := range s.enumerate() {
					hashes = append(hashes, c.Hash)
				}
				slices.Sort(hashes)
				return hashes, s.states.Load()
			}
			want, all := enumerate(false)
			got, pruned := enumerate(true)
			if !slices.Equal(got, want) {
				var lost int
				for _, h := range want {
					if _, ok := slices.BinarySearch(got, h); !ok {
						lost++
					}
				}
				t.Errorf("with the closures, %d candidates; without, %d; %d lost", len(got), len(want), lost)
			}
			if len(want) == 0 {
				t.Error("no candidate at all")
			}
			if pruned*tt.fewer > all {
				t.Errorf("%d states with the closures, %d without: want %d times fewer", pruned, all, tt.fewer)
			}
			t.Logf("%d candidates; %d states with the closures, %d without", len(got), pruned, all)
		})
	}
}

// TestReachShapes checks the reach shapes of input tiles: dims the
// expressions do not see are 1 below the last two, and the one before
// the last keeps its extent where a seen dim has it, and is named apart
// (the same name for the same extent) where none has.
func TestReachShapes(t *testing.T) {
	s := &searcher{cfg: Config{ReductionDimx: 64}}
	shape := ugraph.MustShape
	for _, tt := range []struct {
		name     string
		sizeDims uint32
		tiles    []ugraph.Shape
		want     []ugraph.Shape
	}{
		{
			name:  "batch dims drop, seen extents stay",
			tiles: []ugraph.Shape{shape(2, 64, 64), shape(2, 64, 512)},
			want:  []ugraph.Shape{shape(1, 64, 64), shape(1, 64, 512)},
		},
		{
			name:  "an extent no seen dim has is renamed, alike where equal",
			tiles: []ugraph.Shape{shape(2, 256, 64), shape(2, 256, 16), shape(2, 512, 64)},
			want:  []ugraph.Shape{shape(1, placeholderExtent, 64), shape(1, placeholderExtent, 16), shape(1, placeholderExtent+1, 64)},
		},
		{
			name:  "matmul's inner extent, seen as another tile's last, stays; the rows are renamed",
			tiles: []ugraph.Shape{shape(1, 32, 1024), shape(1, 1024, 64)},
			want:  []ugraph.Shape{shape(1, placeholderExtent, 1024), shape(1, 1024, 64)},
		},
		{
			name:     "a dim a reduction names is seen",
			sizeDims: 1 << 0,
			tiles:    []ugraph.Shape{shape(8, 256, 64)},
			want:     []ugraph.Shape{shape(8, placeholderExtent, 64)},
		},
		{
			name:  "a placeholder does not take an extent that is seen",
			tiles: []ugraph.Shape{shape(1, 3, placeholderExtent)},
			want:  []ugraph.Shape{shape(1, placeholderExtent+1, placeholderExtent)},
		},
	} {
		s.sizeDims = tt.sizeDims
		got := make([]ugraph.Shape, len(tt.tiles))
		s.reachShapes(tt.tiles, got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: reach shapes of %v are %v, want %v", tt.name, tt.tiles, got, tt.want)
		}
	}
}

func TestInputSetsJoin(t *testing.T) {
	for _, tt := range []struct{ x, y, want inputSets }{
		{1 << 0b01, 1 << 0b10, 1 << 0b11},
		{1<<0b01 | 1<<0b10, 1 << 0b10, 1<<0b11 | 1<<0b10},
		{1 << 0b01, 0, 0},
		{1 << 0b0011, 1 << 0b0101, 1 << 0b0111},
	} {
		if got := tt.x.join(tt.y); got != tt.want {
			t.Errorf("%016b join %016b = %016b, want %016b", tt.x, tt.y, got, tt.want)
		}
	}
}
