package interp

import (
	"slices"

	"github.com/mirage-go/mirage/ugraph/kernel"
)

// lifetimes are when an evaluation in op order needs each value of a
// graph: an input from its first reader, every value until its last
// reader, an output until the end. run follows them and drawnMemory
// counts them.
type lifetimes struct {
	input  map[kernel.TensorID]int // an input's position in g.Inputs()
	first  []int                   // per tensor: the first op that reads it; -1: none
	last   []int                   // per tensor: the last op that reads it; -1: none
	output []bool
}

func lifetimesOf(g *kernel.Graph) lifetimes {
	l := lifetimes{input: map[kernel.TensorID]int{}, first: make([]int, len(g.Tensors)),
		last: make([]int, len(g.Tensors)), output: make([]bool, len(g.Tensors))}
	for i := range l.first {
		l.first[i], l.last[i] = -1, -1
	}
	for k, id := range g.Inputs() {
		l.input[id] = k
	}
	for i := range g.Ops {
		for _, id := range g.Ops[i].In {
			if l.first[id] < 0 {
				l.first[id] = i
			}
			l.last[id] = i
		}
	}
	for _, id := range g.Outputs {
		l.output[id] = true
	}
	return l
}

// drawn lists the inputs op i reads for the first time, each once.
func (l lifetimes) drawn(op *kernel.Op, i int) []kernel.TensorID {
	var ids []kernel.TensorID
	for _, id := range op.In {
		if _, isInput := l.input[id]; isInput && l.first[id] == i && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// freed lists the values done with after op i: its operands and results
// that no later op reads and that are not outputs, each once.
func (l lifetimes) freed(op *kernel.Op, i int) []kernel.TensorID {
	var ids []kernel.TensorID
	for _, id := range slices.Concat(op.In, op.Out) {
		if l.last[id] <= i && !l.output[id] && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}
