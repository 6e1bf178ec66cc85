package cuda

import (
	"bytes"
	"fmt"
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

// nvccCompile emits g for each of archs (opts.Arch is ignored) and
// compiles the code to an object file. Compiler warnings fail the test:
// the emitted code is meant to compile cleanly.
func nvccCompile(t *testing.T, nvcc, name string, g *kernel.Graph, opts Options, archs ...target.Arch) {
	t.Helper()
	builds := emitForArchs(t, archs, func(arch target.Arch) (*Result, error) {
		opts.Arch = arch
		return Emit(name, g, opts)
	})
	for _, b := range builds {
		dir := writeFiles(t, b.res.Files)
		args := append(b.gencode(), "-std=c++17", "-O3", "-Xcompiler", "-Wall", "-Xptxas", "-warn-spills",
			"-c", b.res.Name+".cu", "-o", b.res.Name+".o")
		runNVCC(t, nvcc, dir, name+" for "+b.String(), args)
		if fi, err := os.Stat(filepath.Join(dir, b.res.Name+".o")); err != nil || fi.Size() == 0 {
			t.Errorf("%s for %s: nvcc wrote no object file (%v)", name, b, err)
		}
	}
}

// archBuild is code emitted for one arch or more: where the code for
// several differs only in its comments (the header names its arch, and
// most graphs lower alike for sm_80 and sm_90), one nvcc call compiles it
// for all of them, a -gencode each, as a fat binary is built. The device
// code is then compiled and assembled for every arch as -arch would, and
// the host code, which no arch changes, once: that host half is most of
// a build's time.
type archBuild struct {
	res   *Result
	archs []target.Arch
	code  [][]byte // res's files without their comment lines
}

// emitForArchs emits the code for each of archs and groups the archs
// whose code is the same.
func emitForArchs(t *testing.T, archs []target.Arch, emit func(target.Arch) (*Result, error)) []*archBuild {
	t.Helper()
	var builds []*archBuild
	for _, arch := range archs {
		res, err := emit(arch)
		if err != nil {
			t.Fatalf("for %s: %v", arch.Name, err)
		}
		code := make([][]byte, len(res.Files))
		for i, f := range res.Files {
			code[i] = withoutCommentLines(f.Data)
		}
		i := slices.IndexFunc(builds, func(b *archBuild) bool { return slices.EqualFunc(b.code, code, bytes.Equal) })
		if i < 0 {
			builds = append(builds, &archBuild{res: res, code: code})
			i = len(builds) - 1
		}
		builds[i].archs = append(builds[i].archs, arch)
	}
	return builds
}

// gencode returns nvcc's options that compile for b's archs.
func (b *archBuild) gencode() []string {
	var args []string
	for _, arch := range b.archs {
		n := strings.TrimPrefix(arch.Name, "sm_")
		args = append(args, "-gencode", "arch=compute_"+n+",code=sm_"+n)
	}
	return args
}

func (b *archBuild) String() string {
	names := make([]string, len(b.archs))
	for i, arch := range b.archs {
		names[i] = arch.Name
	}
	return strings.Join(names, " and ")
}

// runNVCC runs nvcc with args in dir; a failure or any output (a
// warning) fails the test.
func runNVCC(t *testing.T, nvcc, dir, what string, args []string) {
	t.Helper()
	cmd := exec.Command(nvcc, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: nvcc: %v\n%s", what, err, out)
	}
	if msg := strings.TrimSpace(string(out)); msg != "" {
		t.Errorf("%s: nvcc warnings:\n%s", what, msg)
	}
}

// withoutCommentLines returns src without the lines that are only a //
// comment.
func withoutCommentLines(src []byte) []byte {
	var code []byte
	for line := range bytes.Lines(src) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("//")) {
			code = append(code, line...)
		}
	}
	return code
}

// TestNVCCExamples compiles the examples' emitted code (programs and
// hand-written μGraphs) for sm_80 and sm_90, as separate files and as one.
func TestNVCCExamples(t *testing.T) {
	nvcc := needNVCC(t)
	var progs []nvccProgram
	for _, ex := range examples {
		progs = append(progs, nvccProgram{ex, loadExample(t, ex), Options{SingleFile: strings.HasPrefix(ex, "gqa")}})
	}
	nvccPrograms(t, nvcc, progs, sm80, sm90)
}

// TestNVCCCases compiles the emulator's cases, which cover the fast paths
// and the fallbacks, for both architectures.
func TestNVCCCases(t *testing.T) {
	nvcc := needNVCC(t)
	if testing.Short() {
		t.Skip("-short: the cases take a minute of nvcc")
	}
	var progs, hopper []nvccProgram
	for _, c := range emuCases {
		p := nvccProgram{c.name, loadSource(t, c.name, c.src...), c.opts}
		if c.opts.DependentLaunch { // emitted for sm_90 and newer alone
			hopper = append(hopper, p)
			continue
		}
		progs = append(progs, p)
	}
	nvccPrograms(t, nvcc, progs, sm80, sm90)
	nvccPrograms(t, nvcc, hopper, sm90)
}

// nvccProgram is a program whose emitted code nvccPrograms compiles.
type nvccProgram struct {
	name string
	g    *kernel.Graph
	opts Options
}

// nvccPrograms compiles the code of each of progs, emitted for each of
// archs, as nvcc -c NAME.cu would: but in one translation unit per arch
// and per set of macros the code defines before the runtime, each
// program's NAME.cu in a namespace of its own after the runtime (whose
// include guard then skips the program's own #include). The host half of
// an nvcc build, most of its time, is then compiled once per unit, not
// per program: five examples took 20 s alone and 7 s together. Where a
// unit fails or warns, each of its programs is compiled alone, so that
// the failure names the program. Code with the runtime inlined
// (SingleFile) is compiled alone.
func nvccPrograms(t *testing.T, nvcc string, progs []nvccProgram, archs ...target.Arch) {
	t.Helper()
	// A unit per set of archs the code is the same for (archBuild) and
	// per prelude.
	type unit struct {
		archs   *archBuild // the first program's build: its archs and gencode
		prelude string     // the #define lines before the runtime's #include
		progs   []nvccProgram
		res     []*Result
	}
	var units []*unit
	for _, p := range progs {
		builds := emitForArchs(t, archs, func(arch target.Arch) (*Result, error) {
			opts := p.opts
			opts.Arch = arch
			return Emit(p.name, p.g, opts)
		})
		for _, b := range builds {
			prelude, ok := runtimePrelude(b.res)
			if !ok {
				t.Run(p.name+"/"+b.String()+"/alone", func(t *testing.T) {
					t.Parallel()
					nvccCompile(t, nvcc, p.name, p.g, p.opts, b.archs...)
				})
				continue
			}
			k := slices.IndexFunc(units, func(u *unit) bool { return u.archs.String() == b.String() && u.prelude == prelude })
			if k < 0 {
				units = append(units, &unit{archs: b, prelude: prelude})
				k = len(units) - 1
			}
			if slices.ContainsFunc(units[k].res, func(r *Result) bool { return r.Name == b.res.Name }) {
				t.Fatalf("two programs whose files are named %s", b.res.Name)
			}
			units[k].progs = append(units[k].progs, p)
			units[k].res = append(units[k].res, b.res)
		}
	}
	for k, u := range units {
		t.Run(fmt.Sprintf("%s/unit%d", strings.ReplaceAll(u.archs.String(), " ", "_"), k), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			var hoisted, body strings.Builder
			for i, res := range u.res {
				for _, f := range res.Files {
					if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
						t.Fatal(err)
					}
					if f.Name == "mirage_runtime.cuh" {
						continue // included at file scope as it is
					}
					for line := range strings.Lines(string(f.Data)) {
						// The program's system headers, at file scope after
						// the runtime, as NAME.cu includes NAME.h.
						if strings.HasPrefix(line, "#include <") && !strings.Contains(hoisted.String(), line) {
							hoisted.WriteString(line)
						}
					}
				}
				fmt.Fprintf(&body, "namespace mirage_unit_program_%d {\n#include \"%s.cu\"\n}\n", i, res.Name)
			}
			src := u.prelude + "#include \"mirage_runtime.cuh\"\n" + hoisted.String() + body.String()
			if err := os.WriteFile(filepath.Join(dir, "unit.cu"), []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			args := append(u.archs.gencode(), "-std=c++17", "-O3", "-Xcompiler", "-Wall", "-Xptxas", "-warn-spills", "-c", "unit.cu", "-o", "unit.o")
			cmd := exec.Command(nvcc, args...)
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			if fi, serr := os.Stat(filepath.Join(dir, "unit.o")); err == nil && len(bytes.TrimSpace(out)) == 0 && serr == nil && fi.Size() > 0 {
				return
			}
			t.Logf("the unit of %d programs for %s: %v\n%s\ncompiling each alone", len(u.progs), u.archs, err, out)
			for _, p := range u.progs {
				nvccCompile(t, nvcc, p.name, p.g, p.opts, u.archs.archs...)
			}
			if !t.Failed() {
				t.Errorf("the unit failed (or warned) where each program alone compiles cleanly")
			}
		})
	}
}

// runtimePrelude returns the #define lines of res's NAME.cu before its
// #include of the runtime, and false when it has no such #include (the
// runtime is inlined).
func runtimePrelude(res *Result) (string, bool) {
	for _, f := range res.Files {
		if f.Name != res.Name+".cu" {
			continue
		}
		before, _, ok := strings.Cut(string(f.Data), "#include \"mirage_runtime.cuh\"")
		if !ok {
			return "", false
		}
		var defines strings.Builder
		for line := range strings.Lines(before) {
			if strings.HasPrefix(line, "#define ") {
				defines.WriteString(line)
			}
		}
		return defines.String(), true
	}
	return "", false
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
	for _, padded := range []bool{false, true} {
		rows := rows
		rows.Padded = padded
		name := "plain"
		if padded {
			name = "padded"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			builds := emitForArchs(t, []target.Arch{sm80, sm90}, func(arch target.Arch) (*Result, error) {
				return EmitDynamic("rmsnorm_matmul", rows, buckets, Options{Arch: arch})
			})
			for _, b := range builds {
				res := b.res
				// The 32-row bucket is the plain program: its matmul
				// calls cuBLASLt, which the engine then links.
				if !slices.Equal(res.Links, []string{"cublasLt"}) {
					t.Errorf("links %v, want [cublasLt]", res.Links)
				}
				dir := writeFiles(t, res.Files)
				if err := os.WriteFile(filepath.Join(dir, "engine.cpp"), mirageexamples.Engine, 0o644); err != nil {
					t.Fatal(err)
				}
				args := append(b.gencode(), "-std=c++17", "-O3", "-Xcompiler", "-Wall",
					"-DMIRAGE_PROGRAM="+res.Name, "-include", res.Name+".h", "-x", "cu", "engine.cpp", res.Name+".cu", "-o", "engine")
				for _, l := range res.Links {
					args = append(args, "-l"+l)
				}
				runNVCC(t, nvcc, dir, "the engine for "+b.String(), args)
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
			nvccCompile(t, nvcc, "llama7b_layer", g, Options{}, arch)
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
	nvccCompile(t, nvcc, "big", g, Options{}, sm90)
}
