package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// scripts holds programs in the style of Mirage's benchmark and demo
// scripts (frontend/testdata/scripts/README.md).
func script(name string) string {
	return filepath.Join("..", "..", "frontend", "testdata", "scripts", name)
}

// withArgs appends the program's arguments after --.
func withArgs(argv []string, progArgs []string) []string {
	if len(progArgs) == 0 {
		return argv
	}
	return append(append(argv, "--"), progArgs...)
}

// TestMirageStyleScripts: each script, run as a user would (no flags
// about loading), gets an answer from superopt, and verify finds that
// answer equivalent to the same unchanged script.
func TestMirageStyleScripts(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: whole searches")
	}
	tests := []struct {
		file string
		args []string
	}{
		{"rmsnorm_args.py", nil},
		{"rmsnorm_args.py", []string{"--bs", "2", "--hidden=512"}},
		{"gpu_device.py", nil},
		{"torch_timing.py", nil},
		{"call_graph.py", nil},
		{"generate_cuda.py", nil},
		{"visualize.py", nil},
		{"decorators.py", nil},
		{"asserts.py", nil},
		{"main_guard.py", []string{"-b", "4"}},
		{"first_api.py", nil},
	}
	for _, tt := range tests {
		dir := t.TempDir()
		prog := script(tt.file)
		code, stdout, stderr := mirage(t, withArgs([]string{"superopt", prog, "-o", dir, "--no-cache", "--no-emit", "--time-limit", "3s", "--json"}, tt.args)...)
		if code != 0 {
			t.Errorf("superopt %s %q: exit %d\n%s", tt.file, tt.args, code, stderr)
			continue
		}
		var res superoptJSON
		if err := json.Unmarshal([]byte(stdout), &res); err != nil || len(res.Candidates) == 0 {
			t.Errorf("superopt %s: %v, candidates %v", tt.file, err, res.Candidates)
			continue
		}
		// One warning for the stubs, at most one note on Mirage's runtime
		// calls: no line per module.
		if n := strings.Count(stderr, "warning: "); n < 1 || n > 2 {
			t.Errorf("superopt %s: %d warnings:\n%s", tt.file, n, stderr)
		}
		name := strings.TrimSuffix(tt.file, ".py")
		code, stdout, stderr = mirage(t, withArgs([]string{"verify", prog, filepath.Join(dir, name+".ugraph.json")}, tt.args)...)
		if code != 0 || !strings.HasPrefix(stdout, "equivalent") {
			t.Errorf("verify %s %q: exit %d\n%s%s", tt.file, tt.args, code, stdout, stderr)
		}
	}
}

// TestSuperoptProgramArgs: the arguments after -- reach the program's
// argparse, so superopt searches the batch-8 program.
func TestSuperoptProgramArgs(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a whole search")
	}
	dir := t.TempDir()
	prog := script("rmsnorm_args.py")
	code, _, stderr := mirage(t, "superopt", prog, "-o", dir, "--no-cache", "--no-emit", "--time-limit", "5s", "--", "--bs", "8")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	out := filepath.Join(dir, "rmsnorm_args.ugraph.json")
	file, err := kernel.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range file.Graphs {
		if s := e.Graph.Tensors[e.Graph.Inputs()[0]].Shape; s != ugraph.MustShape(16, 4096) {
			t.Errorf("candidate %d: input 0 is %v, want [16, 4096]", i, s)
		}
	}
	// The document records the arguments that made its shapes.
	var meta struct{ Args []string }
	if err := json.Unmarshal(file.Meta, &meta); err != nil || !slices.Equal(meta.Args, []string{"--bs", "8"}) {
		t.Errorf("meta %s: args %q, %v", file.Meta, meta.Args, err)
	}
	// verify needs the same arguments: the batch-1 program has other shapes.
	if code, stdout, stderr := mirage(t, "verify", prog, out, "--", "--bs", "8"); code != 0 {
		t.Errorf("verify -- --bs 8: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, _, stderr := mirage(t, "verify", prog, out); code != exitUnusable || !strings.Contains(stderr, "input 0 is [2, 4096] float16 in the first but [16, 4096] float16 in the second") {
		t.Errorf("verify without the arguments: exit %d\n%s", code, stderr)
	}
}

// Program arguments and the loading flags, and their mistakes: exit
// status 2 and a message that names the argument.
func TestProgramArgsErrors(t *testing.T) {
	prog := script("rmsnorm_args.py")
	ugraphFile := filepath.Join(t.TempDir(), "g.ugraph.json")
	if code, stdout, stderr := mirage(t, "show", "--json", prog, "--", "--bs", "2"); code != 0 {
		t.Fatalf("show --json: exit %d: %s", code, stderr)
	} else if err := os.WriteFile(ugraphFile, []byte(stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		code int
		want string // in stderr; for exit 0, in stdout
	}{
		{[]string{"show", prog, "--", "--bs", "8"}, 0, "[16, 4096]"},
		{[]string{"show", prog, "--lenient", "--", "--bs=8"}, 0, "[16, 4096]"},
		{[]string{"eval", prog, "--", "--bs", "2", "--hidden", "64"}, 0, "[4, 128]"},
		{[]string{"emit", prog, "-o", t.TempDir(), "--", "--bs", "2"}, 0, "rmsnorm_args.cu"},
		{[]string{"verify", prog, ugraphFile, "--", "--bs", "2"}, 0, "equivalent"},
		{[]string{"show", prog, "--", "--bs", "x"}, 2, `rmsnorm_args.py:15: parse_args: argument --bs: invalid int value: "x"`},
		{[]string{"show", prog, "--", "--batch", "8"}, 2, "parse_args: unrecognized arguments: --batch (the program takes --bs BS (int, default 1, batch size)"},
		{[]string{"show", prog, "--", "--bs"}, 2, "parse_args: argument --bs: expected one argument"},
		{[]string{"superopt", prog, "--bs", "8"}, 2, "unknown flag: --bs (a program's own arguments go after --: mirage superopt FILE -- --bs 8)"},
		{[]string{"show", ugraphFile, "--", "--bs", "8"}, 2, "the arguments after -- (--bs 8) are a program's, and " + ugraphFile + " holds no .py program"},
		{[]string{"show", examplePath("gqa.py"), "--", "--bs", "8"}, 2, "gqa.py: the program was given arguments (--bs 8) but never parses them"},
		{[]string{"show", prog, "--strict"}, 2, `rmsnorm_args.py:4: import of module "numpy" is refused by a strict load (--strict)`},
		{[]string{"show", prog, "--strict", "--lenient"}, 2, "[lenient strict] were all set"},
	}
	for _, tt := range tests {
		code, stdout, stderr := mirage(t, tt.args...)
		where := stderr
		if tt.code == 0 {
			where = stdout
		}
		if code != tt.code || !strings.Contains(where, tt.want) {
			t.Errorf("mirage %s: exit %d, want %d and ...%s...\nstdout: %s\nstderr: %s", strings.Join(tt.args, " "), code, tt.code, tt.want, stdout, stderr)
		}
	}
	// --lenient is kept, and its help says it does nothing.
	_, stdout, _ := mirage(t, "superopt", "--help")
	if !strings.Contains(stdout, "--lenient") || !strings.Contains(stdout, "no effect: loading is lenient by default") || !strings.Contains(stdout, "--strict") {
		t.Errorf("superopt --help:\n%s", stdout)
	}
}

// TestMoE: a mixture-of-experts program in the style of Mirage's
// benchmark (8 experts, exp(X @ A) @ B) gets a verified answer within
// twice its time limit. By default the experts are 1024x1024 and the limit
// 10 s; MIRAGE_MOE=full runs the check, the benchmark's real
// shapes (4096x4096) with --time-limit 60s, which takes about a minute and
// 5 GB of memory.
func TestMoE(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a search and a verification at real shapes")
	}
	limit, progArgs := 10*time.Second, []string{"--hidden", "1024"}
	if os.Getenv("MIRAGE_MOE") == "full" {
		limit, progArgs = 60*time.Second, nil
	}
	dir := t.TempDir()
	prog := script("moe.py")
	start := time.Now()
	code, stdout, stderr := mirage(t, withArgs([]string{"superopt", prog, "-o", dir, "--no-cache", "--no-emit", "--time-limit", limit.String(), "--json"}, progArgs)...)
	took := time.Since(start)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if took > 2*limit {
		t.Errorf("superopt took %v with --time-limit %v", took, limit)
	}
	t.Logf("superopt moe.py %q --time-limit %v: %v", progArgs, limit, took)
	var res superoptJSON
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || len(res.Candidates) == 0 {
		t.Fatalf("%v, candidates %v", err, res.Candidates)
	}
	if code, stdout, stderr := mirage(t, withArgs([]string{"verify", prog, filepath.Join(dir, "moe.ugraph.json")}, progArgs)...); code != 0 {
		t.Errorf("verify: exit %d\n%s%s", code, stdout, stderr)
	}
}
