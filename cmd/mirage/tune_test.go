package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/frontend"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// normProj is a small RMSNorm+MatMul: its search and its candidates in the
// CPU emulator take seconds.
const normProj = `import mirage as mi
g = mi.new_kernel_graph()
X = g.new_input(dims=(8, 256), dtype=mi.float16)
W = g.new_input(dims=(256, 128), dtype=mi.float16)
g.mark_output(g.matmul(g.rms_norm(X, normalized_shape=(256,)), W))
`

// TestTune runs superopt's top answers through tune (in the CPU emulator:
// the plumbing a GPU run takes), then superopt --profile with what tune
// wrote: the answers are then ranked by their measured times.
func TestTune(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a search and the emulator")
	}
	if _, err := exec.LookPath("g++"); err != nil {
		t.Skip("no g++ for the emulator")
	}
	dir := t.TempDir()
	prog := filepath.Join(dir, "norm_proj.py")
	if err := os.WriteFile(prog, []byte(normProj), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	if code, _, stderr := mirage(t, "superopt", prog, "--max-candidates", "3", "-o", out, "--no-cache", "--no-emit"); code != 0 {
		t.Fatalf("superopt: exit %d\n%s", code, stderr)
	}
	doc := filepath.Join(out, "norm_proj.ugraph.json")
	code, stdout, stderr := mirage(t, "tune", doc, "--emulate", "--runs", "2", "--warmup", "1", "--json")
	if code != 0 {
		t.Fatalf("tune: exit %d\n%s", code, stderr)
	}
	var res struct {
		GPU          string `json:"gpu"`
		Program      string `json:"program"`
		Profile      string `json:"profile"`
		Measurements []struct {
			Candidate int     `json:"candidate"`
			Hash      string  `json:"hash"`
			MedianUs  float64 `json:"median_us"`
			Error     string  `json:"error"`
		} `json:"measurements"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("tune --json: %v\n%s", err, stdout)
	}
	// Three answers and the unfused program: the default --candidates 4.
	if res.GPU != "mirage CPU emulator" || res.Program != "norm_proj" || res.Profile != filepath.Join(out, "profile_sm_90.json") || len(res.Measurements) != 4 {
		t.Fatalf("tune --json: %+v", res)
	}
	for i, m := range res.Measurements {
		if m.Candidate != i || m.Error != "" || !(m.MedianUs > 0) {
			t.Errorf("measurement %+v", m)
		}
	}
	// superopt ranks its answers by the profile: a measured graph by its
	// time, the others by their estimates on the measured times' scale.
	code, stdout, stderr = mirage(t, "superopt", prog, "--max-candidates", "3", "-o", filepath.Join(dir, "again"), "--no-emit", "--json", "--profile", res.Profile)
	if code != 0 {
		t.Fatalf("superopt --profile: exit %d\n%s", code, stderr)
	}
	var so superoptJSON
	if err := json.Unmarshal([]byte(stdout), &so); err != nil {
		t.Fatal(err)
	}
	timeOf := map[string]float64{}
	for _, m := range res.Measurements {
		timeOf[m.Hash] = m.MedianUs
	}
	measured := 0
	for i, c := range so.Candidates {
		if us, ok := timeOf[c.Hash]; ok != c.Measured || ok && us != c.EstimatedUs {
			t.Errorf("candidate %d (%s): %.3f µs, measured %v; the profile has %.3f, %v", i, c.Hash, c.EstimatedUs, c.Measured, us, ok)
		}
		if c.Measured {
			measured++
		}
		if i > 0 && c.EstimatedUs < so.Candidates[i-1].EstimatedUs {
			t.Errorf("candidate %d is ranked after a slower one", i)
		}
	}
	if !slices.ContainsFunc(so.Candidates, func(c superoptCandidate) bool { return c.Unfused && c.Measured }) {
		t.Errorf("%d measured answers: the unfused program, at least, was measured", measured)
	}

	// A document superopt wrote for the H200 is timed, and its profile
	// keyed, for the H200, as superopt --arch h200 --profile reads it.
	data, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	h200 := filepath.Join(dir, "h200", "norm_proj.ugraph.json")
	if n := strings.Count(string(data), `"arch": "sm_90"`); n != 1 {
		t.Fatalf("the document names its arch %d times", n)
	}
	if err := os.MkdirAll(filepath.Dir(h200), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h200, []byte(strings.Replace(string(data), `"arch": "sm_90"`, `"arch": "h200"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = mirage(t, "tune", h200, "--emulate", "--runs", "1", "--warmup", "1", "--candidates", "1", "--json")
	if code != 0 {
		t.Fatalf("tune of an h200 document: exit %d\n%s", code, stderr)
	}
	var arch struct{ Arch, Profile string }
	if err := json.Unmarshal([]byte(stdout), &arch); err != nil || arch.Arch != "h200" || arch.Profile != filepath.Join(dir, "h200", "profile_h200.json") {
		t.Errorf("tune of an h200 document: %+v, %v", arch, err)
	}
}

// TestTuneRefuses: a program (not a μGraph file) and bad flags are exit 2;
// so is a machine without a GPU, saying so.
func TestTuneRefuses(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "norm_proj.py")
	if err := os.WriteFile(prog, []byte(normProj), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := filepath.Join(dir, "norm_proj.ugraph.json")
	if code, _, stderr := mirage(t, "show", prog, "--json"); code != 0 {
		t.Fatal(stderr)
	} else if code, stdout, _ := mirage(t, "show", prog, "--json"); code == 0 {
		if err := os.WriteFile(doc, []byte(stdout), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"tune", prog}, "tune times the candidates of a μGraph file"},
		{[]string{"tune", doc, "--runs", "0"}, "--runs 0"},
		{[]string{"tune", doc, "--warmup", "0"}, "--warmup 0: want at least one"},
		{[]string{"tune", doc, "--timeout", "0s"}, "--timeout 0s"},
		{[]string{"tune", doc, "-o", filepath.Join(dir, "missing", "p.json")}, "is not a directory"},
		{[]string{"tune", doc, "--candidates", "-1"}, "--candidates"},
		{[]string{"tune", filepath.Join(dir, "missing.ugraph.json")}, "missing.ugraph.json"},
		{[]string{"tune", doc, "-o", ""}, "empty"},
	} {
		if code, _, stderr := mirage(t, tt.args...); code != exitUnusable || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tt.args, code, stderr, tt.want)
		}
	}
	if err := exec.Command("nvidia-smi", "-L").Run(); err == nil {
		return // a GPU: tune would time it
	}
	code, _, stderr := mirage(t, "tune", doc, "-o", filepath.Join(dir, "p.json"))
	if code != exitUnusable || !strings.Contains(stderr, "tune needs a GPU and nvcc") {
		t.Errorf("tune without a GPU: exit %d, %q", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "p.json")); err == nil {
		t.Error("tune without a GPU wrote a profile")
	}
}

// A tune that measures nothing (here its one candidate fails on the
// "GPU") exits 2, says why, and leaves the profile at -o as it was: a
// profile of nothing would replace one of something.
func TestTuneThatMeasuresNothingKeepsTheProfile(t *testing.T) {
	if _, err := exec.LookPath("g++"); err != nil {
		t.Skip("no g++ for the emulator")
	}
	p, err := frontend.Load("p.py", []byte("import mirage as mi\ng = mi.new_kernel_graph()\nX = g.new_input(dims=(8, 128), dtype=mi.float16)\ng.mark_output(g.exp(X))\n"), frontend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	doc := filepath.Join(dir, "p.ugraph.json")
	if err := kernel.WriteFile(doc, kernel.NewFile("p", p.Graph)); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "profile_sm_90.json")
	old := `{"version": 1, "arch": "sm_90", "gpu": "g", "measurements": [{"program": "p", "hash": "0123456789abcdef", "median_us": 3}]}` + "\n"
	if err := os.WriteFile(out, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MIRAGE_TUNE_FAIL", "0")
	code, _, stderr := mirage(t, "tune", doc, "--emulate", "--runs", "1", "--warmup", "1", "-o", out)
	if data, _ := os.ReadFile(out); string(data) != old {
		t.Errorf("the profile at -o was replaced:\n%s", data)
	}
	if code != exitUnusable || !strings.Contains(stderr, "no candidate was measured (candidate 0: failed on the GPU") || !strings.Contains(stderr, "is left as it was") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}
