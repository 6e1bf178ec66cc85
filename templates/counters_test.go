package templates

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// counterCases are small kernels whose memory accesses the emulator's
// counters must count as a GPU serves them. g is a float buffer of 4096
// elements named "g", s and smem the dynamic shared memory (4 KiB), tid
// the thread. Each launches one block.
var counterCases = []struct {
	name    string
	threads int
	body    string
	load    [4]int64 // requests, sectors, used bytes, distinct sectors of g
	store   [4]int64
	shared  [3]int64 // requests, wavefronts, phases
	cpasync int64
}{
	{name: "coalesced", threads: 32, body: "MIRAGE_STG(g[1024 + tid]) = MIRAGE_LDG(g[tid]);",
		load: [4]int64{1, 4, 128, 4}, store: [4]int64{1, 4, 128, 4}},
	{name: "strided by a sector", threads: 32, body: "sink += MIRAGE_LDG(g[tid * 8]);",
		load: [4]int64{1, 32, 128, 32}},
	{name: "column of a row-major matrix", threads: 32, body: "sink += MIRAGE_LDG(g[tid * 64 + 3]);",
		load: [4]int64{1, 32, 128, 32}},
	{name: "broadcast", threads: 32, body: "sink += MIRAGE_LDG(g[0]);",
		load: [4]int64{1, 1, 4, 1}},
	{name: "misaligned by an element", threads: 32, body: "sink += MIRAGE_LDG(g[tid + 1]);",
		load: [4]int64{1, 5, 128, 5}},
	{name: "a quarter of the lanes", threads: 32, body: "if (tid < 8) sink += MIRAGE_LDG(g[tid]);",
		load: [4]int64{1, 1, 32, 1}},
	{name: "two warps, three iterations", threads: 64, body: "for (int i = 0; i < 3; ++i) sink += MIRAGE_LDG(g[i * 64 + tid]);",
		load: [4]int64{6, 24, 768, 24}},
	{name: "across a barrier", threads: 32, body: "sink += MIRAGE_LDG(g[tid]); __syncthreads(); sink += MIRAGE_LDG(g[tid * 2]);",
		load: [4]int64{2, 4 + 8, 128 + 128, 8}},
	// A second request for the same sectors moves them again; they are
	// distinct once.
	{name: "re-read after a barrier", threads: 32, body: "sink += MIRAGE_LDG(g[tid]); __syncthreads(); sink += MIRAGE_LDG(g[tid]);",
		load: [4]int64{2, 8, 256, 4}},
	{name: "two warps, the same row", threads: 64, body: "sink += MIRAGE_LDG(g[tid % 32]);",
		load: [4]int64{2, 8, 256, 4}},
	{name: "read then written", threads: 32, body: "MIRAGE_STG(g[tid]) = MIRAGE_LDG(g[tid]) + 1.0f;",
		load: [4]int64{1, 4, 128, 4}, store: [4]int64{1, 4, 128, 4}},
	{name: "shared, consecutive words", threads: 32, body: "MIRAGE_STS(s[tid]) = 1.0f;",
		shared: [3]int64{1, 1, 1}},
	{name: "shared, stride 2: 2-way conflict", threads: 32, body: "MIRAGE_STS(s[2 * tid]) = 1.0f;",
		shared: [3]int64{1, 2, 1}},
	{name: "shared, stride 32: 32-way conflict", threads: 32, body: "MIRAGE_STS(s[32 * tid]) = 1.0f;",
		shared: [3]int64{1, 32, 1}},
	{name: "shared broadcast", threads: 32, body: "MIRAGE_STS(s[tid]) = 1.0f; __syncthreads(); sink += MIRAGE_LDS(s[0]);",
		shared: [3]int64{2, 2, 2}},
	{name: "shared halves", threads: 32, body: "MIRAGE_STS(reinterpret_cast<__half*>(smem)[tid]) = __float2half_rn(1.0f);",
		shared: [3]int64{1, 1, 1}},
	{name: "shared update", threads: 32, body: "MIRAGE_STS(s[tid]) = 0.0f; __syncthreads(); MIRAGE_RMWS(s[tid]) += 1.0f;",
		shared: [3]int64{3, 3, 3}},
	{name: "store2 to shared: half-warp phases", threads: 32, body: "mirage::store2(s + 2 * tid, 1.0f, 2.0f);",
		shared: [3]int64{1, 2, 2}},
	{name: "store2 to global", threads: 32, body: "mirage::store2(g + 2 * tid, 1.0f, 2.0f);",
		store: [4]int64{1, 8, 256, 8}},
	{name: "add2", threads: 32, body: "mirage::store2(s + 2 * tid, 1.0f, 2.0f); __syncthreads(); mirage::add2(s + 2 * tid, 1.0f, 2.0f);",
		shared: [3]int64{3, 6, 6}},
	{name: "cp.async", threads: 32,
		body: "mirage::cp_async<16>(smem + 16 * tid, g + 4 * tid); mirage::cp_async_commit(); mirage::cp_async_wait<0>();",
		load: [4]int64{1, 16, 512, 16}, shared: [3]int64{1, 4, 4}, cpasync: 512},
	{name: "cp.async zero-filling every other lane", threads: 32,
		body: "for (int i = 0; i < 2; ++i) mirage::cp_async16_zfill(smem + 16 * tid, g + 4 * tid + 128 * i, (tid + i) % 2 == 0); mirage::cp_async_commit(); mirage::cp_async_wait<0>();",
		load: [4]int64{2, 32, 512, 32}, shared: [3]int64{2, 8, 8}, cpasync: 512},
	{name: "ldmatrix, rows of 16 bytes", threads: 32, body: "uint32_t r[4]; mirage::ldmatrix_x4(r, smem + 16 * tid); sink += r[0];",
		shared: [3]int64{1, 4, 4}},
	{name: "ldmatrix, rows 64 bytes apart: 4-way conflicts", threads: 32, body: "uint32_t r[4]; mirage::ldmatrix_x4(r, smem + 64 * tid); sink += r[0];",
		shared: [3]int64{1, 16, 4}},
}

// TestEmulatorCounters runs each case under MIRAGE_EMU_COUNTERS and
// checks what the emulator counted.
func TestEmulatorCounters(t *testing.T) {
	var src strings.Builder
	src.WriteString("#include \"mirage_runtime.cuh\"\n#include <cstdlib>\n\nvolatile float sink_;\n\n")
	for i, c := range counterCases {
		fmt.Fprintf(&src, "// %s\n__global__ void k%d(float* g) {\n  MIRAGE_DYNAMIC_SMEM(smem);\n  float* s = reinterpret_cast<float*>(smem);\n  (void)s;\n  const int tid = threadIdx.x;\n  float sink = 0.0f;\n  %s\n  sink_ = sink;\n}\n\n", c.name, i, c.body)
	}
	src.WriteString("int main() {\n  float* g = static_cast<float*>(std::aligned_alloc(256, 4096 * 4));\n  for (int i = 0; i < 4096; i++) g[i] = 1.0f;\n  mirage_emu::name_buffer(g, 4096 * 4, \"g\");\n")
	for i, c := range counterCases {
		fmt.Fprintf(&src, "  if (mirage::launch(k%d, dim3(1), dim3(%d), 4096, nullptr, g) != cudaSuccess) return 1;\n", i, c.threads)
	}
	src.WriteString("  return 0;\n}\n")
	bin := buildEmulated(t, "counters", src.String())
	path := filepath.Join(t.TempDir(), "counters.jsonl")
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "MIRAGE_EMU_COUNTERS="+path)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	type traffic struct {
		Name  string   `json:"name"`
		Load  [4]int64 `json:"load"`
		Store [4]int64 `json:"store"`
	}
	var launches []struct {
		Launch       int       `json:"launch"`
		Buffers      []traffic `json:"buffers"`
		Shared       [3]int64  `json:"shared"`
		CpAsyncBytes int64     `json:"cp_async_bytes"`
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		launches = append(launches, struct {
			Launch       int       `json:"launch"`
			Buffers      []traffic `json:"buffers"`
			Shared       [3]int64  `json:"shared"`
			CpAsyncBytes int64     `json:"cp_async_bytes"`
		}{})
		if err := json.Unmarshal(sc.Bytes(), &launches[len(launches)-1]); err != nil {
			t.Fatalf("line %d: %v: %s", len(launches), err, sc.Bytes())
		}
	}
	if len(launches) != len(counterCases) {
		t.Fatalf("%d launches counted, want %d:\n%s", len(launches), len(counterCases), data)
	}
	for i, c := range counterCases {
		l := launches[i]
		if l.Launch != i || len(l.Buffers) != 2 || l.Buffers[0].Name != "g" || l.Buffers[1].Name != "" {
			t.Errorf("%s: launch %d, buffers %+v; want launch %d, g and the rest", c.name, l.Launch, l.Buffers, i)
			continue
		}
		g, rest := l.Buffers[0], l.Buffers[1]
		if g.Load != c.load || g.Store != c.store {
			t.Errorf("%s: g load %v store %v (requests, sectors, bytes used, distinct sectors); want %v, %v", c.name, g.Load, g.Store, c.load, c.store)
		}
		if rest.Load != [4]int64{} || rest.Store != [4]int64{} {
			t.Errorf("%s: accesses outside g: load %v, store %v", c.name, rest.Load, rest.Store)
		}
		if l.Shared != c.shared {
			t.Errorf("%s: shared %v (requests, wavefronts, phases); want %v", c.name, l.Shared, c.shared)
		}
		if l.CpAsyncBytes != c.cpasync {
			t.Errorf("%s: %d cp.async bytes, want %d", c.name, l.CpAsyncBytes, c.cpasync)
		}
	}
}

// TestEmulatorRefusesMisalignedVectors: a 16-byte vector access (load16,
// store16) or a two-element one (store2) at an address a GPU would fault
// on (cudaErrorMisalignedAddress) fails the emulated program, naming the
// access's size, where a plain host access would have gone through.
func TestEmulatorRefusesMisalignedVectors(t *testing.T) {
	cases := []struct {
		name, body string
		fails      string // "" when the access is aligned
	}{
		{"load16 of a vector's second float", "sink += mirage::load16(g + 4 * tid + 1).e[0];", "an access of 16 bytes at a misaligned address"},
		{"store16 half a vector in", "mirage::store16(g + 4 * tid + 2, mirage::Vec16<float>{});", "an access of 16 bytes at a misaligned address"},
		{"store2 of an odd float", "mirage::store2(g + 2 * tid + 1, 1.0f, 2.0f);", "an access of 8 bytes at a misaligned address"},
		{"aligned vectors", "mirage::store16(g + 4 * tid, mirage::load16(g + 4 * tid + 4)); mirage::store2(g + 2 * tid, 1.0f, 2.0f);", ""},
	}
	var src strings.Builder
	src.WriteString("#include \"mirage_runtime.cuh\"\n#include <cstdlib>\n\nvolatile float sink_;\n\n")
	for i, c := range cases {
		fmt.Fprintf(&src, "// %s\n__global__ void k%d(float* g) {\n  const int tid = threadIdx.x;\n  float sink = 0.0f;\n  %s\n  sink_ = sink;\n}\n\n", c.name, i, c.body)
	}
	src.WriteString("int main(int argc, char** argv) {\n  float* g = static_cast<float*>(std::aligned_alloc(256, 4096 * 4));\n  for (int i = 0; i < 4096; i++) g[i] = 1.0f;\n  switch (std::atoi(argv[1])) {\n")
	for i := range cases {
		fmt.Fprintf(&src, "  case %d: return mirage::launch(k%d, dim3(1), dim3(32), 0, nullptr, g) == cudaSuccess ? 0 : 1;\n", i, i)
	}
	src.WriteString("  }\n  return 2;\n}\n")
	bin := buildEmulated(t, "aligned", src.String())
	for i, c := range cases {
		out, err := exec.Command(bin, fmt.Sprint(i)).CombinedOutput()
		switch {
		case c.fails == "" && err != nil:
			t.Errorf("%s: %v\n%s", c.name, err, out)
		case c.fails != "" && (err == nil || !strings.Contains(string(out), c.fails)):
			t.Errorf("%s: exit %v, output %q; want a failure saying %q", c.name, err, out, c.fails)
		}
	}
}

// buildEmulated builds src, a C++ program that includes the runtime, for
// the CPU emulator in a temporary directory, with an emulated build's flags
// but without the precompiled runtime (g++ parses the headers themselves),
// and returns the binary's path.
func buildEmulated(t *testing.T, name, src string) string {
	t.Helper()
	gxx, err := EmulatorCompiler()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := WriteEmulator(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, RuntimeName), []byte(Runtime), 0o644); err != nil {
		t.Fatal(err)
	}
	cpp := filepath.Join(dir, name+".cpp")
	if err := os.WriteFile(cpp, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, name)
	args := append(append([]string(nil), EmulatorFlags...), "-I"+dir, cpp, "-o", bin)
	if out, err := exec.Command(gxx, args...).CombinedOutput(); err != nil {
		t.Fatalf("g++: %v\n%s", err, out)
	}
	return bin
}
