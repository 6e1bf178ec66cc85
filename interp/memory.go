package interp

import (
	"fmt"
	"slices"

	"github.com/mirage-go/mirage/internal/memlimit"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
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
	for i := range g.Tensors {
		need = ugraph.AddSize(need, g.Tensors[i].Shape.Bytes(elemBytes))
	}
	inputs := g.Inputs()
	for _, id := range g.Outputs {
		for _, in := range inputs {
			if id == in {
				need = ugraph.AddSize(need, g.Tensors[id].Shape.Bytes(elemBytes))
			}
		}
	}
	var tiles int64
	for i := range g.Ops {
		if b := g.Ops[i].Block; b != nil {
			tiles = max(tiles, tileBytes(b))
		}
	}
	return ugraph.AddSize(need, tiles), largestTensor(g)
}

// tileBytes is what a graph-defined kernel's tiles take while it runs.
func tileBytes(b *block.Graph) int64 {
	var n int64
	for _, t := range b.Tensors {
		n = ugraph.AddSize(n, t.Shape.Bytes(elemBytes))
	}
	return n
}

// largestTensor is the tensor of g that takes the most (the first such).
func largestTensor(g *kernel.Graph) kernel.TensorID {
	var largest kernel.TensorID
	for i := range g.Tensors {
		if g.Tensors[i].Shape.Bytes(elemBytes) > g.Tensors[largest].Shape.Bytes(elemBytes) {
			largest = kernel.TensorID(i)
		}
	}
	return largest
}

// DrawnMemory returns the bytes of values that evaluating g with RunDrawn
// holds at its peak: the inputs drawn and not yet read for the last time,
// the values made and not yet read for the last time (outputs to the end),
// and, while a graph-defined kernel runs, its tiles. g must be valid. A
// LLaMA-70B decoder layer, whose weights alone are 7.4 GiB in float64,
// needs about the largest of them and its neighbours.
func DrawnMemory(g *kernel.Graph) int64 {
	need, _ := drawnMemory(g)
	return need
}

// drawnMemory is DrawnMemory and the tensor of g that takes the most.
func drawnMemory(g *kernel.Graph) (need int64, largest kernel.TensorID) {
	life := lifetimesOf(g)
	size := func(id kernel.TensorID) int64 { return g.Tensors[id].Shape.Bytes(elemBytes) }
	var live int64
	for i := range g.Ops {
		op := &g.Ops[i]
		if op.Kind == ugraph.OpInput {
			continue // drawn when first read
		}
		for _, id := range slices.Concat(life.drawn(op, i), op.Out) {
			live = ugraph.AddSize(live, size(id))
		}
		var tiles int64
		if b := op.Block; b != nil {
			tiles = tileBytes(b)
		}
		need = max(need, ugraph.AddSize(live, tiles))
		for _, id := range life.freed(op, i) {
			live -= size(id)
		}
	}
	// Outputs that are inputs no op reads are drawn at the end.
	var seen []kernel.TensorID
	for _, id := range g.Outputs {
		if _, isInput := life.input[id]; isInput && life.first[id] < 0 && !slices.Contains(seen, id) {
			seen = append(seen, id)
			live = ugraph.AddSize(live, size(id))
		}
	}
	return max(need, live), largestTensor(g)
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
	return checkNeed(g, need, largest, limit)
}

// CheckDrawnMemory is CheckMemory for RunDrawn (DrawnMemory).
func CheckDrawnMemory(g *kernel.Graph, limit int64) error {
	need, largest := drawnMemory(g)
	return checkNeed(g, need, largest, limit)
}

func checkNeed(g *kernel.Graph, need int64, largest kernel.TensorID, limit int64) error {
	if need <= limit {
		return nil
	}
	t := g.Tensors[largest].Shape
	return &memlimit.Error{
		What: "evaluating it in float64", Need: need, Limit: limit,
		Detail: fmt.Sprintf("its largest tensor, t%d %v, takes %s", largest, t, memlimit.Format(t.Bytes(elemBytes))),
	}
}
