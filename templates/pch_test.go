package templates

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPrecompiledRuntime builds the cache's entry in a fresh directory and
// checks that g++ uses it (-H marks a precompiled header it read with
// "!"), that another process's lookup finds it without building it again,
// and that building it removed the entries left unused for a day.
func TestPrecompiledRuntime(t *testing.T) {
	gxx, err := EmulatorCompiler()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	stale, fresh := filepath.Join(root, "stale"), filepath.Join(root, "fresh")
	for _, d := range []string{stale, fresh} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * pchUnused)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}

	ctx := context.Background()
	c := pchCache{entries: map[string]string{}}
	h := c.get(ctx, gxx, root)
	if h == "" {
		t.Fatal("no entry was built")
	}
	gch, err := os.Stat(h + ".gch")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("an entry unused for %v is still there (%v)", 2*pchUnused, err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("an entry in use was removed: %v", err)
	}

	// A program built as the emulated ones are, in a directory of its own
	// with the emulator's headers.
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "emu"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteEmulator(filepath.Join(dir, "emu")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, RuntimeName), []byte(Runtime), 0o644); err != nil {
		t.Fatal(err)
	}
	src := "#include \"mirage_runtime.cuh\"\n__global__ void k(float* x) { x[threadIdx.x] = 1.0f; }\nint main() { return 0; }\n"
	if err := os.WriteFile(filepath.Join(dir, "p.cu"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append(append([]string(nil), EmulatorFlags...), "-include", h, "-Winvalid-pch", "-H", "-Iemu", "-I.", "-x", "c++", "p.cu", "-o", "p")
	cmd := exec.Command(gxx, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("g++: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "! "+h+".gch") {
		t.Errorf("g++ did not read %s.gch:\n%.3000s", h, out)
	}
	if strings.Contains(string(out), "warning") {
		t.Errorf("g++ warned:\n%.3000s", out)
	}

	// Another process finds the entry and leaves it as it is.
	again := pchCache{entries: map[string]string{}}
	if h2 := again.get(ctx, gxx, root); h2 != h {
		t.Errorf("second lookup: %q, want %q", h2, h)
	}
	if fi, err := os.Stat(h + ".gch"); err != nil || !fi.ModTime().Equal(gch.ModTime()) {
		t.Errorf("the entry was built again (%v)", err)
	}

	// An entry removed under a process that had found it is made again.
	if err := os.RemoveAll(filepath.Dir(h)); err != nil {
		t.Fatal(err)
	}
	if h2 := again.get(ctx, gxx, root); h2 != h {
		t.Errorf("after the entry was removed: %q, want %q", h2, h)
	}
	if _, err := os.Stat(h + ".gch"); err != nil {
		t.Errorf("the entry was not made again: %v", err)
	}
}

// TestPrecompiledRuntimeWithoutCompiler: a compiler that cannot run gives
// no entry, and the builds go on without one.
func TestPrecompiledRuntimeWithoutCompiler(t *testing.T) {
	c := pchCache{entries: map[string]string{}}
	if h := c.get(context.Background(), filepath.Join(t.TempDir(), "no-such-g++"), t.TempDir()); h != "" {
		t.Errorf("entry %q from a compiler that does not exist", h)
	}
}

// TestPrecompiledRuntimeNotRead: an entry the compiler does not read (a
// compiler that writes something else than a precompiled header) is not
// put in place.
func TestPrecompiledRuntimeNotRead(t *testing.T) {
	fake := filepath.Join(t.TempDir(), "g++")
	script := "#!/bin/sh\n" +
		"# --version: a version; -o FILE: junk in FILE; else nothing\n" +
		"prev=\n" +
		"for a in \"$@\"; do\n" +
		"  [ \"$a\" = --version ] && { echo 'fake 1.0'; exit 0; }\n" +
		"  [ \"$prev\" = -o ] && echo junk > \"$a\"\n" +
		"  prev=$a\n" +
		"done\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	c := pchCache{entries: map[string]string{}}
	if h := c.get(context.Background(), fake, root); h != "" {
		t.Errorf("entry %q from a compiler that does not read it", h)
	}
	if dirs, err := os.ReadDir(root); err != nil || len(dirs) != 0 {
		t.Errorf("left in the cache: %v (%v)", dirs, err)
	}
}
