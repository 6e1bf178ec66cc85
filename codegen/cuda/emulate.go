package cuda

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/mirage-go/mirage/internal/subprocess"
	"github.com/mirage-go/mirage/templates"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// Emulation is an emitted program built for the CPU emulator
// (templates/emu): a host executable that reads the program's inputs as
// float32 from a file, rounds them to their dtypes, runs mirage_NAME, and
// writes the rounded inputs and then the outputs, as float32, to another.
// Outputs and workspace start as 0xff bytes (NaN), so that an element
// nobody writes shows.
type Emulation struct {
	Bin string // the executable: Bin IN OUT
	g   *kernel.Graph
}

// BuildEmulation writes res, the code Emit wrote for g, into dir with the
// emulator's headers and a main, and compiles it with g++. It returns the
// compiler's warnings, if any, beside the build.
func BuildEmulation(ctx context.Context, dir string, g *kernel.Graph, res *Result) (*Emulation, []byte, error) {
	gxx, err := templates.EmulatorCompiler()
	if err != nil {
		return nil, nil, err
	}
	for _, f := range res.Files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
			return nil, nil, err
		}
	}
	emu := filepath.Join(dir, "emu")
	if err := os.MkdirAll(emu, 0o755); err != nil {
		return nil, nil, err
	}
	if err := templates.WriteEmulator(emu); err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "main.cpp"), []byte(emulatorMain(res, g)), 0o644); err != nil {
		return nil, nil, err
	}
	bin := filepath.Join(dir, "prog")
	// main.cpp includes NAME.cu first: one translation unit, so that g++
	// reads the runtime (or its precompiled form, 50 MB) once, not once
	// for each of two files. That was a quarter of a build.
	args := append(templates.EmulatorArgs(ctx, gxx), "-I"+emu, "-I"+dir, "-x", "c++", "main.cpp", "-o", bin)
	cmd := subprocess.Command(ctx, gxx, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, nil, fmt.Errorf("g++ for the emulator: %v\n%s", err, out)
	}
	return &Emulation{Bin: bin, g: g}, out, nil
}

// BuildEngine writes res, the code EmitDynamic wrote, into dir with the
// emulator's headers and the host program engine (examples/engine's
// engine.cpp, which includes NAME.h), and compiles them with g++ into
// dir/engine. It returns the executable and the compiler's warnings.
func BuildEngine(ctx context.Context, dir string, res *Result, engine []byte) (string, []byte, error) {
	gxx, err := templates.EmulatorCompiler()
	if err != nil {
		return "", nil, err
	}
	if res.Buckets == nil {
		return "", nil, fmt.Errorf("%s is not a dynamic program: the engine needs mirage_%s(..., m, ...)", res.Name, res.Name)
	}
	// g++ runs in dir: its include paths must not be relative to here.
	dir, err = filepath.Abs(dir)
	if err != nil {
		return "", nil, err
	}
	for _, f := range res.Files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
			return "", nil, err
		}
	}
	emu := filepath.Join(dir, "emu")
	if err := os.MkdirAll(emu, 0o755); err != nil {
		return "", nil, err
	}
	if err := templates.WriteEmulator(emu); err != nil {
		return "", nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "engine.cpp"), engine, 0o644); err != nil {
		return "", nil, err
	}
	// One translation unit, as BuildEmulation's: the layer first, then
	// the engine, which finds NAME.h included.
	one := fmt.Sprintf("#include \"%s.cu\"\n#include \"engine.cpp\"\n", res.Name)
	if err := os.WriteFile(filepath.Join(dir, "engine_one.cpp"), []byte(one), 0o644); err != nil {
		return "", nil, err
	}
	bin := filepath.Join(dir, "engine")
	args := append(templates.EmulatorArgs(ctx, gxx), "-I"+emu, "-I"+dir, "-DMIRAGE_PROGRAM="+res.Name,
		"-x", "c++", "engine_one.cpp", "-o", bin)
	cmd := subprocess.Command(ctx, gxx, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", nil, fmt.Errorf("g++ for the emulator: %v\n%s", err, out)
	}
	return bin, out, nil
}

// Run runs the program on the inputs in file in, writing to file out, with
// env (such as MIRAGE_EMU_ORDER=random) added to the environment.
func (e *Emulation) Run(ctx context.Context, in, out string, env ...string) error {
	cmd := subprocess.Command(ctx, e.Bin, in, out)
	cmd.Env = append(os.Environ(), env...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("the emulated program: %v\n%s", err, bytes.TrimSpace(msg))
	}
	return nil
}

// WriteInputs writes the program's inputs, as the executable reads them,
// to file path: value(k, i) is element i of input k.
// It streams them: a model's weights are gigabytes.
func (e *Emulation) WriteInputs(path string, value func(k, i int) float32) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var b [4]byte
	for k, id := range e.g.Inputs() {
		for i := range e.g.Tensors[id].Shape.NumElements() {
			binary.LittleEndian.PutUint32(b[:], math.Float32bits(value(k, i)))
			w.Write(b[:]) // its error is Flush's
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// emulatorMain is the executable's main. It names every device buffer for
// the emulator's counters (mirage_emu::name_buffer), by the tensor's C name.
func emulatorMain(res *Result, g *kernel.Graph) string {
	var b strings.Builder
	fmt.Fprintf(&b, `// The program first, as nvcc would compile it alone: nothing above it.
#include "%s.cu"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>

// In a namespace of its own: the program's names stay its own.
namespace emu_main {
inline float to_f(float x) { return x; }
inline float to_f(__half x) { return __half2float(x); }
inline float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T> inline T from_f(float x);
template <> inline float from_f<float>(float x) { return x; }
template <> inline __half from_f<__half>(float x) { return __float2half_rn(x); }
template <> inline __nv_bfloat16 from_f<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

template <typename T> void* input(FILE* in, FILE* out, size_t n) {
  T* p = static_cast<T*>(std::aligned_alloc(256, (n * sizeof(T) + 511) / 256 * 256));
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
  void* p = std::aligned_alloc(256, (n * sizeof(T) + 511) / 256 * 256);
  std::memset(p, 0xff, n * sizeof(T));
  return p;
}
template <typename T> void dump(FILE* out, const void* p, size_t n) {
  std::vector<float> x(n);
  for (size_t i = 0; i < n; i++) x[i] = to_f(static_cast<const T*>(p)[i]);
  std::fwrite(x.data(), 4, n, out);
}
}  // namespace emu_main

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  FILE* in = std::fopen(argv[1], "rb");
  FILE* out = std::fopen(argv[2], "wb");
  if (!in || !out) return 2;
  std::vector<const void*> inputs;
  std::vector<void*> outputs;
`, res.Name)
	for _, id := range g.Inputs() {
		fmt.Fprintf(&b, "  inputs.push_back(emu_main::input<%s>(in, out, %d));\n", ctype(g.Tensors[id].DType), g.Tensors[id].Shape.NumElements())
	}
	for _, id := range g.Outputs {
		fmt.Fprintf(&b, "  outputs.push_back(emu_main::output<%s>(%d));\n", ctype(g.Tensors[id].DType), g.Tensors[id].Shape.NumElements())
	}
	fmt.Fprintf(&b, `  size_t ws_bytes = mirage_%[1]s_workspace_bytes();
  void* ws = ws_bytes ? std::aligned_alloc(256, (ws_bytes + 511) / 256 * 256) : nullptr;
  if (ws) std::memset(ws, 0xff, ws_bytes);
`, res.Name)
	for _, buf := range res.Buffers {
		var ptr string
		switch buf.Role {
		case RoleInput:
			ptr = fmt.Sprintf("inputs[%d]", buf.Index)
		case RoleOutput:
			ptr = fmt.Sprintf("outputs[%d]", buf.Index)
		default:
			ptr = fmt.Sprintf("static_cast<unsigned char*>(ws) + %d", buf.Index)
		}
		fmt.Fprintf(&b, "  mirage_emu::name_buffer(%s, %d, %q);\n", ptr, buf.Bytes, buf.Name())
	}
	// A check of the entry point's refusals: MIRAGE_EMU_MISALIGN=inputs,
	// outputs or workspace moves the first such pointer 8 bytes on (its
	// allocation has room: a whole 256 bytes more), off the 16-byte and
	// 256-byte alignment the header asks for.
	b.WriteString(`  if (const char* m = std::getenv("MIRAGE_EMU_MISALIGN")) {
    if (!std::strcmp(m, "inputs") && !inputs.empty()) inputs[0] = static_cast<const char*>(inputs[0]) + 8;
    else if (!std::strcmp(m, "outputs") && !outputs.empty()) outputs[0] = static_cast<char*>(outputs[0]) + 8;
    else if (!std::strcmp(m, "workspace") && ws) ws = static_cast<char*>(ws) + 8;
    else return 2;
  }
`)
	fmt.Fprintf(&b, `  cudaError_t err = mirage_%[1]s(outputs.data(), inputs.data(), ws, nullptr);
  if (err != cudaSuccess) {
    std::fprintf(stderr, "mirage_%[1]s returned error %%d\n", static_cast<int>(err));
    return 1;
  }
`, res.Name)
	for j, id := range g.Outputs {
		fmt.Fprintf(&b, "  emu_main::dump<%s>(out, outputs[%d], %d);\n", ctype(g.Tensors[id].DType), j, g.Tensors[id].Shape.NumElements())
	}
	b.WriteString("  std::fclose(out);\n  return 0;\n}\n")
	return b.String()
}
