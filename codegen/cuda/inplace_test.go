package cuda

import (
	"slices"
	"testing"

	"github.com/mirage-go/mirage/launch"
	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph/thread"
)

// TestCasesReadInPlace pins which input tiles two one-iteration emulator
// cases read in place from device memory, so that both ways of reading an
// input read once stay covered by TestEmulateCases: a kernel that copies no
// input in reads such tiles in place ("reductions"); one that copies some
// (for rms_norm, for a broadcast) copies them beside ("copied_in_once").
func TestCasesReadInPlace(t *testing.T) {
	want := map[string][]int{ // case: its inputs read in place, by position
		"reductions":     {0, 1},
		"copied_in_once": nil,
	}
	for _, c := range emuCases {
		w, ok := want[c.name]
		if !ok {
			continue
		}
		delete(want, c.name)
		p, err := launch.Graph(loadSource(t, c.name, c.src...), target.MustLookup("sm_90"), launch.Options{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var got []int
		for i := range p.Kernels {
			if tg := p.Kernels[i].Thread; tg != nil {
				for k, op := range tg.Block.InputOps() {
					if tg.Tiles[op.Out].Storage == thread.Device {
						got = append(got, k)
					}
				}
			}
		}
		if !slices.Equal(got, w) {
			t.Errorf("%s: inputs read in place %v, want %v", c.name, got, w)
		}
	}
	for name := range want {
		t.Errorf("no emulator case %s", name)
	}
}
