package enginerun

import (
	"context"
	"errors"
	"github.com/mirage-go/mirage/internal/memlimit"
	"os"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/codegen/cuda"
	"github.com/mirage-go/mirage/frontend"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// Faults that examples/engine's decode loop must report, each made by
// code injected into an emitted entry point (found by review: the loop
// passed NaN outputs, wrong values beside an infinity, and reported an
// emulator abort as unusable input).

// pokedCode emits exp(X), X [m, 64] for m in 1..8 (one bucket of 8), with
// inject added to the entry point after the bucket runs.
func pokedCode(t *testing.T, inject string) (*kernel.Graph, *cuda.Result) {
	return pokedCodeOf(t, "X = g.new_input(dims=(4, 64), dtype=mi.float16)\ng.mark_output(g.exp(X))\n", map[kernel.TensorID]int{0: 0}, inject)
}

func pokedCodeOf(t *testing.T, body string, dyn map[kernel.TensorID]int, inject string) (*kernel.Graph, *cuda.Result) {
	t.Helper()
	src := "import mirage as mi\ng = mi.new_kernel_graph()\n" + body
	p, err := frontend.Load("poke.py", []byte(src), frontend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	program, err := p.Graph.WithDynamic(dyn)
	if err != nil {
		t.Fatal(err)
	}
	g8, err := program.Bind(8)
	if err != nil {
		t.Fatal(err)
	}
	rows := cuda.Rows{Lo: 1, Hi: 8}
	rows.Inputs, rows.Outputs = program.DynamicDims()
	code, err := cuda.EmitDynamic("poke", rows, []cuda.Bucket{{Size: 8, Lo: 1, Hi: 8, Graph: g8}}, cuda.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const call = "return m8::run(outputs, inputs, m, workspace, stream);"
	for i, f := range code.Files {
		if f.Name != "poke.cu" {
			continue
		}
		if !strings.Contains(string(f.Data), call) {
			t.Fatalf("no %q in poke.cu", call)
		}
		code.Files[i].Data = []byte(strings.Replace(string(f.Data), call,
			"{ cudaError_t e = m8::run(outputs, inputs, m, workspace, stream); "+inject+" return e; }", 1))
	}
	return program, code
}

// TestEngineCatchesNaNOutput: examples/engine's decode loop must fail a
// step whose output holds elements the code left unwritten (the engine's
// 0xff poison, NaN in fp16) where the interpreter's are finite, as
// enginerun.compare does ("an element never written"). Here the first 4
// elements of row 0 are left NaN at every m.
func TestEngineCatchesNaNOutput(t *testing.T) {
	program, code := pokedCode(t, "cudaMemsetAsync(outputs[0], 0xff, 8, stream);")
	steps := []int{1, 2, 5, 8}
	res, err := Run(context.Background(), t.TempDir(), program, code, 1, 8, steps, memlimit.Default)
	if err != nil && !errors.Is(err, ErrFailed) {
		t.Fatal(err)
	}
	for _, s := range res {
		if s.OK {
			t.Errorf("m = %d: 4 NaN elements in output 0 (want finite), reported ok (error %g)", s.M, s.Error)
		}
	}
	if err == nil {
		t.Error("Run returned no error: the decode loop passed outputs with NaN where the program's are finite")
	}
}

// TestEngineRunsThePokedCode: the same code without the injection passes.
func TestEngineRunsThePokedCode(t *testing.T) {
	program, code := pokedCode(t, "")
	res, err := Run(context.Background(), t.TempDir(), program, code, 1, 8, []int{1, 2, 5, 8}, memlimit.Default)
	if err != nil {
		t.Fatalf("%v: %+v", err, res)
	}
}

// TestEngineCatchesWrongValuesBesideInf: where the program's own output
// holds an infinity (X / Y, Y drawn with zeros), the decode loop still
// must compare the finite elements: enginerun.compare scales by the largest
// *finite* |want|. Here row 0 of the output is overwritten with 1000
// (the true values are at most 64), and the step must fail.
func TestEngineCatchesWrongValuesBesideInf(t *testing.T) {
	program, code := pokedCodeOf(t, "X = g.new_input(dims=(4, 64), dtype=mi.float16)\nY = g.new_input(dims=(4, 64), dtype=mi.float16)\ng.mark_output(g.div(X, Y))\n",
		map[kernel.TensorID]int{0: 0, 1: 0},
		"for (int i = 0; i < 64; i++) static_cast<__half*>(outputs[0])[i] = __float2half(1000.0f);")
	res, err := Run(context.Background(), t.TempDir(), program, code, 1, 8, []int{8}, memlimit.Default)
	if err != nil && !errors.Is(err, ErrFailed) {
		t.Fatal(err)
	}
	for _, s := range res {
		if s.OK {
			t.Errorf("m = %d: row 0 of the output overwritten with 1000, reported ok (error %g)", s.M, s.Error)
		}
	}
}

// TestEngineRowPastMIsAVerdict: code that stores to a row past m is what
// the decode loop's fences exist to catch ("a kernel that touches one fails
// the program"). The emulator then aborts the engine, and Run must report
// it as a failed step (ErrFailed: verify --engine's exit 1, "the programs
// differ"), not as an unusable input (any other error: exit 2).
func TestEngineRowPastMIsAVerdict(t *testing.T) {
	program, code := pokedCode(t, "if (m < 8) MIRAGE_STG(static_cast<__half*>(outputs[0])[m * 64]) = __float2half(0.0f);")
	res, err := Run(context.Background(), t.TempDir(), program, code, 1, 8, []int{8, 3}, memlimit.Default)
	if !errors.Is(err, ErrFailed) {
		t.Errorf("a store to row m (past m) at m = 3: Run returned %v (steps %+v); want an error wrapping ErrFailed", err, res)
	}
}

// The memory bound refuses a decode loop whose inputs or interpreter would
// pass it, before anything is drawn or built (found by review: verify
// --engine --max-memory 64MiB held about 1 GB).
func TestEngineKeepsToTheMemoryBound(t *testing.T) {
	program, code := pokedCodeOf(t, "X = g.new_input(dims=(4, 64), dtype=mi.float16)\nW = g.new_input(dims=(64, 4096), dtype=mi.float16)\ng.mark_output(g.matmul(X, W))\n",
		map[kernel.TensorID]int{0: 0}, "")
	dir := t.TempDir()
	_, err := Run(context.Background(), dir, program, code, 1, 8, []int{8}, 1<<20)
	if !memlimit.IsOver(err) || !strings.Contains(err.Error(), "drawing the decode loop's inputs") {
		t.Errorf("a 1 MiB bound: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 0 {
		t.Errorf("the refused run left %d files in its directory", len(entries))
	}
}
