package cuda

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// measuredCandidate is candidate i of a measured document in
// cost/testdata (DIR/NAME, without the suffix).
func measuredCandidate(t *testing.T, name string, i int) *kernel.Graph {
	t.Helper()
	f, err := kernel.ReadFile(filepath.Join("..", "..", "cost", "testdata", name+".measured.ugraph.json"))
	if err != nil {
		t.Fatal(err)
	}
	if i >= len(f.Graphs) {
		t.Fatalf("%s has %d candidates, not %d", name, len(f.Graphs), i+1)
	}
	return f.Graphs[i].Graph
}

// TestSharedMemoryGuard checks, on measured graphs, that code emitted for
// sm_90 (and the H200, whose code is sm_90's) carries the check that
// stops a build for an older GPU where a kernel takes more shared memory
// a block than sm_80 allows, and not where none does, and that code for
// sm_80 (whose plan takes fewer stages) has none. The limit itself:
// TestSharedMemoryGuardAtTheLimit.
func TestSharedMemoryGuard(t *testing.T) {
	const guard = "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900"
	cases := []struct {
		name      string
		candidate int
		arch      target.Arch
		smem      int // the largest kernel's
		guarded   bool
	}{
		{"h100-2026-11-27/gated_mlp", 7, sm90, 231168, true},
		{"h100-2026-11-27/gated_mlp", 7, target.MustLookup("h200"), 231168, true},
		{"h100-2026-11-27/qknorm_gqa", 2, sm90, 227840, true},
		{"h100-2026-11-28-4406c39/qknorm_gqa", 3, sm90, 219136, true},
		{"h100-2026-11-28-4406c39/rmsnorm_matmul", 0, sm90, 0, false},
		{"h100-2026-11-27/gated_mlp", 7, sm80, 116224, false}, // fewer stages
	}
	for _, tc := range cases {
		res, err := Emit("guard", measuredCandidate(t, tc.name, tc.candidate), Options{Arch: tc.arch})
		if err != nil {
			t.Fatalf("%s c%d for %s: %v", tc.name, tc.candidate, tc.arch.Name, err)
		}
		smem := 0
		for _, k := range res.Kernels {
			smem = max(smem, k.SmemBytes)
		}
		if smem != tc.smem {
			t.Errorf("%s c%d for %s: the largest kernel takes %d bytes, want %d", tc.name, tc.candidate, tc.arch.Name, smem, tc.smem)
		}
		if got := strings.Contains(string(res.Files[0].Data), guard); got != tc.guarded {
			t.Errorf("%s c%d for %s (%d bytes a block): guarded %v, want %v", tc.name, tc.candidate, tc.arch.Name, smem, got, tc.guarded)
		}
	}
}

// TestSharedMemoryGuardAtTheLimit checks smemGuard on either side of
// sm_80's limit (163 KB a block, 166912 bytes), for each target, with its
// whole text, and that a target whose CUDA name has no compute capability
// of the sm_NN form gets none. Its advice is to emit the μGraph for the
// older GPU where it lowers there, else to search for that GPU.
func TestSharedMemoryGuardAtTheLimit(t *testing.T) {
	const (
		want = "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900\n" +
			"#error \"mirage: this code was emitted for %s: a kernel takes 166913 bytes of shared memory a block, more than GPUs before sm_90 allow (sm_80: 166912); for such a GPU, %s\"\n" +
			"#endif\n"
		emit   = "emit it with --arch sm_80"
		search = "search for it (superopt --arch sm_80): this μGraph's tiles do not fit its shared memory"
	)
	odd := sm90
	odd.Name, odd.CUDA = "sm_90a", "sm_90a"
	for _, tc := range []struct {
		arch   target.Arch
		smem   int
		lowers bool // on sm_80
		guard  string
	}{
		{sm90, 166912, true, ""},
		{sm90, 166913, true, fmt.Sprintf(want, "sm_90", emit)},
		{sm90, 166913, false, fmt.Sprintf(want, "sm_90", search)},
		{target.MustLookup("h200"), 166913, true, fmt.Sprintf(want, "h200", emit)},
		{sm80, 166912, true, ""},
		{sm80, 200000, false, ""}, // no older GPU: the launch plan refuses it first
		{odd, 200000, false, ""},
	} {
		kernels := []Kernel{{SmemBytes: 1024}, {SmemBytes: tc.smem}, {}}
		lowers := func(a target.Arch) bool {
			if a.Name != "sm_80" {
				t.Errorf("asked whether it lowers for %s", a.Name)
			}
			return tc.lowers
		}
		if got := smemGuard(tc.arch, kernels, lowers); got != tc.guard {
			t.Errorf("%s, %d bytes: guard %q, want %q", tc.arch.Name, tc.smem, got, tc.guard)
		}
	}
}
