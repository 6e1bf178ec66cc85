package cuda

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/templates"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// A dynamic entry point's workspace_bytes(m) is the most any bucket needs,
// at every m of the range: NAME.h tells an engine to allocate once for
// M_MAX, and a bucket below it may need more than M_MAX's (here the
// 16-row bucket is the fused μGraph, with no intermediates, and the 32-row
// one the program, whose matmul's cuBLASLt scratch lives in the
// workspace; the reverse happens as easily). Built in the emulator and
// called for every m.
func TestDynamicWorkspaceCoversEveryBucket(t *testing.T) {
	gxx := needGXX(t)
	fused, plain := loadExample(t, "rmsnorm_matmul_mugraph"), loadExample(t, "rmsnorm_matmul")
	program, err := plain.WithDynamic(map[kernel.TensorID]int{plain.Inputs()[0]: 0})
	if err != nil {
		t.Fatal(err)
	}
	big, err := program.Bind(32)
	if err != nil {
		t.Fatal(err)
	}
	rows := Rows{Lo: 1, Hi: 32, Inputs: []int{0, -1}, Outputs: []int{0}}
	res, err := EmitDynamic("dyn", rows, []Bucket{{Size: 16, Lo: 1, Hi: 16, Graph: fused}, {Size: 32, Lo: 17, Hi: 32, Graph: big}}, Options{Arch: sm90})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := res.Buckets[0].WorkspaceBytes, res.Buckets[1].WorkspaceBytes; a == b || res.WorkspaceBytes != max(a, b) {
		t.Fatalf("buckets' workspaces %d and %d, the program's %d: want two sizes and their max", a, b, res.WorkspaceBytes)
	}
	dir := writeFiles(t, res.Files)
	emu := filepath.Join(dir, "emu")
	if err := os.MkdirAll(emu, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := templates.WriteEmulator(emu); err != nil {
		t.Fatal(err)
	}
	main := "#include <cstdio>\n#include \"dyn.h\"\nint main() { for (long long m = 0; m <= 33; ++m) std::printf(\"%zu\\n\", mirage_dyn_workspace_bytes(m)); }\n"
	if err := os.WriteFile(filepath.Join(dir, "main.cpp"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "ws")
	cmd := exec.Command(gxx, "-std=c++17", "-DMIRAGE_EMULATE", "-I"+emu, "-I"+dir, "-x", "c++", "dyn.cu", "main.cpp", "-o", bin)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("g++: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	for m, line := range strings.Fields(string(out)) {
		got, _ := strconv.Atoi(line)
		want := res.WorkspaceBytes
		if m < rows.Lo || m > rows.Hi {
			want = 0 // outside the range: nothing runs
		}
		if got != want {
			t.Errorf("workspace_bytes(%d) = %d, want %d", m, got, want)
		}
	}
	if n := len(strings.Fields(string(out))); n != 34 {
		t.Errorf("%d values printed, want 34: %s", n, out)
	}
}
