package driver

import (
	"fmt"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// Stitch returns program with the ops of parts[i] replaced by repl[i]: a
// graph whose inputs are the part's inputs and whose outputs are the
// part's outputs, in order (a candidate of a search of Part.Program). A nil
// replacement keeps the part's own ops. parts is a partition of program's
// compute ops, in order (Partition's). The program's inputs come first,
// in their order, so the result takes the same inputs as the program.
func Stitch(program *kernel.Graph, parts []Part, repl []*kernel.Graph) (*kernel.Graph, error) {
	g := kernel.New()
	ids := map[kernel.TensorID]kernel.TensorID{}
	for _, t := range program.Inputs() {
		id, err := g.AddInput(program.Tensors[t].Shape, program.Tensors[t].DType)
		if err != nil {
			return nil, err
		}
		ids[t] = id
	}
	for i, p := range parts {
		if repl[i] == nil {
			for _, op := range p.Ops {
				if err := replay(g, &program.Ops[op], ids); err != nil {
					return nil, fmt.Errorf("part %d: %v", i, err)
				}
			}
			continue
		}
		if err := splice(g, p, repl[i], ids); err != nil {
			return nil, fmt.Errorf("part %d: %v", i, err)
		}
	}
	for _, t := range program.Outputs {
		id, ok := ids[t]
		if !ok {
			return nil, fmt.Errorf("output tensor %d is not computed by any part", t)
		}
		if err := g.MarkOutput(id); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// splice adds the ops of r, a replacement of part p, to g: r's inputs are
// p's inputs (named in ids), and ids learns p's outputs from r's.
func splice(g *kernel.Graph, p Part, r *kernel.Graph, ids map[kernel.TensorID]kernel.TensorID) error {
	rin := r.Inputs()
	if len(rin) != len(p.Inputs) || len(r.Outputs) != len(p.Outputs) {
		return fmt.Errorf("the replacement has %d inputs and %d outputs; the part %d and %d",
			len(rin), len(r.Outputs), len(p.Inputs), len(p.Outputs))
	}
	rids := map[kernel.TensorID]kernel.TensorID{}
	for k, t := range rin {
		if r.Tensors[t] != g.Tensors[ids[p.Inputs[k]]] {
			return fmt.Errorf("replacement input %d is %v, the part's %v", k, r.Tensors[t].Shape, g.Tensors[ids[p.Inputs[k]]].Shape)
		}
		rids[t] = ids[p.Inputs[k]]
	}
	for i := range r.Ops {
		if r.Ops[i].Kind == ugraph.OpInput {
			continue
		}
		if err := replay(g, &r.Ops[i], rids); err != nil {
			return err
		}
	}
	for j, t := range r.Outputs {
		ids[p.Outputs[j]] = rids[t]
	}
	return nil
}
