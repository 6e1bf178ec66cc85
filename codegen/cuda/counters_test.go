package cuda

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// rmsnormMatmul is the running example's μGraph, O = rms_norm(X) @ W, at
// a reduced size (X 16x512, W 512x1024), with the grid, the maps and the
// tile of X left to the caller: the good tiling, and bad ones.
func rmsnormMatmul(grid, xmap, omap string) []string {
	return oneKernel(
		[][3]string{{"X", "(16, 512)", "float16"}, {"W", "(512, 1024)", "float16"}},
		"grid_dim="+grid+", block_dim=(128, 1, 1), forloop_range=8, reduction_dimx=64",
		`tX = tb.new_input(dtensor=X, input_map=`+xmap+`, forloop_dim=1)`,
		`tW = tb.new_input(dtensor=W, input_map=(1, -1, -1), forloop_dim=0)`,
		`tb.new_output(stensor=tb.div(tb.forloop_accum(tb.matmul(tX, tW)), tb.forloop_accum(tX, "rms")), output_map=`+omap+`)`)
}

// TestCountersCatchBadTilings measures variants of one kernel in the
// emulator: the good tiling streams its weights once in whole sectors;
// the bad ones re-read them or read them in narrow column strips, and the
// counters must say so.
func TestCountersCatchBadTilings(t *testing.T) {
	needGXX(t)
	tests := []struct {
		name string
		src  []string
		// What the counters must find of W (t1): requested bytes over its
		// size, and the coalescing of its loads, within [lo, hi].
		requested, coalescing [2]float64
		// Its distinct bytes over its size: every variant touches each
		// sector of W, the bad ones more than once.
		distinct float64
		problems []string // what WeightProblems must name
	}{
		{name: "good", src: rmsnormMatmul("(16, 1, 1)", "(-1, -1, -1)", "(1, -1, -1)"),
			requested: [2]float64{1, 1}, coalescing: [2]float64{1, 1}, distinct: 1},
		// Two blocks along y split X's rows and both read every tile of W.
		{name: "weights re-read per block", src: rmsnormMatmul("(16, 2, 1)", "(-1, 0, -1)", "(1, 0, -1)"),
			requested: [2]float64{2, 2}, coalescing: [2]float64{1, 1}, distinct: 1,
			problems: []string{"requests 2.00x the size of its largest input t1 (at most 1.05x): 1.00x distinct"}},
		// 256 blocks of 4 columns: each row of a tile is 8 bytes, a
		// quarter of a sector.
		{name: "column strips", src: rmsnormMatmul("(256, 1, 1)", "(-1, -1, -1)", "(1, -1, -1)"),
			requested: [2]float64{4, 4}, coalescing: [2]float64{0.25, 0.25}, distinct: 1,
			problems: []string{"requests 4.00x", "25.0% coalescing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := loadSource(t, "rmsnorm_matmul", tt.src...)
			res, err := Emit("rmsnorm_matmul", g, Options{Arch: sm80})
			if err != nil {
				t.Fatal(err)
			}
			cs, err := Measure(context.Background(), g, res, 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(cs) != 1 {
				t.Fatalf("%d kernels measured, want 1", len(cs))
			}
			c := &cs[0]
			w, ok := c.Weights()
			if !ok || w.Tensor != "t1" {
				t.Fatalf("the weights are %+v, want t1", w)
			}
			if r := float64(w.Requested()) / float64(w.Bytes); r < tt.requested[0] || r > tt.requested[1] {
				t.Errorf("W requested %.3fx its size, want %v", r, tt.requested)
			}
			if d := float64(w.DistinctBytes()) / float64(w.Bytes); d != tt.distinct {
				t.Errorf("W's distinct bytes %.3fx its size, want %vx", d, tt.distinct)
			}
			if c.DistinctBytes() > c.MovedBytes() || c.DistinctBytes() < c.IdealBytes {
				t.Errorf("distinct %d bytes, want between the ideal %d and the moved %d", c.DistinctBytes(), c.IdealBytes, c.MovedBytes())
			}
			if co := w.LoadCoalescing(); co < tt.coalescing[0] || co > tt.coalescing[1] {
				t.Errorf("W loaded at %.3f coalescing, want %v", co, tt.coalescing)
			}
			got := c.WeightProblems()
			if len(got) != len(tt.problems) {
				t.Errorf("problems %q, want %d naming %q", got, len(tt.problems), tt.problems)
			}
			for i := range min(len(got), len(tt.problems)) {
				if !strings.Contains(got[i], tt.problems[i]) {
					t.Errorf("problem %q, want one naming %q", got[i], tt.problems[i])
				}
			}
			if w.Store != (Traffic{}) {
				t.Errorf("stores to the weights: %+v", w.Store)
			}
			if c.CpAsyncBytes < w.Load.Used {
				t.Errorf("%d bytes of cp.async, fewer than W's %d loaded", c.CpAsyncBytes, w.Load.Used)
			}
			if c.SharedRequests == 0 {
				t.Error("no shared-memory requests counted")
			}
		})
	}
}

// TestCountersNormReadsItsRowOnce: a one-iteration kernel whose input
// tile rms_norm reads (once for the rms, once to scale) and a second op
// reads too (nTrans's form) requests it once: it is copied into shared
// memory, not read twice in place.
func TestCountersNormReadsItsRowOnce(t *testing.T) {
	needGXX(t)
	g := loadSource(t, "norm", oneKernel(
		[][3]string{{"X", "(16, 512)", "float16"}, {"Y", "(16, 512)", "float16"}},
		"grid_dim=(16, 1, 1), block_dim=(128, 1, 1), forloop_range=1, reduction_dimx=64",
		`tX = tb.new_input(dtensor=X, input_map=(0, -1, -1), forloop_dim=-1)`,
		`tY = tb.new_input(dtensor=Y, input_map=(0, -1, -1), forloop_dim=-1)`,
		`tb.new_output(stensor=tb.forloop_accum(tb.add(tb.mul(tb.rms_norm(tX), tY), tX)), output_map=(0, -1, -1))`)...)
	res, err := Emit("norm", g, Options{Arch: sm80})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := Measure(context.Background(), g, res, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range cs[0].Tensors {
		if r := float64(tt.Requested()) / float64(tt.Bytes); r != 1 {
			t.Errorf("%s (%s) requested %.2fx its size, want 1x", tt.Tensor, tt.Role, r)
		}
	}
	if p := cs[0].WeightProblems(); len(p) > 0 {
		t.Errorf("weight problems %q", p)
	}
}

// TestCountersArithmetic checks the figures Counters derives from what
// the emulator counted.
func TestCountersArithmetic(t *testing.T) {
	w := TensorTraffic{Tensor: "t1", Role: RoleInput, Bytes: 1 << 20, Load: Traffic{Requests: 1 << 12, Sectors: 1 << 15, Used: 1 << 20, Distinct: 1 << 15}}
	tests := []struct {
		name       string
		c          Counters
		moved      int64
		distinct   int64
		coalescing float64
		conflicts  float64
		weights    string
		problems   []string
	}{
		{name: "nothing moved", c: Counters{Tensors: []TensorTraffic{{Tensor: "t0", Bytes: 64}}, Inputs: 1},
			coalescing: 1, weights: "t0"},
		{name: "weights once, output in half sectors",
			c: Counters{Tensors: []TensorTraffic{{Tensor: "t0", Bytes: 4096, Load: Traffic{1, 128, 4096, 128}}, w,
				{Tensor: "t2", Role: RoleOutput, Bytes: 4096, Store: Traffic{Requests: 16, Sectors: 256, Used: 4096, Distinct: 128}}},
				Inputs: 2, SharedRequests: 10, SharedPhases: 10, SharedWavefronts: 15},
			moved: 32 * (128 + 1<<15 + 256), distinct: 32 * (128 + 1<<15 + 128), coalescing: float64(4096+1<<20+4096) / float64(32*(128+1<<15+256)),
			conflicts: 0.5, weights: "t1"},
		{name: "weights twice, a quarter used",
			c:     Counters{Tensors: []TensorTraffic{{Tensor: "t1", Bytes: 1 << 20, Load: Traffic{1, 1 << 16, 1 << 19, 1 << 15}}}, Inputs: 1},
			moved: 1 << 21, distinct: 1 << 20, coalescing: 0.25, weights: "t1",
			problems: []string{"requests 2.00x the size of its largest input t1 (at most 1.05x): 1.00x distinct, the rest re-reads of the same sectors",
				"loads its largest input t1 at 25.0% coalescing (at least 90%)"}},
		{name: "half the weights, read four times",
			c:     Counters{Tensors: []TensorTraffic{{Tensor: "t1", Bytes: 1 << 20, Load: Traffic{1, 1 << 16, 1 << 21, 1 << 14}}}, Inputs: 1},
			moved: 1 << 21, distinct: 1 << 19, coalescing: 1, weights: "t1",
			problems: []string{"requests 2.00x the size of its largest input t1 (at most 1.05x): 0.50x distinct, the rest re-reads of the same sectors"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.c
			if got := c.MovedBytes(); got != tt.moved {
				t.Errorf("moved %d, want %d", got, tt.moved)
			}
			if got := c.Coalescing(); got != tt.coalescing {
				t.Errorf("coalescing %v, want %v", got, tt.coalescing)
			}
			if got := c.BankConflictsPerAccess(); got != tt.conflicts {
				t.Errorf("conflicts per access %v, want %v", got, tt.conflicts)
			}
			if got, ok := c.Weights(); !ok || got.Tensor != tt.weights {
				t.Errorf("weights %v (%v), want %s", got.Tensor, ok, tt.weights)
			}
			if got := c.DistinctBytes(); got != tt.distinct {
				t.Errorf("distinct %d, want %d", got, tt.distinct)
			}
			if got := c.WeightProblems(); !slices.Equal(got, tt.problems) {
				t.Errorf("problems %q, want %q", got, tt.problems)
			}
		})
	}
}
