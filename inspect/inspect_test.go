package inspect_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/frontend"
	"github.com/mirage-go/mirage/inspect"
	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

func example(t *testing.T, name string) *kernel.Graph {
	t.Helper()
	p, err := frontend.LoadFile(filepath.Join("..", "examples", name+".py"), frontend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p.Graph
}

// estimateForms is g's estimate in both forms: the JSON value and the
// table's lines (the header, a line per kernel, the total).
func estimateForms(t *testing.T, g *kernel.Graph, arch target.Arch) (*inspect.GraphEstimate, []string) {
	t.Helper()
	e, err := inspect.Estimate(g, arch)
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := inspect.WriteEstimate(&table, g, arch); err != nil {
		t.Fatal(err)
	}
	return e, strings.Split(strings.TrimSpace(table.String()), "\n")
}

// The table and the JSON form are one estimate: the same kernels, the
// same total.
func TestEstimateFormsAgree(t *testing.T) {
	arch := target.MustLookup("sm_90")
	for _, name := range []string{"rmsnorm_matmul", "rmsnorm_matmul_mugraph", "gqa_mugraph", "llama_mlp_block"} {
		e, lines := estimateForms(t, example(t, name), arch)
		if got := len(lines) - 2; got != len(e.Kernels) || e.EstimatedUs <= 0 {
			t.Errorf("%s: %d kernel lines, %d kernels in JSON, %.2f µs", name, got, len(e.Kernels), e.EstimatedUs)
		}
		if want := fmt.Sprintf("total: %.2f µs estimated on %v", e.EstimatedUs, arch); !strings.HasPrefix(lines[len(lines)-1], want) {
			t.Errorf("%s: %q, want it to begin %q", name, lines[len(lines)-1], want)
		}
		for i, k := range e.Kernels {
			if fields := strings.Fields(lines[i+1]); fields[0] != fmt.Sprint(k.Op) || fields[1] != k.Kind {
				t.Errorf("%s: line %q for kernel %d (%s)", name, lines[i+1], k.Op, k.Kind)
			}
		}
	}
}

// The stages column and field show the depth the plan gives: the graph's
// own where it sets one, the default (4 here) where it does not; a
// library kernel's is 1 and a vendor call's "-".
func TestEstimateStages(t *testing.T) {
	arch := target.MustLookup("sm_90")
	for _, c := range []struct {
		name   string
		stages int // the graph's; -1: leave it
		want   []string
	}{
		{"rmsnorm_matmul_mugraph", -1, []string{"4"}},
		{"rmsnorm_matmul_mugraph", 2, []string{"2"}},
		{"rmsnorm_matmul", -1, []string{"1", "-"}}, // rms_norm, then cuBLASLt
	} {
		g := example(t, c.name)
		for _, op := range g.Ops {
			if op.Block != nil && c.stages >= 0 {
				if err := op.Block.SetStages(c.stages); err != nil {
					t.Fatal(err)
				}
			}
		}
		e, lines := estimateForms(t, g, arch)
		if col := strings.Fields(lines[0]); col[5] != "stages" {
			t.Fatalf("header %q: column 5 is not stages", lines[0])
		}
		var got []string
		for i, k := range e.Kernels {
			cell := strings.Fields(lines[i+1])[5]
			if cell != "-" && cell != fmt.Sprint(k.Stages) {
				t.Errorf("%s: kernel %d: table %s, JSON %d", c.name, k.Op, cell, k.Stages)
			}
			got = append(got, cell)
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s with stages %d: %v, want %v", c.name, c.stages, got, c.want)
		}
	}
}

// Every tensor has a line of its abstract expression, and a graph-defined
// kernel's tiles are nested under it.
func TestAbsexpr(t *testing.T) {
	g := example(t, "rmsnorm_matmul_mugraph")
	var w bytes.Buffer
	if err := inspect.Absexpr(&w, g); err != nil {
		t.Fatal(err)
	}
	tensors, tiles := 0, 0
	for _, line := range strings.Split(strings.TrimSpace(w.String()), "\n") {
		switch {
		case strings.HasPrefix(line, "t"):
			tensors++
		case strings.HasPrefix(line, "    s"):
			tiles++
		default:
			t.Errorf("line %q", line)
		}
	}
	outs := 0
	for _, op := range g.Ops {
		outs += len(op.Out)
	}
	if tensors != outs || tiles == 0 {
		t.Errorf("%d tensor lines for %d op outputs, %d tile lines:\n%s", tensors, outs, tiles, w.String())
	}
}

// A one-graph document reads back as the graph it was written from.
func TestDocument(t *testing.T) {
	g := example(t, "gqa_mugraph")
	var w bytes.Buffer
	if err := inspect.Document(&w, "gqa", g); err != nil {
		t.Fatal(err)
	}
	f, err := kernel.Decode(&w)
	if err != nil {
		t.Fatal(err)
	}
	if f.Name != "gqa" || len(f.Graphs) != 1 || kernel.Hash(f.Graphs[0].Graph) != kernel.Hash(g) {
		t.Errorf("read back %q with %d graph(s)", f.Name, len(f.Graphs))
	}
}
