package launch_test

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/codegen/cuda"
	"github.com/mirage-go/mirage/cost"
	"github.com/mirage-go/mirage/frontend"
	"github.com/mirage-go/mirage/internal/gpurun"
	"github.com/mirage-go/mirage/launch"
	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// program is a kernel graph to plan, named for messages.
type program struct {
	name string
	g    *kernel.Graph
}

// benchPrograms are the examples and bench workloads as written (unfused
// programs and hand-written μGraphs) and every graph measured on the H100
// (the searches' candidates for the bench programs, cost/testdata).
func benchPrograms(t *testing.T) []program {
	t.Helper()
	var ps []program
	for _, glob := range []string{"../examples/*.py", "../bench/workloads/*.py"} {
		files, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			p, err := frontend.LoadFile(f, frontend.Options{})
			if err != nil {
				t.Fatal(err)
			}
			ps = append(ps, program{filepath.Base(f), p.Graph})
		}
	}
	dirs, err := gpurun.Runs("../cost/testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		docs, err := gpurun.Docs(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range docs {
			for i, e := range d.File.Graphs {
				ps = append(ps, program{fmt.Sprintf("%s/%s#%d", filepath.Base(dir), filepath.Base(d.Path), i), e.Graph})
			}
		}
	}
	return ps
}

// emittedLaunch is a launch as the emitted .cu writes it.
type emittedLaunch struct {
	name          string
	grid          [3]int
	threads, smem int
	stages        int
	optIn         bool // cudaFuncSetAttribute raises its dynamic shared memory
	dependent     bool // launched by mirage::launch_dependent
}

var (
	launchRE = regexp.MustCompile(`err = mirage::launch(_dependent)?\(([^,]+(?:<[^>]*>)?), dim3\((\d+), (\d+), (\d+)\), dim3\((\d+)\), (\d+), stream`)
	boundsRE = regexp.MustCompile(`__global__ void __launch_bounds__\((\d+)(?:, \d+)?\)\n(\w+)\(`)
	headerRE = regexp.MustCompile(`// (\w+): grid \(\d+, \d+, \d+\), \d+ threads, forloop_range \d+, \d+ bytes of shared memory(?:, (\d+)-stage cp\.async pipeline)?\.`)
	gemmRE   = regexp.MustCompile(`^mirage::gemm_kernel<[^,]+, \d+, \d+, \d+, \d+, (\d+)>$`)
	callRE   = regexp.MustCompile(`err = (mirage::lt_matmul<[^>]*>)\(`)
	attrRE   = regexp.MustCompile(`cudaFuncSetAttribute\(([^,]+(?:<[^>]*>)?), cudaFuncAttributeMaxDynamicSharedMemorySize, (\d+)\)`)
)

// launches reads the launches of an emitted .cu: the host's
// mirage::launch lines, with each graph-defined kernel's
// __launch_bounds__ and pipeline depth from its definition, and each
// library GEMM's from its template arguments; a call into cuBLASLt is a
// launch of no grid of ours, in its place among them.
func launches(t *testing.T, cu string) []emittedLaunch {
	t.Helper()
	bounds := map[string]int{}
	for _, m := range boundsRE.FindAllStringSubmatch(cu, -1) {
		bounds[m[2]], _ = strconv.Atoi(m[1])
	}
	stages := map[string]int{}
	for _, m := range headerRE.FindAllStringSubmatch(cu, -1) {
		stages[m[1]] = 1
		if m[2] != "" {
			stages[m[1]], _ = strconv.Atoi(m[2])
		}
	}
	optIn := map[string]int{}
	for _, m := range attrRE.FindAllStringSubmatch(cu, -1) {
		optIn[m[1]], _ = strconv.Atoi(m[2])
	}
	var ls []emittedLaunch
	calls := callRE.FindAllStringSubmatchIndex(cu, -1)
	for _, idx := range launchRE.FindAllStringSubmatchIndex(cu, -1) {
		for len(calls) > 0 && calls[0][0] < idx[0] {
			ls = append(ls, emittedLaunch{name: cu[calls[0][2]:calls[0][3]], stages: 1})
			calls = calls[1:]
		}
		m := make([]string, len(idx)/2)
		for i := range m {
			if idx[2*i] >= 0 { // an optional group that did not match stays ""
				m[i] = cu[idx[2*i]:idx[2*i+1]]
			}
		}
		l := emittedLaunch{name: m[2], dependent: m[1] != ""}
		for a := range 3 {
			l.grid[a], _ = strconv.Atoi(m[3+a])
		}
		l.threads, _ = strconv.Atoi(m[6])
		l.smem, _ = strconv.Atoi(m[7])
		l.stages = 1
		if g := gemmRE.FindStringSubmatch(l.name); g != nil {
			l.stages, _ = strconv.Atoi(g[1])
		} else if s, ok := stages[l.name]; ok {
			l.stages = s
			if b := bounds[l.name]; b != l.threads {
				t.Errorf("%s: launched with %d threads, __launch_bounds__(%d)", l.name, l.threads, b)
			}
		}
		if s, ok := optIn[l.name]; ok {
			l.optIn = true
			if s != l.smem {
				t.Errorf("%s: launched with %d bytes of shared memory, opted in to %d", l.name, l.smem, s)
			}
		}
		ls = append(ls, l)
	}
	for _, c := range calls {
		ls = append(ls, emittedLaunch{name: cu[c[2]:c[3]], stages: 1})
	}
	return ls
}

// TestCostReadsTheEmittedPlan checks, for every kernel of the bench
// programs and their measured candidates on both archs, that the launch
// the cost model costs (threads, shared memory, stages, grid, a dependent
// launch) is the one the emitted code launches with, as read back from the
// .cu text.
func TestCostReadsTheEmittedPlan(t *testing.T) {
	kernels := 0
	for _, arch := range target.Archs() {
		for _, p := range benchPrograms(t) {
			est, err := cost.EstimateGraph(p.g, arch)
			if err != nil {
				// A kernel over the arch's shared memory: the code
				// generator must refuse it too.
				if _, eerr := cuda.Emit("p", p.g, cuda.Options{Arch: arch}); eerr == nil {
					t.Errorf("%s on %s: the model refuses it (%v), the code generator emits it", p.name, arch.Name, err)
				}
				continue
			}
			res, err := cuda.Emit("p", p.g, cuda.Options{Arch: arch})
			if err != nil {
				t.Errorf("%s on %s: the model costs it, the code generator refuses it: %v", p.name, arch.Name, err)
				continue
			}
			cu := string(res.Files[0].Data)
			got := launches(t, cu)
			if len(got) != len(est.Kernels) {
				t.Errorf("%s on %s: the model costs %d kernels, the code launches %d", p.name, arch.Name, len(est.Kernels), len(got))
				continue
			}
			for i, l := range got {
				k := est.Kernels[i]
				lk := k.Launch
				want := emittedLaunch{name: l.name, grid: lk.Grid, threads: lk.Threads, smem: lk.SmemBytes, stages: lk.Stages,
					optIn: lk.SmemBytes > target.StaticSmemPerBlock, dependent: lk.Dependent}
				if l != want {
					t.Errorf("%s on %s, kernel %d (op %d, %s):\nemitted %+v\nplanned %+v", p.name, arch.Name, i, k.Op, k.Name, l, want)
				}
				if lk.Code == launch.GraphDefined && (k.SmemBytes != lk.SmemBytes || [3]int(k.Grid) != lk.Grid) {
					t.Errorf("%s on %s, kernel %d: the model's figures (smem %d, grid %v) are not its plan's (%d, %v)",
						p.name, arch.Name, i, k.SmemBytes, k.Grid, lk.SmemBytes, lk.Grid)
				}
				kernels++
			}
			own := slices.ContainsFunc(est.Kernels, func(k cost.Kernel) bool { return !k.Launch.Code.Vendor() })
			if own != (strings.Contains(cu, "mirage::launch(") || strings.Contains(cu, "mirage::launch_dependent(")) {
				t.Errorf("%s: kernels of its own %v, yet a launch in the emitted code %v", p.name, own, !own)
			}
		}
	}
	if kernels < 100 {
		t.Errorf("only %d kernels checked: the programs were not found", kernels)
	}
	t.Logf("%d kernels", kernels)
}

// A Memo plans as Graph does, and plans a block graph once: planning a
// graph again through the same Memo gives each graph-defined kernel the
// thread plan it gave the first time, where Graph derives a new one.
func TestMemoPlansAsGraphDoes(t *testing.T) {
	arch := target.MustLookup(target.Default)
	var memo launch.Memo
	customized := 0
	for _, p := range benchPrograms(t) {
		want, wantErr := launch.Graph(p.g, arch, launch.Options{})
		first, err := memo.Graph(p.g, arch, launch.Options{})
		if (err == nil) != (wantErr == nil) {
			t.Errorf("%s: Memo.Graph error %v, Graph's %v", p.name, err, wantErr)
			continue
		}
		if err != nil {
			continue
		}
		again, err := memo.Graph(p.g, arch, launch.Options{})
		if err != nil {
			t.Fatalf("%s: again: %v", p.name, err)
		}
		if len(first.Kernels) != len(want.Kernels) || len(again.Kernels) != len(want.Kernels) {
			t.Errorf("%s: %d, then %d kernels; Graph plans %d", p.name, len(first.Kernels), len(again.Kernels), len(want.Kernels))
			continue
		}
		for i, w := range want.Kernels {
			for _, got := range []launch.Kernel{first.Kernels[i], again.Kernels[i]} {
				if !sameLaunch(got, w) {
					t.Errorf("%s: kernel %d planned %+v, Graph plans %+v", p.name, i, got, w)
				}
			}
			if w.Code == launch.GraphDefined {
				customized++
				if again.Kernels[i].Thread != first.Kernels[i].Thread {
					t.Errorf("%s: kernel %d: its thread plan derived again", p.name, i)
				}
			}
		}
	}
	if customized == 0 {
		t.Fatal("no graph-defined kernel among the programs")
	}
}

// sameLaunch compares two plans of a kernel by value, but for the thread
// plan's identity.
func sameLaunch(a, b launch.Kernel) bool {
	if (a.Fold == nil) != (b.Fold == nil) || a.Fold != nil && *a.Fold != *b.Fold {
		return false
	}
	a.Thread, b.Thread, a.Fold, b.Fold = nil, nil, nil, nil
	return fmt.Sprintf("%+v", a) == fmt.Sprintf("%+v", b)
}
