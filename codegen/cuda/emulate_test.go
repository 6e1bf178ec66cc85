package cuda

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
// the interpreter.
func emuRun(t *testing.T, name string, g *kernel.Graph, scale float64, opts Options) *Result {
	t.Helper()
	gxx := needGXX(t)
	res, err := Emit(name, g, opts)
	if err != nil {
		t.Fatalf("%s: Emit: %v", name, err)
	}
	dir := t.TempDir()
	for _, f := range res.Files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(dir, "emu"), 0o755)
	if err := templates.WriteEmulator(filepath.Join(dir, "emu")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "main.cpp"), []byte(emuMain(res.Name, g)), 0o644)
	bin := filepath.Join(dir, "prog")
	cmd := exec.Command(gxx, "-std=c++17", "-O1", "-DMIRAGE_EMULATE", "-Wall", "-Wno-unknown-pragmas", "-Wno-unused-function",
		"-I"+filepath.Join(dir, "emu"), "-I"+dir, "-x", "c++", res.Name+".cu", "main.cpp", "-o", bin)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: g++: %v\n%s", name, err, out)
	} else if len(out) > 0 {
		t.Errorf("%s: g++ warnings:\n%s", name, out)
	}

	// Random inputs, as float32 for the program to round.
	r := rand.New(rand.NewPCG(7, uint64(len(name))))
	var raw bytes.Buffer
	for _, id := range g.Inputs() {
		for range g.Tensors[id].Shape.NumElements() {
			binary.Write(&raw, binary.LittleEndian, float32((2*r.Float64()-1)*scale))
		}
	}
	inPath := filepath.Join(dir, "in.bin")
	os.WriteFile(inPath, raw.Bytes(), 0o644)

	var first []byte
	for _, o := range emuOrders {
		outPath := filepath.Join(dir, "out-"+o.order+".bin")
		run := exec.Command(bin, inPath, outPath)
		run.Env = append(os.Environ(), "MIRAGE_EMU_ORDER="+o.order, "MIRAGE_EMU_CPASYNC="+o.cpasync)
		if out, err := run.CombinedOutput(); err != nil {
			t.Fatalf("%s (%s, %s): %v\n%s", name, o.order, o.cpasync, err, out)
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
	return res
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
			if !(d <= worst) { // NaN counts as the worst
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

// emuMain is the driver: it reads float32 inputs, rounds them to their
// dtypes, runs mirage_NAME, and writes the rounded inputs and the outputs
// as float32. Outputs and workspace start as 0xff bytes (NaN), so an
// element nobody writes shows.
func emuMain(name string, g *kernel.Graph) string {
	var b strings.Builder
	fmt.Fprintf(&b, `#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>
#include "%s.h"

inline float to_f(float x) { return x; }
inline float to_f(__half x) { return __half2float(x); }
inline float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T> inline T from_f(float x);
template <> inline float from_f<float>(float x) { return x; }
template <> inline __half from_f<__half>(float x) { return __float2half_rn(x); }
template <> inline __nv_bfloat16 from_f<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

template <typename T> void* input(FILE* in, FILE* out, size_t n) {
  T* p = static_cast<T*>(std::aligned_alloc(256, (n * sizeof(T) + 255) / 256 * 256));
  std::vector<float> x(n);
  if (std::fread(x.data(), 4, n, in) != n) std::exit(3);
  for (size_t i = 0; i < n; i++) {
    p[i] = from_f<T>(x[i]);
    x[i] = to_f(p[i]);
  }
  std::fwrite(x.data(), 4, n, out);
  return p;
}
template <typename T> void* output(size_t n) {
  void* p = std::aligned_alloc(256, (n * sizeof(T) + 255) / 256 * 256);
  std::memset(p, 0xff, n * sizeof(T));
  return p;
}
template <typename T> void dump(FILE* out, const void* p, size_t n) {
  std::vector<float> x(n);
  for (size_t i = 0; i < n; i++) x[i] = to_f(static_cast<const T*>(p)[i]);
  std::fwrite(x.data(), 4, n, out);
}

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  FILE* in = std::fopen(argv[1], "rb");
  FILE* out = std::fopen(argv[2], "wb");
  if (!in || !out) return 2;
  std::vector<const void*> inputs;
  std::vector<void*> outputs;
`, name)
	for _, id := range g.Inputs() {
		fmt.Fprintf(&b, "  inputs.push_back(input<%s>(in, out, %d));\n", ctype(g.Tensors[id].DType), g.Tensors[id].Shape.NumElements())
	}
	for _, id := range g.Outputs {
		fmt.Fprintf(&b, "  outputs.push_back(output<%s>(%d));\n", ctype(g.Tensors[id].DType), g.Tensors[id].Shape.NumElements())
	}
	fmt.Fprintf(&b, `  size_t ws_bytes = mirage_%[1]s_workspace_bytes();
  void* ws = ws_bytes ? std::aligned_alloc(256, (ws_bytes + 255) / 256 * 256) : nullptr;
  if (ws) std::memset(ws, 0xff, ws_bytes);
  cudaError_t err = mirage_%[1]s(outputs.data(), inputs.data(), ws, nullptr);
  if (err != cudaSuccess) {
    std::fprintf(stderr, "mirage_%[1]s returned error %%d\n", static_cast<int>(err));
    return 1;
  }
`, name)
	for j, id := range g.Outputs {
		fmt.Fprintf(&b, "  dump<%s>(out, outputs[%d], %d);\n", ctype(g.Tensors[id].DType), j, g.Tensors[id].Shape.NumElements())
	}
	b.WriteString("  std::fclose(out);\n  return 0;\n}\n")
	return b.String()
}
