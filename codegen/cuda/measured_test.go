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

var recordMeasured = flag.Bool("record-measured", false, "TestMeasuredCodeIsCurrent: record the emitted code's sums of the measured graphs (only right for code that is the measured code)")

// measuredDir holds the graphs timed on an H100 and what their code was.
var measuredDir = filepath.Join("..", "..", "cost", "testdata", "h100-2026-11-27")

// TestMeasuredCodeIsCurrent keeps the cost model's calibration honest: the
// times in cost/testdata are of the code emitted at d43b159, whose sums
// emitted.txt records (sm_90, each graph emitted under its workload's
// name). A change to the code generator that changes a measured graph's
// code makes its time stale: the graph must then be listed in stale.txt,
// which the calibration test leaves out, until the next GPU run measures
// the new code.
func TestMeasuredCodeIsCurrent(t *testing.T) {
	docs, err := filepath.Glob(filepath.Join(measuredDir, "*.measured.ugraph.json"))
	if err != nil || len(docs) == 0 {
		t.Fatalf("no measured graphs in %s: %v", measuredDir, err)
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
	path := filepath.Join(measuredDir, "emitted.txt")
	if *recordMeasured {
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	recorded := readKeyed(t, path)
	stale := readKeyed(t, filepath.Join(measuredDir, "stale.txt"))
	for _, l := range lines {
		f := strings.Fields(l)
		key := f[0] + " " + f[1]
		sum, ok := recorded[key]
		switch {
		case !ok:
			t.Errorf("%s: no recorded sum in emitted.txt", key)
		case sum != f[2] && stale[key] == "":
			t.Errorf("%s: its code is not the code that was measured: list it in stale.txt (with why) until the next GPU run", key)
		case sum == f[2] && stale[key] != "":
			t.Errorf("%s: listed stale, but its code is the measured code: take it out of stale.txt", key)
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
