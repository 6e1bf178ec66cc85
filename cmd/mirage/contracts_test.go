package main

// Contracts a script relies on, each once broken (found by review): paths
// that look like glob patterns, flags that need a partner, --json's
// stdout, and -o checked before the work it would lose.

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mirage-go/mirage/internal/atomicfile"
)

// smallProgram is an RMSNorm + matmul at 8 × 256: a search of a second.
const smallProgram = `import mirage as mi
graph = mi.new_kernel_graph()
X = graph.new_input(dims=(8, 256), dtype=mi.float16)
W = graph.new_input(dims=(256, 256), dtype=mi.float16)
D = graph.rms_norm(X, normalized_shape=(256,))
O = graph.matmul(D, W)
graph.mark_output(O)
`

// An output directory whose name holds '[' ("out[", "results [v2") is a
// name, not a glob pattern: emit and superopt write their sets there (they
// once exited 2, "syntax error in pattern").
func TestOutputDirWithBracket(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out[")
	code, _, errOut := mirage(t, "emit", examplePath("rmsnorm_matmul_mugraph.py"), "-o", dir)
	if code != exitOK {
		t.Errorf("emit -o %q: exit %d, want 0: %s", dir, code, errOut)
	}
	prog := filepath.Join(t.TempDir(), "small.py")
	if err := os.WriteFile(prog, []byte(smallProgram), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = mirage(t, "superopt", prog, "--no-cache", "--time-limit", "20s", "-o", filepath.Join(t.TempDir(), "res["))
	if code != exitOK {
		t.Errorf("superopt -o res[: exit %d, want 0: %s", code, errOut)
	}
}

// In a directory whose name would be a valid glob pattern ("out[x]"), the
// set writer still finds the other sets' manifests: it refuses a set that
// would take another's files (my-layer and my_layer, both my_layer.cu), and
// keeps the runtime header another set lists when a set drops it (superopt
// --no-emit), so every manifest matches its files.
func TestOutputDirThatIsAGlobPattern(t *testing.T) {
	t.Run("names that collide", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "out[x]")
		if code, _, errOut := mirage(t, "emit", examplePath("rmsnorm_matmul_mugraph.py"), "--name", "my-layer", "-o", dir); code != exitOK {
			t.Fatalf("first emit: exit %d: %s", code, errOut)
		}
		code, _, errOut := mirage(t, "emit", examplePath("gated_mlp_mugraph.py"), "--name", "my_layer", "-o", dir)
		if code != exitUnusable {
			t.Errorf("second emit (my_layer over my-layer's my_layer.cu): exit %d, want 2 as in a plain directory; stderr %q", code, errOut)
		}
		if _, err := atomicfile.CheckSet(dir, "my-layer.manifest.json"); err != nil {
			t.Errorf("my-layer's set is broken: %v", err)
		}
	})
	t.Run("shared runtime dropped", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "out[x]")
		prog := filepath.Join(t.TempDir(), "small.py")
		if err := os.WriteFile(prog, []byte(smallProgram), 0o644); err != nil {
			t.Fatal(err)
		}
		if code, _, errOut := mirage(t, "superopt", prog, "--no-cache", "--time-limit", "20s", "-o", dir); code != exitOK {
			t.Fatalf("superopt: exit %d: %s", code, errOut)
		}
		if code, _, errOut := mirage(t, "emit", examplePath("rmsnorm_matmul_mugraph.py"), "-o", dir); code != exitOK {
			t.Fatalf("emit: exit %d: %s", code, errOut)
		}
		if code, _, errOut := mirage(t, "superopt", prog, "--no-cache", "--no-emit", "--time-limit", "20s", "-o", dir); code != exitOK {
			t.Fatalf("superopt --no-emit: exit %d: %s", code, errOut)
		}
		if _, err := atomicfile.CheckSet(dir, "rmsnorm_matmul_mugraph.manifest.json"); err != nil {
			t.Errorf("emit's set lost a file that superopt --no-emit dropped although it is listed there: %v", err)
		}
		if _, err := os.Stat(filepath.Join(dir, "mirage_runtime.cuh")); err != nil {
			t.Errorf("the shared runtime header: %v", err)
		}
	})
}

// tune -o DIR, DIR an existing directory, is refused before any candidate
// is built or timed, not after (the timings were lost). --emulate, the
// hidden flag tune's own tests use, stands in for the GPU.
func TestTuneOutIsADirectory(t *testing.T) {
	if _, err := exec.LookPath("g++"); err != nil {
		t.Skip("no g++ for the emulator")
	}
	dir := t.TempDir()
	prog := filepath.Join(dir, "small.py")
	if err := os.WriteFile(prog, []byte(smallProgram), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	if code, _, errOut := mirage(t, "superopt", prog, "--no-cache", "--no-emit", "--time-limit", "20s", "-o", out); code != exitOK {
		t.Fatalf("superopt: exit %d: %s", code, errOut)
	}
	profileDir := filepath.Join(dir, "profiles")
	if err := os.Mkdir(profileDir, 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	code, stdout, errOut := mirage(t, "tune", filepath.Join(out, "small.ugraph.json"), "--emulate", "--runs", "2", "--warmup", "1", "--candidates", "2", "-o", profileDir)
	took := time.Since(start)
	if code != exitUnusable {
		t.Fatalf("exit %d, want 2: %s", code, errOut)
	}
	if !strings.HasPrefix(errOut, "mirage: -o ") || strings.Contains(errOut, "atomicfile") {
		t.Errorf("the error is not tune's up-front check of -o but the profile's write after the timing (%v spent, stdout %q):\n%s", took.Round(time.Millisecond), stdout, errOut)
	}
}

// verify --engine-dir without --engine is refused, as every flag that
// needs a partner is (it was accepted, and wrote nothing).
func TestEngineDirAlone(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "engine")
	code, out, errOut := mirage(t, "verify", examplePath("gqa.py"), examplePath("gqa_mugraph.py"), "--engine-dir", dir)
	if code != exitUnusable || !strings.Contains(errOut, "--engine") {
		t.Errorf("verify --engine-dir without --engine: exit %d, stdout %q, stderr %q; want exit 2 saying it needs --engine", code, out, errOut)
	}
}

// bench --history DIR --json prints JSON on stdout, as every --json does.
func TestBenchHistoryJSON(t *testing.T) {
	dir := t.TempDir()
	line := `{"format":"mirage-bench-results/1","version":"0.1.0-dev","time":"2026-12-01T00:34:43Z","machine":{"cores":2,"os":"linux","cpu":"amd64","arch":"sm_90","calibration_seconds":0.104678947},"options":{"time_limit":"20s","workers":2,"seed":1,"max_candidates":2},"workloads":[{"workload":"small","file":"small.py","program_hash":"acfd32e62686091a","config_hash":"fbe49459b98dd89d","search_seconds":2.112178153,"states":72488,"states_per_core_second":17159.537394381903,"pruned_absexpr_share":0.9084563090821508,"complete":363,"verified":2,"fused":true,"best_kernels":1,"best_estimated_us":4.637076023391813,"unfused_estimated_us":5.313450292397661,"speedup":1.1458622342169646,"first_fused_seconds":0.204243484}]}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "history.jsonl"), []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, errOut := mirage(t, "bench", "--history", dir, "--json")
	var got struct {
		Wrote string `json:"wrote"`
		Runs  int    `json:"runs"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); code != exitOK || err != nil || got.Runs != 1 || got.Wrote != filepath.Join(dir, "history.svg") {
		t.Errorf("bench --history --json: exit %d, stdout %q (%v), stderr %q; want {wrote: %s, runs: 1}", code, stdout, err, errOut, filepath.Join(dir, "history.svg"))
	}
}

// superopt --profile DIR reads DIR's profile*.json files whatever DIR's
// name: "pr[1]" is a name, not a pattern.
func TestProfileDirWithBracket(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "small.py")
	if err := os.WriteFile(prog, []byte(smallProgram), 0o644); err != nil {
		t.Fatal(err)
	}
	profile := `{"version": 1, "arch": "sm_90", "gpu": "test", "measurements": [{"program": "small", "hash": "0000000000000000", "median_us": 1, "runs": 1, "p10_us": 1, "p90_us": 1, "estimated_us": 1}]}`
	for _, name := range []string{"plain", "pr[1]"} {
		pdir := filepath.Join(dir, name)
		os.Mkdir(pdir, 0o755)
		if err := os.WriteFile(filepath.Join(pdir, "profile_sm_90.json"), []byte(profile), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := mirage(t, "superopt", prog, "--no-cache", "--no-emit", "--time-limit", "20s", "--profile", pdir, "-o", filepath.Join(dir, "out-"+name))
		if code != exitOK {
			t.Errorf("--profile %s: exit %d: %s", name, code, errOut)
		}
	}
}

// --dynamic names an input by the program's variable for it, also in a
// program that calls graph.superoptimize(...), whose graph is the one at
// the call.
func TestDynamicInputNameAfterSuperoptimize(t *testing.T) {
	code, stdout, errOut := mirage(t, "show", examplePath("rmsnorm_matmul.py"), "--dynamic", "X:0=1..16")
	if code != exitOK || !strings.Contains(stdout, "[m, 4096]") {
		t.Errorf("show rmsnorm_matmul.py --dynamic X:0=1..16: exit %d, stdout %q, stderr %q", code, stdout, errOut)
	}
	// The same program, its superoptimize call left out, is accepted.
	src, err := os.ReadFile(examplePath("rmsnorm_matmul.py"))
	if err != nil {
		t.Fatal(err)
	}
	cut := strings.Replace(string(src), `graph.superoptimize(config="mlp")`, `pass`, 1)
	prog := filepath.Join(t.TempDir(), "rmsnorm_matmul.py")
	if err := os.WriteFile(prog, []byte(cut), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := mirage(t, "show", prog, "--dynamic", "X:0=1..16"); code != exitOK {
		t.Fatalf("without the call: exit %d: %s", code, errOut)
	}
}
