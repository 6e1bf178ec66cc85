package interp

import (
	"fmt"
	"runtime"

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
	for k, id := range ids {
		if err := inputs[k].check(); err != nil {
			return nil, fmt.Errorf("interp: input %d: %w", k, err)
		}
		if want := g.Tensors[id].Shape; inputs[k].Shape != want {
			return nil, fmt.Errorf("interp: input %d has shape %v, want %v", k, inputs[k].Shape, want)
		}
	}
	// The caller's inputs: an input marked as an output is returned as a
	// copy.
	return run(g, func(k int) *Tensor { return inputs[k] }, true), nil
}

// RunDrawn evaluates g, as Run does, on the inputs d draws (d must be
// NewDraws of g): each is drawn when an op first reads it and dropped after
// the last, so that the evaluation holds what DrawnMemory counts, at most
// limit bytes.
func RunDrawn(g *kernel.Graph, d *Draws, limit int64) ([]*Tensor, error) {
	if err := kernel.Validate(g); err != nil {
		return nil, fmt.Errorf("interp: invalid graph: %w", err)
	}
	if d.g != g {
		return nil, fmt.Errorf("interp: the draws are of another graph")
	}
	if err := CheckDrawnMemory(g, limit); err != nil {
		return nil, fmt.Errorf("interp: %w", err)
	}
	return run(g, d.Input, false), nil
}

// collectAfter is how many bytes of dropped values run lets the heap hold
// before it collects them: a collection costs little next to the
// evaluation that made that much (the values hold no pointers).
const collectAfter = 256 << 20

// run evaluates valid g in op order, taking input k from input(k) when an
// op first reads it and dropping every value that is not an output after
// its last reader (lifetimes: the schedule DrawnMemory counts). shared
// says that input's tensors are the caller's, so that an input marked as
// an output is returned as a copy.
func run(g *kernel.Graph, input func(k int) *Tensor, shared bool) []*Tensor {
	life := lifetimesOf(g)
	val := make([]*Tensor, len(g.Tensors))
	var dropped int64 // bytes of values dropped since the last collection
	get := func(id kernel.TensorID) *Tensor {
		if val[id] == nil { // an input, read for the first time
			val[id] = input(life.input[id])
		}
		return val[id]
	}
	for i := range g.Ops {
		op := &g.Ops[i]
		args := make([]*Tensor, len(op.In))
		for j, id := range op.In {
			args[j] = get(id)
		}
		switch op.Kind {
		case ugraph.OpInput:
			// Drawn when first read.
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
		for _, id := range life.freed(op, i) {
			if val[id] == nil {
				continue // an input never read
			}
			if _, isInput := life.input[id]; !isInput || !shared { // not the caller's to free
				dropped += int64(len(val[id].Data)) * elemBytes
			}
			val[id] = nil
		}
		if dropped >= collectAfter {
			// Collect now, so that the next values reuse the dropped
			// ones' memory: the bound counts values, and the heap would
			// otherwise grow to twice them before the collector ran
			// (a 3.5 GiB evaluation took 5.6 GB).
			runtime.GC()
			dropped = 0
		}
	}
	outs := make([]*Tensor, len(g.Outputs))
	for i, id := range g.Outputs {
		outs[i] = get(id)
		if _, isInput := life.input[id]; isInput && shared {
			outs[i] = outs[i].Clone()
		}
	}
	return outs
}
