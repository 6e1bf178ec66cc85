package kernel

import (
	"fmt"
	"slices"

	"github.com/mirage-go/mirage/ugraph"
)

// DynamicError is an op of a program that cannot take the dynamic dim m
// (DESIGN §9): Op indexes Graph.Ops.
type DynamicError struct {
	Op  int
	Err error
}

func (e *DynamicError) Error() string { return fmt.Sprintf("op %d: %v", e.Op, e.Err) }
func (e *DynamicError) Unwrap() error { return e.Err }

// WithDynamic returns a copy of program g whose inputs named in dims (input
// tensor -> dim) have that dim made the symbol m, every result derived again
// by the shape rules, which carry m where rows stay apart and refuse the
// ops that would mix rows (a *DynamicError naming the op).
//
// m may be any dim but a tensor's last (one dim per tensor). Where every
// tensor with m has it as its outermost dim of extent above 1, the emitted
// kernels guard rows past m in place; otherwise (Padded) the entry point
// copies the tensors with m through buffers of the bucket's rows. Graph-
// defined kernels in the program itself are refused (their maps were
// written for one size).
func (g *Graph) WithDynamic(dims map[TensorID]int) (*Graph, error) {
	out := New()
	// A dim that the emitted guards cannot take is reported after the
	// shape rules: an op that mixes rows says more about a program.
	var unguardable error
	for i := range g.Ops {
		op := &g.Ops[i]
		var err error
		switch op.Kind {
		case ugraph.OpInput:
			t := g.Tensors[op.Out[0]]
			if d, ok := dims[op.Out[0]]; ok {
				if d < 0 || d >= t.Shape.Rank() {
					return nil, &DynamicError{i, fmt.Errorf("input %v has no dim %d", t.Shape, d)}
				}
				t.Shape = t.Shape.WithDynamic(d)
			}
			_, err = out.AddInput(t.Shape, t.DType)
		case ugraph.OpCustomized:
			for _, t := range op.In {
				if out.Tensors[t].Shape.IsDynamic() {
					err = fmt.Errorf("a graph-defined kernel of the program reads %v: its maps are written for one size; write the op it computes instead", out.Tensors[t].Shape)
					break
				}
			}
			if err == nil {
				_, err = out.Customized(op.In, op.Block)
			}
		default:
			_, err = out.Add(op.Kind, op.Attr, op.In...)
		}
		if err != nil {
			return nil, &DynamicError{i, err}
		}
		for _, t := range op.Out {
			if err := rowsGuardable(out.Tensors[t].Shape); err != nil && unguardable == nil {
				unguardable = &DynamicError{i, err}
			}
		}
	}
	if unguardable != nil {
		return nil, unguardable
	}
	for _, t := range g.Outputs {
		if err := out.MarkOutput(t); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// rowsGuardable checks that a shape's dynamic dim, if any, is one dim, and
// not its last: a row dim, whose rows the emitted code can cut.
func rowsGuardable(s ugraph.Shape) error {
	d := s.DynamicDim()
	if d < 0 {
		return nil
	}
	for i := d + 1; i < s.Rank(); i++ {
		if s.Dynamic(i) {
			return fmt.Errorf("%v: m in dims %d and %d; one row dim", s, d, i)
		}
	}
	if d == s.Rank()-1 {
		return fmt.Errorf("%v: the dynamic dim m is the last dim; it must be a row dim (an outer one)", s)
	}
	return nil
}

// Padded reports whether a tensor of g has the dynamic dim m inside an
// outer dim of extent above 1 (the heads of a layer written head by head:
// [32, m, 128]), so that its rows below m are not a prefix of its memory.
// The emitted entry point of such a program copies its inputs and outputs
// with m into and out of buffers of the bucket's rows, and the bucket's
// kernels run all of them (DESIGN §9); otherwise the kernels read and
// write the caller's m rows in place.
func (g *Graph) Padded() bool {
	for _, t := range g.Tensors {
		if d := t.Shape.DynamicDim(); d >= 0 && t.Shape.CheckRowDim(d) != nil {
			return true
		}
	}
	return false
}

// Dynamic reports whether any tensor of g has the dynamic dim m.
func (g *Graph) Dynamic() bool {
	for _, t := range g.Tensors {
		if t.Shape.IsDynamic() {
			return true
		}
	}
	return false
}

// Bind returns program g at m rows: a static program whose dynamic dims
// are m, built again through the shape rules (which check the sizes).
func (g *Graph) Bind(m int) (*Graph, error) {
	if m < 1 || m > ugraph.MaxDim {
		return nil, fmt.Errorf("m = %d: want 1 to %d", m, ugraph.MaxDim)
	}
	out := New()
	for i := range g.Ops {
		op := &g.Ops[i]
		var err error
		switch op.Kind {
		case ugraph.OpInput:
			t := g.Tensors[op.Out[0]]
			_, err = out.AddInput(t.Shape.Bind(m), t.DType)
		case ugraph.OpCustomized:
			_, err = out.Customized(op.In, op.Block)
		default:
			_, err = out.Add(op.Kind, op.Attr, op.In...)
		}
		if err != nil {
			return nil, fmt.Errorf("at m = %d, op %d (%v): %v", m, i, op.Kind, err)
		}
	}
	for _, t := range g.Outputs {
		if err := out.MarkOutput(t); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// DynamicDims returns, per input (in the order of Inputs) and per output,
// the dim that is m, or -1.
func (g *Graph) DynamicDims() (inputs, outputs []int) {
	for _, t := range g.Inputs() {
		inputs = append(inputs, g.Tensors[t].Shape.DynamicDim())
	}
	for _, t := range g.Outputs {
		outputs = append(outputs, g.Tensors[t].Shape.DynamicDim())
	}
	return inputs, outputs
}

// RowDims extends rows (tensor -> its dim of the bucket's rows) over g, a
// bucket's static μGraph, to the results of pre-defined ops that keep the
// rows apart: the shape rules, run again with each tensor of rows holding
// the symbol m at its dim, give the results that carry m (an rms_norm of
// X, a product of it with a weight, a silu of that), which the same rules
// that mark a program dynamic allow. Such a result's rows below m are
// computed from its operands' rows below m alone, so a bucket need compute
// no more of it. Results of graph-defined kernels, and of ops the rules
// refuse with m (one that would mix rows, or meet a full-size operand
// without it), keep only what rows gives them, and so do results whose
// rows are not a prefix of their memory (CheckRowDim). The result holds
// rows too.
func (g *Graph) RowDims(rows map[TensorID]int) map[TensorID]int {
	out := make(map[TensorID]int, len(rows))
	shape := func(t TensorID) ugraph.Shape {
		if d, ok := out[t]; ok {
			return g.Tensors[t].Shape.WithDynamic(d)
		}
		return g.Tensors[t].Shape
	}
	for t, d := range rows {
		if d >= 0 && d < g.Tensors[t].Shape.Rank() {
			out[t] = d
		}
	}
	for i := range g.Ops {
		op := &g.Ops[i]
		if op.Kind == ugraph.OpInput || op.Kind == ugraph.OpCustomized || len(op.Out) != 1 {
			continue
		}
		if _, ok := out[op.Out[0]]; ok {
			continue
		}
		var in []ugraph.Shape
		dynamic := false
		for _, t := range op.In {
			s := shape(t)
			in = append(in, s)
			dynamic = dynamic || s.IsDynamic()
		}
		if !dynamic {
			continue
		}
		s, err := ugraph.InferShape(op.Kind, op.Attr, in, 0)
		if err != nil || !s.IsDynamic() {
			continue
		}
		d := s.DynamicDim()
		if !slices.Equal(s.Dims(), g.Tensors[op.Out[0]].Shape.Dims()) || s.CheckRowDim(d) != nil {
			continue // not the result as the bucket has it, or its rows are no prefix of its memory
		}
		out[op.Out[0]] = d
	}
	return out
}
