package cuda_test

import (
	"context"
	"testing"
	"time"

	"github.com/mirage-go/mirage/codegen/cuda"
	"github.com/mirage-go/mirage/driver"
	"github.com/mirage-go/mirage/target"
)

// TestEmulateStitched runs whole programs as superopt answers them (cut
// into parts, each searched, stitched into one kernel graph of
// graph-defined and pre-defined kernels, intermediates in the workspace)
// in the CPU emulator, against the float64 interpreter, at reduced shapes,
// and compiles them with nvcc for both archs.
func TestEmulateStitched(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: searches and emulator runs")
	}
	programs := map[string][]string{
		// A LLaMA MLP block: norm, gated projections, down projection with
		// the residual.
		"llama_mlp_block": {
			"g = mi.new_kernel_graph()",
			"X = g.new_input(dims=(8, 64), dtype=mi.float16)",
			"W1 = g.new_input(dims=(64, 128), dtype=mi.float16)",
			"W3 = g.new_input(dims=(64, 128), dtype=mi.float16)",
			"W2 = g.new_input(dims=(128, 64), dtype=mi.float16)",
			"N = g.rms_norm(X, normalized_shape=(64,))",
			"M = g.mul(g.silu(g.matmul(N, W1)), g.matmul(N, W3))",
			"g.mark_output(g.add(g.matmul(M, W2), X))",
		},
		// Two stacked layers.
		"stacked": {
			"g = mi.new_kernel_graph()",
			"H = g.new_input(dims=(8, 64), dtype=mi.float16)",
			"for i in range(2):",
			"    W = g.new_input(dims=(64, 64), dtype=mi.float16)",
			"    H = g.add(H, g.silu(g.matmul(g.rms_norm(H, normalized_shape=(64,)), W)))",
			"g.mark_output(H)",
		},
	}
	for name, src := range programs {
		t.Run(name, func(t *testing.T) {
			g := cuda.LoadSource(t, name, src...)
			res, err := driver.Run(context.Background(), g, driver.Options{Workers: 2, Seed: 1, TimeLimit: 20 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			best := res.Candidates[0]
			if best.Customized == 0 || best.Kernels < 2 {
				t.Fatalf("the best answer runs %d kernels, %d graph-defined: not a stitched program", best.Kernels, best.Customized)
			}
			cuda.EmuRun(t, name, best.Graph, 0.5, cuda.Options{Arch: target.MustLookup("sm_80")}, false)
			nvcc := cuda.NeedNVCC(t)
			cuda.NVCCCompile(t, nvcc, name, best.Graph, cuda.Options{}, target.MustLookup("sm_80"), target.MustLookup("sm_90"))
		})
	}
}
