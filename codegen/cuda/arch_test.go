package cuda

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

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
