package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rmsnormMatmulSmall is the running example's μGraph at a reduced size
// (X 16x512, W 512x1024) with grid GRID: 16 blocks of 64 columns stream W
// once; 256 blocks of 4 columns read it in 8-byte strips.
const rmsnormMatmulSmall = `import mirage as mi
graph = mi.new_kernel_graph()
X = graph.new_input(dims=(16, 512), dtype=mi.float16)
W = graph.new_input(dims=(512, 1024), dtype=mi.float16)
tb = mi.new_threadblock_graph(grid_dim=(GRID, 1, 1), block_dim=(128, 1, 1), forloop_range=8, reduction_dimx=64)
tX = tb.new_input(dtensor=X, input_map=(-1, -1, -1), forloop_dim=1)
tW = tb.new_input(dtensor=W, input_map=(1, -1, -1), forloop_dim=0)
tb.new_output(stensor=tb.div(tb.forloop_accum(tb.matmul(tX, tW)), tb.forloop_accum(tX, "rms")), output_map=(1, -1, -1))
O = graph.customized([X, W], tb)
graph.mark_output(O[0])
`

func writeRMSNormMatmul(t *testing.T, grid string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rmsnorm_matmul_"+grid+".py")
	if err := os.WriteFile(path, []byte(strings.Replace(rmsnormMatmulSmall, "GRID", grid, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestEmitCounters(t *testing.T) {
	tests := []struct {
		grid  string
		table []string // lines the table must have
		// --json: W's requested bytes over its size, its load coalescing,
		// and whether the weights are flagged.
		requested, coalescing float64
		// W's sectors per warp request: 16 bytes per lane (512 bytes, four
		// whole 128-byte tile rows), or 8 bytes per lane in 32 rows.
		sectorsPerRequest float64
		flagged           bool
	}{
		{grid: "16", table: []string{"t1 input", "1.00x", "weights (largest input t1): ok"}, requested: 1, coalescing: 1, sectorsPerRequest: 16},
		// Each block reads its own strip: every sector of W is fetched by
		// 4 blocks, distinct once.
		{grid: "256", table: []string{"4.00x", "weights (largest input t1): POOR", "25.0% coalescing", "4.00x the size of its largest input t1 (at most 1.05x): 1.00x distinct"}, requested: 4, coalescing: 0.25, sectorsPerRequest: 32, flagged: true},
	}
	for _, tt := range tests {
		t.Run(tt.grid, func(t *testing.T) {
			path := writeRMSNormMatmul(t, tt.grid)
			code, stdout, stderr := mirage(t, "emit", path, "-o", t.TempDir(), "--counters")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			for _, want := range tt.table {
				if !strings.Contains(stdout, want) {
					t.Errorf("the table lacks %q:\n%s", want, stdout)
				}
			}

			code, stdout, stderr = mirage(t, "emit", path, "-o", t.TempDir(), "--counters", "--json")
			if code != 0 {
				t.Fatalf("--json: exit %d: %s", code, stderr)
			}
			var m struct {
				Kernels []struct {
					Name     string `json:"name"`
					Counters *struct {
						Name    string `json:"name"`
						Tensors []struct {
							Tensor         string  `json:"tensor"`
							Role           string  `json:"role"`
							Bytes          int64   `json:"bytes"`
							RequestedBytes int64   `json:"requested_bytes"`
							DistinctBytes  int64   `json:"distinct_bytes"`
							Requests       int64   `json:"requests"`
							SectorsPerReq  float64 `json:"sectors_per_request"`
							LoadCoalescing float64 `json:"load_coalescing"`
						} `json:"tensors"`
						IdealBytes             int64     `json:"ideal_bytes"`
						MovedBytes             int64     `json:"moved_bytes"`
						DistinctBytes          int64     `json:"distinct_bytes"`
						Coalescing             float64   `json:"coalescing"`
						BankConflictsPerAccess *float64  `json:"bank_conflicts_per_access"`
						WeightProblems         *[]string `json:"weight_problems"`
					} `json:"counters"`
				} `json:"kernels"`
			}
			if err := json.Unmarshal([]byte(stdout), &m); err != nil {
				t.Fatalf("%v: %s", err, stdout)
			}
			if len(m.Kernels) != 1 || m.Kernels[0].Counters == nil {
				t.Fatalf("kernels %+v: want one, with counters", m.Kernels)
			}
			c := m.Kernels[0].Counters
			if c.Name != m.Kernels[0].Name || len(c.Tensors) != 3 || c.BankConflictsPerAccess == nil || c.WeightProblems == nil {
				t.Fatalf("counters %+v", c)
			}
			w := c.Tensors[1]
			if w.Tensor != "t1" || w.Role != "input" || w.Bytes != 512*1024*2 {
				t.Errorf("tensor 1 is %+v, want W (t1, input, 1 MiB)", w)
			}
			if r := float64(w.RequestedBytes) / float64(w.Bytes); r != tt.requested || w.LoadCoalescing != tt.coalescing {
				t.Errorf("W requested %.3fx at %.3f coalescing, want %.3fx at %.3f", r, w.LoadCoalescing, tt.requested, tt.coalescing)
			}
			if w.SectorsPerReq != tt.sectorsPerRequest || w.Requests == 0 {
				t.Errorf("W: %d requests, %.2f sectors per request, want %v", w.Requests, w.SectorsPerReq, tt.sectorsPerRequest)
			}
			if w.DistinctBytes != w.Bytes {
				t.Errorf("W's distinct bytes %d, want its size %d: every sector read", w.DistinctBytes, w.Bytes)
			}
			if c.IdealBytes != (16*512+512*1024+16*1024)*2 || c.MovedBytes < c.IdealBytes || c.Coalescing <= 0 || c.Coalescing > 1 {
				t.Errorf("ideal %d, moved %d, coalescing %v", c.IdealBytes, c.MovedBytes, c.Coalescing)
			}
			if c.DistinctBytes < c.IdealBytes || c.DistinctBytes > c.MovedBytes {
				t.Errorf("distinct %d bytes, want between the ideal %d and the moved %d", c.DistinctBytes, c.IdealBytes, c.MovedBytes)
			}
			if flagged := len(*c.WeightProblems) > 0; flagged != tt.flagged {
				t.Errorf("weight problems %q, want flagged %v", *c.WeightProblems, tt.flagged)
			}
		})
	}
}

// TestEmitCountersWithoutCompiler: --counters needs g++; without it, emit
// says so, exits 2 and writes nothing.
func TestEmitCountersWithoutCompiler(t *testing.T) {
	path := writeRMSNormMatmul(t, "16")
	t.Setenv("PATH", t.TempDir())
	out := filepath.Join(t.TempDir(), "out")
	code, _, stderr := mirage(t, "emit", path, "-o", out, "--counters")
	if code != exitUnusable || !strings.Contains(stderr, "g++") || !strings.Contains(stderr, "--counters") {
		t.Errorf("exit %d, %q; want %d and a message naming --counters and g++", code, stderr, exitUnusable)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Error("emit --counters without g++ wrote files")
	}
}
