package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/check"
)

// mirage runs the command line in-process and returns its exit status and
// what it printed.
func mirage(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func examplePath(name string) string { return filepath.Join("..", "..", "examples", name) }

// writeVariant writes a copy of an example with old replaced by new, and
// fails if old does not occur exactly once.
func writeVariant(t *testing.T, example, old, new string) string {
	t.Helper()
	src, err := os.ReadFile(examplePath(example))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(src), old); n != 1 {
		t.Fatalf("%s: %q occurs %d times", example, old, n)
	}
	path := filepath.Join(t.TempDir(), example)
	if err := os.WriteFile(path, []byte(strings.Replace(string(src), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestVerifyExamples(t *testing.T) {
	for _, method := range []string{"ff", "float"} {
		for _, ex := range []string{"rmsnorm_matmul", "gated_mlp", "gqa"} {
			code, out, errs := mirage(t, "verify", "--method", method, examplePath(ex+".py"), examplePath(ex+"_mugraph.py"))
			if code != exitOK || !strings.HasPrefix(out, "equivalent") {
				t.Errorf("verify --method %s %s: exit %d, stdout %q, stderr %q", method, ex, code, out, errs)
			}
		}
	}
}

// TestVerifyMutants: a μGraph changed in a way that keeps every shape valid
// computes something else, and verify says so with exit status 1.
func TestVerifyMutants(t *testing.T) {
	tests := []struct {
		example, old, new string
	}{
		{"rmsnorm_matmul_mugraph.py", `forloop_accum(tX, "rms")`, `forloop_accum(tX, "mean")`},
		{"gated_mlp_mugraph.py", `tb.mul(tb.silu(tA1), tA2)`, `tb.mul(tA1, tb.silu(tA2))`},
		{"gqa_mugraph.py", `tb2.div(tOs, tSs)`, `tb2.mul(tOs, tSs)`},
		{"gqa_mugraph.py", `tSs = tb2.forloop_accum(tSp, "sum")`, `tSs = tb2.forloop_accum(tSp, "mean")`},
	}
	for _, tt := range tests {
		mutant := writeVariant(t, tt.example, tt.old, tt.new)
		program := examplePath(strings.TrimSuffix(tt.example, "_mugraph.py") + ".py")
		code, out, errs := mirage(t, "verify", "--method", "float", program, mutant)
		if code != exitDiffer || !strings.Contains(out, "not equivalent") || !strings.Contains(out, "worst relative error") {
			t.Errorf("float: %s with %s: exit %d, stdout %q, stderr %q", tt.example, tt.new, code, out, errs)
		}
		code, out, errs = mirage(t, "verify", program, mutant) // --method ff is the default
		if code != exitDiffer || !strings.Contains(out, "not equivalent: output 0 differs at") {
			t.Errorf("ff: %s with %s: exit %d, stdout %q, stderr %q", tt.example, tt.new, code, out, errs)
		}
	}
}

// verify --method emu runs B's emitted code in the CPU emulator: the
// gated MLP's μGraph (at 8 × 256 by 256 × 512) agrees with its program, and
// the mutant that gates the other product is caught, with exit status 1.
func TestVerifyEmulated(t *testing.T) {
	small := func(path string) string {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), filepath.Base(path))
		text := strings.NewReplacer("(8, 4096)", "(8, 256)", "(4096, 4096)", "(256, 512)", "grid_dim=(64, 1, 1)", "grid_dim=(8, 1, 1)",
			"forloop_range=64", "forloop_range=4").Replace(string(src))
		if err := os.WriteFile(out, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return out
	}
	program := small(examplePath("gated_mlp.py"))
	kernel := small(examplePath("gated_mlp_mugraph.py"))
	mutant := small(writeVariant(t, "gated_mlp_mugraph.py", `tb.mul(tb.silu(tA1), tA2)`, `tb.mul(tA1, tb.silu(tA2))`))
	if code, out, errs := mirage(t, "verify", "--method", "emu", program, kernel); code != exitOK || !strings.HasPrefix(out, "equivalent (CPU emulator") {
		t.Errorf("the μGraph: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if code, out, errs := mirage(t, "verify", "--method", "emu", program, mutant); code != exitDiffer || !strings.HasPrefix(out, "not equivalent (CPU emulator") {
		t.Errorf("the mutant: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

func TestVerifyUnusableInput(t *testing.T) {
	dir := t.TempDir()
	badShape := writeVariant(t, "rmsnorm_matmul_mugraph.py", "input_map=(1, -1, -1), forloop_dim=0", "input_map=(0, -1, -1), forloop_dim=0")
	otherInputs := filepath.Join(dir, "other.py")
	os.WriteFile(otherInputs, []byte("import mirage as mi\ng = mi.new_kernel_graph()\nX = g.new_input(dims=(16, 4096), dtype=mi.float16)\ng.mark_output(g.exp(X))\n"), 0o644)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"missing file", []string{"verify", filepath.Join(dir, "nope.py"), examplePath("gqa.py")}, "nope.py"},
		{"invalid graph", []string{"verify", examplePath("rmsnorm_matmul.py"), badShape}, "rmsnorm_matmul_mugraph.py:15: new_input([4096, 6144])"},
		{"mismatched inputs", []string{"verify", examplePath("rmsnorm_matmul.py"), otherInputs}, "2 inputs vs 1"},
		{"unknown file kind", []string{"verify", examplePath("gqa.py"), "README.md"}, "unknown kind of file"},
		{"no such candidate", []string{"verify", "--candidate", "3", examplePath("gqa.py"), examplePath("gqa_mugraph.py")}, "no candidate 3"},
		{"bad flag", []string{"verify", "--nope", "a.py", "b.py"}, "unknown flag"},
		{"bad method", []string{"verify", "--method", "exact", examplePath("gqa.py"), examplePath("gqa.py")}, "unknown --method"},
		{"no trials", []string{"verify", "--trials", "0", examplePath("gqa.py"), examplePath("gqa.py")}, "--trials 0"},
		{"too few args", []string{"verify", "a.py"}, "verify takes two files"},
	}
	for _, tt := range tests {
		code, _, errs := mirage(t, tt.args...)
		if code != exitUnusable || !strings.Contains(errs, tt.want) {
			t.Errorf("%s: exit %d, stderr %q, want 2 and %q", tt.name, code, errs, tt.want)
		}
	}
}

func TestShow(t *testing.T) {
	code, out, errs := mirage(t, "show", examplePath("rmsnorm_matmul_mugraph.py"))
	if code != exitOK {
		t.Fatalf("show: exit %d: %s", code, errs)
	}
	for _, want := range []string{"customized(t0, t1)", "[16, 6144]", "grid (96, 1, 1)", "forloop_range 64", "imap (1, -1, -1), fmap 0", "accum=rms", "omap (1, -1, -1)"} {
		if !strings.Contains(out, want) {
			t.Errorf("show output lacks %q:\n%s", want, out)
		}
	}

	// --json writes a document that show reads back to the same text.
	code, js, errs := mirage(t, "show", "--json", examplePath("gqa_mugraph.py"))
	if code != exitOK {
		t.Fatalf("show --json: exit %d: %s", code, errs)
	}
	path := filepath.Join(t.TempDir(), "gqa.ugraph.json")
	os.WriteFile(path, []byte(js), 0o644)
	_, fromPy, _ := mirage(t, "show", examplePath("gqa_mugraph.py"))
	code, fromJSON, errs := mirage(t, "show", path)
	if code != exitOK || fromJSON != fromPy {
		t.Errorf("show of the JSON form differs (exit %d, %s):\n%s\nvs\n%s", code, errs, fromJSON, fromPy)
	}
	if code, _, _ := mirage(t, "verify", "--method", "float", examplePath("gqa.py"), path); code != exitOK {
		t.Errorf("verify against the JSON form: exit %d", code)
	}

	code, dot, _ := mirage(t, "show", "--dot", examplePath("gated_mlp.py"))
	if code != exitOK || !strings.HasPrefix(dot, "digraph") || !strings.Contains(dot, "silu") {
		t.Errorf("show --dot: exit %d:\n%s", code, dot)
	}
	if code, _, errs := mirage(t, "show", "--json", "--dot", examplePath("gqa.py")); code != exitUnusable || !strings.Contains(errs, "exclude") {
		t.Errorf("--json --dot: exit %d, %s", code, errs)
	}
}

func TestEval(t *testing.T) {
	type result struct {
		Seed    int64           `json:"seed"`
		Outputs []check.Summary `json:"outputs"`
	}
	eval := func(args ...string) result {
		t.Helper()
		code, out, errs := mirage(t, append([]string{"eval", "--json"}, args...)...)
		if code != exitOK {
			t.Fatalf("eval %v: exit %d: %s", args, code, errs)
		}
		var r result
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("eval --json output is not JSON: %v\n%s", err, out)
		}
		return r
	}
	a := eval("--seed", "7", examplePath("gated_mlp.py"))
	b := eval("--seed", "7", examplePath("gated_mlp_mugraph.py"))
	c := eval("--seed", "8", examplePath("gated_mlp.py"))
	if len(a.Outputs) != 1 || len(a.Outputs[0].Shape) != 2 || a.Outputs[0].Shape[0] != 8 || a.Outputs[0].Shape[1] != 4096 {
		t.Fatalf("eval outputs %+v", a.Outputs)
	}
	if rel := (a.Outputs[0].L2 - b.Outputs[0].L2) / a.Outputs[0].L2; rel > 1e-9 || rel < -1e-9 {
		t.Errorf("program and μGraph L2 norms differ: %v vs %v", a.Outputs[0].L2, b.Outputs[0].L2)
	}
	if a.Outputs[0].Sum == c.Outputs[0].Sum {
		t.Error("different seeds gave the same sum")
	}
	if a.Outputs[0].MaxAbs <= 0 || a.Outputs[0].L2 < a.Outputs[0].MaxAbs {
		t.Errorf("inconsistent summary %+v", a.Outputs[0])
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := mirage(t, "version")
	if code != exitOK || !strings.HasPrefix(out, "mirage "+version) {
		t.Errorf("version: exit %d, %q", code, out)
	}
}

// Every command's long help is its help/NAME.txt with every placeholder
// filled: a mistyped {{...}} would ship as text.
func TestHelpIsFilledIn(t *testing.T) {
	root := newRootCmd(&bytes.Buffer{}, &bytes.Buffer{})
	cmds := append(root.Commands(), root)
	for _, c := range cmds {
		if c.Name() == "help" || c.Name() == "completion" || c.Name() == "version" {
			continue
		}
		if len(c.Long) < 100 || strings.Contains(c.Long, "{{") {
			t.Errorf("%s: long help %q", c.Name(), c.Long)
		}
	}
	// The shared paragraphs and values are where the placeholders were.
	for name, want := range map[string]string{
		"superopt": "Dynamic rows (DESIGN §9)",
		"eval":     "Dynamic rows (DESIGN §9)",
		"mirage":   "A program runs bounded: at most 1 MiB of source",
	} {
		if !strings.Contains(help(name), want) {
			t.Errorf("help(%q) lacks %q", name, want)
		}
	}
}

// Help and completion fail on what they do not know, with the usage
// status, as every command does (found by review: both exited 0).
func TestHelpCommandsExitStatus(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
		want string // in stdout or stderr
	}{
		{[]string{"help", "nonexist"}, 2, `unknown help topic "nonexist"`},
		{[]string{"completion", "nope"}, 2, `unknown command "nope"`},
		{[]string{"nonexist"}, 2, `unknown command "nonexist"`},
		{[]string{"help", "superopt"}, 0, "--max-candidates"},
		{[]string{"help"}, 0, "Available Commands"},
		{[]string{"completion", "bash"}, 0, "bash completion"},
	} {
		code, stdout, stderr := mirage(t, tt.args...)
		if code != tt.code || !strings.Contains(stdout+stderr, tt.want) {
			t.Errorf("mirage %s: exit %d, want %d with %q:\n%.300s%.300s", strings.Join(tt.args, " "), code, tt.code, tt.want, stdout, stderr)
		}
	}
}

// emit --json of a dynamic program says what a build needs, as a static
// program's manifest does: the libraries to link with, the tensors (with
// the dim that holds the rows) and each bucket's kernels. Found by review:
// no "links" though the buckets call cuBLASLt, no tensors, and buckets as
// Go structs.
func TestEmitJSONOfADynamicProgram(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := mirage(t, "emit", examplePath("llama_mlp_block.py"), "--dynamic", "X:0=1..4", "-o", out, "--json")
	if code != 0 {
		t.Fatalf("emit: exit %d\n%s", code, stderr)
	}
	var m struct {
		Name   string   `json:"name"`
		Arch   string   `json:"arch"`
		Files  []string `json:"files"`
		Links  []string `json:"links"`
		Inputs []struct {
			Shape   []int `json:"shape"`
			RowsDim int   `json:"rows_dim"`
		} `json:"inputs"`
		Outputs []struct {
			RowsDim int `json:"rows_dim"`
		} `json:"outputs"`
		Buckets []struct {
			Rows, Lo, Hi int
			Kernels      []struct {
				Name string `json:"name"`
			} `json:"kernels"`
		} `json:"buckets"`
	}
	if err := json.Unmarshal([]byte(stdout), &m); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(m.Links, "cublasLt") || m.Arch == "" || !slices.Contains(m.Files, "llama_mlp_block.h") {
		t.Errorf("links %v, arch %q, files %v", m.Links, m.Arch, m.Files)
	}
	// X is [m, 4096], the weights have no rows; the output is [m, 4096].
	if len(m.Inputs) < 2 || m.Inputs[0].RowsDim != 0 || m.Inputs[0].Shape[0] != 4 || m.Inputs[1].RowsDim != -1 || len(m.Outputs) != 1 || m.Outputs[0].RowsDim != 0 {
		t.Errorf("inputs %+v, outputs %+v", m.Inputs, m.Outputs)
	}
	if len(m.Buckets) == 0 || m.Buckets[len(m.Buckets)-1].Hi != 4 || len(m.Buckets[0].Kernels) == 0 {
		t.Errorf("buckets %+v", m.Buckets)
	}
}
