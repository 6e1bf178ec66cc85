package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/cost"
	"github.com/mirage-go/mirage/driver"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// ntrans is the quickest workload to search whole (a few seconds).
var ntrans = filepath.Join("..", "..", "bench", "workloads", "ntrans.py")

// superoptJSON is the part of superopt --json the tests read, with the
// statistics kept as raw numbers to check their types.
type superoptJSON struct {
	Stats      map[string]json.RawMessage `json:"stats"`
	BaselineUs float64                    `json:"baseline_us"`
	Candidates []superoptCandidate        `json:"candidates"`
	Parts      []struct {
		Ops    []string `json:"ops"`
		Fused  bool     `json:"fused"`
		WhyNot string   `json:"why_not"`
		Cached bool     `json:"cached"`
		SameAs *int     `json:"same_as"`
	} `json:"parts"`
	Output  string `json:"output"`
	Emitted struct {
		Candidate int      `json:"candidate"`
		Files     []string `json:"files"`
	} `json:"emitted"`
}

// superoptCandidate is a candidate of superopt --json.
type superoptCandidate struct {
	Kernels       int     `json:"kernels"`
	Customized    int     `json:"customized"`
	Grids         [][]int `json:"grids"`
	ForloopRanges []int   `json:"forloop_ranges"`
	DeviceBytes   int64   `json:"device_bytes"`
	EstimatedUs   float64 `json:"estimated_us"`
	Speedup       float64 `json:"speedup"`
	Unfused       bool    `json:"unfused"`
	Hash          string  `json:"hash"`
	Measured      bool    `json:"measured"`
}

func TestSuperopt(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a whole search")
	}
	dir := t.TempDir()
	code, stdout, stderr := mirage(t, "superopt", ntrans, "-o", dir, "--no-cache", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res superoptJSON
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("--json output is not JSON: %v\n%s", err, stdout)
	}
	for _, field := range []string{"states", "pruned_order", "pruned_absexpr", "pruned_shape", "complete", "rejected", "verified", "seconds"} {
		raw, ok := res.Stats[field]
		var n float64
		if !ok || json.Unmarshal(raw, &n) != nil {
			t.Errorf("stats.%s missing or not a number: %s", field, raw)
		}
	}
	if len(res.Candidates) == 0 || res.BaselineUs <= 0 {
		t.Fatalf("no candidates, or no baseline: %s", stdout)
	}
	best := res.Candidates[0]
	if best.Kernels < 1 || best.Customized != len(best.Grids) || best.EstimatedUs <= 0 || best.DeviceBytes <= 0 {
		t.Errorf("best candidate's figures are off: %+v", best)
	}
	for i := 1; i < len(res.Candidates); i++ {
		if res.Candidates[i].EstimatedUs < res.Candidates[i-1].EstimatedUs {
			t.Errorf("candidate %d is estimated faster than candidate %d: not ranked", i, i-1)
		}
	}
	if want := filepath.Join(dir, "ntrans.ugraph.json"); res.Output != want {
		t.Errorf("output %q, want %q", res.Output, want)
	}
	// The best candidate's CUDA is written beside it.
	if len(res.Emitted.Files) != 3 || res.Emitted.Candidate != 0 {
		t.Errorf("emitted %+v, want the 3 files of candidate 0", res.Emitted)
	}
	for _, f := range res.Emitted.Files {
		if _, err := os.Stat(f); err != nil {
			t.Error(err)
		}
	}

	// The written file holds every candidate, each equivalent to the
	// program.
	for _, c := range []string{"0", "1"} {
		if code, out, errs := mirage(t, "verify", "--method", "float", ntrans, res.Output, "--candidate", c); code != 0 {
			t.Errorf("verify --candidate %s: exit %d\n%s%s", c, code, out, errs)
		}
	}
	// And emit reads it.
	code, stdout, stderr = mirage(t, "emit", res.Output, "-o", filepath.Join(dir, "emit"), "--candidate", "1", "--json")
	if code != 0 {
		t.Fatalf("emit: exit %d: %s", code, stderr)
	}
	var m driver.Manifest
	if err := json.Unmarshal([]byte(stdout), &m); err != nil {
		t.Fatalf("emit --json: %v", err)
	}
	if m.Candidate != 1 || m.Name != "ntrans" || len(m.Inputs) != 3 || len(m.Outputs) != 1 || len(m.Kernels) < 1 {
		t.Errorf("manifest: %+v", m)
	}
}

func TestSuperoptWorkersGiveTheSameFile(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: whole searches")
	}
	var files [][]byte
	for _, w := range []string{"1", "2"} {
		dir := t.TempDir()
		if code, _, stderr := mirage(t, "superopt", ntrans, "-o", dir, "--no-cache", "--no-emit", "--workers", w); code != 0 {
			t.Fatalf("--workers %s: exit %d: %s", w, code, stderr)
		}
		data, err := os.ReadFile(filepath.Join(dir, "ntrans.ugraph.json"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, data)
	}
	if !bytes.Equal(files[0], files[1]) {
		t.Error("--workers 1 and --workers 2 wrote different ugraph.json files")
	}
}

func TestSuperoptCache(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a whole search")
	}
	cache, out := t.TempDir(), t.TempDir()
	args := []string{"superopt", ntrans, "-o", out, "--cache", cache, "--no-emit"}
	if code, _, stderr := mirage(t, args...); code != 0 || strings.Contains(stderr, "cached") {
		t.Fatalf("first run: exit %d, %s", code, stderr)
	}
	first, _ := os.ReadFile(filepath.Join(out, "ntrans.ugraph.json"))
	code, _, stderr := mirage(t, args...)
	if code != 0 || !strings.Contains(stderr, "using cached result") {
		t.Fatalf("second run: exit %d, did not use the cache: %s", code, stderr)
	}
	second, _ := os.ReadFile(filepath.Join(out, "ntrans.ugraph.json"))
	if !bytes.Equal(first, second) {
		t.Error("the cached result wrote a different file")
	}
}

// TestSuperoptCacheKnowsShapes: the same program at another batch size,
// with the same cache, is searched afresh and answered at its own shapes
// (#15: the key ignored shapes and served the first batch's μGraph); an
// entry edited to compute something else is refused and replaced.
func TestSuperoptCacheKnowsShapes(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: whole searches")
	}
	src, err := os.ReadFile(ntrans)
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	var files []string
	for _, rows := range []string{"32", "64"} {
		prog := filepath.Join(t.TempDir(), "ntrans.py")
		os.WriteFile(prog, []byte(strings.ReplaceAll(string(src), "(32, 4096)", "("+rows+", 4096)")), 0o644)
		out := t.TempDir()
		code, stdout, stderr := mirage(t, "superopt", prog, "-o", out, "--cache", cache, "--json")
		if code != 0 || strings.Contains(stderr, "cached") {
			t.Fatalf("%s rows: exit %d, %s", rows, code, stderr)
		}
		file, err := kernel.ReadFile(filepath.Join(out, "ntrans.ugraph.json"))
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range file.Graphs {
			for _, id := range e.Graph.Outputs {
				if s := e.Graph.Tensors[id].Shape; s.Dims()[0] != map[string]int{"32": 32, "64": 64}[rows] {
					t.Errorf("%s rows: candidate %d's output is %v", rows, i, s)
				}
			}
		}
		var res superoptJSON
		if err := json.Unmarshal([]byte(stdout), &res); err != nil || len(res.Emitted.Files) == 0 {
			t.Fatalf("%s rows: %v, emitted %v", rows, err, res.Emitted)
		}
		h, _ := os.ReadFile(strings.TrimSuffix(res.Emitted.Files[0], ".cu") + ".h")
		if !strings.Contains(string(h), "["+rows+", 4096]") {
			t.Errorf("%s rows: the header does not declare [%s, 4096] tensors:\n%s", rows, rows, h)
		}
		files = append(files, prog)
	}

	// Edit the cached entry of the 64-row program: add -> mul.
	entries, _ := filepath.Glob(filepath.Join(cache, "*.ugraph.json"))
	if len(entries) != 2 {
		t.Fatalf("cache holds %d entries, want one per shape", len(entries))
	}
	edited := 0
	for _, e := range entries {
		data, _ := os.ReadFile(e)
		if !bytes.Contains(data, []byte(`[64, 4096]`)) {
			continue
		}
		data = bytes.Replace(data, []byte(`"op": "add"`), []byte(`"op": "mul"`), 1)
		os.WriteFile(e, data, 0o644)
		edited++
	}
	if edited != 1 {
		t.Fatalf("edited %d entries", edited)
	}
	code, _, stderr := mirage(t, "superopt", files[1], "-o", t.TempDir(), "--cache", cache, "--no-emit")
	if code != 0 || strings.Contains(stderr, "using cached result") || !strings.Contains(stderr, "does not compute the program") {
		t.Errorf("edited entry: exit %d, %s", code, stderr)
	}
	// The search's own result replaced it.
	if code, _, stderr := mirage(t, "superopt", files[1], "-o", t.TempDir(), "--cache", cache, "--no-emit"); code != 0 || !strings.Contains(stderr, "using cached result") {
		t.Errorf("after the edited entry was replaced: exit %d, %s", code, stderr)
	}
}

func TestSuperoptUnusableInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.py")
	os.WriteFile(bad, []byte("import mirage as mi\ng = mi.new_kernel_graph()\nx = g.new_input(dims=(4, 4))\ny = g.matmul(x, g.new_input(dims=(5, 4)))\n"), 0o644)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"superopt", "missing.py"}, "missing.py"},
		{[]string{"superopt", examplePath("rmsnorm_matmul.py"), "--config", "nope"}, "nope"},
		{[]string{"superopt", examplePath("rmsnorm_matmul.py"), "--arch", "sm_70"}, "sm_70"},
		{[]string{"superopt", examplePath("rmsnorm_matmul.py"), "--workers", "0"}, "--workers"},
		{[]string{"superopt", bad}, "bad.py:4"},
	}
	for _, tt := range tests {
		code, _, stderr := mirage(t, append(tt.args, "-o", dir)...)
		if code != exitUnusable || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, %q; want %d and a message naming %q", tt.args, code, stderr, exitUnusable, tt.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("failed runs left files behind: %v", entries)
	}
}

func TestEmit(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := mirage(t, "emit", examplePath("rmsnorm_matmul_mugraph.py"), "-o", dir, "--arch", "sm_80")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var names []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"mirage_runtime.cuh", "rmsnorm_matmul_mugraph.cu", "rmsnorm_matmul_mugraph.h", "rmsnorm_matmul_mugraph.manifest.json"}; !slices.Equal(names, want) {
		t.Errorf("wrote %v, want %v", names, want)
	}
	if !strings.Contains(stdout, "1 kernel") {
		t.Errorf("summary: %s", stdout)
	}
	h, _ := os.ReadFile(filepath.Join(dir, "rmsnorm_matmul_mugraph.h"))
	for _, want := range []string{
		"cudaError_t mirage_rmsnorm_matmul_mugraph(void* const* outputs, void const* const* inputs, void* workspace, cudaStream_t stream);",
		"size_t mirage_rmsnorm_matmul_mugraph_workspace_bytes(void);",
		"inputs[0]   float16  [16, 4096]",
	} {
		if !strings.Contains(string(h), want) {
			t.Errorf("the header lacks %q", want)
		}
	}

	// --name renames the files and the entry point.
	named := t.TempDir()
	if code, _, stderr := mirage(t, "emit", examplePath("rmsnorm_matmul_mugraph.py"), "-o", named, "--name", "cand1"); code != 0 {
		t.Fatalf("--name: exit %d: %s", code, stderr)
	}
	if h, err := os.ReadFile(filepath.Join(named, "cand1.h")); err != nil || !strings.Contains(string(h), "cudaError_t mirage_cand1(") {
		t.Errorf("--name cand1: %v\n%s", err, h)
	}

	single := t.TempDir()
	if code, _, stderr := mirage(t, "emit", examplePath("gqa_mugraph.py"), "-o", single, "--single-file"); code != 0 {
		t.Fatalf("--single-file: exit %d: %s", code, stderr)
	}
	if entries, _ := os.ReadDir(single); len(entries) != 3 {
		t.Errorf("--single-file wrote %d files, want the .cu, the .h and the manifest", len(entries))
	}

	// --dependent-launch: the manifest says which launches are.
	dep := t.TempDir()
	code, stdout, stderr = mirage(t, "emit", examplePath("gqa_mugraph.py"), "-o", dep, "--dependent-launch", "--json")
	if code != 0 {
		t.Fatalf("--dependent-launch: exit %d: %s", code, stderr)
	}
	var m struct {
		Kernels []struct {
			What      string `json:"what"`
			Dependent bool   `json:"dependent"`
		} `json:"kernels"`
	}
	if err := json.Unmarshal([]byte(stdout), &m); err != nil || len(m.Kernels) == 0 {
		t.Fatalf("--dependent-launch --json: %v\n%s", err, stdout)
	}
	for i, k := range m.Kernels {
		if k.Dependent != (k.What == "graph-defined") {
			t.Errorf("kernel %d (%s): dependent %v", i, k.What, k.Dependent)
		}
	}
}

func TestEmitUnusableInput(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"emit", examplePath("gqa_mugraph.py"), "--arch", "sm_75"}, "sm_75"},
		{[]string{"emit", examplePath("gqa_mugraph.py"), "--candidate", "1"}, "no candidate 1"},
		{[]string{"emit", examplePath("gqa_mugraph.py"), "--arch", "sm_80", "--dependent-launch"}, "need sm_90"},
		{[]string{"emit", "nothing.ugraph.json"}, "nothing.ugraph.json"},
		{[]string{"emit", "prog.txt"}, "unknown kind of file"},
	}
	for _, tt := range tests {
		code, _, stderr := mirage(t, append(tt.args, "-o", filepath.Join(dir, "out"))...)
		if code != exitUnusable || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, %q; want %d and a message naming %q", tt.args, code, stderr, exitUnusable, tt.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); !os.IsNotExist(err) {
		t.Error("failed runs wrote files")
	}
}

func TestShowAbsexpr(t *testing.T) {
	code, stdout, stderr := mirage(t, "show", "--absexpr", examplePath("rmsnorm_matmul_mugraph.py"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// Each line: name, op, expression.
	got := map[string][2]string{}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			t.Fatalf("line %q: want name, op, expression", line)
		}
		got[f[0]] = [2]string{f[1], strings.Join(f[2:], " ")}
	}
	// The fused kernel: per-iteration matmul tiles over 64 of the 4096,
	// accumulated; the rms accumulated (written out: the root of the
	// scalar 1/n times the sum of squares); their quotient.
	const rms = "sqrt(mul(scalar, sum(4096, square(in0))))"
	want := map[string][2]string{
		"t0": {"input", "in0"},
		"t1": {"input", "in1"},
		"s2": {"matmul", "sum(64, mul(in0, in1))"},
		"s3": {"forloop_accum(none)", "sum(4096, mul(in0, in1))"},
		"s4": {"forloop_accum(rms)", rms},
		"s5": {"div", "div(sum(4096, mul(in0, in1)), " + rms + ")"},
		"t2": {"customized", "div(sum(4096, mul(in0, in1)), " + rms + ")"},
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: %q, want %q", name, got[name], w)
		}
	}
	if code, _, stderr := mirage(t, "show", "--absexpr", "--json", examplePath("gqa.py")); code != exitUnusable || !strings.Contains(stderr, "exclude") {
		t.Errorf("--absexpr --json: exit %d, %s", code, stderr)
	}
}

// TestSuperoptProfileOverridesTheModel measures (pretends to) the worst
// candidate as the fastest: with --profile it must rank first, with its
// measured time.
func TestSuperoptProfileOverridesTheModel(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: whole searches")
	}
	dir := t.TempDir()
	if code, _, stderr := mirage(t, "superopt", ntrans, "-o", dir, "--no-cache", "--no-emit"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	file, err := kernel.ReadFile(filepath.Join(dir, "ntrans.ugraph.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(file.Graphs) < 2 {
		t.Skipf("ntrans has %d candidate(s): nothing to reorder", len(file.Graphs))
	}
	last := file.Graphs[len(file.Graphs)-1].Graph
	profile := filepath.Join(dir, "profile_sm_90.json")
	p := &cost.Profile{Version: cost.ProfileVersion, Arch: "sm_90", GPU: "test",
		Measurements: []cost.Measurement{{Program: "ntrans", Hash: cost.GraphHash(last), MedianMicros: 0.5, Runs: 200}}}
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(profile, buf.Bytes(), 0o644)

	code, stdout, stderr := mirage(t, "superopt", ntrans, "-o", dir, "--no-emit", "--json", "--profile", profile)
	if code != 0 {
		t.Fatalf("--profile: exit %d: %s", code, stderr)
	}
	var res superoptJSON
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Candidates) == 0 || res.Candidates[0].EstimatedUs != 0.5 {
		t.Fatalf("the measured candidate is not first: %+v", res.Candidates)
	}
	again, err := kernel.ReadFile(filepath.Join(dir, "ntrans.ugraph.json"))
	if err != nil {
		t.Fatal(err)
	}
	if cost.GraphHash(again.Graphs[0].Graph) != cost.GraphHash(last) {
		t.Error("the first graph written is not the measured one")
	}
	if code, _, stderr := mirage(t, "superopt", ntrans, "-o", dir, "--profile", filepath.Join(dir, "none.json")); code != exitUnusable || !strings.Contains(stderr, "--profile") {
		t.Errorf("missing profile: exit %d, %s", code, stderr)
	}
}

// TestSuperoptAnswersEveryProgram: a program the search cannot beat still
// gets an answer, its own ops: a .ugraph.json, its CUDA and exit 0, with
// the part saying why it was not fused; and the files come as one set,
// their sums in the manifest written last. (One exp over 64x4096: the
// runtime's vectorized unary kernel, estimated 3.3 µs, against 3.4 µs for
// the best graph-defined kernel; at 3x5 the two tie within 0.1%.)
func TestSuperoptAnswersEveryProgram(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "odd.py")
	os.WriteFile(prog, []byte("import mirage as mi\ng = mi.new_kernel_graph()\nX = g.new_input(dims=(64, 4096), dtype=mi.float16)\ng.mark_output(g.exp(X))\n"), 0o644)
	code, stdout, stderr := mirage(t, "superopt", prog, "-o", dir, "--no-cache", "--json", "--time-limit", "30s")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res superoptJSON
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatal(err)
	}
	// The unfused program first; fused forms the model puts slower follow.
	if len(res.Candidates) == 0 || !res.Candidates[0].Unfused || res.Candidates[0].Speedup != 1 {
		t.Errorf("candidates %+v, want the unfused program first", res.Candidates)
	}
	for _, c := range res.Candidates[1:] {
		if c.Unfused || !(c.Speedup <= 1) {
			t.Errorf("candidate %+v: want a fused form no faster than the program", c)
		}
	}
	if len(res.Parts) != 1 || res.Parts[0].Fused || res.Parts[0].WhyNot == "" || !slices.Equal(res.Parts[0].Ops, []string{"exp"}) {
		t.Errorf("parts %+v, want one unfused part that says why", res.Parts)
	}
	if len(res.Emitted.Files) != 3 {
		t.Fatalf("emitted %+v", res.Emitted)
	}
	var manifest struct {
		Files []struct{ Name, SHA256 string } `json:"files"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "odd.manifest.json"))
	if err != nil || json.Unmarshal(data, &manifest) != nil || len(manifest.Files) != 4 {
		t.Fatalf("manifest: %v\n%s", err, data)
	}
	for _, f := range manifest.Files {
		data, err := os.ReadFile(filepath.Join(dir, f.Name))
		if err != nil || fmt.Sprintf("%x", sha256.Sum256(data)) != f.SHA256 {
			t.Errorf("%s: %v, or its sum is not the manifest's", f.Name, err)
		}
	}
	if stray, _ := filepath.Glob(filepath.Join(dir, ".*")); len(stray) > 0 {
		t.Errorf("temporary files left: %v", stray)
	}
}

// TestSuperoptProgramWithNoOps: a program whose output is its input has
// nothing to run. Its estimate is 0 µs, and its speedup 1 (it was 0/0,
// which --json could not write: "json: unsupported value: NaN").
func TestSuperoptProgramWithNoOps(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "noop.py")
	os.WriteFile(prog, []byte("import mirage as mi\ng = mi.new_kernel_graph()\nX = g.new_input(dims=(4, 8), dtype=mi.float16)\ng.mark_output(X)\n"), 0o644)
	code, stdout, stderr := mirage(t, "superopt", prog, "-o", dir, "--no-cache", "--json", "--no-emit")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res superoptJSON
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Candidates) != 1 || !res.Candidates[0].Unfused || res.Candidates[0].Speedup != 1 {
		t.Errorf("candidates %+v, want the program itself at speedup 1", res.Candidates)
	}
}
