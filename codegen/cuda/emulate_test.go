package cuda

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/frontend"
	"github.com/mirage-go/mirage/interp"
	"github.com/mirage-go/mirage/templates"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// This file runs emitted code on the CPU: the .cu file compiles with g++
// against templates/emu/cuda_runtime.h (each CUDA thread a coroutine, the
// PTX collectives emulated from the ISA's fragment layouts), and its
// outputs are compared with the float64 interpreter's on the same inputs.
// Every program runs under several thread orders and cp.async timings;
// the outputs must agree bit for bit across them (a missing barrier or
// wait shows up as a difference, or as NaN from unwritten shared memory).

// emuOrders are the thread schedules each program runs under.
var emuOrders = []struct{ order, cpasync string }{
	{"greedy", "lazy"},
	{"greedy-reverse", "lazy"},
	{"random", "eager"},
}

// emuTolerance is the largest error allowed, relative to the largest
// magnitude of the expected output, for 16-bit outputs (fp32: a tenth).
const emuTolerance = 2e-2

func needGXX(t *testing.T) string {
	t.Helper()
	gxx, err := templates.EmulatorCompiler()
	if err != nil {
		t.Fatal(err)
	}
	return gxx
}

// emuRun emits g, runs it in the emulator on inputs drawn uniformly from
// [-scale, scale) (after rounding to their dtypes), and checks it against
// the interpreter. With count, the first run also counts what each kernel
// launch moved (what the kernels access does not depend on the values):
// the returned counters, else nil.
func emuRun(t *testing.T, name string, g *kernel.Graph, scale float64, opts Options, count bool) (*Result, []Counters) {
	t.Helper()
	needGXX(t)
	res, err := Emit(name, g, opts)
	if err != nil {
		t.Fatalf("%s: Emit: %v", name, err)
	}
	dir := t.TempDir()
	emu, warnings, err := BuildEmulation(context.Background(), dir, g, res)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	} else if len(warnings) > 0 {
		t.Errorf("%s: g++ warnings:\n%s", name, warnings)
	}

	// Random inputs, as float32 for the program to round.
	r := rand.New(rand.NewPCG(7, uint64(len(name))))
	inPath := filepath.Join(dir, "in.bin")
	if err := emu.WriteInputs(inPath, func(int, int) float32 { return float32((2*r.Float64() - 1) * scale) }); err != nil {
		t.Fatal(err)
	}

	var first []byte
	var counters []Counters
	countsPath := filepath.Join(dir, "counters.jsonl")
	for i, o := range emuOrders {
		outPath := filepath.Join(dir, "out-"+o.order+".bin")
		env := []string{"MIRAGE_EMU_ORDER=" + o.order, "MIRAGE_EMU_CPASYNC=" + o.cpasync}
		if count && i == 0 {
			env = append(env, "MIRAGE_EMU_COUNTERS="+countsPath)
		}
		if err := emu.Run(context.Background(), inPath, outPath, env...); err != nil {
			t.Fatalf("%s (%s, %s): %v", name, o.order, o.cpasync, err)
		}
		if count && i == 0 {
			if counters, err = readCountersFile(countsPath, g, res); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		data, err := os.ReadFile(outPath)
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = data
			checkAgainstInterp(t, name, g, data)
		} else if !bytes.Equal(first, data) {
			t.Errorf("%s: outputs under thread order %s (cp.async %s) differ from those under %s: a race",
				name, o.order, o.cpasync, emuOrders[0].order)
		}
	}
	return res, counters
}

// checkAgainstInterp reads what the program wrote (the inputs as rounded,
// then the outputs, all float32) and compares the outputs with the
// interpreter's on those inputs.
func checkAgainstInterp(t *testing.T, name string, g *kernel.Graph, data []byte) {
	t.Helper()
	rd := bytes.NewReader(data)
	next := func(n int) []float64 {
		v := make([]float32, n)
		if err := binary.Read(rd, binary.LittleEndian, v); err != nil {
			t.Fatalf("%s: reading the program's output: %v", name, err)
		}
		out := make([]float64, n)
		for i, x := range v {
			out[i] = float64(x)
		}
		return out
	}
	var ins []*interp.Tensor
	for _, id := range g.Inputs() {
		s := g.Tensors[id].Shape
		x, _ := interp.FromSlice(s, next(s.NumElements()))
		ins = append(ins, x)
	}
	want, err := interp.Run(g, ins)
	if err != nil {
		t.Fatalf("%s: interp: %v", name, err)
	}
	for j, id := range g.Outputs {
		s := g.Tensors[id].Shape
		got := next(s.NumElements())
		scale := 0.0
		for _, v := range want[j].Data {
			scale = max(scale, math.Abs(v))
		}
		tol := emuTolerance
		if g.Tensors[id].DType == ugraph.Float32 {
			tol /= 10
		}
		worst, at := 0.0, -1
		for i, v := range got {
			d := math.Abs(v - want[j].Data[i])
			// NaN counts as the worst, and stays it: a later finite
			// error must not hide an element never written.
			if !(d <= worst) && !math.IsNaN(worst) {
				worst, at = d, i
			}
		}
		if rel := worst / math.Max(scale, 1e-30); !(rel <= tol) {
			t.Errorf("%s: output %d %v: error %.3g relative to max |want| %.3g at element %d (got %v, want %v)",
				name, j, s, rel, scale, at, got[at], want[j].Data[at])
		}
	}
	if rd.Len() != 0 {
		t.Errorf("%s: %d bytes left over in the program's output", name, rd.Len())
	}
}

// The entry point refuses what its header does not allow, before any
// launch: an input or output not 16-byte aligned, a workspace not 256-byte
// aligned (cudaErrorInvalidValue, 1). Aligned, the same build runs.
func TestEntryPointRefusesMisalignedPointers(t *testing.T) {
	needGXX(t)
	p, err := frontend.Load("p.py", []byte(`import mirage as mi
g = mi.new_kernel_graph()
X = g.new_input(dims=(8, 64), dtype=mi.float16)
W = g.new_input(dims=(64, 128), dtype=mi.float16)
g.mark_output(g.silu(g.matmul(X, W)))
`), frontend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Emit("p", p.Graph, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.WorkspaceBytes == 0 {
		t.Fatal("no workspace: the case does not check its alignment")
	}
	dir := t.TempDir()
	emu, _, err := BuildEmulation(context.Background(), dir, p.Graph, res)
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "in.bin")
	if err := emu.WriteInputs(in, func(k, i int) float32 { return float32(i%7) / 8 }); err != nil {
		t.Fatal(err)
	}
	if err := emu.Run(context.Background(), in, filepath.Join(dir, "out.bin")); err != nil {
		t.Fatalf("aligned: %v", err)
	}
	for _, what := range []string{"inputs", "outputs", "workspace"} {
		err := emu.Run(context.Background(), in, filepath.Join(dir, "out-"+what+".bin"), "MIRAGE_EMU_MISALIGN="+what)
		if err == nil || !strings.Contains(err.Error(), "returned error 1") {
			t.Errorf("%s 8 bytes off their alignment: %v, want the entry point's error 1 (cudaErrorInvalidValue)", what, err)
		}
	}
}

// The emulator fails a dependent launch's thread that touches device
// memory before its wait (on a GPU the kernel before may still be
// writing): the dependent_launches case passes as emitted (TestEmulateCases),
// and fails with the second kernel's wait taken out.
func TestEmulatorFailsAnAccessBeforeTheWait(t *testing.T) {
	needGXX(t)
	g := loadSource(t, "dependent_launches", dependentKernels...)
	res, err := Emit("d", g, Options{DependentLaunch: true})
	if err != nil {
		t.Fatal(err)
	}
	const wait = "  mirage::wait_for_prior_grid();"
	cu := string(res.Files[0].Data)
	second := strings.Index(cu, "d_kernel1(")
	at := strings.Index(cu[second:], wait)
	if second < 0 || at < 0 {
		t.Fatalf("no wait in d_kernel1:\n%s", cu)
	}
	res.Files[0].Data = []byte(cu[:second+at] + "  // (wait taken out)" + cu[second+at+len(wait):])
	dir := t.TempDir()
	emu, _, err := BuildEmulation(context.Background(), dir, g, res)
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "in.bin")
	if err := emu.WriteInputs(in, func(k, i int) float32 { return float32(i%7) / 8 }); err != nil {
		t.Fatal(err)
	}
	err = emu.Run(context.Background(), in, filepath.Join(dir, "out.bin"))
	if err == nil || !strings.Contains(err.Error(), "before wait_for_prior_grid()") {
		t.Errorf("a dependent kernel reading before its wait: %v; want the emulator's failure", err)
	}
}
