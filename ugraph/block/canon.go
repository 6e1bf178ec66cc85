package block

import (
	"slices"

	"github.com/mirage-go/mirage/internal/structhash"
	"github.com/mirage-go/mirage/ugraph"
)

// Canon numbers what a block graph computes, whatever the order of its
// ops: a value number for each tile (from its op's kind, attributes,
// shape and dtype and its operands' numbers, unordered for a commutative
// op), so two graphs that build the same tiles in another order, with a
// commutative op's operands swapped, or with a grid axis of one block (or
// a loop of one iteration) mapped to a dim or not, number alike. The
// search's seeds and its enumeration build many graphs twice that way.
type Canon struct {
	// Graph numbers the whole graph: its launch parameters and the
	// multiset of its ops' values.
	Graph uint64
	// Outputs[k] is the value the k-th output op writes.
	Outputs []uint64
}

// Canonical returns g's Canon, given inputs[k], the value of the device
// tensor that g's k-th input op reads (the k-th operand of the customized
// op that holds g).
func Canonical(g *Graph, inputs []uint64) Canon {
	// The launch enters every tile's value through the inputs: an
	// accumulator's value depends on the for-loop's range even where no
	// tile shape shows it (a tile no iteration walks, summed F times).
	// A loop of one iteration runs one stage whatever depth g asks for.
	stages := g.Stages
	if g.ForloopRange == 1 {
		stages = 0
	}
	launch := structhash.Seq(canonNames.Graph, hashInts(g.Grid), hashInts(g.Threads), structhash.Int(g.ForloopRange),
		structhash.Int(g.ReductionDimx), structhash.Int(stages))
	values := make([]uint64, len(g.Tensors))
	ops := make([]uint64, 0, len(g.Ops))
	var c Canon
	k := 0
	for i := range g.Ops {
		op := &g.Ops[i]
		var v uint64
		switch op.Kind {
		case ugraph.OpInput:
			in := op.Input
			v = structhash.Seq(canonNames.Input, launch, inputs[k], in.DShape.StructHash(), hashInts(g.Splitting(in.IMap)), structhash.Int(g.Walking(in.FMap)))
			k++
		case ugraph.OpOutput:
			out := op.Output
			v = structhash.Seq(canonNames.Output, values[op.In[0]], out.DShape.StructHash(), hashInts(g.Splitting(out.OMap)))
			c.Outputs = append(c.Outputs, v)
		default:
			operands := make([]uint64, 0, 2)
			for _, t := range op.Operands() {
				operands = append(operands, values[t])
			}
			v = op.Kind.ValueHash(op.Attr, operands)
		}
		if op.Out != NoTensor {
			v = structhash.Seq(v, hashTensor(g.Tensors[op.Out]))
			values[op.Out] = v
		}
		ops = append(ops, v)
	}
	slices.Sort(ops)
	c.Graph = structhash.Seq(launch, structhash.Seq(ops...))
	return c
}

var canonNames = struct{ Graph, Input, Output uint64 }{
	structhash.String("canon.Graph"), structhash.String("canon.Input"), structhash.String("canon.Output"),
}

// Splitting returns m with the grid axes of one block unmapped: such an
// axis splits no dim, so its entry changes no tile, nor the code emitted.
// The search's enumeration writes maps so and the seed rules write theirs
// through Splitting; Canonical compares maps through it, so that graphs
// written either way are one.
func (g *Graph) Splitting(m Map) Map {
	for axis, n := range g.Grid {
		if n == 1 {
			m[axis] = -1
		}
	}
	return m
}

// Walking returns fmap, or -1 where g's loop has one iteration: that
// iteration reads the whole dim, as an input the loop does not walk does,
// and both are copied once (thread.Graph.CopiedEachIteration). Seeds and
// Canonical write and compare for-loop dims through it, as Splitting.
func (g *Graph) Walking(fmap int) int {
	if g.ForloopRange == 1 {
		return -1
	}
	return fmap
}
