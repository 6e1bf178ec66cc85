package tempdir

import (
	"os"
	"path/filepath"
	"testing"
)

func exists(dir string) bool {
	_, err := os.Stat(dir)
	return err == nil
}

func TestDir(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	kept, removeKept, err := Make("kept-")
	if err != nil {
		t.Fatal(err)
	}
	gone, removeGone, err := Make("gone-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(gone, "prog.cu"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	removeKept()
	if exists(kept) {
		t.Errorf("%s is left after its remove", kept)
	}
	// A new directory of the name the first had is no longer Make's.
	if err := os.Mkdir(kept, 0o755); err != nil {
		t.Fatal(err)
	}
	RemoveAll()
	if exists(gone) {
		t.Errorf("%s, holding a file, is left after RemoveAll", gone)
	}
	if !exists(kept) {
		t.Errorf("RemoveAll removed %s, which Make's remove had given up", kept)
	}
	removeGone() // after RemoveAll: nothing to do, and no panic
	removeKept()
	if !exists(kept) {
		t.Errorf("a second call of remove removed %s again", kept)
	}
}
