package ffverify_test

import (
	"path/filepath"
	"testing"

	"github.com/mirage-go/mirage/frontend"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

func load(t *testing.T, name string) *kernel.Graph {
	t.Helper()
	p, err := frontend.LoadFile(filepath.Join("..", "examples", name+".py"), frontend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p.Graph
}

// TestExamples checks the hand-written μGraphs of examples/ against their
// programs at full size, with ffverify and with interp, and that the
// Go-built versions used by the benchmarks and the catalogue are the same
// graphs as the Python ones.
func TestExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("full-size examples take seconds")
	}
	for _, c := range []struct {
		name             string
		program, mugraph *kernel.Graph
	}{
		{"rmsnorm_matmul", rmsnormMatmul(16, 4096, 6144), rmsnormMatmulFused(16, 4096, 6144, 96, 64)},
		{"gated_mlp", gatedMLP(8, 4096, 4096), gatedMLPFused(8, 4096, 4096, 64, 64)},
		{"gqa", gqa(2, 256, 64, 4096), gqaSplit(2, 256, 64, 4096, 16, 4, 4)},
	} {
		t.Run(c.name, func(t *testing.T) {
			program, mugraph := load(t, c.name), load(t, c.name+"_mugraph")
			for _, pair := range [][2]*kernel.Graph{{program, c.program}, {mugraph, c.mugraph}} {
				if err := sameGraph(pair[0], pair[1]); err != nil {
					t.Errorf("the Go-built graph differs from the .py one: %v", err)
				}
			}
			checkEntry(t, program, mugraph, true, false, 16)
		})
	}
}
