package ffverify

import (
	"fmt"
	"slices"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// validate replays g through the kernel and block builders, which enforce
// every rule of DESIGN §3, and fails unless the replay rebuilds g exactly.
// The evaluators then rely on what the builders guarantee (operands precede
// their ops, shapes follow the shape rules, PostLoop marks post-loop tiles,
// output ops cover every grid axis) and never re-check it.
func validate(g *kernel.Graph) error {
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
			if err = validateBlock(op.Block); err == nil {
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
	if len(g.Outputs) == 0 {
		return fmt.Errorf("the graph has no outputs")
	}
	for _, id := range g.Outputs {
		if err := r.MarkOutput(id); err != nil {
			return err
		}
	}
	return nil
}

func validateBlock(b *block.Graph) error {
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
