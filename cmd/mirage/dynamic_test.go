package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// dynProgram is a small LLaMA MLP block (hidden 64, MLP 128) whose row
// count is a token count.
const dynProgram = `import mirage as mi
g = mi.new_kernel_graph()
X = g.new_input(dims=(8, 64), dtype=mi.float16)
W1 = g.new_input(dims=(64, 128), dtype=mi.float16)
W3 = g.new_input(dims=(64, 128), dtype=mi.float16)
W2 = g.new_input(dims=(128, 64), dtype=mi.float16)
N = g.rms_norm(X, normalized_shape=(64,))
M = g.mul(g.silu(g.matmul(N, W1)), g.matmul(N, W3))
g.mark_output(g.add(g.matmul(M, W2), X))
`

// TestSuperoptDynamic: one run answers every m of the range, bucket by
// bucket, with one entry point; verify --dynamic checks every bucket's
// graphs at their own m.
func TestSuperoptDynamic(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "mlp.py")
	os.WriteFile(prog, []byte(dynProgram), 0o644)
	out := filepath.Join(dir, "out")
	code, stdout, stderr := mirage(t, "superopt", prog, "--dynamic", "X:0=1..16", "--buckets", "2,8,16", "-o", out, "--no-cache", "--json", "--time-limit", "90s")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res struct {
		Candidates []json.RawMessage `json:"candidates"`
		Buckets    []struct {
			Size, Lo, Hi int
			EstimatedUs  float64 `json:"estimated_us"`
			Chosen       struct {
				Kernels int `json:"kernels"`
			} `json:"chosen"`
			Parts []json.RawMessage `json:"parts"`
		} `json:"buckets"`
		Lo, Hi int
		Files  []string `json:"files"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	// The keys are those superopt --help names for --dynamic (it once
	// named superopt's static keys, emitted and parts among them).
	var keys map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stdout), &keys); err != nil {
		t.Fatal(err)
	}
	help, err := os.ReadFile(filepath.Join("help", "superopt.txt"))
	if err != nil {
		t.Fatal(err)
	}
	_, dynHelp, _ := strings.Cut(string(help), "With --dynamic, --json")
	dynHelp, _, _ = strings.Cut(dynHelp, "}:")
	for k := range keys {
		if !strings.Contains(dynHelp, `"`+k+`"`) {
			t.Errorf("--json prints %q, which superopt --help does not name for --dynamic", k)
		}
	}
	for _, k := range []string{"stats", "candidates", "buckets", "lo", "hi", "output", "files"} {
		if _, ok := keys[k]; !ok || !strings.Contains(dynHelp, `"`+k+`"`) {
			t.Errorf("key %q: printed %v, in the help %v", k, ok, strings.Contains(dynHelp, `"`+k+`"`))
		}
	}
	if len(res.Buckets) != 3 || len(res.Candidates) != 3 || res.Lo != 1 || res.Hi != 16 {
		t.Fatalf("buckets %+v, %d candidates, range %d..%d", res.Buckets, len(res.Candidates), res.Lo, res.Hi)
	}
	for i, want := range [][3]int{{2, 1, 2}, {8, 3, 8}, {16, 9, 16}} {
		b := res.Buckets[i]
		if [3]int{b.Size, b.Lo, b.Hi} != want || b.EstimatedUs <= 0 || b.Chosen.Kernels < 1 || len(b.Parts) == 0 {
			t.Errorf("bucket %d: %+v, want size and range %v", i, b, want)
		}
	}
	cu, err := os.ReadFile(filepath.Join(out, "mlp.cu"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(cu), `extern "C" cudaError_t mirage_mlp(`); n != 1 {
		t.Errorf("%d entry points, want 1", n)
	}
	h, _ := os.ReadFile(filepath.Join(out, "mlp.h"))
	for _, want := range []string{"cudaError_t mirage_mlp(void* const* outputs, void const* const* inputs, int64_t m, void* workspace, cudaStream_t stream);",
		"size_t mirage_mlp_workspace_bytes(int64_t m);", "MIRAGE_MLP_M_MAX 16", "inputs[0]   float16  [m, 64]", "outputs[0]  float16  [m, 64]"} {
		if !strings.Contains(string(h), want) {
			t.Errorf("mlp.h lacks %q:\n%s", want, h)
		}
	}
	graphs := filepath.Join(out, "mlp.ugraph.json")
	// emit writes the same entry point from the document.
	re := filepath.Join(dir, "re")
	if code, _, stderr := mirage(t, "emit", graphs, "-o", re); code != exitOK {
		t.Fatalf("emit of the dynamic document: exit %d: %s", code, stderr)
	}
	body := func(src []byte) string { _, rest, _ := strings.Cut(string(src), "\n"); return rest } // past the line naming the source
	if again, _ := os.ReadFile(filepath.Join(re, "mlp.cu")); body(again) != body(cu) {
		t.Error("emit of superopt's dynamic document wrote another mlp.cu than superopt")
	}
	// A document whose meta was edited is refused, never a panic.
	doc, _ := os.ReadFile(graphs)
	for _, tt := range []struct{ old, new, want string }{
		{`"dynamic": {`, `"dynamic": "yes", "was": {`, "meta.dynamic"},
		{`"lo": 1, "hi": 16, "buckets"`, `"lo": 0, "hi": 16, "buckets"`, "not one of rows"},
		{`"inputs": [0, -1, -1, -1]`, `"inputs": [-7, -1, -1, -1]`, "dynamic dim is -7"},
		{`"inputs": [0, -1, -1, -1]`, `"inputs": [0, 5, -1, -1]`, "[64, 128] has no dim 5"},
	} {
		if !strings.Contains(string(doc), tt.old) {
			t.Fatalf("the document lacks %q", tt.old)
		}
		edited := filepath.Join(dir, "edited.ugraph.json")
		os.WriteFile(edited, []byte(strings.Replace(string(doc), tt.old, tt.new, 1)), 0o644)
		if code, _, stderr := mirage(t, "emit", edited, "-o", filepath.Join(dir, "edited")); code != exitUnusable || !strings.Contains(stderr, tt.want) {
			t.Errorf("emit of a document with %s: exit %d, %q; want %q", tt.new, code, stderr, tt.want)
		}
	}
	// show lists a damaged document's graphs (how one looks into it); its
	// estimate of every bucket names what is wrong.
	damaged := filepath.Join(dir, "damaged.ugraph.json")
	os.WriteFile(damaged, []byte(strings.Replace(string(doc), `"dynamic": {`, `"dynamic": "yes", "was": {`, 1)), 0o644)
	if code, stdout, stderr := mirage(t, "show", damaged); code != exitOK || !strings.Contains(stdout, "# candidate 1\n") {
		t.Errorf("show of a damaged dynamic document: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := mirage(t, "show", damaged, "--estimate"); code != exitUnusable || !strings.Contains(stderr, "meta.dynamic") {
		t.Errorf("show --estimate of a damaged dynamic document: exit %d, %q", code, stderr)
	}
	if code, _, stderr := mirage(t, "emit", graphs, "--candidate", "-1", "-o", re); code != exitUnusable || !strings.Contains(stderr, "no --candidate -1") {
		t.Errorf("emit --candidate -1: exit %d, %q", code, stderr)
	}
	// show prints the shapes with m; eval runs at --rows.
	if code, stdout, _ := mirage(t, "show", prog, "--dynamic", "X:0=1..16"); code != exitOK || !strings.Contains(stdout, "# m in 1..16, buckets [1 2 4 8 16]") || !strings.Contains(stdout, "[m, 128]") ||
		strings.Contains(stdout, "inside an outer dim") {
		t.Errorf("show --dynamic: exit %d\n%s", code, stdout)
	}
	// m inside the heads of a layer written head by head: shown with the
	// copies its entry point makes.
	heads := filepath.Join(dir, "heads.py")
	os.WriteFile(heads, []byte("import mirage as mi\ng = mi.new_kernel_graph()\nX = g.new_input(dims=(1, 4, 64))\nones = g.new_input(dims=(8, 1, 1))\ng.mark_output(g.mul(X, ones))\n"), 0o644)
	if code, stdout, stderr := mirage(t, "show", heads, "--dynamic", "X:1=1..4"); code != exitOK || !strings.Contains(stdout, "[8, m, 64]") ||
		!strings.Contains(stdout, "# m is inside an outer dim: the entry point copies the inputs and outputs with m") || stderr != "" {
		t.Errorf("show --dynamic of m inside the heads: exit %d\n%s%s", code, stdout, stderr)
	}
	// emit writes its entry point from the program too, copies and all.
	if code, _, stderr := mirage(t, "emit", heads, "--dynamic", "X:1=1..4", "-o", filepath.Join(dir, "heads")); code != exitOK {
		t.Errorf("emit --dynamic of m inside the heads: exit %d, %s", code, stderr)
	} else if cu, _ := os.ReadFile(filepath.Join(dir, "heads", "heads.cu")); !strings.Contains(string(cu), "mirage::copy_rows(") {
		t.Error("emit --dynamic of m inside the heads wrote an entry point that copies no rows")
	}
	// Written at one token, a mask of one row per token broadcasts along m
	// as a bias would: said, not refused (written at more, it would be).
	masked := filepath.Join(dir, "masked.py")
	os.WriteFile(masked, []byte("import mirage as mi\ng = mi.new_kernel_graph()\nX = g.new_input(dims=(1, 1, 16))\nmask = g.new_input(dims=(1, 1, 16))\nones = g.new_input(dims=(4, 1, 1))\ng.mark_output(g.exp(g.add(g.mul(X, ones), mask)))\n"), 0o644)
	if code, _, stderr := mirage(t, "show", masked, "--dynamic", "X:1=1..4"); code != exitOK ||
		!strings.Contains(stderr, "warning: "+masked+": --dynamic X:1=1..4: the program is written at one row of m, and mask [1, 1, 16] broadcasts along m") ||
		strings.Contains(stderr, "ones") {
		t.Errorf("show --dynamic of a program written at one row with a mask: exit %d\n%s", code, stderr)
	}
	if code, stdout, _ := mirage(t, "eval", prog, "--dynamic", "X:0=1..16", "--rows", "5"); code != exitOK || !strings.HasPrefix(stdout, "output 0  [5, 64]") {
		t.Errorf("eval --dynamic --rows 5: exit %d\n%s", code, stdout)
	}
	code, stdout, stderr = mirage(t, "verify", prog, graphs, "--dynamic", "X:0=1..16")
	if code != exitOK || !strings.Contains(stdout, "graph(s) are the program at their m") || !strings.Contains(stdout, "m = 16:") {
		t.Errorf("verify --dynamic: exit %d\n%s%s", code, stdout, stderr)
	}
	// Without --dynamic, graph 0 (bucket 2's best) takes 2 rows and the
	// program 8: the error says how the document is checked (found by a
	// user's sweep: it said only that input 0 differs).
	code, _, stderr = mirage(t, "verify", prog, graphs)
	if code != exitUnusable || !strings.Contains(stderr, graphs+" is a dynamic program's document (m in 1..16) whose graph 0 takes other inputs than "+prog+": verify it with --dynamic") {
		t.Errorf("verify without --dynamic: exit %d\n%s", code, stderr)
	}
	// A graph of bucket 8, at the program's rows, is checked as a static
	// graph.
	type graphMeta struct {
		Meta struct{ Rows int } `json:"meta"`
	}
	var written struct{ Graphs []graphMeta }
	if data, err := os.ReadFile(graphs); err != nil || json.Unmarshal(data, &written) != nil {
		t.Fatalf("reading %s: %v", graphs, err)
	}
	at8 := slices.IndexFunc(written.Graphs, func(g graphMeta) bool { return g.Meta.Rows == 8 })
	if code, stdout, stderr := mirage(t, "verify", prog, graphs, "--candidate", fmt.Sprint(at8)); at8 < 0 || code != exitOK || !strings.HasPrefix(stdout, "equivalent") {
		t.Errorf("verify --candidate %d (a graph of bucket 8) without --dynamic: exit %d\n%s%s", at8, code, stdout, stderr)
	}
	// With too little memory to keep the program's fingerprints at m on
	// every draw for the graphs of that m, each graph is checked on its
	// own, one draw at a time: the same verdicts.
	code, stdout, stderr = mirage(t, "verify", prog, graphs, "--dynamic", "X:0=1..16", "--trials", "400", "--max-memory", "1MiB")
	if code != exitOK || !strings.Contains(stdout, "graph(s) are the program at their m") || !strings.Contains(stdout, "m = 16: equivalent (finite fields, seed 1, 400 trial(s))") {
		t.Errorf("verify --dynamic --max-memory 1MiB: exit %d\n%s%s", code, stdout, stderr)
	}
	// Under any memory limit at which some graph verifies, a larger limit
	// verifies it too: where the fingerprints fit but checking a graph
	// beside them does not, the graph is checked one draw at a time.
	passed := 0
	for kib := 64; kib <= 512; kib += 2 {
		code, stdout, stderr := mirage(t, "verify", prog, graphs, "--dynamic", "X:0=1..16", "--trials", "4", "--max-memory", fmt.Sprintf("%dKiB", kib))
		switch {
		case code == exitOK:
			passed++
		case passed > 0:
			t.Fatalf("verify --dynamic --max-memory %dKiB: exit %d, but a smaller limit passed\n%s%s", kib, code, stdout, stderr)
		case code != exitUnusable || !strings.Contains(stderr, "--max-memory"):
			t.Fatalf("verify --dynamic --max-memory %dKiB: exit %d, want 2 and a message naming --max-memory\n%s%s", kib, code, stdout, stderr)
		}
	}
	if passed == 0 {
		t.Error("verify --dynamic --trials 4 failed under every limit up to 512 KiB")
	}
	// The entry point in examples/engine's decode loop, in the emulator.
	code, stdout, stderr = mirage(t, "verify", prog, graphs, "--dynamic", "X:0=1..16", "--engine", "1,3,5,13,16,0,17")
	for _, want := range []string{"engine m = 13 (bucket 16", "engine m = 3 (bucket 8", "engine m = 17: outside 1..16: refused"} {
		if code != exitOK || !strings.Contains(stdout, want) {
			t.Errorf("verify --engine: exit %d, no %q\n%s%s", code, want, stdout, stderr)
		}
	}
	// show numbers the graphs with their bucket and rank, and --estimate
	// gives each bucket's best (what emit writes), not graph 0 alone.
	var metas struct {
		Graphs []struct {
			Meta struct {
				Bucket, Lo, Hi, Rank, Rows int
				EstimatedUs                float64 `json:"estimated_us"`
			} `json:"meta"`
		}
	}
	if data, err := os.ReadFile(graphs); err != nil || json.Unmarshal(data, &metas) != nil {
		t.Fatalf("reading %s: %v", graphs, err)
	}
	code, stdout, stderr = mirage(t, "show", graphs)
	var bests []int
	for i, g := range metas.Graphs {
		m := g.Meta
		want := fmt.Sprintf("# candidate %d: bucket %d (m %d..%d), rank %d\n", i, m.Bucket, m.Lo, m.Hi, m.Rank)
		if code != exitOK || !strings.Contains(stdout, want) {
			t.Errorf("show: exit %d, no %q\n%s", code, want, stderr)
		}
		if m.Rank == 0 {
			bests = append(bests, i)
		}
	}
	code, stdout, stderr = mirage(t, "show", graphs, "--estimate")
	if n := strings.Count(stdout, "# bucket "); code != exitOK || n != 3 {
		t.Errorf("show --estimate: exit %d, %d buckets, want 3\n%s%s", code, n, stdout, stderr)
	}
	for _, i := range bests {
		m := metas.Graphs[i].Meta
		head := fmt.Sprintf("# bucket %d (m %d..%d): candidate %d, the bucket's best, written for %d row(s)\n", m.Bucket, m.Lo, m.Hi, i, m.Rows)
		_, one, _ := mirage(t, "show", graphs, "--estimate", "--candidate", fmt.Sprint(i))
		if !strings.Contains(stdout, head+one) {
			t.Errorf("show --estimate lacks bucket %d's best (candidate %d) under %q:\n%s", m.Bucket, i, head, stdout)
		}
	}
	var est struct {
		Buckets []struct {
			Bucket, Lo, Hi, Candidate, Rows int
			Estimate                        struct {
				EstimatedUs float64 `json:"estimated_us"`
			}
		}
	}
	if code, stdout, stderr = mirage(t, "show", graphs, "--estimate", "--json"); code != exitOK || json.Unmarshal([]byte(stdout), &est) != nil || len(est.Buckets) != len(bests) {
		t.Fatalf("show --estimate --json: exit %d\n%s%s", code, stdout, stderr)
	}
	for k, b := range est.Buckets {
		m := metas.Graphs[bests[k]].Meta
		if b.Candidate != bests[k] || b.Bucket != m.Bucket || b.Lo != m.Lo || b.Hi != m.Hi || b.Rows != m.Rows || math.Abs(b.Estimate.EstimatedUs-m.EstimatedUs) > 1e-6*m.EstimatedUs {
			t.Errorf("show --estimate --json, bucket %d: %+v; the document says candidate %d, %+v", k, b, bests[k], m)
		}
	}
	// Against another program (exp(X) as the residual), every graph differs.
	other := filepath.Join(dir, "other.py")
	os.WriteFile(other, []byte(strings.Replace(dynProgram, "g.add(g.matmul(M, W2), X)", "g.add(g.matmul(M, W2), g.exp(X))", 1)), 0o644)
	if code, stdout, _ := mirage(t, "verify", other, graphs, "--dynamic", "X:0=1..16"); code != exitDiffer || !strings.Contains(stdout, "differ from the program") {
		t.Errorf("verify --dynamic against another program: exit %d\n%s", code, stdout)
	}
}

// TestSuperoptDynamicBadInput: every refusal is exit 2 with a message that
// names what is wrong, and writes nothing.
func TestSuperoptDynamicBadInput(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "mlp.py")
	os.WriteFile(prog, []byte(dynProgram), 0o644)
	out := filepath.Join(dir, "out")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--dynamic", "X:1=1..16"}, "mlp.py:7: --dynamic X:1=1..16: rms_norm([8, m])"},
		{[]string{"--dynamic", "W1:0=1..16"}, "mlp.py:8:"},
		{[]string{"--dynamic", "W1:1=1..16"}, "the weight"},
		{[]string{"--dynamic", "Z:0=1..16"}, "no input named Z"},
		{[]string{"--dynamic", "7:0=1..16"}, "has 4 inputs"},
		{[]string{"--dynamic", "X:3=1..16"}, "no dim 3"},
		{[]string{"--dynamic", "X:0=0..16"}, "LO is 0"},
		{[]string{"--dynamic", "X:0=16..1"}, "LO 16 is above HI 1"},
		{[]string{"--dynamic", "X:0=1..16", "--buckets", "1,4"}, "below HI 16"},
		{[]string{"--dynamic", "X:0=1..16", "--buckets", "4,2,16"}, "must ascend"},
		{[]string{"--dynamic", "X:0=1..16", "--buckets", "1,16,32"}, "already covers HI"},
		{[]string{"--buckets", "1,16"}, "--buckets needs --dynamic"},
		{[]string{"--dynamic", "X:0=1..16", "--shard", "0/2", "--shard-dir", dir}, "--dynamic with --shard"},
	} {
		code, _, stderr := mirage(t, append([]string{"superopt", prog, "-o", out, "--no-cache"}, tt.args...)...)
		if code != exitUnusable || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, %q; want %d and %q", tt.args, code, stderr, exitUnusable, tt.want)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a refused run wrote its output directory")
	}
	for _, args := range [][]string{
		{"emit", prog, "--dynamic", "X:1=1..16", "-o", out},
		{"emit", prog, "--dynamic", "X:0=1..16", "--counters", "-o", out},
		{"show", prog, "--dynamic", "X:1=1..16"},
		{"show", prog, "--buckets", "1,16"},                     // --buckets needs --dynamic, as superopt's
		{"superopt", prog, "--dynamic", "X:7=1..16", "-o", out}, // X is 2-D: MarkDynamic says so
		{"eval", prog, "--dynamic", "X:0=1..16", "--rows", "17"},
		{"eval", prog, "--rows", "3"},
		{"verify", prog, prog, "--dynamic", "X:0=1..16", "--candidate", "1"},
	} {
		if code, _, stderr := mirage(t, args...); code != exitUnusable || stderr == "" {
			t.Errorf("%v: exit %d, %q; want %d and a message", args, code, stderr, exitUnusable)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a refused emit wrote its output directory")
	}
	// Rows of one input against rows of another: an outer product across m.
	outer := filepath.Join(dir, "outer.py")
	os.WriteFile(outer, []byte("import mirage as mi\ng = mi.new_kernel_graph()\nX = g.new_input(dims=(16, 1, 64))\nY = g.new_input(dims=(1, 16, 64))\ng.mark_output(g.add(X, Y))\n"), 0o644)
	if code, _, stderr := mirage(t, "show", outer, "--dynamic", "X:0=1..16", "--dynamic", "Y:1=1..16"); code != exitUnusable || !strings.Contains(stderr, "outer.py:5:") || !strings.Contains(stderr, "has m in two dims") {
		t.Errorf("m in two dims: exit %d, %q", code, stderr)
	}
}
