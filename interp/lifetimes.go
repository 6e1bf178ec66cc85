package interp

import "github.com/mirage-go/mirage/ugraph/kernel"

// lifetimes are when an evaluation in op order needs each value of a
// graph: an input from its first reader, every value until its last
// reader, an output until the end.
type lifetimes struct {
	input  map[kernel.TensorID]int // an input's position in g.Inputs()
	first  []int                   // per tensor: the op that makes it or first reads an input; -1: none
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
		op := &g.Ops[i]
		for _, id := range op.In {
			if l.first[id] < 0 {
				l.first[id] = i
			}
			l.last[id] = i
		}
		if _, isInput := l.input[op.Out[0]]; !isInput {
			for _, id := range op.Out {
				l.first[id] = i
			}
		}
	}
	for _, id := range g.Outputs {
		l.output[id] = true
	}
	return l
}
