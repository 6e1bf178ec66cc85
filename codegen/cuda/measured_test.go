package cuda

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/internal/gpurun"
	"github.com/mirage-go/mirage/templates"
)

var recordMeasured = flag.Bool("record-measured", false, "TestMeasuredCodeIsCurrent: record the sums of the measured graphs' code in each run's directory that has none (run it at the commit that was measured)")

// measuredRuns is where the graphs timed on a GPU are, a directory a run
// (internal/gpurun).
var measuredRuns = filepath.Join("..", "..", "cost", "testdata")

// TestMeasuredCodeIsCurrent keeps the cost model's calibration honest: the
// times in each run's directory of cost/testdata are of the code emitted at
// the commit that was measured. Its emitted.txt records the sums of each
// graph's .cu (for the target its document's meta.arch names, under its
// workload's name), and runtime.txt those of the runtime's code that the
// .cu runs (the library kernels it
// launches, the cuBLASLt section if it calls it: runtimeParts). A change
// to either that changes a measured graph's code makes its time stale: the
// graph must then be listed in the directory's stale.txt, which the
// calibration test leaves out, until a GPU run measures the new code.
func TestMeasuredCodeIsCurrent(t *testing.T) {
	dirs, err := gpurun.Runs(measuredRuns)
	if err != nil {
		t.Fatal(err)
	}
	parts := runtimeParts(templates.Runtime)
	if len(parts) < 5 || parts["rms_norm_kernel"] == "" {
		t.Fatalf("runtimeParts found %d parts in the runtime: has its layout changed?", len(parts))
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) { checkMeasuredCode(t, dir, parts) })
	}
}

// checkMeasuredCode checks one run's directory: every graph's sums against
// the recorded ones, and stale.txt against them both ways.
func checkMeasuredCode(t *testing.T, dir string, parts map[string]string) {
	docs, err := gpurun.Docs(dir)
	if err != nil {
		t.Fatal(err)
	}
	var cuSums, rtSums []string // "WORKLOAD INDEX SUM"
	for _, d := range docs {
		for i, e := range d.File.Graphs {
			res, err := Emit(d.Workload, e.Graph, Options{Arch: d.Arch, Launch: d.Launch})
			if err != nil {
				t.Fatalf("%s graph %d: %v", d.Workload, i, err)
			}
			// The check that stops a build for an older GPU is no code on
			// the one measured (smemGuard); the runs before it had none.
			cu := res.Files[0].Data
			if guard := smemGuard(d.Arch, res.Kernels, lowersFor(Options{Arch: d.Arch}, e.Graph)); guard != "" {
				cu = bytes.Replace(cu, []byte(guard), nil, 1)
			}
			// Nor is the entry point's alignment check (host work, a few
			// instructions a call), which the runs before it had not.
			check := "  " + alignmentCheck(len(e.Graph.Inputs()), len(e.Graph.Outputs), res.WorkspaceBytes > 0) + "\n"
			if !bytes.Contains(cu, []byte(check)) {
				t.Fatalf("%s graph %d: no alignment check %q in the entry point", d.Workload, i, check)
			}
			cu = bytes.Replace(cu, []byte(check), nil, 1)
			cuSums = append(cuSums, fmt.Sprintf("%s %x", d.Key(i), sha256.Sum256(cu)))
			rtSums = append(rtSums, fmt.Sprintf("%s %s", d.Key(i), runtimeSum(string(cu), parts)))
		}
	}
	recorded := map[string]map[string]string{}
	for file, lines := range map[string][]string{"emitted.txt": cuSums, "runtime.txt": rtSums} {
		path := filepath.Join(dir, file)
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) && *recordMeasured {
			// Only a run without sums is recorded: the others' sums are of
			// the code they measured, which today's may no longer be.
			if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("recorded %s", path)
		}
		if recorded[file], err = gpurun.Keyed(path); err != nil {
			t.Fatal(err)
		}
		if len(recorded[file]) == 0 {
			t.Fatalf("%s records no sums: delete it and run this test with -record-measured at the commit that was measured", path)
		}
	}
	stale, err := gpurun.Keyed(filepath.Join(dir, "stale.txt"))
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for i, l := range cuSums {
		cu, rt := strings.Fields(l), strings.Fields(rtSums[i])
		key := cu[0] + " " + cu[1]
		keys[key] = true
		cuWas, ok1 := recorded["emitted.txt"][key]
		rtWas, ok2 := recorded["runtime.txt"][key]
		changed := cuWas != cu[2] || rtWas != rt[2]
		switch {
		case !ok1 || !ok2:
			t.Errorf("%s: no recorded sum in emitted.txt or runtime.txt", key)
		case changed && stale[key] == "":
			t.Errorf("%s: its code is not the code that was measured (.cu changed: %v, runtime: %v): list it in %s/stale.txt (with why) until the next GPU run",
				key, cuWas != cu[2], rtWas != rt[2], filepath.Base(dir))
		case !changed && stale[key] != "":
			t.Errorf("%s: listed stale, but its code is the measured code: take it out of %s/stale.txt", key, filepath.Base(dir))
		}
	}
	for file, m := range map[string]map[string]string{"emitted.txt": recorded["emitted.txt"], "runtime.txt": recorded["runtime.txt"], "stale.txt": stale} {
		for key := range m {
			if !keys[key] {
				t.Errorf("%s/%s: %s names no measured graph", filepath.Base(dir), file, key)
			}
		}
	}
}

// runtimeParts cuts the runtime's text into what emitted code runs of it,
// by name: each __global__ kernel (from the template line before it to its
// closing brace), and under "lt_matmul" the cuBLASLt section (host code
// that picks the library's algorithm). Device helpers are not parts: a
// graph-defined kernel's .cu is where its code is.
func runtimeParts(rt string) map[string]string {
	parts := map[string]string{}
	for _, m := range globalKernel.FindAllStringSubmatchIndex(rt, -1) {
		name := rt[m[2]:m[3]]
		start := strings.LastIndex(rt[:m[0]], "\ntemplate") + 1
		open := strings.IndexByte(rt[m[1]:], '{')
		if open < 0 {
			continue
		}
		end := m[1] + open
		for depth := 0; end < len(rt); end++ {
			if rt[end] == '{' {
				depth++
			} else if rt[end] == '}' {
				if depth--; depth == 0 {
					break
				}
			}
		}
		parts[name] += rt[start:min(end+1, len(rt))]
	}
	if i := strings.Index(rt, "cuBLASLt\n// ----"); i >= 0 {
		sec := rt[i:]
		if j := strings.Index(sec[20:], "\n// Section "); j >= 0 {
			sec = sec[:20+j]
		}
		parts["lt_matmul"] = sec
	}
	return parts
}

// globalKernel matches a __global__ kernel's definition up to its name's
// opening parenthesis; group 1 is the name.
var globalKernel = regexp.MustCompile(`__global__ void (?:__launch_bounds__\([^)]*\) )?(\w+)\(`)

// runtimeSum is the sum of the runtime parts that the .cu names
// (mirage::NAME), in name order; "-" when it names none.
func runtimeSum(cu string, parts map[string]string) string {
	var used []string
	for name := range parts {
		if strings.Contains(cu, "mirage::"+name+"<") || strings.Contains(cu, "mirage::"+name+"(") || strings.Contains(cu, "mirage::"+name+",") {
			used = append(used, name)
		}
	}
	if len(used) == 0 {
		return "-"
	}
	slices.Sort(used)
	h := sha256.New()
	for _, name := range used {
		fmt.Fprintf(h, "%s\n%s\n", name, parts[name])
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}
