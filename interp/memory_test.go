package interp_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/internal/memlimit"
	"github.com/mirage-go/mirage/interp"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// expOf is exp of one input of the given dims.
func expOf(d ...int) *kernel.Graph {
	g := kernel.New()
	check(g.MarkOutput(must(g.Add(ugraph.OpExp, ugraph.Attr{}, must(g.AddInput(shape(d...), dt))))))
	return g
}

// TestMemory: what an evaluation takes is known before anything is
// allocated, exactly, and a graph over the bound is refused with how much
// it needs and its largest tensor.
func TestMemory(t *testing.T) {
	identity := kernel.New()
	check(identity.MarkOutput(must(identity.AddInput(shape(16, 4), dt))))
	const mib = 1 << 20 // elements
	tests := []struct {
		name string
		g    *kernel.Graph
		need int64
		err  string // from CheckMemory with the default bound; "" for none
	}{
		{"rmsnorm_matmul", rmsnormMatmul(), 8 * (2*16*4096 + 4096*6144 + 16*6144), ""},
		// The device tensors, and the tiles of one block: 16x64 X and
		// M, 64x64 W, 16x64 accumulated M, 16x1 rms, 16x64 result.
		{"its μGraph", rmsnormMatmulMuGraph(ugraph.AccumRMS), 8 * (16*4096 + 4096*6144 + 16*6144 + 16*64*4 + 64*64 + 16), ""},
		{"an input marked as output, copied", identity, 8 * 2 * 16 * 4, ""},
		{"32768x32768", expOf(32768, 32768), 16 << 30,
			"evaluating it in float64 needs 16 GiB of memory, more than the limit of 4 GiB; its largest tensor, t0 [32768, 32768], takes 8 GiB"},
		{"2^48 elements", expOf(1<<24, 1<<24), 1 << 52, "needs 4 PiB of memory"},
		{"just over", expOf(128*mib+1, 2), 2 * 8 * (256*mib + 2), "needs 4 GiB (4294967328 bytes) of memory, more than the limit of 4 GiB (4294967296 bytes)"},
		{"at the bound", expOf(128*mib, 2), 4 << 30, ""},
	}
	for _, tt := range tests {
		if got := interp.Memory(tt.g); got != tt.need {
			t.Errorf("%s: Memory = %d, want %d", tt.name, got, tt.need)
		}
		err := interp.CheckMemory(tt.g, interp.DefaultMaxBytes)
		var me *memlimit.Error
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%s: CheckMemory: %v", tt.name, err)
		case tt.err != "" && (!errors.As(err, &me) || me.Need != tt.need || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s: CheckMemory = %v, want a *memlimit.Error of %d bytes containing %q", tt.name, err, tt.need, tt.err)
		}
	}
}

// TestRunWithin: RunWithin refuses a graph over its bound before it
// evaluates anything, and runs it within.
func TestRunWithin(t *testing.T) {
	g := expOf(16, 16)
	ins := interp.RandomInputs(g, 1)
	_, err := interp.RunWithin(g, ins, 1024)
	var me *memlimit.Error
	if !errors.As(err, &me) || me.Need != 2*16*16*8 || me.Limit != 1024 {
		t.Errorf("RunWithin over the bound: %v", err)
	}
	if _, err := interp.RunWithin(g, ins, 4096); err != nil {
		t.Errorf("RunWithin at the bound: %v", err)
	}
}
