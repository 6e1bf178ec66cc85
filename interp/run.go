package interp

import (
	"fmt"
	"slices"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// Run evaluates g on inputs, one per input of g (g.Inputs()) with the same
// shape, and returns one tensor per output of g (g.Outputs), in order. It
// never modifies the inputs, and its results share no storage with them.
//
// Run accepts only a graph that the kernel and block builders would build
// op by op (see check); anything else is an error, as are inputs that do not
// match.
func Run(g *kernel.Graph, inputs []*Tensor) ([]*Tensor, error) {
	if err := check(g); err != nil {
		return nil, fmt.Errorf("interp: invalid graph: %w", err)
	}
	ids := g.Inputs()
	if len(inputs) != len(ids) {
		return nil, fmt.Errorf("interp: the graph has %d inputs, got %d tensors", len(ids), len(inputs))
	}
	val := make([]*Tensor, len(g.Tensors))
	for k, id := range ids {
		if err := inputs[k].check(); err != nil {
			return nil, fmt.Errorf("interp: input %d: %w", k, err)
		}
		if want := g.Tensors[id].Shape; inputs[k].Shape != want {
			return nil, fmt.Errorf("interp: input %d has shape %v, want %v", k, inputs[k].Shape, want)
		}
		val[id] = inputs[k]
	}
	for i := range g.Ops {
		op := &g.Ops[i]
		args := make([]*Tensor, len(op.In))
		for j, id := range op.In {
			args[j] = val[id]
		}
		switch op.Kind {
		case ugraph.OpInput:
			// Bound above.
		case ugraph.OpCustomized:
			for j, t := range runCustomized(op.Block, args) {
				val[op.Out[j]] = t
			}
		default:
			dst := NewTensor(g.Tensors[op.Out[0]].Shape)
			var y *Tensor
			if len(args) > 1 {
				y = args[1]
			}
			eval(op.Kind, op.Attr, dst, args[0], y)
			val[op.Out[0]] = dst
		}
	}
	outs := make([]*Tensor, len(g.Outputs))
	for i, id := range g.Outputs {
		outs[i] = val[id]
		if slices.Contains(ids, id) {
			outs[i] = outs[i].Clone() // an input marked as an output
		}
	}
	return outs, nil
}

// check replays g through the kernel and block builders, which enforce every
// rule of DESIGN §3, and fails unless the replay rebuilds g exactly. The
// evaluation then relies on what the builders guarantee (operands precede
// their ops, result shapes follow the shape rules, PostLoop marks the tiles
// computed after the for-loop, an output op covers every grid axis) and
// never re-derives it.
func check(g *kernel.Graph) error {
	if g == nil {
		return fmt.Errorf("nil graph")
	}
	r := kernel.New()
	for i := range g.Ops {
		op := &g.Ops[i]
		var outs []kernel.TensorID
		var err error
		switch op.Kind {
		case ugraph.OpInput:
			if len(op.Out) != 1 || int(op.Out[0]) != len(r.Tensors) || int(op.Out[0]) >= len(g.Tensors) {
				return fmt.Errorf("op %d: input results %v are out of order", i, op.Out)
			}
			t := g.Tensors[op.Out[0]]
			var id kernel.TensorID
			id, err = r.AddInput(t.Shape, t.DType)
			outs = []kernel.TensorID{id}
		case ugraph.OpCustomized:
			if err = checkBlock(op.Block); err == nil {
				outs, err = r.Customized(op.In, op.Block)
			}
		default:
			var id kernel.TensorID
			id, err = r.Add(op.Kind, op.Attr, op.In...)
			outs = []kernel.TensorID{id}
		}
		if err != nil {
			return fmt.Errorf("op %d (%v): %w", i, op.Kind, err)
		}
		if !slices.Equal(outs, op.Out) || op.Attr != r.Ops[i].Attr {
			return fmt.Errorf("op %d (%v) differs from what the builder makes of it", i, op.Kind)
		}
	}
	if !slices.Equal(r.Tensors, g.Tensors) {
		return fmt.Errorf("the tensors differ from those the ops produce")
	}
	for _, id := range g.Outputs {
		if err := r.MarkOutput(id); err != nil {
			return err
		}
	}
	return nil
}

// checkBlock is check for a block graph.
func checkBlock(b *block.Graph) error {
	if b == nil {
		return fmt.Errorf("no threadblock graph")
	}
	r, err := block.New(b.Grid, b.Threads, b.ForloopRange, b.ReductionDimx)
	if err != nil {
		return err
	}
	for i := range b.Ops {
		op := &b.Ops[i]
		switch {
		case op.Kind == ugraph.OpInput:
			if op.Out < 0 || int(op.Out) >= len(b.Tensors) {
				return fmt.Errorf("block op %d (input): tile %d out of range", i, op.Out)
			}
			_, err = r.AddInput(op.Input.DShape, b.Tensors[op.Out].DType, op.Input.IMap, op.Input.FMap)
		case op.Kind == ugraph.OpOutput:
			err = r.AddOutput(op.In[0], op.Output.OMap)
		case op.Kind.AllowedAt(ugraph.LevelBlock):
			_, err = r.Add(op.Kind, op.Attr, op.Operands()...)
		default:
			err = fmt.Errorf("not a threadblock op")
		}
		if err != nil {
			return fmt.Errorf("block op %d (%v): %w", i, op.Kind, err)
		}
		if r.Ops[i] != *op {
			return fmt.Errorf("block op %d (%v) differs from what the builder makes of it", i, op.Kind)
		}
	}
	if !slices.Equal(r.Tensors, b.Tensors) {
		return fmt.Errorf("the block graph's tiles differ from those its ops produce")
	}
	return nil
}
