package atomicfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// entries lists the names in dir, so a test can see stray temporary files.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestWriteFileCreatesAndReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.ugraph.json")
	for _, content := range []string{"first\n", "second, longer\n", ""} {
		if err := WriteFile(path, []byte(content), 0o640); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("read %q, %v; want %q", got, err, content)
		}
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != 0o640 {
			t.Fatalf("mode %v, %v; want 0640", fi.Mode(), err)
		}
		if names := entries(t, dir); len(names) != 1 {
			t.Fatalf("directory holds %v, want only the file", names)
		}
	}
}

func TestWriteRelativePath(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := WriteFile("rel.txt", []byte("ok"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile("rel.txt"); err != nil || string(got) != "ok" {
		t.Fatalf("read %q, %v", got, err)
	}
}

// Every way Write can fail must leave the destination as it was and no
// temporary file behind.
func TestWriteFailureLeavesNothingBehind(t *testing.T) {
	errWrite := errors.New("disk on fire")
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string) string // returns the destination
		write func(io.Writer) error
		err   string
	}{
		{
			name:  "write fails after partial output",
			setup: func(t *testing.T, dir string) string { return filepath.Join(dir, "out.json") },
			write: func(w io.Writer) error {
				io.WriteString(w, `{"partial": `)
				return errWrite
			},
			err: "disk on fire",
		},
		{
			name: "destination is a directory",
			setup: func(t *testing.T, dir string) string {
				p := filepath.Join(dir, "sub")
				if err := os.Mkdir(p, 0o755); err != nil {
					t.Fatal(err)
				}
				return p
			},
			write: func(w io.Writer) error { _, err := io.WriteString(w, "data"); return err },
			err:   "sub",
		},
		{
			name:  "directory does not exist",
			setup: func(t *testing.T, dir string) string { return filepath.Join(dir, "missing", "out.json") },
			write: func(w io.Writer) error { return nil },
			err:   "missing",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := tt.setup(t, dir)
			before := entries(t, dir)
			err := Write(path, 0o644, tt.write)
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("err = %v, want one mentioning %q", err, tt.err)
			}
			if after := entries(t, dir); strings.Join(after, ",") != strings.Join(before, ",") {
				t.Fatalf("directory went from %v to %v", before, after)
			}
		})
	}
}

func TestWriteFailureKeepsOldContents(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "keep.json")
	if err := WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := Write(path, 0o644, func(w io.Writer) error {
		io.WriteString(w, "new but incomplete")
		return errors.New("interrupted")
	})
	if err == nil {
		t.Fatal("Write succeeded")
	}
	if got, _ := os.ReadFile(path); string(got) != "old" {
		t.Fatalf("contents %q, want the old ones", got)
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Fatalf("directory holds %v", names)
	}
}

func TestWritePanicRemovesTempFile(t *testing.T) {
	dir := t.TempDir()
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the panic did not propagate")
			}
		}()
		Write(filepath.Join(dir, "p.json"), 0o644, func(w io.Writer) error { panic("boom") })
	}()
	if names := entries(t, dir); len(names) != 0 {
		t.Fatalf("directory holds %v after a panic", names)
	}
}

func TestWriteSet(t *testing.T) {
	dir := t.TempDir()
	for round, body := range []string{"first", "second"} {
		files := []File{{"a.cu", []byte(body + " a")}, {"a.h", []byte(body + " h")}}
		// A killed earlier write left a temporary file behind.
		os.WriteFile(filepath.Join(dir, ".a.cu.tmp-123"), []byte("stale"), 0o644)
		if err := WriteSet(dir, files, "a.manifest.json"); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		names, err := CheckSet(dir, "a.manifest.json")
		if err != nil || !slices.Equal(names, []string{"a.cu", "a.h"}) {
			t.Errorf("round %d: the manifest lists %v: %v", round, names, err)
		}
		for _, f := range files {
			if got, err := os.ReadFile(filepath.Join(dir, f.Name)); err != nil || string(got) != string(f.Data) {
				t.Errorf("round %d: %s: %q, %v", round, f.Name, got, err)
			}
		}
		if got := entries(t, dir); !slices.Equal(got, []string{"a.cu", "a.h", "a.manifest.json"}) {
			t.Errorf("round %d: the directory holds %v", round, got)
		}
	}
}

// A set written with Keep replaces its own files and keeps listing the
// rest of its previous set where they are still as listed; without Keep,
// or for a file changed since, the manifest lists only what was written.
func TestWriteSetKeep(t *testing.T) {
	for _, tt := range []struct {
		name    string
		keep    bool
		changed bool // a.json was changed on disk since the first write
		want    []string
	}{
		{"keep", true, false, []string{"a.cu", "a.json"}},
		{"keep, a file changed since", true, true, []string{"a.cu"}},
		{"no keep", false, false, []string{"a.cu"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			first := Set{Dir: dir, Manifest: "a.manifest.json", Owner: "a", Files: []File{{"a.json", []byte("doc")}, {"a.cu", []byte("one")}}}
			if err := first.Write(); err != nil {
				t.Fatal(err)
			}
			if tt.changed {
				os.WriteFile(filepath.Join(dir, "a.json"), []byte("edited"), 0o644)
			}
			second := Set{Dir: dir, Manifest: "a.manifest.json", Owner: "a", Files: []File{{"a.cu", []byte("two")}}, Keep: tt.keep}
			if err := second.Write(); err != nil {
				t.Fatal(err)
			}
			names, err := CheckSet(dir, "a.manifest.json")
			slices.Sort(names)
			if err != nil || !slices.Equal(names, tt.want) {
				t.Errorf("the manifest lists %v (%v), want %v", names, err, tt.want)
			}
			if got, _ := os.ReadFile(filepath.Join(dir, "a.cu")); string(got) != "two" {
				t.Errorf("a.cu holds %q", got)
			}
		})
	}
}

// A file that cannot be written leaves the previous set as it was, its
// manifest included, and no temporary file.
func TestWriteSetErrorKeepsThePreviousSet(t *testing.T) {
	dir := t.TempDir()
	if err := WriteSet(dir, []File{{"a.cu", []byte("old")}}, "a.manifest.json"); err != nil {
		t.Fatal(err)
	}
	before := entries(t, dir)
	manifest, _ := os.ReadFile(filepath.Join(dir, "a.manifest.json"))
	// A name in a directory that does not exist: the write of its
	// temporary file fails, after the first file's has been written.
	err := WriteSet(dir, []File{{"a.cu", []byte("new")}, {"no/such/dir.h", []byte("x")}}, "a.manifest.json")
	if err == nil {
		t.Fatal("WriteSet succeeded")
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "a.cu")); string(got) != "old" {
		t.Errorf("a.cu is %q after the failed write", got)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "a.manifest.json")); string(got) != string(manifest) {
		t.Error("the manifest changed")
	}
	if got := entries(t, dir); !slices.Equal(got, before) {
		t.Errorf("the directory holds %v, was %v", got, before)
	}
}

// CheckSet finds a file that does not match its manifest, and says when
// there is no manifest.
func TestCheckSet(t *testing.T) {
	dir := t.TempDir()
	if _, err := CheckSet(dir, "a.manifest.json"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no manifest: %v", err)
	}
	if err := WriteSet(dir, []File{{"a.cu", []byte("a")}, {"a.h", []byte("h")}}, "a.manifest.json"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.h"), []byte("another h"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := CheckSet(dir, "a.manifest.json"); err == nil || !strings.Contains(err.Error(), "a.h does not match") {
		t.Errorf("a changed file: %v", err)
	}
	os.Remove(filepath.Join(dir, "a.h"))
	if _, err := CheckSet(dir, "a.manifest.json"); err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}

// A set never takes another set's files: a file that another manifest
// lists with other contents, or a manifest written for another owner, is
// refused before anything is written. The same contents (a shared
// runtime header) may be listed by both.
func TestWriteSetRefusesAnotherSetsFiles(t *testing.T) {
	dir := t.TempDir()
	first := Set{Dir: dir, Manifest: "my-layer.manifest.json", Owner: "my-layer",
		Files: []File{{"my-layer.ugraph.json", []byte("g1")}, {"my_layer.cu", []byte("cu1")}, {"my_layer.h", []byte("h1")}, {"runtime.cuh", []byte("rt")}}}
	if err := first.Write(); err != nil {
		t.Fatal(err)
	}
	before := entries(t, dir)
	tests := []struct {
		name string
		set  Set
		want string
	}{
		{"same C name", Set{Dir: dir, Manifest: "my_layer.manifest.json", Owner: "my_layer",
			Files: []File{{"my_layer.ugraph.json", []byte("g2")}, {"my_layer.cu", []byte("cu2")}, {"my_layer.h", []byte("h2")}, {"runtime.cuh", []byte("rt")}}},
			"my_layer.cu and my_layer.h in " + dir + " belong to my-layer's set (my-layer.manifest.json)"},
		{"unknown contents", Set{Dir: dir, Manifest: "other.manifest.json", Files: []File{{"my_layer.h", nil}}},
			"my_layer.h in " + dir + " belongs to my-layer's set (my-layer.manifest.json)"},
		{"another owner's manifest", Set{Dir: dir, Manifest: "my-layer.manifest.json", Owner: "my_layer",
			Files: []File{{"x.cu", []byte("x")}}},
			filepath.Join(dir, "my-layer.manifest.json") + " is the manifest of my-layer's set"},
	}
	for _, tt := range tests {
		var conflict *ConflictError
		if err := tt.set.Conflicts(); !errors.As(err, &conflict) || err.Error() != tt.want {
			t.Errorf("%s: Conflicts() = %v, want %q", tt.name, err, tt.want)
		}
		if err := tt.set.Write(); !errors.As(err, &conflict) {
			t.Errorf("%s: Write() = %v, want a conflict", tt.name, err)
		}
		if got := entries(t, dir); !slices.Equal(got, before) {
			t.Errorf("%s: the directory went from %v to %v", tt.name, before, got)
		}
	}
	if _, err := CheckSet(dir, "my-layer.manifest.json"); err != nil {
		t.Errorf("the first set: %v", err)
	}
	// The first set written again, other contents, same owner: fine; a
	// set sharing only the same runtime header: fine.
	first.Files[1].Data = []byte("cu1, again")
	if err := first.Write(); err != nil {
		t.Errorf("the same owner again: %v", err)
	}
	other := Set{Dir: dir, Manifest: "b.manifest.json", Owner: "b", Files: []File{{"b.cu", []byte("b")}, {"runtime.cuh", []byte("rt")}}}
	if err := other.Write(); err != nil {
		t.Errorf("a set sharing the same runtime header: %v", err)
	}
}

// A set written with Drop removes the files of its previous set that it
// no longer holds, but for those another set lists (a header they share).
func TestWriteSetDrop(t *testing.T) {
	dir := t.TempDir()
	other := Set{Dir: dir, Manifest: "b.manifest.json", Owner: "b", Files: []File{{"b.json", []byte("b")}, {"rt.cuh", []byte("rt")}}}
	first := Set{Dir: dir, Manifest: "a.manifest.json", Owner: "a", Files: []File{{"a.json", []byte("doc")}, {"a.cu", []byte("code")}, {"rt.cuh", []byte("rt")}}}
	for _, s := range []Set{other, first} {
		if err := s.Write(); err != nil {
			t.Fatal(err)
		}
	}
	second := Set{Dir: dir, Manifest: "a.manifest.json", Owner: "a", Files: []File{{"a.json", []byte("doc 2")}}, Drop: true}
	if err := second.Write(); err != nil {
		t.Fatal(err)
	}
	if got := entries(t, dir); !slices.Equal(got, []string{"a.json", "a.manifest.json", "b.json", "b.manifest.json", "rt.cuh"}) {
		t.Errorf("the directory holds %v: want a.cu dropped, rt.cuh (b's too) kept", got)
	}
	for _, m := range []string{"a.manifest.json", "b.manifest.json"} {
		if _, err := CheckSet(dir, m); err != nil {
			t.Error(err)
		}
	}
}

// RemovePending removes the temporary file of a Write in progress, which a
// process exiting at once (a second interrupt) would otherwise leave
// beside its destination (found by review: a shard's 40 MB half file).
func TestRemovePendingTakesWritesInProgress(t *testing.T) {
	dir := t.TempDir()
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		done <- Write(filepath.Join(dir, "shard.json"), 0o644, func(w io.Writer) error {
			if _, err := w.Write([]byte("half")); err != nil {
				return err
			}
			close(started)
			<-release
			return nil
		})
	}()
	<-started
	temps := func() []string { m, _ := filepath.Glob(filepath.Join(dir, ".shard.json.tmp-*")); return m }
	if len(temps()) != 1 {
		t.Fatalf("temporary files while writing: %v", temps())
	}
	RemovePending()
	if left := temps(); len(left) != 0 {
		t.Errorf("left after RemovePending: %v", left)
	}
	close(release)
	<-done // the rename fails: the process exits in its stead
	if _, err := os.Stat(filepath.Join(dir, "shard.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("destination: %v; want none", err)
	}
}
