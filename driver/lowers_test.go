package driver

import (
	"strings"
	"testing"

	"github.com/mirage-go/mirage/codegen/cuda"
	"github.com/mirage-go/mirage/launch"
	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// A range whose largest bucket's code cannot be emitted (an fp32 matmul's
// grid past 65535 blocks of 16 rows, on the runtime's SIMT GEMM: the
// code emitted with OwnGEMM; cuBLASLt takes m up to 2^31 - 1) is refused
// before any search, with the largest m that can be; one within it is
// not.
func TestCheckLowers(t *testing.T) {
	program, err := loadSource(t, "p", `
X = g.new_input(dims=(16, 256), dtype=mi.float32)
W = g.new_input(dims=(256, 256), dtype=mi.float32)
g.mark_output(g.matmul(g.rms_norm(X, normalized_shape=(256,)), W))`).WithDynamic(map[kernel.TensorID]int{0: 0})
	if err != nil {
		t.Fatal(err)
	}
	opts := cuda.Options{Arch: target.MustLookup("sm_90"), Launch: launch.Options{OwnGEMM: true}}
	for _, tt := range []struct {
		lo, hi  int
		buckets []int
		err     string
	}{
		{1, 1 << 30, nil, "the emitted code supports m up to 1048560 (at m = 1048561, "},
		{1, 8388608, nil, "give HI at most 524288 with the default buckets"},
		{1, 524288, nil, ""},
		{1, 1048560, []int{64, 1048560}, ""},
		{1, 1048560, []int{64, 1048561}, "--buckets ending at most at 1048560"},
		{16777216, 1 << 30, nil, "supports no m in 16777216..1073741824"},
	} {
		buckets := tt.buckets
		if buckets == nil {
			buckets = DefaultBuckets(tt.lo, tt.hi)
		}
		err := CheckLowers("p", program, tt.lo, tt.hi, buckets, opts)
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%d..%d, buckets %v: %v; want %q", tt.lo, tt.hi, buckets, err, tt.err)
		}
	}
}
