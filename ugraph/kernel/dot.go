package kernel

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
)

// WriteDot writes g as a Graphviz digraph (mirage show --dot). Each kernel
// op is a node, except that a customized op is a cluster holding one node
// per op of its block graph: its input ops receive the kernel edges of its
// operands and its output ops send those of its results. Edges carry the
// shape of the tensor or tile they stand for, and the graph's outputs are
// drawn as nodes of their own.
func WriteDot(w io.Writer, g *Graph) error {
	d := dotWriter{src: map[TensorID]string{}}
	d.line("digraph ugraph {")
	d.line(`  graph [fontname="monospace"];`)
	d.line(`  node [shape=box, fontname="monospace"];`)
	d.line(`  edge [fontname="monospace", fontsize=10];`)
	for i := range g.Ops {
		op := &g.Ops[i]
		if op.Kind == ugraph.OpCustomized && op.Block != nil {
			d.cluster(g, i, op)
			continue
		}
		node := fmt.Sprintf("k%d", i)
		d.node("  ", node, kernelCall(op), resultShapes(g, op.Out)+" "+resultDTypes(g, op.Out))
		for _, t := range op.In {
			d.edge("  ", d.src[t], node, tensorShape(g, t))
		}
		for _, t := range op.Out {
			d.src[t] = node
		}
	}
	for i, t := range g.Outputs {
		node := fmt.Sprintf("out%d", i)
		d.line(fmt.Sprintf("  %s [shape=oval, label=%s];", node, dotString(fmt.Sprintf("output t%d", t))))
		d.edge("  ", d.src[t], node, tensorShape(g, t))
	}
	d.line("}")
	_, err := w.Write(d.buf.Bytes())
	return err
}

// dotWriter accumulates the DOT text and remembers which node produces
// each kernel tensor.
type dotWriter struct {
	buf bytes.Buffer
	src map[TensorID]string // tensor -> node that produces it
}

func (d *dotWriter) line(s string) {
	d.buf.WriteString(s)
	d.buf.WriteByte('\n')
}

func (d *dotWriter) node(indent, id string, label ...string) {
	d.line(fmt.Sprintf("%s%s [label=%s];", indent, id, dotLabel(label...)))
}

// edge draws from -> to; a missing source (an operand no op produces, in a
// graph assembled by hand) is left out rather than drawn to a new node.
func (d *dotWriter) edge(indent, from, to, label string) {
	if from == "" {
		return
	}
	d.line(fmt.Sprintf("%s%s -> %s [label=%s];", indent, from, to, dotString(label)))
}

// cluster draws the customized op i as a cluster of its block graph's ops.
func (d *dotWriter) cluster(g *Graph, i int, op *Op) {
	b := op.Block
	d.line(fmt.Sprintf("  subgraph cluster_k%d {", i))
	d.line("    label=" + dotLabel(kernelCall(op),
		fmt.Sprintf("grid %v, block_dim %v", b.Grid, b.Threads),
		fmt.Sprintf("forloop_range %d, reduction_dimx %d%s", b.ForloopRange, b.ReductionDimx, stagesNote(b))) + ";")
	tileSrc := map[block.TensorID]string{} // tile -> node that produces it
	var ins, outs []string                 // nodes of the input and output ops, in order
	for j := range b.Ops {
		bop := &b.Ops[j]
		node := fmt.Sprintf("k%d_s%d", i, j)
		label := []string{blockCall(op, bop)}
		switch bop.Kind {
		case ugraph.OpInput:
			ins = append(ins, node)
			label = append(label, tileShape(b, bop.Out)+" "+tileDType(b, bop.Out),
				fmt.Sprintf("imap %v, fmap %d", bop.Input.IMap, bop.Input.FMap))
		case ugraph.OpOutput:
			outs = append(outs, node)
			label = append(label, bop.Output.DShape.String(), fmt.Sprintf("omap %v", bop.Output.OMap))
		default:
			label = append(label, tileShape(b, bop.Out)+" "+tileDType(b, bop.Out))
		}
		label = append(label, phase(b, bop))
		d.node("    ", node, label...)
		for _, t := range bop.Operands() {
			d.edge("    ", tileSrc[t], node, tileShape(b, t))
		}
		if bop.Kind != ugraph.OpOutput {
			tileSrc[bop.Out] = node
		}
	}
	d.line("  }")
	for k, t := range op.In {
		if k < len(ins) {
			d.edge("  ", d.src[t], ins[k], tensorShape(g, t))
		}
	}
	for r, t := range op.Out {
		if r < len(outs) {
			d.src[t] = outs[r]
		}
	}
}

func tensorShape(g *Graph, t TensorID) string {
	if !validID(g, t) {
		return "?"
	}
	return g.Tensors[t].Shape.String()
}

// dotLabel joins lines into one quoted DOT label, centred line by line.
func dotLabel(lines ...string) string {
	quoted := make([]string, len(lines))
	for i, l := range lines {
		quoted[i] = dotEscape(l)
	}
	return `"` + strings.Join(quoted, `\n`) + `"`
}

// dotString quotes s as a DOT string.
func dotString(s string) string { return `"` + dotEscape(s) + `"` }

// dotEscape escapes what a quoted DOT string (a label, where a backslash
// starts an escape such as \n) would otherwise read specially, and turns
// newlines into DOT's \n.
func dotEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}
