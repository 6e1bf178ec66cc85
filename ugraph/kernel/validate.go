package kernel

import (
	"fmt"
	"slices"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
)

// Validate replays g through the builders (New, AddInput, Add, Customized,
// MarkOutput; block.Validate for graph-defined kernels), which enforce every
// rule of DESIGN §3, and fails unless the replay rebuilds g exactly. Code
// that receives a graph it did not build (an evaluator, a loader) calls it
// once and may then rely on what the builders guarantee: operands precede
// their ops, shapes follow the shape rules, PostLoop marks post-loop tiles,
// output ops cover every grid axis.
func Validate(g *Graph) error {
	if g == nil {
		return fmt.Errorf("nil graph")
	}
	r := New()
	for i := range g.Ops {
		op := &g.Ops[i]
		var outs []TensorID
		var err error
		switch op.Kind {
		case ugraph.OpInput:
			if len(op.Out) != 1 || int(op.Out[0]) != len(r.Tensors) || int(op.Out[0]) >= len(g.Tensors) {
				return fmt.Errorf("op %d: input results %v are out of order", i, op.Out)
			}
			t := g.Tensors[op.Out[0]]
			var id TensorID
			id, err = r.AddInput(t.Shape, t.DType)
			outs = []TensorID{id}
		case ugraph.OpCustomized:
			if err = block.Validate(op.Block); err == nil {
				outs, err = r.Customized(op.In, op.Block)
			}
		default:
			var id TensorID
			id, err = r.Add(op.Kind, op.Attr, op.In...)
			outs = []TensorID{id}
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
