package kernel

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/internal/ujson"
)

// Fprint writes g for a human (mirage show): one op per line with its
// result's shape and dtype, in order, then the graph's outputs.
//
//	t0 = input()             [16, 4096]    float16
//	t2 = matmul(t0, t1)      [16, 6144]    float16
//
// A customized op is followed by its block graph, indented: a line with
// the launch parameters, then one line per block op with its tile's shape
// and dtype, and whether it runs in the for-loop, accumulates across it, or
// runs after it. Input ops add their imap and fmap; output ops, which are
// written as the device tensor they produce, add their omap and show the
// device tensor's shape. Kernel tensors are t0, t1, ...; tiles s0, s1, ...
func Fprint(w io.Writer, g *Graph) error {
	// Kernel ops align with each other across the block graphs between
	// them; each block graph's ops align among themselves.
	var t table
	const kernelGroup = 0
	for i := range g.Ops {
		op := &g.Ops[i]
		t.row(kernelGroup, "", kernelCall(op), resultShapes(g, op.Out), resultDTypes(g, op.Out))
		if op.Kind == ugraph.OpCustomized && op.Block != nil {
			printBlock(&t, i+1, op)
		}
	}
	t.text("outputs: " + names("t", g.Outputs))
	_, err := w.Write(t.bytes())
	return err
}

// stagesNote names a block graph's pipeline depth where it sets one.
func stagesNote(b *block.Graph) string {
	if b.Stages == 0 {
		return ""
	}
	return fmt.Sprintf(", stages %d", b.Stages)
}

func printBlock(t *table, group int, op *Op) {
	b := op.Block
	const indent = "    "
	t.text(fmt.Sprintf("%sgrid %v, block_dim %v, forloop_range %d, reduction_dimx %d%s",
		indent, b.Grid, b.Threads, b.ForloopRange, b.ReductionDimx, stagesNote(b)))
	for i := range b.Ops {
		bop := &b.Ops[i]
		call := blockCall(op, bop)
		switch bop.Kind {
		case ugraph.OpInput:
			t.row(group, indent, call, tileShape(b, bop.Out), tileDType(b, bop.Out), phase(b, bop),
				fmt.Sprintf("imap %v, fmap %d", bop.Input.IMap, bop.Input.FMap))
		case ugraph.OpOutput:
			t.row(group, indent, call, bop.Output.DShape.String(), tileDType(b, bop.In[0]), phase(b, bop),
				fmt.Sprintf("omap %v", bop.Output.OMap))
		default:
			t.row(group, indent, call, tileShape(b, bop.Out), tileDType(b, bop.Out), phase(b, bop))
		}
	}
}

// table lays out lines of cells in columns. Rows of one group share column
// widths wherever they are; text lines stand on their own.
type table struct {
	lines []line
}

type line struct {
	group  int // -1 for a text line
	indent string
	cells  []string
}

func (t *table) row(group int, indent string, cells ...string) {
	t.lines = append(t.lines, line{group, indent, cells})
}

func (t *table) text(s string) { t.lines = append(t.lines, line{-1, s, nil}) }

// bytes renders the lines, cells separated by two spaces at least and
// none padded at the end of a line.
func (t *table) bytes() []byte {
	widths := map[int][]int{} // group -> column -> width
	for _, l := range t.lines {
		w := widths[l.group]
		for c, cell := range l.cells {
			if c == len(w) {
				w = append(w, 0)
			}
			w[c] = max(w[c], utf8.RuneCountInString(cell))
		}
		widths[l.group] = w
	}
	var b bytes.Buffer
	for _, l := range t.lines {
		b.WriteString(l.indent)
		for c, cell := range l.cells {
			b.WriteString(cell)
			if c < len(l.cells)-1 {
				b.WriteString(strings.Repeat(" ", widths[l.group][c]-utf8.RuneCountInString(cell)+2))
			}
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// kernelCall renders a kernel op as "t3 = op(t1, t2, attr=v)".
func kernelCall(op *Op) string {
	return call(names("t", op.Out), op.Kind, names("t", op.In), op.Attr)
}

// blockCall renders an op of the block graph of the customized op c. Input
// and output ops name the device tensors they read and write.
func blockCall(c *Op, op *block.Op) string {
	switch op.Kind {
	case ugraph.OpInput:
		return call(tileName(op.Out), op.Kind, nthName(c.In, inputIndex(c.Block, op)), ugraph.Attr{})
	case ugraph.OpOutput:
		return call(nthName(c.Out, outputIndex(c.Block, op)), op.Kind, names("s", op.Operands()), ugraph.Attr{})
	}
	return call(tileName(op.Out), op.Kind, names("s", op.Operands()), op.Attr)
}

func call(results string, k ugraph.OpKind, operands string, a ugraph.Attr) string {
	args := operands
	if attrs := strings.Join(ujson.AttrText(k, a), ", "); attrs != "" {
		if args != "" {
			args += ", "
		}
		args += attrs
	}
	return fmt.Sprintf("%s = %v(%s)", results, k, args)
}

// phase says when a block op runs: every iteration of the for-loop,
// every iteration into an accumulator, or once after the loop.
func phase(b *block.Graph, op *block.Op) string {
	switch {
	case op.Kind == ugraph.OpForloopAccum:
		return "accumulate"
	case op.Kind == ugraph.OpOutput:
		return "after loop"
	case op.Out >= 0 && int(op.Out) < len(b.Tensors) && b.Tensors[op.Out].PostLoop:
		return "after loop"
	}
	return "in loop"
}

// inputIndex is the position of input op op among b's input ops, which is
// the index of the customized op's operand it reads.
func inputIndex(b *block.Graph, op *block.Op) int { return indexOf(b.InputOps(), op) }

// outputIndex is the position of output op op among b's output ops, which
// is the index of the customized op's result it writes.
func outputIndex(b *block.Graph, op *block.Op) int { return indexOf(b.OutputOps(), op) }

func indexOf(ops []*block.Op, op *block.Op) int {
	for i, o := range ops {
		if o == op {
			return i
		}
	}
	return -1
}

// names renders tensor ids as "t0, t1".
func names[ID ~int32](prefix string, ids []ID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprintf("%s%d", prefix, id)
	}
	return strings.Join(s, ", ")
}

// nthName names ids[i], or "t?" for a graph assembled inconsistently by
// hand (Fprint never panics on one).
func nthName(ids []TensorID, i int) string {
	if i < 0 || i >= len(ids) {
		return "t?"
	}
	return fmt.Sprintf("t%d", ids[i])
}

func tileName(id block.TensorID) string { return fmt.Sprintf("s%d", id) }

func resultShapes(g *Graph, ids []TensorID) string {
	return join(ids, func(id TensorID) string {
		if !validID(g, id) {
			return "?"
		}
		return g.Tensors[id].Shape.String()
	})
}

// resultDTypes lists the results' dtypes, once when they agree.
func resultDTypes(g *Graph, ids []TensorID) string {
	seen := map[string]bool{}
	return join(ids, func(id TensorID) string {
		dt := "?"
		if validID(g, id) {
			dt = g.Tensors[id].DType.String()
		}
		if seen[dt] {
			return ""
		}
		seen[dt] = true
		return dt
	})
}

func validID(g *Graph, id TensorID) bool { return id >= 0 && int(id) < len(g.Tensors) }

// join renders each id with f and joins the non-empty results.
func join(ids []TensorID, f func(TensorID) string) string {
	var s []string
	for _, id := range ids {
		if x := f(id); x != "" {
			s = append(s, x)
		}
	}
	return strings.Join(s, ", ")
}

func tileShape(b *block.Graph, id block.TensorID) string {
	if id < 0 || int(id) >= len(b.Tensors) {
		return "?"
	}
	return b.Tensors[id].Shape.String()
}

func tileDType(b *block.Graph, id block.TensorID) string {
	if id < 0 || int(id) >= len(b.Tensors) {
		return "?"
	}
	return b.Tensors[id].DType.String()
}
