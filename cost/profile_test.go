package cost

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestGraphHashIs16HexDigits(t *testing.T) {
	g := loadExample(t, "rmsnorm_matmul_mugraph.py")
	h := GraphHash(g)
	if !validHash(h) || h != GraphHash(loadExample(t, "rmsnorm_matmul_mugraph.py")) {
		t.Errorf("GraphHash = %q", h)
	}
	if h == GraphHash(loadExample(t, "rmsnorm_matmul.py")) {
		t.Error("program and μGraph hash alike")
	}
}

// A profile written by Write reads back, and measured times are found by
// arch, program and graph.
func TestProfilesLookup(t *testing.T) {
	prog, fused := loadExample(t, "rmsnorm_matmul.py"), loadExample(t, "rmsnorm_matmul_mugraph.py")
	dir := t.TempDir()
	for _, p := range []Profile{
		{Version: 1, Arch: "sm_80", GPU: "NVIDIA A100-SXM4-80GB", Measurements: []Measurement{
			{Program: "rmsnorm_matmul", Hash: GraphHash(prog), MedianMicros: 41.5, Runs: 100},
			{Program: "rmsnorm_matmul", Hash: GraphHash(fused), MedianMicros: 30.25, Runs: 100, P10Micros: 29.5, P90Micros: 32.5},
		}},
		{Version: 1, Arch: "sm_90", GPU: "NVIDIA H100 80GB HBM3", Measurements: []Measurement{
			{Program: "rmsnorm_matmul", Hash: GraphHash(fused), MedianMicros: 19},
		}},
	} {
		var buf bytes.Buffer
		if err := p.Write(&buf); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, "profile_"+p.Arch+".json"), buf.String())
	}
	// Beside profiles, bench/gpu writes other results: not read.
	writeFile(t, filepath.Join(dir, "notes.txt"), "not a profile")
	writeFile(t, filepath.Join(dir, "gpu.json"), `{"rows": []}`)

	ps, err := LoadProfiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ps.Len() != 3 {
		t.Errorf("Len = %d, want 3", ps.Len())
	}
	tests := []struct {
		arch, program string
		graph         string // "prog" or "fused"
		micros        float64
		ok            bool
	}{
		{"sm_80", "rmsnorm_matmul", "prog", 41.5, true},
		{"sm_80", "rmsnorm_matmul", "fused", 30.25, true},
		{"sm_90", "rmsnorm_matmul", "fused", 19, true},
		{"sm_90", "rmsnorm_matmul", "prog", 0, false},
		{"sm_80", "gated_mlp", "fused", 0, false},
	}
	for _, tt := range tests {
		g := prog
		if tt.graph == "fused" {
			g = fused
		}
		us, ok := ps.Lookup(tt.arch, tt.program, g)
		if us != tt.micros || ok != tt.ok {
			t.Errorf("Lookup(%s, %s, %s) = %v, %v; want %v, %v", tt.arch, tt.program, tt.graph, us, ok, tt.micros, tt.ok)
		}
	}

	if m, ok := ps.Measurement("sm_80", "rmsnorm_matmul", fused); !ok || m.Spread() != 1.5 || m.Runs != 100 {
		t.Errorf("Measurement: %+v, %v; want the spread (32.5-29.5)/2 = 1.5 and 100 runs", m, ok)
	}
	if m, _ := ps.Measurement("sm_80", "rmsnorm_matmul", prog); m.Spread() != 0 {
		t.Errorf("a measurement without percentiles has spread %v, want 0", m.Spread())
	}

	one, err := LoadProfiles(filepath.Join(dir, "profile_sm_90.json"))
	if err != nil || one.Len() != 1 {
		t.Errorf("one file: %v measurements, %v", one.Len(), err)
	}
	var none *Profiles
	if _, ok := none.Lookup("sm_80", "rmsnorm_matmul", fused); ok || none.Len() != 0 {
		t.Error("nil Profiles has measurements")
	}
}

// Scale is the geometric mean of measured over estimated times of a
// program's measurements that recorded their estimate, per arch.
func TestProfilesScale(t *testing.T) {
	path := filepath.Join(t.TempDir(), "profile.json")
	writeFile(t, path, `{"version": 1, "arch": "sm_90", "gpu": "g", "measurements": [
	{"program": "p", "hash": "0000000000000001", "median_us": 20, "estimated_us": 10},
	{"program": "p", "hash": "0000000000000002", "median_us": 80, "estimated_us": 10},
	{"program": "p", "hash": "0000000000000003", "median_us": 5},
	{"program": "q", "hash": "0000000000000001", "median_us": 3}]}`)
	ps, err := LoadProfiles(path)
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := ps.Scale("sm_90", "p"); !ok || !within(s, 4, 1e-12) { // sqrt(2 * 8)
		t.Errorf("p: scale %v, %v; want 4", s, ok)
	}
	for _, k := range [][2]string{{"sm_90", "q"}, {"sm_80", "p"}, {"sm_90", "r"}} {
		if s, ok := ps.Scale(k[0], k[1]); ok || s != 1 {
			t.Errorf("%v: scale %v, %v; want none", k, s, ok)
		}
	}
	if s, ok := (*Profiles)(nil).Scale("sm_90", "p"); ok || s != 1 {
		t.Errorf("no profiles: %v, %v", s, ok)
	}
}

func TestBadProfiles(t *testing.T) {
	const good = `{"program": "p", "hash": "0123456789abcdef", "median_us": 3}`
	profile := func(version, arch, m string) string {
		return `{"version": ` + version + `, "arch": "` + arch + `", "gpu": "g", "extra": {"driver": "1"}, "measurements": [` + m + `]}`
	}
	tests := []struct {
		name  string
		files map[string]string
		err   string
	}{
		{"version", map[string]string{"profile_a.json": profile("2", "sm_80", good)}, "profile version 2, want 1"},
		{"no arch", map[string]string{"profile_a.json": profile("1", "", good)}, "names no arch"},
		{"short hash", map[string]string{"profile_a.json": profile("1", "sm_80", `{"program": "p", "hash": "0123", "median_us": 3}`)}, `hash "0123"`},
		{"upper-case hash", map[string]string{"profile_a.json": profile("1", "sm_80", `{"program": "p", "hash": "0123456789ABCDEF", "median_us": 3}`)}, "lower-case hex"},
		{"no program", map[string]string{"profile_a.json": profile("1", "sm_80", `{"hash": "0123456789abcdef", "median_us": 3}`)}, "names no program"},
		{"zero time", map[string]string{"profile_a.json": profile("1", "sm_80", `{"program": "p", "hash": "0123456789abcdef", "median_us": 0}`)}, "median_us 0"},
		{"p90 below the median", map[string]string{"profile_a.json": profile("1", "sm_80", `{"program": "p", "hash": "0123456789abcdef", "median_us": 3, "p10_us": 2, "p90_us": 2.5}`)}, "want 0 < p10 <= median <= p90"},
		{"negative estimate", map[string]string{"profile_a.json": profile("1", "sm_80", `{"program": "p", "hash": "0123456789abcdef", "median_us": 3, "estimated_us": -1}`)}, "estimated_us -1"},
		{"p10 alone", map[string]string{"profile_a.json": profile("1", "sm_80", `{"program": "p", "hash": "0123456789abcdef", "median_us": 3, "p10_us": 2}`)}, "p10_us 2"},
		{"not json", map[string]string{"profile_a.json": "{"}, "profile_a.json: unexpected EOF"},
		// A second profile, or a member twice, would lose measurements silently.
		{"two profiles", map[string]string{"profile_a.json": profile("1", "sm_80", good) + "\n" + profile("1", "sm_80", good)}, "profile_a.json: data after the profile's end"},
		{"data after", map[string]string{"profile_a.json": profile("1", "sm_80", good) + " garbage"}, "profile_a.json: data after the profile's end"},
		{"measurements twice", map[string]string{"profile_a.json": strings.TrimSuffix(profile("1", "sm_80", good), "}") + `, "measurements": []}`}, `profile_a.json: member "measurements" given twice`},
		{"a member of a measurement twice", map[string]string{"profile_a.json": profile("1", "sm_80", `{"program": "p", "hash": "0123456789abcdef", "median_us": 3, "median_us": 4}`)}, `member "median_us" given twice`},
		// Times whose ratio (Scale) would overflow.
		{"time too long", map[string]string{"profile_a.json": profile("1", "sm_80", `{"program": "p", "hash": "0123456789abcdef", "median_us": 1e300, "estimated_us": 3}`)}, "median_us 1e+300, want a time from 0.001 to 1e+09"},
		{"estimate too short", map[string]string{"profile_a.json": profile("1", "sm_80", `{"program": "p", "hash": "0123456789abcdef", "median_us": 3, "estimated_us": 1e-300}`)}, "estimated_us 1e-300"},
		{"duplicate", map[string]string{"profile_a.json": profile("1", "sm_80", good), "profile_b.json": profile("1", "sm_80", good)}, "profile_b.json: sm_80 p graph 0123456789abcdef is also measured in"},
		{"empty dir", map[string]string{}, "no profile*.json files"},
	}
	for _, tt := range tests {
		dir := t.TempDir()
		for name, text := range tt.files {
			writeFile(t, filepath.Join(dir, name), text)
		}
		_, err := LoadProfiles(dir)
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.err)
		}
	}
	if err := (&Profile{Version: 1, Arch: "sm_80", Measurements: []Measurement{{Program: "p", Hash: "x"}}}).Write(new(bytes.Buffer)); err == nil {
		t.Error("Write wrote an invalid profile")
	}
	if _, err := LoadProfiles(filepath.Join(t.TempDir(), "missing.json")); !os.IsNotExist(err) {
		t.Errorf("missing file: %v", err)
	}
	// The same graph measured on two archs is no conflict.
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "profile_a.json"), profile("1", "sm_80", good))
	writeFile(t, filepath.Join(dir, "profile_b.json"), profile("1", "sm_90", good))
	if _, err := LoadProfiles(dir); err != nil {
		t.Errorf("two archs: %v", err)
	}
}
