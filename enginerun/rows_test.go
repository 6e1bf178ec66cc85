package enginerun

import (
	"context"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/codegen/cuda"
	"github.com/mirage-go/mirage/frontend"
	"github.com/mirage-go/mirage/internal/memlimit"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// TestGuardedRowsReadInVectors: a graph-defined kernel that reads its
// operand's rows in place 16 bytes a lane at a time (thread.Group.RowVector)
// reads a row past m as zeros (mirage::load16_or_zero), at every m of a
// decode loop: the row sums of Z [m, 4096], a block a row over 16 warps,
// checked against the interpreter's.
func TestGuardedRowsReadInVectors(t *testing.T) {
	runRowsBucket(t, "rows", "Z = g.new_input(dims=(8, 4096), dtype=mi.float16)\ng.mark_output(g.reduction(Z, 1))\n",
		`Z = g.new_input(dims=(8, 4096), dtype=mi.float16)
tb = mi.new_threadblock_graph(grid_dim=(8, 1, 1), block_dim=(512, 1, 1), forloop_range=1, reduction_dimx=8)
tZ = tb.new_input(dtensor=Z, input_map=(0, -1, -1), forloop_dim=-1)
tb.new_output(stensor=tb.forloop_accum(tb.reduction(tZ, 1)), output_map=(0, -1, -1))
g.mark_output(g.customized([Z], tb)[0])
`, "mirage::load16_or_zero(")
}

// TestGuardedRowsStoredInVectors: an rms_norm's scaling pass that stores
// its rows 16 bytes a lane at a time (thread.Group.StoreVector) stores no
// row past m (the emulator fences them), at every m of a decode loop:
// rms_norm(Z)·G over [m, 4096], a block a row over 16 warps, checked
// against the interpreter's.
func TestGuardedRowsStoredInVectors(t *testing.T) {
	runRowsBucket(t, "norm", `Z = g.new_input(dims=(8, 4096), dtype=mi.float16)
G = g.new_input(dims=(1, 4096), dtype=mi.float16)
g.mark_output(g.mul(g.rms_norm(Z, normalized_shape=(4096,)), G))
`, `Z = g.new_input(dims=(8, 4096), dtype=mi.float16)
G = g.new_input(dims=(1, 4096), dtype=mi.float16)
tb = mi.new_threadblock_graph(grid_dim=(8, 1, 1), block_dim=(512, 1, 1), forloop_range=1, reduction_dimx=8)
tZ = tb.new_input(dtensor=Z, input_map=(0, -1, -1), forloop_dim=-1)
tG = tb.new_input(dtensor=G, input_map=(-1, -1, -1), forloop_dim=-1)
tb.new_output(stensor=tb.forloop_accum(tb.mul(tb.rms_norm(tZ), tG)), output_map=(0, -1, -1))
g.mark_output(g.customized([Z, G], tb)[0])
`, "mirage::store16(")
}

// runRowsBucket emits program (its first input's rows dynamic, m in 1..8)
// with bucket, the μGraph of its one bucket, checks that NAME.cu holds
// want, and runs a decode loop over changing m against the interpreter.
func runRowsBucket(t *testing.T, name, program, bucket, want string) {
	t.Helper()
	prog, err := loadProgram(t, name, program).WithDynamic(map[kernel.TensorID]int{0: 0})
	if err != nil {
		t.Fatal(err)
	}
	rows := cuda.Rows{Lo: 1, Hi: 8}
	rows.Inputs, rows.Outputs = prog.DynamicDims()
	code, err := cuda.EmitDynamic(name, rows, []cuda.Bucket{{Size: 8, Lo: 1, Hi: 8, Graph: loadProgram(t, name+"_mugraph", bucket)}}, cuda.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var src string
	for _, f := range code.Files {
		if f.Name == name+".cu" {
			src = string(f.Data)
		}
	}
	if !strings.Contains(src, want) {
		t.Fatalf("%s.cu has no %s:\n%s", name, want, src)
	}
	steps := []int{1, 3, 8, 5, 2, 7}
	res, err := Run(context.Background(), t.TempDir(), prog, code, 1, 8, steps, memlimit.Default)
	if err != nil {
		t.Fatalf("%v: %+v", err, res)
	}
	for i, s := range res {
		if s.M != steps[i] || !s.OK {
			t.Errorf("step %d: %+v", i, s)
		}
	}
}

func loadProgram(t *testing.T, name, body string) *kernel.Graph {
	t.Helper()
	p, err := frontend.Load(name+".py", []byte("import mirage as mi\ng = mi.new_kernel_graph()\n"+body), frontend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p.Graph
}
