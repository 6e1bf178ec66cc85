package cuda

import (
	"bufio"
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

var recordMeasured = flag.Bool("record-measured", false, "TestMeasuredCodeIsCurrent: record the emitted code's sums of the measured graphs in each run's directory that has none (run it at the commit that was measured)")

// measuredRuns is where the graphs timed on a GPU are, a directory a run.
const measuredRuns = "../../cost/testdata/h100-*"

// TestMeasuredCodeIsCurrent keeps the cost model's calibration honest: the
// times in each run's directory of cost/testdata are of the code emitted at
// the commit that was measured, whose sums its emitted.txt records (sm_90,
// each graph emitted under its workload's name). A change to the code
// generator that changes a measured graph's code makes its time stale: the
// graph must then be listed in the directory's stale.txt, which the
// calibration test leaves out, until a GPU run measures the new code.
func TestMeasuredCodeIsCurrent(t *testing.T) {
	dirs, err := filepath.Glob(measuredRuns)
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no measured runs in %s: %v", measuredRuns, err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) { checkMeasuredCode(t, dir) })
	}
}

func checkMeasuredCode(t *testing.T, dir string) {
	docs, err := filepath.Glob(filepath.Join(dir, "*.measured.ugraph.json"))
	if err != nil || len(docs) == 0 {
		t.Fatalf("no measured graphs in %s: %v", dir, err)
	}
	slices.Sort(docs)
	var lines []string
	for _, d := range docs {
		f, err := kernel.ReadFile(d)
		if err != nil {
			t.Fatal(err)
		}
		w := strings.TrimSuffix(filepath.Base(d), ".measured.ugraph.json")
		for i, e := range f.Graphs {
			res, err := Emit(w, e.Graph, Options{Arch: target.MustLookup("sm_90")})
			if err != nil {
				t.Fatalf("%s graph %d: %v", w, i, err)
			}
			lines = append(lines, fmt.Sprintf("%s %d %x", w, i, sha256.Sum256(res.Files[0].Data)))
		}
	}
	path := filepath.Join(dir, "emitted.txt")
	if _, err := os.Stat(path); os.IsNotExist(err) && *recordMeasured {
		// Only a run without sums is recorded: the others' sums are of
		// the code they measured, which today's may no longer be.
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("recorded %s", path)
		return
	}
	recorded := readKeyed(t, path)
	if len(recorded) == 0 {
		t.Fatalf("%s records no sums: run this test with -record-measured at the commit that was measured", path)
	}
	stale := readKeyed(t, filepath.Join(dir, "stale.txt"))
	for _, l := range lines {
		f := strings.Fields(l)
		key := f[0] + " " + f[1]
		sum, ok := recorded[key]
		switch {
		case !ok:
			t.Errorf("%s: no recorded sum in emitted.txt", key)
		case sum != f[2] && stale[key] == "":
			t.Errorf("%s: its code is not the code that was measured: list it in %s/stale.txt (with why) until the next GPU run", key, filepath.Base(dir))
		case sum == f[2] && stale[key] != "":
			t.Errorf("%s: listed stale, but its code is the measured code: take it out of %s/stale.txt", key, filepath.Base(dir))
		}
	}
}

// readKeyed reads lines "WORKLOAD INDEX REST..." (# starts a comment) into
// a map from "WORKLOAD INDEX" to the rest; a missing file is empty.
func readKeyed(t *testing.T, path string) map[string]string {
	t.Helper()
	out := map[string]string{}
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return out
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fs := strings.SplitN(line, " ", 3)
		if len(fs) < 3 {
			t.Fatalf("%s: %q: want WORKLOAD INDEX and more", path, line)
		}
		out[fs[0]+" "+fs[1]] = fs[2]
	}
	return out
}
