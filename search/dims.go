package search

import (
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// Dimension classes. Two dims of two tensors correspond when one is computed
// from the other position by position (element-wise ops, the batch and free
// dims of a matmul, the kept dims of a reduction) or when they are
// contracted together (the two k dims of a matmul). Correspondence is an
// equivalence; its classes name the "axes" of a computation: in
// rms_norm(X) @ W they are the rows (X's dim 0), the reduction (X's dim 1,
// W's dim 0) and the columns (W's dim 1).
//
// The generator tiles the inputs of a graph-defined kernel by classes: a
// grid axis splits one class (every input with a dim of that class is
// partitioned along it, the others replicated) and the for-loop walks one
// class. Splitting corresponding dims differently would pair tiles that do
// not belong together. The classes come from the program and the candidate
// together (a candidate's inputs are the program's), so intermediate tensors
// of a candidate have classes too.

// unionFind is a disjoint-set forest over dense node ids.
type unionFind []int32

func (u unionFind) find(x int32) int32 {
	for u[x] != x {
		u[x] = u[u[x]] // path halving
		x = u[x]
	}
	return x
}

func (u unionFind) union(a, b int32) {
	if ra, rb := u.find(a), u.find(b); ra != rb {
		u[max(ra, rb)] = min(ra, rb)
	}
}

// dimLinker numbers the dims of tensors as nodes and unions them by the
// correspondence rules of the ops that relate them.
type dimLinker struct{ uf unionFind }

// add makes nodes for the dims of a tensor of shape s and returns the first.
func (l *dimLinker) add(s ugraph.Shape) int32 {
	base := int32(len(l.uf))
	for range s.Rank() {
		l.uf = append(l.uf, int32(len(l.uf)))
	}
	return base
}

func (l *dimLinker) same(a, b int32) { l.uf.union(a, b) }

// op unions the dims of an op's result (out, shape os) with its operands'
// (in, shapes is): the one rule table for both levels.
func (l *dimLinker) op(k ugraph.OpKind, a ugraph.Attr, in []int32, is []ugraph.Shape, out int32, os ugraph.Shape) {
	r := os.Rank()
	switch k.Info().Class {
	case ugraph.ClassUnary, ugraph.ClassNorm:
		for d := range r {
			l.same(out+int32(d), in[0]+int32(d))
		}
	case ugraph.ClassBinary:
		for i := range in {
			for d := range r {
				if is[i].Dim(d) == os.Dim(d) { // a broadcast dim corresponds to nothing
					l.same(out+int32(d), in[i]+int32(d))
				}
			}
		}
	case ugraph.ClassMatmul:
		for d := range r - 2 {
			l.same(out+int32(d), in[0]+int32(d))
			l.same(out+int32(d), in[1]+int32(d))
		}
		l.same(out+int32(r-2), in[0]+int32(r-2))
		l.same(out+int32(r-1), in[1]+int32(r-1))
		l.same(in[0]+int32(r-1), in[1]+int32(r-2))
	case ugraph.ClassReduction, ugraph.ClassConcat:
		for i := range in {
			for d := range r {
				if d != a.Dim {
					l.same(out+int32(d), in[i]+int32(d))
				}
			}
		}
	case ugraph.ClassAccum:
		keep := r
		if a.Accum != ugraph.AccumNone {
			keep = r - 1 // the last dim is reduced
		}
		for d := range keep {
			l.same(out+int32(d), in[0]+int32(d))
		}
	}
}

// kernel adds the tensors of g, links its ops (and their block graphs), and
// returns the first node of each tensor.
func (l *dimLinker) kernel(g *kernel.Graph) []int32 {
	base := make([]int32, len(g.Tensors))
	for t, ten := range g.Tensors {
		base[t] = l.add(ten.Shape)
	}
	var in []int32
	var is []ugraph.Shape
	for _, op := range g.Ops {
		in, is = in[:0], is[:0]
		for _, t := range op.In {
			in, is = append(in, base[t]), append(is, g.Tensors[t].Shape)
		}
		switch op.Kind {
		case ugraph.OpInput:
		case ugraph.OpCustomized:
			outs := make([]int32, len(op.Out))
			for i, t := range op.Out {
				outs[i] = base[t]
			}
			l.block(op.Block, in, outs)
		default:
			out := op.Out[0]
			l.op(op.Kind, op.Attr, in, is, base[out], g.Tensors[out].Shape)
		}
	}
	return base
}

// block adds the tiles of b and links them with each other and with the
// device tensors its input ops read (devIn) and output ops write (devOut).
// A tile's dims correspond to its device tensor's whatever the grid and
// for-loop cut from them.
func (l *dimLinker) block(b *block.Graph, devIn, devOut []int32) {
	base := make([]int32, len(b.Tensors))
	for t, ten := range b.Tensors {
		base[t] = l.add(ten.Shape)
	}
	var in []int32
	var is []ugraph.Shape
	nin, nout := 0, 0
	for _, op := range b.Ops {
		switch op.Kind {
		case ugraph.OpInput:
			for d := range b.Tensors[op.Out].Shape.Rank() {
				l.same(base[op.Out]+int32(d), devIn[nin]+int32(d))
			}
			nin++
		case ugraph.OpOutput:
			for d := range b.Tensors[op.In[0]].Shape.Rank() {
				l.same(base[op.In[0]]+int32(d), devOut[nout]+int32(d))
			}
			nout++
		default:
			in, is = in[:0], is[:0]
			for _, t := range op.Operands() {
				in, is = append(in, base[t]), append(is, b.Tensors[t].Shape)
			}
			l.op(op.Kind, op.Attr, in, is, base[op.Out], b.Tensors[op.Out].Shape)
		}
	}
}

// dimClasses returns the class of every dim of every tensor of the
// candidate g (indexed [tensor][dim]), computed from the program and g
// together: g's k-th input is the program's k-th input.
func dimClasses(program, g *kernel.Graph) [][]int32 {
	cls, _ := dimClassesAndOutputs(program, g)
	return cls
}

// dimClassesAndOutputs is dimClasses, and the classes of the program's
// outputs' dims besides.
func dimClassesAndOutputs(program, g *kernel.Graph) (cls [][]int32, outputs []int32) {
	var l dimLinker
	pbase := l.kernel(program)
	gbase := l.kernel(g)
	pin, gin := program.Inputs(), g.Inputs()
	for i := range pin {
		for d := range program.Tensors[pin[i]].Shape.Rank() {
			l.same(pbase[pin[i]]+int32(d), gbase[gin[i]]+int32(d))
		}
	}
	cls = make([][]int32, len(g.Tensors))
	for t, ten := range g.Tensors {
		cls[t] = make([]int32, ten.Shape.Rank())
		for d := range cls[t] {
			cls[t][d] = l.uf.find(gbase[t] + int32(d))
		}
	}
	for _, t := range program.Outputs {
		for d := range program.Tensors[t].Shape.Rank() {
			outputs = append(outputs, l.uf.find(pbase[t]+int32(d)))
		}
	}
	return cls, outputs
}
