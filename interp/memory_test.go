package interp_test

import (
	"errors"
	"slices"
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

// chain is X (n x n) through two products with weights, each through exp:
// exp(exp(X @ W1) @ W2).
func chain(n int) *kernel.Graph {
	g := kernel.New()
	x := must(g.AddInput(shape(n, n), dt))
	w1 := must(g.AddInput(shape(n, n), dt))
	w2 := must(g.AddInput(shape(n, n), dt))
	h := must(g.Add(ugraph.OpExp, ugraph.Attr{}, must(g.Add(ugraph.OpMatmul, ugraph.Attr{}, x, w1))))
	check(g.MarkOutput(must(g.Add(ugraph.OpExp, ugraph.Attr{}, must(g.Add(ugraph.OpMatmul, ugraph.Attr{}, h, w2))))))
	return g
}

// TestDrawnMemory: drawn when first read and dropped after the last
// reader, a graph holds at its peak what the op being evaluated reads and
// makes, and what later ops still need; counted by hand here.
func TestDrawnMemory(t *testing.T) {
	identity := kernel.New()
	check(identity.MarkOutput(must(identity.AddInput(shape(16, 4), dt))))
	twice := kernel.New() // one input read by one op as both operands, and marked
	x := must(twice.AddInput(shape(8, 8), dt))
	check(twice.MarkOutput(x))
	check(twice.MarkOutput(must(twice.Add(ugraph.OpMul, ugraph.Attr{}, x, x))))
	const n = 64
	tests := []struct {
		name string
		g    *kernel.Graph
		need int64
	}{
		// X and its norm; then the norm, W and the product (X dropped).
		{"rmsnorm_matmul", rmsnormMatmul(), 8 * (16*4096 + 4096*6144 + 16*6144)},
		// All at once in the kernel: X, W, the output and the tiles (as
		// Memory counts them).
		{"its μGraph", rmsnormMatmulMuGraph(ugraph.AccumRMS), 8 * (16*4096 + 4096*6144 + 16*6144 + 16*64*4 + 64*64 + 16)},
		// X, W1 and the product: 3 n² (Memory: all 7 values).
		{"two products", chain(n), 8 * 3 * n * n},
		{"an input marked as output, never read", identity, 8 * 16 * 4},
		{"an input read twice by one op, and marked", twice, 8 * 2 * 8 * 8},
	}
	for _, tt := range tests {
		if got := interp.DrawnMemory(tt.g); got != tt.need {
			t.Errorf("%s: DrawnMemory = %d, want %d", tt.name, got, tt.need)
		}
	}
	if got, all := interp.DrawnMemory(chain(n)), interp.Memory(chain(n)); got*7 != all*3 {
		t.Errorf("two products: DrawnMemory %d, Memory %d; want 3/7 of it", got, all)
	}
	// Over the bound: the error names the need and the largest tensor.
	err := interp.CheckDrawnMemory(expOf(32768, 32768), interp.DefaultMaxBytes)
	if err == nil || !strings.Contains(err.Error(), "needs 16 GiB of memory, more than the limit of 4 GiB; its largest tensor, t0 [32768, 32768]") {
		t.Errorf("CheckDrawnMemory, 32768x32768: %v", err)
	}
}

// RunDrawn gives what RunWithin gives on RandomInputs, bit for bit, and
// refuses a graph over its bound (DrawnMemory, not Memory).
func TestRunDrawn(t *testing.T) {
	identity := kernel.New()
	check(identity.MarkOutput(must(identity.AddInput(shape(16, 4), dt))))
	for name, g := range map[string]*kernel.Graph{
		"rmsnorm_matmul": rmsnormMatmul(), "its μGraph": rmsnormMatmulMuGraph(ugraph.AccumRMS),
		"two products": chain(32), "an input marked as output": identity,
	} {
		want, err := interp.RunWithin(g, interp.RandomInputsIn(g, 3, -0.25, 0.25), 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		got, err := interp.RunDrawn(g, interp.NewDraws(g, 3, -0.25, 0.25), 1<<30)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for k := range want {
			if !slices.Equal(got[k].Data, want[k].Data) || got[k].Shape != want[k].Shape {
				t.Errorf("%s: output %d drawn %v, given %v", name, k, got[k], want[k])
			}
		}
	}
	g := chain(32)
	if _, err := interp.RunDrawn(g, interp.NewDraws(g, 1, -1, 1), interp.DrawnMemory(g)); err != nil {
		t.Errorf("at its drawn need: %v", err)
	}
	var me *memlimit.Error
	if _, err := interp.RunDrawn(g, interp.NewDraws(g, 1, -1, 1), interp.DrawnMemory(g)-1); !errors.As(err, &me) {
		t.Errorf("a byte under its drawn need: %v, want a *memlimit.Error", err)
	}
	if _, err := interp.RunDrawn(g, interp.NewDraws(chain(32), 1, -1, 1), 1<<30); err == nil {
		t.Error("another graph's draws accepted")
	}
}
