package interp

import (
	"fmt"
	"slices"

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
			continue
		}
		ins := distinct(op.In)
		for _, id := range ins {
			if _, isInput := life.input[id]; isInput && life.first[id] == i {
				live = ugraph.AddSize(live, size(id)) // drawn
			}
		}
		for _, id := range op.Out {
			live = ugraph.AddSize(live, size(id))
		}
		var tiles int64
		if b := op.Block; b != nil {
			for _, t := range b.Tensors {
				tiles = ugraph.AddSize(tiles, t.Shape.Bytes(elemBytes))
			}
		}
		need = max(need, ugraph.AddSize(live, tiles))
		for _, id := range append(ins, op.Out...) {
			if life.last[id] <= i && !life.output[id] {
				live -= size(id)
			}
		}
	}
	// Outputs that are inputs no op reads are drawn at the end.
	for _, id := range distinct(g.Outputs) {
		if _, isInput := life.input[id]; isInput && life.first[id] < 0 {
			live = ugraph.AddSize(live, size(id))
		}
	}
	need = max(need, live)
	for i := range g.Tensors {
		if size(kernel.TensorID(i)) > size(largest) {
			largest = kernel.TensorID(i)
		}
	}
	return need, largest
}

// distinct is ids without repeats, in order.
func distinct(ids []kernel.TensorID) []kernel.TensorID {
	var out []kernel.TensorID
	for _, id := range ids {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
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
