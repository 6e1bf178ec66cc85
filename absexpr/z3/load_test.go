//go:build cgo

package z3

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestMissingLibraryIsExplained(t *testing.T) {
	_, _, err := open([]string{"/nonexistent/libz3.so.4", "libz3-that-does-not-exist.so"})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("error %v does not wrap ErrUnavailable", err)
	}
	for _, want := range []string{"apt-get install libz3-dev", "/nonexistent/libz3.so.4", "libz3-that-does-not-exist.so"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// TestWithoutZ3 runs this test binary again with MIRAGE_LIBZ3 pointing
// nowhere, as on a machine without Z3, and checks what callers then see.
func TestWithoutZ3(t *testing.T) {
	if os.Getenv("MIRAGE_Z3_CHILD") == "1" {
		err := Available()
		_, cerr := NewContext()
		if err == nil || cerr == nil || Version() != "" {
			t.Fatalf("with %s=%s: Available() = %v, NewContext error = %v", EnvLibrary, os.Getenv(EnvLibrary), err, cerr)
		}
		os.Stdout.WriteString("ERR=" + err.Error() + "\n")
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestWithoutZ3$", "-test.v")
	cmd.Env = append(os.Environ(), "MIRAGE_Z3_CHILD=1", EnvLibrary+"=/nonexistent/libz3.so")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "ERR=libz3 not found: install libz3-4 / libz3-dev (apt-get install libz3-dev) (/nonexistent/libz3.so") {
		t.Errorf("child output lacks the explanation:\n%s", out)
	}
}
