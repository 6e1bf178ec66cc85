package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// normOut is QK-norm's norm written out at a LLaMA head size: one state of
// enumeration finds nothing, the rows seed fuses it.
const normOut = `import mirage as mi
g = mi.new_kernel_graph()
X = g.new_input(dims=(8, 4096), dtype=mi.float16)
S = g.reduction(g.square(X), 1)
g.mark_output(g.div(X, g.sqrt(g.mul_scalar(S, 0.000244140625))))
`

// superopt names the seed that fused a part, when the part had its first
// fused candidate, and when every part had one: in the table and in
// --json.
func TestSuperoptReportsSeeds(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "norm.py")
	if err := os.WriteFile(prog, []byte(normOut), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := mirage(t, "superopt", prog, "--max-states", "1", "--no-cache", "--no-emit", "-o", filepath.Join(dir, "table"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"every part had a fused candidate at", "yes (seed: rows)", "first fused"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the table does not say %q:\n%s", want, stdout)
		}
	}

	code, stdout, stderr = mirage(t, "superopt", prog, "--max-states", "1", "--no-cache", "--no-emit", "--json", "-o", filepath.Join(dir, "json"))
	if code != 0 {
		t.Fatalf("--json: exit %d: %s", code, stderr)
	}
	var res struct {
		Stats struct {
			FirstFused float64 `json:"first_fused_seconds"`
		}
		Candidates []struct{ Seed string }
		Parts      []struct {
			Seed         string
			Seeds        []struct{ Rule, Outcome string }
			FirstFusedAt float64 `json:"first_fused_at_seconds"`
		}
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Parts) != 1 || res.Parts[0].Seed != "rows" || res.Parts[0].FirstFusedAt < 0 ||
		len(res.Parts[0].Seeds) != 1 || res.Parts[0].Seeds[0].Outcome != "verified" {
		t.Errorf("parts %+v, want one fused by the verified rows seed", res.Parts)
	}
	if res.Stats.FirstFused < 0 || res.Candidates[0].Seed != "rows" {
		t.Errorf("stats.first_fused_seconds %v, best candidate's seed %q", res.Stats.FirstFused, res.Candidates[0].Seed)
	}

	// Without seeds one state fuses nothing, and the part says why.
	code, stdout, stderr = mirage(t, "superopt", prog, "--max-states", "1", "--no-cache", "--no-emit", "--no-seeds", "-o", filepath.Join(dir, "none"))
	if code != 0 || !strings.Contains(stdout, "0 fused") || !strings.Contains(stdout, "no candidate complete") {
		t.Errorf("--no-seeds: exit %d\n%s%s", code, stdout, stderr)
	}
}
