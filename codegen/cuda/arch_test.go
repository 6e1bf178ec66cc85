package cuda

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/launch"
	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/templates"
	"github.com/mirage-go/mirage/ugraph"
)

// Every arch of the table can be emitted for, and says so in the files; an
// arch whose matmul instruction or load paths the runtime lacks is refused
// rather than emitted with code it cannot run.
func TestArchs(t *testing.T) {
	g := loadExample(t, "rmsnorm_matmul_mugraph")
	for _, a := range target.Archs() {
		res, err := Emit("x", g, Options{Arch: a})
		if err != nil {
			t.Errorf("%s: %v", a.Name, err)
			continue
		}
		// The result names the target; the build line, the CUDA
		// architecture nvcc takes (sm_90 for h200).
		if cu := string(res.Files[0].Data); res.Arch != a.Name || !strings.Contains(cu, "nvcc -arch="+a.CUDA+" ") || !strings.Contains(cu, " for "+a.Name) {
			t.Errorf("%s: result names %q; the .cu file's head:\n%.400s", a.Name, res.Arch, cu)
		}
	}
	if res, err := Emit("x", g, Options{}); err != nil || res.Arch != target.Default {
		t.Errorf("the zero Arch: %v, %v; want %s", res, err, target.Default)
	}
	other := target.MustLookup("sm_90")
	other.MMA = target.MMA{M: 64, N: 64, K: 16, PTX: "wgmma.mma_async"}
	if _, err := Emit("x", g, Options{Arch: other}); err == nil || !strings.Contains(err.Error(), "m16n8k16") {
		t.Errorf("an arch with another MMA: %v", err)
	}
	noAsync := target.MustLookup("sm_80")
	noAsync.AsyncCopy = false
	if _, err := Emit("x", g, Options{Arch: noAsync}); err == nil {
		t.Error("an arch without cp.async was emitted for")
	}
}

var (
	sm80 = target.MustLookup("sm_80")
	sm90 = target.MustLookup("sm_90")
)

// TestRuntimeDefinesEveryElementwiseOp ranges over the op table: the
// runtime defines the device function of every element-wise op, with the
// op's arity and scalars (every_elementwise in cases_test.go runs them).
func TestRuntimeDefinesEveryElementwiseOp(t *testing.T) {
	for _, k := range ugraph.OpKinds(ugraph.LevelKernel | ugraph.LevelBlock) {
		if !k.IsElementwise() {
			continue
		}
		info := k.Info()
		params := []string{"float x"}
		if info.Class == ugraph.ClassBinary {
			params = append(params, "float y")
		}
		for i := range info.Scalars {
			params = append(params, fmt.Sprintf("float s%d", i))
		}
		re := regexp.MustCompile(`__device__ __forceinline__ float ` + regexp.QuoteMeta(info.Elem.Runtime) + `\((float \w+(, )?){` + fmt.Sprint(len(params)) + `}\)`)
		if !re.MatchString(templates.Runtime) {
			t.Errorf("%v: mirage_runtime.cuh does not define float %s(%s)", k, info.Elem.Runtime, strings.Join(params, ", "))
		}
	}
}

// DependentLaunch makes every graph-defined kernel a programmatic
// dependent launch that waits for the grid before it ahead of any access
// and then lets the next one launch; runtime kernels and the default
// emission launch as before; an arch before sm_90 is refused.
func TestDependentLaunch(t *testing.T) {
	g := loadSource(t, "dependent_launches", dependentKernels...)
	plain, err := Emit("d", g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	dep, err := Emit("d", g, Options{DependentLaunch: true})
	if err != nil {
		t.Fatal(err)
	}
	cu := string(dep.Files[0].Data)
	if n := checkDependentKernels(t, "dependent_launches", dep); n != 2 {
		t.Fatalf("%d graph-defined kernels; the program has 2", n)
	}
	if !strings.Contains(cu, "__CUDA_ARCH__ < 900\n#error") {
		t.Error("the code does not refuse to compile for sm_80, where the waits would be nothing")
	}
	for _, s := range []string{"launch_dependent(", "wait_for_prior_grid();", "let_dependents_launch();", "dependent launches", "__CUDA_ARCH__ < 900"} {
		if strings.Contains(string(plain.Files[0].Data), s) {
			t.Errorf("the default emission has %q", s)
		}
	}
	if _, err := Emit("d", g, Options{Arch: target.MustLookup("sm_80"), DependentLaunch: true}); err == nil || !strings.Contains(err.Error(), "sm_90") {
		t.Errorf("sm_80 with dependent launches: %v; want a refusal naming sm_90", err)
	}
	// Every kernel of the emulator's cases, which cover the fast paths
	// and the fallbacks, waits before anything else.
	for _, c := range emuCases {
		opts := c.opts
		opts.DependentLaunch = true
		res, err := Emit(c.name, loadSource(t, c.name, c.src...), opts)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		checkDependentKernels(t, c.name, res)
	}
}

// By default, on sm_90 and the h200, the graph-defined kernel that follows
// a cuBLASLt call launches dependent, waiting first, and no other kernel
// does; the code refuses to compile for sm_80. Emitted for sm_80, or with
// Launch.Dependent = NoDependent, no kernel is.
func TestDependentAfterLibrary(t *testing.T) {
	g := loadSource(t, "dependent_after_library", dependentAfterLibrary...)
	for _, arch := range []string{"sm_90", "h200"} {
		res, err := Emit("d", g, Options{Arch: target.MustLookup(arch)})
		if err != nil {
			t.Fatal(err)
		}
		cu := string(res.Files[0].Data)
		var dependent []string
		for _, k := range res.Kernels {
			if k.Dependent {
				dependent = append(dependent, k.Name)
			}
		}
		first := res.Kernels[1]
		if len(res.Kernels) != 3 || res.Kernels[0].Library != "cublasLt" || len(dependent) != 1 || dependent[0] != first.Name ||
			strings.Count(cu, "mirage::launch_dependent(") != 1 || !strings.Contains(cu, "mirage::launch_dependent("+first.Name+",") {
			t.Errorf("%s: dependent %v of %d kernels; want the one after the cuBLASLt call, %s", arch, dependent, len(res.Kernels), first.Name)
		}
		body := cu[strings.Index(cu, first.Name+"("):]
		if w, c := strings.Index(body, "mirage::wait_for_prior_grid();"), strings.Index(body, "cp_async"); w < 0 || c >= 0 && c < w {
			t.Errorf("%s: %s does not wait before it copies", arch, first.Name)
		}
		if !strings.Contains(cu, "__CUDA_ARCH__ < 900\n#error \"mirage: this code launches kernels as programmatic dependent launches") {
			t.Errorf("%s: the code does not refuse to compile for sm_80", arch)
		}
	}
	for _, opts := range []Options{{Arch: target.MustLookup("sm_80")}, {Launch: launch.Options{Dependent: launch.NoDependent}}} {
		res, err := Emit("d", g, opts)
		if err != nil {
			t.Fatal(err)
		}
		if cu := string(res.Files[0].Data); strings.Contains(cu, "launch_dependent(") || strings.Contains(cu, "wait_for_prior_grid") || strings.Contains(cu, "< 900") {
			t.Errorf("%s, %v: a dependent launch", opts.Arch.Name, opts.Launch.Dependent)
		}
	}
}

// checkDependentKernels checks that res launches each graph-defined
// kernel dependent, and no other, and that each one's first statements
// after its block coordinates are the wait and the trigger; it returns
// the graph-defined kernels.
func checkDependentKernels(t *testing.T, name string, res *Result) int {
	t.Helper()
	cu := string(res.Files[0].Data)
	graphDefined := 0
	for _, k := range res.Kernels {
		if k.What != "graph-defined" {
			if k.Dependent || strings.Contains(cu, "launch_dependent("+k.Name) {
				t.Errorf("%s: %s (%s) launched dependent", name, k.Name, k.What)
			}
			continue
		}
		graphDefined++
		if !k.Dependent || !strings.Contains(cu, "mirage::launch_dependent("+k.Name+",") {
			t.Errorf("%s: %s not launched dependent", name, k.Name)
		}
		var stmts []string
		for line := range strings.Lines(cu[strings.Index(cu, k.Name+"("):]) {
			line = strings.TrimSpace(line)
			if strings.HasSuffix(line, "{") || coordinate.MatchString(line) {
				continue
			}
			if stmts = append(stmts, line); len(stmts) == 2 {
				break
			}
		}
		if len(stmts) < 2 || !strings.HasPrefix(stmts[0], "mirage::wait_for_prior_grid();") || !strings.HasPrefix(stmts[1], "mirage::let_dependents_launch();") {
			t.Errorf("%s: %s's first statements are %q, not the wait and the trigger", name, k.Name, stmts)
		}
	}
	return graphDefined
}

// coordinate matches the block coordinates a kernel declares first.
var coordinate = regexp.MustCompile(`^const int (tid|warp|lane|bx|by|bz) = `)
