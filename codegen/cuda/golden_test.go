package cuda

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/mirage-go/mirage/target"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestGolden pins the structure of the emitted code for the examples (the
// kernels, their launches, shared memory, fast paths, tile placement and
// barriers), in a summary a human can check, rather than the whole .cu.
// Regenerate with go test ./codegen/cuda -run TestGolden -update.
func TestGolden(t *testing.T) {
	for _, ex := range examples {
		for _, arch := range []target.Arch{sm90, sm80} {
			res, err := Emit(ex, loadExample(t, ex), Options{Arch: arch, Source: "examples/" + ex + ".py"})
			if err != nil {
				t.Fatalf("%s: %v", ex, err)
			}
			path := filepath.Join("testdata", ex+"."+arch.Name+".golden")
			got := res.Summary()
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("%s for %s: the summary differs from %s (run with -update if the change is intended):\n%s", ex, arch.Name, path, got)
			}
		}
	}
}
