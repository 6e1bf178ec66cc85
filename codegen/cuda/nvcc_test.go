package cuda

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	mirageexamples "github.com/mirage-go/mirage/examples"
	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// This file compiles emitted code with the CUDA toolkit's nvcc, for every
// architecture we target, as users will: nvcc -arch=sm_XX -c NAME.cu, with
// the runtime header beside it. No GPU is needed.
//
// Where nvcc is missing the tests skip, unless MIRAGE_REQUIRE_NVCC is set
// (CI sets it: there, a skip would hide that the toolkit failed to install).

// needNVCC returns nvcc's path, or skips (fails under MIRAGE_REQUIRE_NVCC).
func needNVCC(t *testing.T) string {
	t.Helper()
	nvcc, err := exec.LookPath("nvcc")
	if err != nil {
		if os.Getenv("MIRAGE_REQUIRE_NVCC") != "" {
			t.Fatal("MIRAGE_REQUIRE_NVCC is set but nvcc is not on PATH (Debian: apt-get install nvidia-cuda-toolkit, component non-free)")
		}
		t.Skip("nvcc is not on PATH: the CUDA compile tests need the CUDA toolkit (set MIRAGE_REQUIRE_NVCC to make this a failure)")
	}
	return nvcc
}

// writeFiles writes emitted files into a new temporary directory.
func writeFiles(t *testing.T, files []File) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// nvccCompile emits g for arch into a temporary directory and compiles it
// to an object file. Compiler warnings fail the test: the emitted code is
// meant to compile cleanly.
func nvccCompile(t *testing.T, nvcc, name string, g *kernel.Graph, opts Options) {
	t.Helper()
	res, err := Emit(name, g, opts)
	if err != nil {
		t.Fatalf("%s for %s: %v", name, opts.Arch, err)
	}
	dir := writeFiles(t, res.Files)
	cmd := exec.Command(nvcc, "-arch="+opts.Arch.Name, "-std=c++17", "-O3",
		"-Xcompiler", "-Wall", "-Xptxas", "-warn-spills",
		"-c", res.Name+".cu", "-o", res.Name+".o")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s for %s: nvcc: %v\n%s", name, opts.Arch, err, out)
	}
	if msg := strings.TrimSpace(string(out)); msg != "" {
		t.Errorf("%s for %s: nvcc warnings:\n%s", name, opts.Arch, msg)
	}
	if fi, err := os.Stat(filepath.Join(dir, res.Name+".o")); err != nil || fi.Size() == 0 {
		t.Errorf("%s for %s: nvcc wrote no object file (%v)", name, opts.Arch, err)
	}
}

// TestNVCCExamples compiles the examples' emitted code (programs and
// hand-written μGraphs) for sm_80 and sm_90, as separate files and as one.
func TestNVCCExamples(t *testing.T) {
	nvcc := needNVCC(t)
	for _, ex := range examples {
		g := loadExample(t, ex)
		for _, arch := range []target.Arch{sm80, sm90} {
			t.Run(ex+"/"+arch.Name, func(t *testing.T) {
				t.Parallel()
				nvccCompile(t, nvcc, ex, g, Options{Arch: arch, SingleFile: strings.HasPrefix(ex, "gqa")})
			})
		}
	}
}

// TestNVCCCases compiles the emulator's cases, which cover the fast paths
// and the fallbacks, for both architectures.
func TestNVCCCases(t *testing.T) {
	nvcc := needNVCC(t)
	if testing.Short() {
		t.Skip("-short: the cases take a minute of nvcc")
	}
	for _, c := range emuCases {
		g := loadSource(t, c.name, c.src...)
		for _, arch := range []target.Arch{sm80, sm90} {
			t.Run(c.name+"/"+arch.Name, func(t *testing.T) {
				t.Parallel()
				opts := c.opts
				opts.Arch = arch
				nvccCompile(t, nvcc, c.name, g, opts)
			})
		}
	}
}

// TestNVCCDynamic builds a dynamic program's one entry point (a bucket of
// the hand-written RMSNorm+MatMul μGraph, whose kernel guards rows past m,
// and one of the program's own ops) with examples/engine, the decode loop
// an engine runs, into an executable for sm_80 and sm_90; and the same
// buckets padded (Rows.Padded: the runtime's copy_rows in and out, as a
// layer written head by head has them).
func TestNVCCDynamic(t *testing.T) {
	nvcc := needNVCC(t)
	fused, plain := loadExample(t, "rmsnorm_matmul_mugraph"), loadExample(t, "rmsnorm_matmul")
	rows := Rows{Lo: 1, Hi: 32, Inputs: []int{0, -1}, Outputs: []int{0}}
	program, err := plain.WithDynamic(map[kernel.TensorID]int{plain.Inputs()[0]: 0})
	if err != nil {
		t.Fatal(err)
	}
	big, err := program.Bind(32)
	if err != nil {
		t.Fatal(err)
	}
	buckets := []Bucket{{Size: 16, Lo: 1, Hi: 16, Graph: fused}, {Size: 32, Lo: 17, Hi: 32, Graph: big}}
	for _, tc := range []struct {
		arch   target.Arch
		padded bool
	}{{sm80, false}, {sm90, false}, {sm80, true}, {sm90, true}} {
		arch, rows := tc.arch, rows
		rows.Padded = tc.padded
		name := arch.Name
		if tc.padded {
			name += "/padded"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res, err := EmitDynamic("rmsnorm_matmul", rows, buckets, Options{Arch: arch})
			if err != nil {
				t.Fatal(err)
			}
			dir := writeFiles(t, res.Files)
			if err := os.WriteFile(filepath.Join(dir, "engine.cpp"), mirageexamples.Engine, 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"-arch=" + arch.Name, "-std=c++17", "-O3", "-Xcompiler", "-Wall",
				"-DMIRAGE_PROGRAM=" + res.Name, "-include", res.Name + ".h", "-x", "cu", "engine.cpp", res.Name + ".cu", "-o", "engine"}
			// The 32-row bucket is the plain program: its matmul calls
			// cuBLASLt, which the engine then links.
			if !slices.Equal(res.Links, []string{"cublasLt"}) {
				t.Errorf("links %v, want [cublasLt]", res.Links)
			}
			for _, l := range res.Links {
				args = append(args, "-l"+l)
			}
			cmd := exec.Command(nvcc, args...)
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("nvcc: %v\n%s", err, out)
			}
			if msg := strings.TrimSpace(string(out)); msg != "" {
				t.Errorf("nvcc warnings:\n%s", msg)
			}
		})
	}
}

// TestNVCCLayerDoesNotSpill compiles the answer superopt wrote for the
// LLaMA-7B layer at 4 tokens (testdata: /tmp/h1/progs/llama7b_layer.py
// -- --tokens 4, sm_90, 60 s), whose 512-thread kernels ptxas spilled when
// their __launch_bounds__ gave the threads alone. Each such kernel now
// names the blocks an SM holds, as the launch plan counts them.
func TestNVCCLayerDoesNotSpill(t *testing.T) {
	nvcc := needNVCC(t)
	f, err := kernel.ReadFile(filepath.Join("testdata", "llama7b_layer_t4.ugraph.json"))
	if err != nil {
		t.Fatal(err)
	}
	g := f.Graphs[0].Graph
	for _, arch := range []target.Arch{sm80, sm90} {
		t.Run(arch.Name, func(t *testing.T) {
			t.Parallel()
			res, err := Emit("llama7b_layer", g, Options{Arch: arch})
			if err != nil {
				t.Fatal(err)
			}
			bounds := regexp.MustCompile(`__launch_bounds__\(512, (\d+)\)`).FindAllSubmatch(res.Files[0].Data, -1)
			if len(bounds) != 4 {
				t.Errorf("%d kernels of 512 threads name their blocks an SM, want the layer's 4", len(bounds))
			}
			for _, b := range bounds {
				if string(b[1]) != "1" {
					t.Errorf("__launch_bounds__(512, %s): every grid has at most one block an SM", b[1])
				}
			}
			nvccCompile(t, nvcc, "llama7b_layer", g, Options{Arch: arch})
		})
	}
}

// TestNVCCRefusesAnOlderGPU compiles, for sm_80, code emitted for sm_90
// whose kernel takes more shared memory a block than sm_80 allows (the
// first H100 run's gated-MLP candidate, 231168 bytes): nvcc stops with
// the preamble's message, where the build used to succeed and the entry
// point to fail at its first call. For sm_90 it compiles.
func TestNVCCRefusesAnOlderGPU(t *testing.T) {
	nvcc := needNVCC(t)
	g := measuredCandidate(t, "h100-2026-11-27/gated_mlp", 7)
	res, err := Emit("big", g, Options{Arch: sm90})
	if err != nil {
		t.Fatal(err)
	}
	dir := writeFiles(t, res.Files)
	cmd := exec.Command(nvcc, "-arch=sm_80", "-std=c++17", "-c", "big.cu", "-o", "big.o")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if want := "emitted for sm_90: a kernel takes 231168 bytes of shared memory a block, more than GPUs before sm_90 allow (sm_80: 166912); for such a GPU, emit it with --arch sm_80"; err == nil || !strings.Contains(string(out), want) {
		t.Errorf("nvcc -arch=sm_80 of code for sm_90: %v\n%s\nwant a failure saying %q", err, out, want)
	}
	nvccCompile(t, nvcc, "big", g, Options{Arch: sm90})
}
