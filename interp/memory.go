package interp

import (
	"fmt"

	"github.com/mirage-go/mirage/internal/memlimit"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// elemBytes is the size of one value: a float64.
const elemBytes = 8

// Memory returns the bytes of values that evaluating g with Run takes: every
// tensor of g, inputs included (Run keeps every result until it returns),
// copies of inputs marked as outputs, and the tiles of the graph-defined
// kernel that has the most (they live while that kernel runs). g must be
// valid. The total saturates at math.MaxInt64 rather than overflow.
func Memory(g *kernel.Graph) int64 {
	need, _ := memory(g)
	return need
}

// memory is Memory and the tensor of g that takes the most.
func memory(g *kernel.Graph) (need int64, largest kernel.TensorID) {
	var tiles int64
	for i := range g.Tensors {
		b := g.Tensors[i].Shape.Bytes(elemBytes)
		need = ugraph.AddSize(need, b)
		if b > g.Tensors[largest].Shape.Bytes(elemBytes) {
			largest = kernel.TensorID(i)
		}
	}
	inputs := g.Inputs()
	for _, id := range g.Outputs {
		for _, in := range inputs {
			if id == in {
				need = ugraph.AddSize(need, g.Tensors[id].Shape.Bytes(elemBytes))
			}
		}
	}
	for i := range g.Ops {
		if b := g.Ops[i].Block; b != nil {
			var n int64
			for _, t := range b.Tensors {
				n = ugraph.AddSize(n, t.Shape.Bytes(elemBytes))
			}
			tiles = max(tiles, n)
		}
	}
	return ugraph.AddSize(need, tiles), largest
}

// OutputMemory returns the bytes of g's outputs, which Run returns.
func OutputMemory(g *kernel.Graph) int64 {
	var n int64
	for _, id := range g.Outputs {
		n = ugraph.AddSize(n, g.Tensors[id].Shape.Bytes(elemBytes))
	}
	return n
}

// CheckMemory returns a *memlimit.Error, which names g's largest tensor,
// when evaluating g (Memory) needs more than limit bytes. g must be valid.
func CheckMemory(g *kernel.Graph, limit int64) error {
	need, largest := memory(g)
	if need <= limit {
		return nil
	}
	t := g.Tensors[largest].Shape
	return &memlimit.Error{
		What: "evaluating it in float64", Need: need, Limit: limit,
		Detail: fmt.Sprintf("its largest tensor, t%d %v, takes %s", largest, t, memlimit.Format(t.Bytes(elemBytes))),
	}
}
