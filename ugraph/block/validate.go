package block

import (
	"fmt"
	"slices"

	"github.com/mirage-go/mirage/ugraph"
)

// Validate replays b through the builders (New, AddInput, Add, AddOutput)
// and fails unless the replay rebuilds b exactly: see kernel.Validate.
func Validate(b *Graph) error {
	if b == nil {
		return fmt.Errorf("no threadblock graph")
	}
	r, err := New(b.Grid, b.Threads, b.ForloopRange, b.ReductionDimx)
	if err != nil {
		return err
	}
	if err := r.SetStages(b.Stages); err != nil {
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
