package interp

import (
	"fmt"
	"slices"

	"github.com/mirage-go/mirage/internal/memlimit"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// DefaultMaxBytes is the memory that Run may take: memlimit.Default.
const DefaultMaxBytes = memlimit.Default

// Run evaluates g on inputs, one per input of g (g.Inputs()) with the same
// shape, and returns one tensor per output of g (g.Outputs), in order. It
// never modifies the inputs, and its results share no storage with them.
//
// Run accepts only a graph that the kernel and block builders would build
// op by op (see check); anything else is an error, as are inputs that do not
// match. It refuses, before allocating, a graph whose evaluation needs more
// than DefaultMaxBytes (see Memory), with a *memlimit.Error.
func Run(g *kernel.Graph, inputs []*Tensor) ([]*Tensor, error) {
	return RunWithin(g, inputs, DefaultMaxBytes)
}

// RunWithin is Run with a bound of limit bytes on the memory it takes.
func RunWithin(g *kernel.Graph, inputs []*Tensor, limit int64) ([]*Tensor, error) {
	if err := kernel.Validate(g); err != nil {
		return nil, fmt.Errorf("interp: invalid graph: %w", err)
	}
	if err := CheckMemory(g, limit); err != nil {
		return nil, fmt.Errorf("interp: %w", err)
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
