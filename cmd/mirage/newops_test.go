package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// TestElementwiseOpsEndToEnd takes element-wise ops added to the op table
// through every stage: the front-end reads them, the search fuses them into
// a graph-defined kernel's epilogue (absexpr and ffverify judging them), the
// float64 interpreter agrees with the result, and the emitted CUDA calls
// their runtime functions. (codegen's every_elementwise case runs them in
// the emulator.)
func TestElementwiseOpsEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: whole searches")
	}
	for _, op := range []string{"tanh", "sigmoid"} {
		t.Run(op, func(t *testing.T) {
			dir := t.TempDir()
			prog := filepath.Join(dir, op+".py")
			os.WriteFile(prog, []byte(strings.Join([]string{
				"import mirage as mi",
				"g = mi.new_kernel_graph()",
				"X = g.new_input(dims=(16, 64), dtype=mi.float16)",
				"W = g.new_input(dims=(64, 256), dtype=mi.float16)",
				"g.mark_output(g." + op + "(g.matmul(X, W)))",
			}, "\n")), 0o644)
			code, stdout, stderr := mirage(t, "superopt", prog, "-o", dir, "--no-cache", "--json")
			if code != 0 {
				t.Fatalf("superopt: exit %d: %s", code, stderr)
			}
			var res superoptJSON
			if err := json.Unmarshal([]byte(stdout), &res); err != nil || len(res.Candidates) == 0 {
				t.Fatalf("superopt --json: %v: %s", err, stdout)
			}
			if res.Candidates[0].Customized < 1 {
				t.Fatalf("the best candidate fuses nothing: %+v", res.Candidates[0])
			}
			file, err := kernel.ReadFile(res.Output)
			if err != nil {
				t.Fatal(err)
			}
			k, _ := ugraph.LookupOp(op)
			inBlock := false
			for _, kop := range file.Graphs[0].Graph.Ops {
				if kop.Block != nil {
					for _, bop := range kop.Block.Ops {
						inBlock = inBlock || bop.Kind == k
					}
				}
			}
			if !inBlock {
				t.Errorf("the best candidate does not apply %s inside its graph-defined kernel", op)
			}
			if code, out, errs := mirage(t, "verify", "--method", "float", prog, res.Output); code != 0 {
				t.Errorf("verify --method float: exit %d\n%s%s", code, out, errs)
			}
			cu, err := os.ReadFile(filepath.Join(dir, op+".cu"))
			if err != nil || !strings.Contains(string(cu), "mirage::op_"+op+"(") {
				t.Errorf("the emitted CUDA does not call mirage::op_%s: %v", op, err)
			}
		})
	}
}
