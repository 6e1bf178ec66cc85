package kernel

import (
	"strings"
	"testing"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
)

// validGraph is exp(x) @ w, with a graph-defined kernel computing x + x.
func validGraph(t *testing.T) *Graph {
	t.Helper()
	g := New()
	x, _ := g.AddInput(ugraph.MustShape(4, 8), ugraph.Float16)
	w, _ := g.AddInput(ugraph.MustShape(8, 4), ugraph.Float16)
	b, err := block.New(block.Dim3{2, 1, 1}, block.Dim3{128, 1, 1}, 1, 64)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := b.AddInput(ugraph.MustShape(4, 8), ugraph.Float16, block.Map{0, -1, -1}, -1)
	a, _ := b.Add(ugraph.OpAdd, ugraph.Attr{}, s, s)
	acc, _ := b.Add(ugraph.OpForloopAccum, ugraph.Attr{}, a)
	if err := b.AddOutput(acc, block.Map{0, -1, -1}); err != nil {
		t.Fatal(err)
	}
	outs, err := g.Customized([]TensorID{x}, b)
	if err != nil {
		t.Fatal(err)
	}
	e, _ := g.Add(ugraph.OpExp, ugraph.Attr{}, outs[0])
	m, err := g.Add(ugraph.OpMatmul, ugraph.Attr{}, e, w)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.MarkOutput(m); err != nil {
		t.Fatal(err)
	}
	return g
}

func TestValidate(t *testing.T) {
	if err := Validate(validGraph(t)); err != nil {
		t.Fatalf("a built graph: %v", err)
	}
	tests := []struct {
		name   string
		mutate func(g *Graph)
		want   string
	}{
		{"nil", nil, "nil graph"},
		{"tensor shape", func(g *Graph) { g.Tensors[3].Shape = ugraph.MustShape(4, 4) }, "tensors differ"},
		{"operand after its op", func(g *Graph) { g.Ops[3].In[0] = 4 }, "op 3 (exp)"},
		{"block tile", func(g *Graph) { g.Ops[2].Block.Tensors[1].PostLoop = true }, "tiles differ"},
		{"block map", func(g *Graph) { g.Ops[2].Block.Ops[0].Input.IMap = block.Map{1, -1, -1} }, "op 2 (customized)"},
		{"output", func(g *Graph) { g.Outputs = []TensorID{9} }, "9"},
	}
	for _, tt := range tests {
		var g *Graph
		if tt.mutate != nil {
			g = validGraph(t)
			tt.mutate(g)
		}
		if err := Validate(g); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error naming %q", tt.name, err, tt.want)
		}
	}
}
