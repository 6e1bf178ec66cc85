package bench

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/search"
	"github.com/mirage-go/mirage/ugraph/block"
)

func TestSaveAndRead(t *testing.T) {
	dir := t.TempDir()
	first := results("sm_90", 0.06, fusedRow("a"), Row{Workload: "broken", File: "broken.py", Err: "broken.py:1: boom", FirstFusedSec: -1})
	second := results("sm_90", 0.07, fusedRow("a"))
	second.Rows[0].Measured = &Measured{MedianUs: 12.5, SpreadUs: 0.5}
	for _, r := range []*Results{first, second} {
		if err := r.Save(dir); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ReadResults(filepath.Join(dir, ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, second) {
		t.Errorf("results.json holds\n%+v\nwant the last run\n%+v", got, second)
	}
	runs, err := ReadHistory(filepath.Join(dir, HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || !reflect.DeepEqual(runs[0], first) || !reflect.DeepEqual(runs[1], second) {
		t.Errorf("history holds %d runs, want the two in order", len(runs))
	}
	data, _ := os.ReadFile(filepath.Join(dir, HistoryFile))
	if n := strings.Count(string(data), "\n"); n != 2 {
		t.Errorf("history.jsonl has %d lines, want one per run", n)
	}
}

func TestReadResultsRefusesBadFiles(t *testing.T) {
	good, err := json.Marshal(results("sm_90", 0.06, fusedRow("a")))
	if err != nil {
		t.Fatal(err)
	}
	doctor := func(old, new string) string {
		if !strings.Contains(string(good), old) {
			t.Fatalf("%q not in %s", old, good)
		}
		return strings.Replace(string(good), old, new, 1)
	}
	tests := []struct {
		name, text, err string
	}{
		{"truncated", string(good[:len(good)/2]), "not valid JSON (truncated or corrupted?)"},
		{"empty", "", "not valid JSON"},
		{"a μGraph file", `{"name": "gqa", "graphs": []}`, "not a mirage bench results file (no \"format\""},
		{"a JSON array", `[1, 2]`, "not a mirage bench results file"},
		{"another format", doctor(Format, "mirage-bench-results/99"), `results format "mirage-bench-results/99", want "` + Format + `"`},
		{"no arch", doctor(`"arch":"sm_90"`, `"arch":""`), "corrupted results: no arch"},
		{"no calibration", doctor(`"calibration_seconds":0.06`, `"calibration_seconds":0`), "calibration_seconds 0"},
		{"a row without hashes", doctor(`"program_hash":"00000000000000aa",`, ""), `workload "a" has no program or configuration hash`},
		{"a row without estimates", doctor(`"best_estimated_us":20`, `"best_estimated_us":0`), `workload "a": estimates 0 and 30 µs`},
		{"a field of the wrong type", doctor(`"verified":2`, `"verified":"two"`), "corrupted results"},
		{"a workload twice", doctor(`"workloads":[`, `"workloads":[{"workload":"a","error":"x"},`), `workload "a" appears twice`},
	}
	for _, tt := range tests {
		path := filepath.Join(t.TempDir(), "baseline.json")
		if err := os.WriteFile(path, []byte(tt.text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadResults(path)
		if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %v; want one naming the file and saying %q", tt.name, err, tt.err)
		}
	}
	if _, err := ReadResults(filepath.Join(t.TempDir(), "missing.json")); !os.IsNotExist(err) {
		t.Errorf("a missing file: %v", err)
	}
}

func TestReadHistoryNamesTheBadLine(t *testing.T) {
	line, _ := json.Marshal(results("sm_90", 0.06, fusedRow("a")))
	path := filepath.Join(t.TempDir(), HistoryFile)
	os.WriteFile(path, []byte(string(line)+"\n\n"+string(line[:40])+"\n"), 0o644)
	if _, err := ReadHistory(path); err == nil || !strings.Contains(err.Error(), HistoryFile+":3: not valid JSON") {
		t.Errorf("error %v, want one naming line 3", err)
	}
	os.WriteFile(path, nil, 0o644)
	if _, err := ReadHistory(path); err == nil || !strings.Contains(err.Error(), "no runs recorded") {
		t.Errorf("an empty history: %v", err)
	}
}

func TestConfigurationHash(t *testing.T) {
	base := Configuration{Preset: "mlp"}
	same := Configuration{Preset: "mlp"}
	others := []Configuration{
		{},
		{Preset: "attention"},
		{Preset: "mlp", MaxStates: 1000},
		{Preset: "mlp", Restrict: search.Restrictions{Grids: []block.Dim3{{64, 1, 1}}}},
		{Preset: "mlp", Restrict: search.Restrictions{Grids: []block.Dim3{{128, 1, 1}}}},
		{Preset: "mlp", Restrict: search.Restrictions{FRanges: []int{4}}},
		{Preset: "mlp", NoSeeds: true},
	}
	if base.Hash() != same.Hash() {
		t.Error("equal configurations hash differently")
	}
	// The hash bench/results/baseline.json records for rmsnorm_matmul
	// (preset mlp), from before NoSeeds: a default configuration keeps it.
	if got, want := base.Hash(), "d8883237e52b9e6c"; got != want {
		t.Errorf("Configuration{Preset: mlp}.Hash() = %s, want the recorded %s", got, want)
	}
	seen := map[string]int{base.Hash(): -1}
	for i, c := range others {
		h := c.Hash()
		if j, ok := seen[h]; ok {
			t.Errorf("configurations %d and %d share hash %s", i, j, h)
		}
		seen[h] = i
	}
}

func TestFromPaths(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	write("team/attn.py", "attn")
	write("team/mlp.py", "mlp")
	write("team/norm.ugraph.json", "{}")
	write("team/README.md", "not a program")
	write("team/sub/deep.py", "not read: a subdirectory")
	write("same/gqa.py", "builtin gqa")
	write("other/gqa.py", "another gqa")
	readme := write("notes.txt", "x")
	write("empty/notes.md", "x")
	builtin := []Workload{{Name: "gqa", File: "examples/gqa.py", Source: []byte("builtin gqa")}}

	ws, err := FromPaths(builtin, []string{filepath.Join(dir, "team"), filepath.Join(dir, "same", "gqa.py")})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, w := range ws {
		names = append(names, w.Name)
	}
	if got := strings.Join(names, " "); got != "gqa attn mlp norm" {
		t.Errorf("workloads %s, want the built-in gqa once, then attn mlp norm", got)
	}
	if string(ws[1].Source) != "attn" || ws[1].File != filepath.Join(dir, "team", "attn.py") {
		t.Errorf("attn: %+v", ws[1])
	}

	for _, tt := range []struct {
		paths []string
		err   string
	}{
		{[]string{readme}, "notes.txt: not a program"},
		{[]string{filepath.Join(dir, "empty")}, "a directory with no programs"},
		{[]string{filepath.Join(dir, "missing.py")}, "no such file"},
		{[]string{filepath.Join(dir, "other")}, "two workloads named gqa: examples/gqa.py and " + filepath.Join(dir, "other", "gqa.py")},
		{[]string{filepath.Join(dir, "team"), filepath.Join(dir, "team", "mlp.py")}, ""}, // the same file twice is one workload
	} {
		_, err := FromPaths(builtin, tt.paths)
		if tt.err == "" {
			if err != nil {
				t.Errorf("%v: %v", tt.paths, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%v: error %v, want %q", tt.paths, err, tt.err)
		}
	}
}

func TestWriteHistorySVG(t *testing.T) {
	changed := fusedRow("b")
	changed.ProgramHash, changed.Speedup = "00000000000000ee", 2
	runs := []*Results{
		results("sm_90", 0.06, fusedRow("a"), fusedRow("b")),
		results("sm_90", 0.06, fusedRow("a"), Row{Workload: "b", Err: "boom"}),
		results("sm_90", 0.06, fusedRow("a"), changed),
	}
	var b bytes.Buffer
	if err := WriteHistorySVG(&b, runs); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths []struct {
			D string `xml:"d,attr"`
		} `xml:"path"`
		Texts []string `xml:"text"`
	}
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("not XML: %v", err)
	}
	// Two panels, each with a line for a (three points) and points of b
	// that never join: the run between failed, and the program changed.
	if len(doc.Paths) != 4 {
		t.Fatalf("%d paths, want 4:\n%s", len(doc.Paths), b.String())
	}
	for i, p := range doc.Paths {
		moves, lines := strings.Count(p.D, "M"), strings.Count(p.D, "L")
		if i%2 == 0 && (moves != 1 || lines != 2) || i%2 == 1 && (moves != 2 || lines != 0) {
			t.Errorf("path %d: %q", i, p.D)
		}
	}
	legend := strings.Join(doc.Texts, "|")
	for _, want := range []string{"|a|", "|b", "Estimated speedup", "Search seconds"} {
		if !strings.Contains(legend, want) {
			t.Errorf("no %q among the texts %s", want, legend)
		}
	}
}
