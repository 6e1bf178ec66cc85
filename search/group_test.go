package search

import (
	"slices"
	"testing"
)

// TestGroupedSearchesMatchSolo checks the grouped enumeration (group.go)
// against the one it replaces: for every configuration of a customized op
// on the program's inputs, the complete threadblock graphs found when the
// configurations are enumerated in groups are those, in the same order,
// found when each is enumerated alone. The groups must also be larger
// than one configuration somewhere, or the test checks nothing.
func TestGroupedSearchesMatchSolo(t *testing.T) {
	for _, tt := range []struct {
		program string
		maxOps  int
		last    bool // the customized op completes the kernel graph
	}{
		{"rmsnorm_matmul.py", 7, true},
		{"gated_mlp.py", 9, true},
		{"gqa.py", 9, true},
		{"gqa.py", 6, false},
	} {
		done := func(grouped bool) (map[uint32][]uint64, int) {
			s := newTestSearcher(t, tt.program, tt.maxOps)
			s.groupable = s.groupable && grouped
			k := s.newKernelState()
			ins := k.g.Inputs()
			// The kernel graph's size makes the customized op its last
			// (or not): below it, the kernel search ends at once.
			s.cfg.MaxKernelOps = len(ins) + 1
			if !tt.last {
				s.cfg.MaxKernelOps++
				s.cfg.MaxCustomized = 1
			}
			in, ok := k.openInputs(ins)
			if !ok {
				t.Fatalf("%s: the inputs cannot complete the graph", tt.program)
			}
			confs := s.blockConfigs(k.g, ins, tt.last)
			k.openBlocks(in, confs)
			found := map[uint32][]uint64{}
			for _, c := range confs {
				list, ok := s.blockSearches.load(blockSearchKey{inputs: in.sig, conf: c.id})
				if !ok {
					continue // rejected before its search (divides)
				}
				found[c.id] = []uint64{}
				for _, b := range list {
					found[c.id] = append(found[c.id], b.hash)
				}
			}
			largest, followers := 0, 0
			for _, g := range k.enumGroups(ins, confs) {
				largest = max(largest, len(g))
				b := k.newBlockState(ins, g, nil)
				for j, r := range b.rep {
					if r != j {
						followers++
					}
				}
			}
			if grouped && followers == 0 {
				t.Errorf("%s: every configuration tries its own ops: catchUp untested", tt.program)
			}
			return found, largest
		}
		solo, _ := done(false)
		grouped, largest := done(true)
		if largest < 2 {
			t.Errorf("%s: no group of more than one configuration", tt.program)
		}
		n := 0
		for id, want := range solo {
			n += len(want)
			if got := grouped[id]; !slices.Equal(got, want) {
				t.Errorf("%s: configuration %d: grouped search found %d graphs, alone %d (or in another order)", tt.program, id, len(got), len(want))
			}
		}
		for id, got := range grouped {
			if _, ok := solo[id]; !ok && len(got) > 0 {
				t.Errorf("%s: configuration %d found %d graphs only when grouped", tt.program, id, len(got))
			}
		}
		t.Logf("%s (last %v): %d configurations searched, %d graphs, groups of up to %d", tt.program, tt.last, len(solo), n, largest)
		if n == 0 {
			t.Errorf("%s: no complete graph at all", tt.program)
		}
	}
}
