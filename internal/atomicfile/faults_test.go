package atomicfile

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// snapshot is a directory's files and their contents.
func snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, e := range es {
		if e.IsDir() {
			m[e.Name()] = "(dir)"
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = string(data)
	}
	return m
}

// faults makes the n-th call (from 0) of the chosen operation of fsops
// fail, until the test ends.
func faults(t testing.TB, op string, n int) {
	saved := fsops
	t.Cleanup(func() { fsops = saved })
	calls := 0
	fail := func(what string) error {
		calls++
		if calls-1 == n {
			return fmt.Errorf("injected: %s %d failed", what, n)
		}
		return nil
	}
	switch op {
	case "rename":
		fsops.rename = func(from, to string) error {
			if err := fail("rename"); err != nil {
				return err
			}
			return saved.rename(from, to)
		}
	case "link":
		fsops.link = func(from, to string) error {
			if err := fail("link"); err != nil {
				return err
			}
			return saved.link(from, to)
		}
	case "remove":
		fsops.remove = func(name string) error {
			if err := fail("remove"); err != nil {
				return err
			}
			return saved.remove(name)
		}
	}
}

// previousSet writes the set a later write is to replace: a.ugraph.json,
// a.cu and a.h, and a file of no set.
func previousSet(t testing.TB, dir string) {
	t.Helper()
	if err := (Set{Dir: dir, Manifest: "a.manifest.json", Owner: "a", Files: []File{
		{"a.ugraph.json", []byte("old graph")}, {"a.cu", []byte("old cu")}, {"a.h", []byte("old h")}}}).Write(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The next set has a file the previous one lacked (runtime.cuh) and lacks
// none of its.
var nextSet = []File{{"a.ugraph.json", []byte("new graph")}, {"a.cu", []byte("new cu")}, {"runtime.cuh", []byte("rt")}, {"a.h", []byte("new h")}}

// A rename that fails, at any of the set's renames, leaves the previous
// set whole: the files renamed before it go back, the one that was not
// there goes away, and the manifest removed first comes back.
func TestWriteSetRollsBackAFailedRename(t *testing.T) {
	for n := range len(nextSet) + 1 { // the files, then the manifest
		t.Run(fmt.Sprint("rename ", n), func(t *testing.T) {
			dir := t.TempDir()
			previousSet(t, dir)
			before := snapshot(t, dir)
			faults(t, "rename", n)
			err := Set{Dir: dir, Manifest: "a.manifest.json", Owner: "a", Files: nextSet}.Write()
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("injected: rename %d failed", n)) {
				t.Fatalf("Write: %v", err)
			}
			if after := snapshot(t, dir); !maps.Equal(before, after) {
				t.Errorf("the directory went from\n%v\nto\n%v", before, after)
			}
			if _, err := CheckSet(dir, "a.manifest.json"); err != nil {
				t.Errorf("the previous set: %v", err)
			}
		})
	}
}

// A destination that cannot be replaced fails the write before anything
// in place changes: a directory under a file's name (bench's
// history.jsonl), or a file that cannot be linked nor read for a backup.
func TestWriteSetRefusesBeforeChanging(t *testing.T) {
	dir := t.TempDir()
	previousSet(t, dir)
	if err := os.Mkdir(filepath.Join(dir, "runtime.cuh"), 0o755); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	err := Set{Dir: dir, Manifest: "a.manifest.json", Owner: "a", Files: nextSet}.Write()
	if err == nil || !strings.Contains(err.Error(), "runtime.cuh is a directory") {
		t.Fatalf("Write: %v", err)
	}
	if after := snapshot(t, dir); !maps.Equal(before, after) {
		t.Errorf("the directory went from\n%v\nto\n%v", before, after)
	}
	// Without a manifest (bench's results), the same.
	err = Set{Dir: dir, Files: []File{{"notes.txt", []byte("theirs")}, {"runtime.cuh", []byte("x")}}}.Write()
	if err == nil || !strings.Contains(err.Error(), "runtime.cuh is a directory") {
		t.Fatalf("Write without a manifest: %v", err)
	}
	if after := snapshot(t, dir); !maps.Equal(before, after) {
		t.Errorf("without a manifest, the directory went from\n%v\nto\n%v", before, after)
	}
}

// Where hard links fail (a file system without them), the backup is a
// copy, and a rename that fails is still rolled back.
func TestWriteSetBacksUpByCopy(t *testing.T) {
	dir := t.TempDir()
	previousSet(t, dir)
	before := snapshot(t, dir)
	saved := fsops
	t.Cleanup(func() { fsops = saved })
	fsops.link = func(string, string) error { return errors.New("no hard links here") }
	faults(t, "rename", 3)
	if err := (Set{Dir: dir, Manifest: "a.manifest.json", Owner: "a", Files: nextSet}).Write(); err == nil {
		t.Fatal("Write succeeded")
	}
	if after := snapshot(t, dir); !maps.Equal(before, after) {
		t.Errorf("the directory went from\n%v\nto\n%v", before, after)
	}
	fsops = saved
	fsops.link = func(string, string) error { return errors.New("no hard links here") }
	if err := (Set{Dir: dir, Manifest: "a.manifest.json", Owner: "a", Files: nextSet}).Write(); err != nil {
		t.Fatal(err)
	}
	if names, err := CheckSet(dir, "a.manifest.json"); err != nil || len(names) != len(nextSet) {
		t.Errorf("the new set: %v, %v", names, err)
	}
}

// FuzzWriteSetFaults injects a fault at one call of each kind by which a
// write changes the directory (each rename, each backup's link, the old
// manifest's removal), over sets of a few files that the previous set may
// or may not have had: after a failed write the directory is exactly as
// it was; after one that succeeds it holds the new set whole, and no
// temporary file or backup.
func FuzzWriteSetFaults(f *testing.F) {
	for n := range 6 {
		for _, op := range []string{"rename", "link", "remove"} {
			f.Add(uint8(3), uint8(4), op, uint8(n), "x")
		}
	}
	f.Fuzz(func(t *testing.T, nOld, nNew uint8, op string, at uint8, content string) {
		nOld, nNew = nOld%6, nNew%6+1
		dir := t.TempDir()
		var old, next []File
		for i := range int(nOld) {
			old = append(old, File{fmt.Sprintf("f%d", i), []byte(fmt.Sprint("old ", i))})
		}
		for i := range int(nNew) {
			next = append(next, File{fmt.Sprintf("f%d", i+1), []byte(fmt.Sprint("new ", i, content))})
		}
		if nOld > 0 {
			if err := (Set{Dir: dir, Manifest: "p.manifest.json", Files: old}).Write(); err != nil {
				t.Fatal(err)
			}
		}
		before := snapshot(t, dir)
		faults(t, op, int(at))
		err := Set{Dir: dir, Manifest: "p.manifest.json", Files: next}.Write()
		after := snapshot(t, dir)
		if err != nil {
			if !strings.Contains(err.Error(), "injected") {
				t.Fatalf("Write: %v", err)
			}
			if !maps.Equal(before, after) {
				t.Fatalf("%s %d failed: the directory went from\n%v\nto\n%v", op, at, before, after)
			}
			return
		}
		names, err := CheckSet(dir, "p.manifest.json")
		if err != nil || len(names) != len(next) {
			t.Fatalf("the new set: %v, %v", names, err)
		}
		for name := range after {
			if strings.HasPrefix(name, ".") {
				t.Fatalf("left %s behind", name)
			}
			if !slices.Contains(names, name) && name != "p.manifest.json" && before[name] == "" {
				t.Fatalf("%s appeared", name)
			}
		}
	})
}
