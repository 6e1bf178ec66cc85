package cuda

import (
	"bytes"
	"testing"
)

// A block graph's own pipeline depth (block.Graph.Stages, the search's
// choice) emits what the same depth asked of the plan does: the emulator
// cases that run under launch.Options.Stages check that code, so this
// check covers the graphs that carry their depth.
func TestGraphStagesEmitAsPlanned(t *testing.T) {
	emit := func(c emuCase, opts Options, stages int) []File {
		t.Helper()
		g := loadSource(t, c.name, c.src...)
		for _, op := range g.Ops {
			if op.Block != nil {
				if err := op.Block.SetStages(stages); err != nil {
					t.Fatal(err)
				}
			}
		}
		res, err := Emit(c.name, g, opts)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		return res.Files
	}
	same := func(a, b []File) bool {
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if a[i].Name != b[i].Name || !bytes.Equal(a[i].Data, b[i].Data) {
				return false
			}
		}
		return true
	}
	checked := 0
	for _, c := range emuCases {
		n := c.opts.Launch.Stages
		if n == 0 {
			continue
		}
		checked++
		planned := emit(c, c.opts, 0)
		own := c.opts
		own.Launch.Stages = 0
		if got := emit(c, own, n); !same(got, planned) {
			t.Errorf("%s: a graph of %d stages emits other code than the plan asked for %d", c.name, n, n)
		}
		if c.name == "pipeline" && same(emit(c, own, 0), planned) {
			t.Errorf("%s: the default depth emits the code of %d stages; the check tells nothing", c.name, n)
		}
	}
	if checked < 2 {
		t.Errorf("%d emulator cases run under a pipeline depth, want 2 or more", checked)
	}
}
