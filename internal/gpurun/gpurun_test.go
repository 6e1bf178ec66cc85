package gpurun

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/launch"
)

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A document with one graph (an input marked as the output), meta.arch
// as given ("" for none).
func doc(arch string) string {
	meta := ""
	if arch != "" {
		meta = `"meta": {"arch": "` + arch + `"}, `
	}
	return `{"format": "mirage-ugraph", "version": 1, "name": "w", ` + meta + `"graphs": [
	  {"ops": [{"op": "input", "shape": [8, 64], "dtype": "float16"}], "outputs": [0]}]}`
}

func TestKeyed(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, text string
		want       map[string]string // nil: an error
	}{
		{"sums", "gqa 0 abc\ngqa 1 def ghi\n", map[string]string{"gqa 0": "abc", "gqa 1": "def ghi"}},
		{"comments and blank lines", "# why\n\n  lora 3  the library's vectors \n", map[string]string{"lora 3": " the library's vectors"}},
		{"a line without its rest", "gqa 0\n", nil},
	}
	for _, tt := range tests {
		path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_"))
		write(t, path, tt.text)
		got, err := Keyed(path)
		switch {
		case tt.want == nil && err == nil:
			t.Errorf("%s: %v, want an error", tt.name, got)
		case tt.want != nil && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want != nil && !maps.Equal(got, tt.want):
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
	if got, err := Keyed(filepath.Join(dir, "missing")); err != nil || len(got) != 0 {
		t.Errorf("a missing file: %v, %v; want it empty", got, err)
	}
}

// Runs are the directories holding measured documents, in order; each
// document's graphs are filed under the target its meta.arch names, and a
// document without a known one is refused.
func TestRunsAndDocs(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "h200-2026-12-01-aaaaaaa", "gqa.measured.ugraph.json"), doc("h200"))
	write(t, filepath.Join(root, "h100-2026-11-27", "lora.measured.ugraph.json"), doc("sm_90"))
	write(t, filepath.Join(root, "h100-2026-11-27", "stale.txt"), "# none\n")
	write(t, filepath.Join(root, "notes", "README.md"), "not a run\n")
	dirs, err := Runs(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) != 2 || filepath.Base(dirs[0]) != "h100-2026-11-27" || filepath.Base(dirs[1]) != "h200-2026-12-01-aaaaaaa" {
		t.Fatalf("runs %v, want the H100 run, then the H200 run", dirs)
	}
	docs, err := Docs(dirs[1])
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 1 || docs[0].Workload != "gqa" || docs[0].Arch.Name != "h200" || docs[0].Key(0) != "gqa 0" || len(docs[0].File.Graphs) != 1 {
		t.Errorf("%+v, want gqa's one graph under h200", docs)
	}

	for _, arch := range []string{"", "sm_99"} {
		bad := filepath.Join(t.TempDir(), "run")
		write(t, filepath.Join(bad, "w.measured.ugraph.json"), doc(arch))
		if _, err := Docs(bad); err == nil || !strings.Contains(err.Error(), "meta.arch") {
			t.Errorf("meta.arch %q: %v, want an error naming meta.arch", arch, err)
		}
	}
	if _, err := Runs(t.TempDir()); err == nil {
		t.Error("a directory without runs: no error")
	}
}

// Keyed never panics, and every key it returns is a workload and an index.
func FuzzKeyed(f *testing.F) {
	for _, s := range []string{"gqa 0 abc\n", "# c\n\nx 1 y z\r\n", "a b\n", " \t\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		path := filepath.Join(t.TempDir(), "keyed.txt")
		write(t, path, text)
		got, err := Keyed(path)
		if err != nil {
			return
		}
		for k := range got {
			if len(strings.Split(k, " ")) != 2 {
				t.Fatalf("%q: key %q is not WORKLOAD INDEX", text, k)
			}
		}
	})
}

// A run's launch.json gives its documents the launch options that plan the
// code it measured; without one they get the defaults; a name it does not
// know, or a field, is an error naming the file.
func TestLaunchOptions(t *testing.T) {
	for _, c := range []struct {
		name, json string // "" for no launch.json
		want       launch.Dependence
		err        string
	}{
		{"none", "", launch.AfterLibrary, ""},
		{"plain launches", `{"dependent": "none"}`, launch.NoDependent, ""},
		{"all", `{"dependent": "all"}`, launch.AllDependent, ""},
		{"the default named", `{"dependent": "after_library"}`, launch.AfterLibrary, ""},
		{"an unknown name", `{"dependent": "some"}`, 0, `launch.json: dependent launches "some": want one of after_library, none, all`},
		{"an unknown field", `{"stages": 2}`, 0, `launch.json: json: unknown field "stages"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, filepath.Join(dir, "w.measured.ugraph.json"), doc("h200"))
			if c.json != "" {
				write(t, filepath.Join(dir, "launch.json"), c.json)
			}
			docs, err := Docs(dir)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if docs[0].Launch.Dependent != c.want {
				t.Errorf("dependent %v, want %v", docs[0].Launch.Dependent, c.want)
			}
		})
	}
}
