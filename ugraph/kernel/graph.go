// Package kernel is the top level of a μGraph: device tensors, the
// pre-defined kernel operators, and graph-defined kernels (customized ops)
// whose meaning is a threadblock graph (package block).
package kernel

import (
	"fmt"
	"slices"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
)

// TensorID names a device tensor of a Graph: an index into Graph.Tensors.
type TensorID int32

// Tensor is a device tensor: row-major, dense.
type Tensor struct {
	Shape ugraph.Shape
	DType ugraph.DType
}

// Bytes is the tensor's size in device memory.
func (t Tensor) Bytes() int { return int(t.Shape.Bytes(t.DType.Size())) }

// Op is one kernel operator: an input, a pre-defined op (one output), or a
// customized op (one output per output op of its block graph).
type Op struct {
	Kind  ugraph.OpKind
	In    []TensorID
	Out   []TensorID
	Attr  ugraph.Attr  // parameters the kind uses; the rest zero
	Block *block.Graph // the graph-defined kernel, when Kind is OpCustomized
}

// Graph is a kernel graph. Build it with New and the Add methods, which check
// every shape rule; a Graph built that way is always valid. Tensors are
// numbered in the order ops create them, so an op's operands always precede
// it.
type Graph struct {
	Tensors []Tensor
	Ops     []Op
	Outputs []TensorID // marked outputs, in order
}

// New returns an empty kernel graph.
func New() *Graph { return &Graph{} }

// Clone returns a copy of g whose op and tensor lists may be changed
// without affecting g. Block graphs are shared: they are immutable once
// attached.
func (g *Graph) Clone() *Graph {
	c := &Graph{
		Tensors: slices.Clone(g.Tensors),
		Ops:     slices.Clone(g.Ops),
		Outputs: slices.Clone(g.Outputs),
	}
	for i := range c.Ops {
		c.Ops[i].In = slices.Clone(c.Ops[i].In)
		c.Ops[i].Out = slices.Clone(c.Ops[i].Out)
	}
	return c
}

// Inputs returns the input tensors in the order they were added.
func (g *Graph) Inputs() []TensorID {
	var ins []TensorID
	for _, op := range g.Ops {
		if op.Kind == ugraph.OpInput {
			ins = append(ins, op.Out[0])
		}
	}
	return ins
}

// Pop removes the last op and the tensors it produced (the search's undo).
// It must not remove a tensor that is marked as an output.
func (g *Graph) Pop() {
	op := g.Ops[len(g.Ops)-1]
	g.Ops = g.Ops[:len(g.Ops)-1]
	if len(op.Out) > 0 {
		g.Tensors = g.Tensors[:op.Out[0]]
	}
}

func (g *Graph) push(op Op, ts ...Tensor) []TensorID {
	op.Out = make([]TensorID, len(ts))
	for i, t := range ts {
		op.Out[i] = TensorID(len(g.Tensors))
		g.Tensors = append(g.Tensors, t)
	}
	g.Ops = append(g.Ops, op)
	return op.Out
}

func (g *Graph) operands(k ugraph.OpKind, ids []TensorID) ([]ugraph.Shape, []ugraph.DType, error) {
	shapes := make([]ugraph.Shape, len(ids))
	dtypes := make([]ugraph.DType, len(ids))
	for i, id := range ids {
		if id < 0 || int(id) >= len(g.Tensors) {
			return nil, nil, fmt.Errorf("%v: operand %d is not a tensor of this graph", k, id)
		}
		shapes[i], dtypes[i] = g.Tensors[id].Shape, g.Tensors[id].DType
	}
	return shapes, dtypes, nil
}

// AddInput adds a device tensor that the caller provides.
func (g *Graph) AddInput(s ugraph.Shape, dt ugraph.DType) (TensorID, error) {
	if !s.Valid() {
		return 0, fmt.Errorf("input: invalid shape %v", s)
	}
	if !dt.Valid() {
		return 0, fmt.Errorf("input: invalid dtype %v", dt)
	}
	return g.push(Op{Kind: ugraph.OpInput}, Tensor{Shape: s, DType: dt})[0], nil
}

// Add adds a pre-defined op of the given kind and returns its result.
// Attribute fields the kind does not use are ignored.
func (g *Graph) Add(k ugraph.OpKind, a ugraph.Attr, operands ...TensorID) (TensorID, error) {
	info := k.Info()
	if !k.AllowedAt(ugraph.LevelKernel) || info.Class == ugraph.ClassIO || info.Class == ugraph.ClassCustomized {
		return 0, fmt.Errorf("%v is not a pre-defined kernel op", k)
	}
	shapes, dtypes, err := g.operands(k, operands)
	if err != nil {
		return 0, err
	}
	a = ugraph.Canonical(k, a)
	shape, err := ugraph.InferShape(k, a, shapes, 0)
	if err != nil {
		return 0, err
	}
	dt, err := ugraph.SameDType(k, dtypes)
	if err != nil {
		return 0, err
	}
	op := Op{Kind: k, In: slices.Clone(operands), Attr: a}
	return g.push(op, Tensor{Shape: shape, DType: dt})[0], nil
}

// Customized adds a graph-defined kernel: b's k-th input op reads
// operands[k], which must have the shape and dtype that input op declares.
// It returns one device tensor per output op of b. b must not change
// afterwards.
func (g *Graph) Customized(operands []TensorID, b *block.Graph) ([]TensorID, error) {
	k := ugraph.OpCustomized
	shapes, dtypes, err := g.operands(k, operands)
	if err != nil {
		return nil, err
	}
	fail := func(format string, args ...any) ([]TensorID, error) {
		return nil, &ugraph.OpError{Op: k, Inputs: shapes, Rule: fmt.Sprintf(format, args...)}
	}
	if b == nil {
		return fail("no threadblock graph")
	}
	ins := b.InputOps()
	if len(ins) != len(operands) {
		return fail("%d inputs, but the threadblock graph has %d input ops", len(operands), len(ins))
	}
	for i, in := range ins {
		tile := b.Tensors[in.Out]
		if in.Input.DShape != shapes[i] || tile.DType != dtypes[i] {
			return fail("input %d is %v %v, but the threadblock graph's input %d reads %v %v",
				i, shapes[i], dtypes[i], i, in.Input.DShape, tile.DType)
		}
	}
	outs := b.OutputOps()
	if len(outs) == 0 {
		return fail("the threadblock graph has no output op")
	}
	results := make([]Tensor, len(outs))
	for i, out := range outs {
		results[i] = Tensor{Shape: out.Output.DShape, DType: b.Tensors[out.In[0]].DType}
	}
	return g.push(Op{Kind: k, In: slices.Clone(operands), Block: b}, results...), nil
}

// MarkOutput marks t as an output of the program. Outputs keep the order in
// which they are marked; a tensor is marked at most once.
func (g *Graph) MarkOutput(t TensorID) error {
	if t < 0 || int(t) >= len(g.Tensors) {
		return fmt.Errorf("mark_output: %d is not a tensor of this graph", t)
	}
	if k := slices.Index(g.Outputs, t); k >= 0 {
		what := fmt.Sprintf("tensor %d", t)
		if op, _ := g.Producer(t); op >= 0 {
			what = fmt.Sprintf("the %v result %v (op %d)", g.Ops[op].Kind, g.Tensors[t].Shape, op)
		}
		return fmt.Errorf("mark_output: %s is already an output (output %d); a tensor is marked once", what, k)
	}
	g.Outputs = append(g.Outputs, t)
	return nil
}

// ProductAdd returns the add that a library call computing matmul op i
// can perform in its epilogue (D = A·B + C): the only reader of the
// product among the ops live marks (nil: all of them), adding to it once
// a distinct tensor of the same shape and dtype (no broadcast, which C
// cannot do) that is there when the call runs (an input, wherever the
// program adds it, or computed before op i). A product the program
// outputs has none. launch folds such adds into cuBLASLt's calls, and the
// seed rules count them as no launch of their own.
func (g *Graph) ProductAdd(live []bool, i int) (add int, addend TensorID, ok bool) {
	t := g.Ops[i].Out[0]
	if slices.Contains(g.Outputs, t) {
		return 0, 0, false
	}
	reader := -1
	for j := i + 1; j < len(g.Ops); j++ {
		if live != nil && !live[j] || !slices.Contains(g.Ops[j].In, t) {
			continue
		}
		if reader >= 0 {
			return 0, 0, false // read twice
		}
		reader = j
	}
	if reader < 0 || g.Ops[reader].Kind != ugraph.OpAdd {
		return 0, 0, false
	}
	op := &g.Ops[reader]
	addend = op.In[0]
	if addend == t {
		addend = op.In[1]
	}
	prod, other, out := g.Tensors[t], g.Tensors[addend], g.Tensors[op.Out[0]]
	if addend == t || other.Shape != prod.Shape || other.DType != prod.DType || out.DType != prod.DType {
		return 0, 0, false
	}
	if p, _ := g.Producer(addend); p > i && g.Ops[p].Kind != ugraph.OpInput {
		return 0, 0, false // computed after the matmul, whose place the call keeps
	}
	return reader, addend, true
}

// Producer returns the index of the op that produced t and t's position
// among that op's results.
func (g *Graph) Producer(t TensorID) (op, result int) {
	for i := range g.Ops {
		if outs := g.Ops[i].Out; len(outs) > 0 && outs[0] <= t && t <= outs[len(outs)-1] {
			return i, int(t - outs[0])
		}
	}
	return -1, -1
}
