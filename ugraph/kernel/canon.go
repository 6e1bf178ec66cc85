package kernel

import (
	"slices"

	"github.com/mirage-go/mirage/internal/structhash"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
)

// CanonicalHash returns a hash of what g computes and how it launches,
// whatever the order of its ops: two graphs that differ only in the order
// of independent ops (at either level), in the order of a commutative op's
// operands, or in the order of a customized op's operands and outputs
// (with its block graph's input and output ops to match) hash alike. The
// inputs' order and the outputs' order are the program's, and count.
//
// Hash, not this, keys the cache and the profiles: it names one graph as
// written, and the emitted code follows the op order.
func CanonicalHash(g *Graph) uint64 {
	values := make([]uint64, len(g.Tensors))
	ops := make([]uint64, 0, len(g.Ops))
	input := 0
	for i := range g.Ops {
		op := &g.Ops[i]
		operands := make([]uint64, len(op.In))
		for j, t := range op.In {
			operands[j] = values[t]
		}
		switch op.Kind {
		case ugraph.OpInput:
			values[op.Out[0]] = structhash.Seq(canonNames.Input, structhash.Int(input), hashTensor(g.Tensors[op.Out[0]]))
			input++
			continue
		case ugraph.OpCustomized:
			c := block.Canonical(op.Block, operands)
			for j, t := range op.Out {
				values[t] = structhash.Seq(c.Outputs[j], hashTensor(g.Tensors[t]))
			}
			ops = append(ops, structhash.Seq(c.Graph, op.Attr.StructHash()))
		default: // a pre-defined op: one output
			v := structhash.Seq(op.Kind.ValueHash(op.Attr, operands), hashTensor(g.Tensors[op.Out[0]]))
			values[op.Out[0]] = v
			ops = append(ops, v)
		}
	}
	slices.Sort(ops)
	outputs := make([]uint64, len(g.Outputs))
	for i, t := range g.Outputs {
		outputs[i] = values[t]
	}
	return structhash.Seq(canonNames.Graph, structhash.Seq(ops...), structhash.Seq(outputs...))
}

var canonNames = struct{ Graph, Input uint64 }{
	structhash.String("canon.Graph"), structhash.String("canon.Input"),
}
