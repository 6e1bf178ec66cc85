package search

import (
	"slices"

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
// correspondence rules of the ops that relate them. It also records the
// dims that ops sum over (summed): the k dims of a matmul, a reduced or
// normalized dim, the dim an accumulator reduces or the for-loop walks.
type dimLinker struct {
	uf     unionFind
	summed []int32
}

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
		if k.Info().Class == ugraph.ClassNorm {
			for d := a.Dim; d < r; d++ {
				l.summed = append(l.summed, in[0]+int32(d))
			}
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
		l.summed = append(l.summed, in[0]+int32(r-1))
	case ugraph.ClassReduction, ugraph.ClassConcat:
		if k.Info().Class == ugraph.ClassReduction {
			l.summed = append(l.summed, in[0]+int32(a.Dim))
		}
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
			l.summed = append(l.summed, in[0]+int32(r-1))
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
// device tensors its input ops read (devIn) and output ops write (devOut),
// and returns the first node of each tile. A tile's dims correspond to its
// device tensor's whatever the grid and for-loop cut from them, except for
// a composite output dim: one along which a grid axis lays the blocks'
// tiles while splitting another class (the partial sums over slices of
// the keys, side by side along the columns, say). Such a dim corresponds
// to nothing.
func (l *dimLinker) block(b *block.Graph, devIn, devOut []int32) []int32 {
	base := make([]int32, len(b.Tensors))
	for t, ten := range b.Tensors {
		base[t] = l.add(ten.Shape)
	}
	// split[a]: a node of the class grid axis a splits, or -1.
	split := [3]int32{-1, -1, -1}
	for i, op := range b.InputOps() {
		for a, d := range op.Input.IMap {
			if d >= 0 && b.Grid[a] > 1 && split[a] < 0 {
				split[a] = devIn[i] + int32(d)
			}
		}
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
			if f := op.Input.FMap; f >= 0 && b.ForloopRange > 1 {
				l.summed = append(l.summed, devIn[nin]+int32(f)) // accumulators sum the iterations
			}
			nin++
		case ugraph.OpOutput:
			if devOut == nil {
				continue // the outputs are not linked (inputClasses.outputDims)
			}
			tile := base[op.In[0]]
			for d := range b.Tensors[op.In[0]].Shape.Rank() {
				if a := slices.Index(op.Output.OMap[:], d); a >= 0 && b.Grid[a] > 1 &&
					(split[a] < 0 || l.uf.find(split[a]) != l.uf.find(tile+int32(d))) {
					continue // a composite dim: the blocks' slices of another class, laid along d
				}
				l.same(tile+int32(d), devOut[nout]+int32(d))
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
	return base
}

// classes is what the generator knows of the dims of a candidate.
type classes struct {
	of      [][]int32 // per tensor of the candidate, per dim
	outputs []int32   // of the program's output dims
	// free are the classes of the program's output dims that the program
	// never sums over (rows and columns of a matmul's result, say, but not
	// its k dim). At a position p of a free class, a program output depends
	// on its inputs at position p only.
	free []int32
}

// classify computes the classes of the candidate g's dims, and of the
// program's outputs, from the program and g together (g's k-th input is
// the program's k-th input).
func classify(program, g *kernel.Graph) classes {
	var l dimLinker
	pbase := l.kernel(program)
	summed := len(l.summed) // the program's own
	gbase := l.kernel(g)
	pin, gin := program.Inputs(), g.Inputs()
	for i := range pin {
		for d := range program.Tensors[pin[i]].Shape.Rank() {
			l.same(pbase[pin[i]]+int32(d), gbase[gin[i]]+int32(d))
		}
	}
	var c classes
	c.of = make([][]int32, len(g.Tensors))
	for t, ten := range g.Tensors {
		c.of[t] = make([]int32, ten.Shape.Rank())
		for d := range c.of[t] {
			c.of[t][d] = l.uf.find(gbase[t] + int32(d))
		}
	}
	for _, t := range program.Outputs {
		for d := range program.Tensors[t].Shape.Rank() {
			c.outputs = append(c.outputs, l.uf.find(pbase[t]+int32(d)))
		}
	}
	for _, cl := range c.outputs {
		if !slices.Contains(c.free, cl) && !slices.ContainsFunc(l.summed[:summed], func(n int32) bool { return l.uf.find(n) == cl }) {
			c.free = append(c.free, cl)
		}
	}
	return c
}

// inputClasses are the classes of the dims of a customized op's inputs,
// labelled 0, 1, ... in order of appearance: all that the op's tiling and
// output maps depend on (so a block search keyed by them can be replayed).
type inputClasses struct {
	label [][]int8 // per input, per dim
	free  []bool   // per label: whether it is a free class
}

// inputs labels the classes of the dims of ins and returns the classes in
// label order.
func (c classes) inputs(ins []kernel.TensorID) (*inputClasses, []int32) {
	ic := &inputClasses{label: make([][]int8, len(ins))}
	var present []int32
	for i, t := range ins {
		for _, cl := range c.of[t] {
			l := slices.Index(present, cl)
			if l < 0 {
				l = len(present)
				present = append(present, cl)
				ic.free = append(ic.free, slices.Contains(c.free, cl))
			}
			ic.label[i] = append(ic.label[i], int8(l))
		}
	}
	return ic, present
}

// anyDim allows every dim (outputDims).
const anyDim = 0xff

// outputDims says, for each tile of open (the outputs-to-be of g, a block
// graph on inputs of classes ic) and per grid axis, which dims of the tile
// its output map may send the axis to, as a bit set (an empty set: no
// output map). Each output has a map of its own.
//
// An axis that splits a free class (split holds the class label per axis,
// -1 for none) goes to the dim of that class when the tile has one. The
// blocks along the axis computed consecutive slices of the class; laid
// side by side along another dim, they would leave the class's positions
// scattered over two dims. Nothing can use such a tensor but a later kernel
// whose grid reads the slices back (at a free class's position, a program
// output depends on that position alone, so no sum can mix them), and the
// same two kernels with the class kept in one dim do the same work and
// move the same bytes: so the generator keeps only that layout. (Axes that
// split a summed class, the keys of attention say, write partial results
// whose layout is free.)
func (ic *inputClasses) outputDims(g *block.Graph, split [3]int8, open []block.TensorID) [][3]uint8 {
	var l dimLinker
	nlabels := int32(len(ic.free))
	for range nlabels {
		l.uf = append(l.uf, int32(len(l.uf))) // a node per class
	}
	devIn := make([]int32, len(ic.label))
	for i, labels := range ic.label {
		devIn[i] = int32(len(l.uf))
		for d, lab := range labels {
			l.uf = append(l.uf, int32(len(l.uf)))
			l.same(devIn[i]+int32(d), int32(lab))
		}
	}
	tiles := l.block(g, devIn, nil)
	dims := make([][3]uint8, len(open))
	for i := range dims {
		dims[i] = [3]uint8{anyDim, anyDim, anyDim}
	}
	for a, lab := range split {
		if lab < 0 {
			continue
		}
		root := l.uf.find(int32(lab))
		free := true // every class merged into root is free
		for other := range nlabels {
			if l.uf.find(other) == root && !ic.free[other] {
				free = false
			}
		}
		if !free {
			continue
		}
		for i, t := range open {
			var here uint8
			for d := range g.Tensors[t].Shape.Rank() {
				if l.uf.find(tiles[t]+int32(d)) == root {
					here |= 1 << d
				}
			}
			if here != 0 {
				dims[i][a] = here
			}
		}
	}
	return dims
}
