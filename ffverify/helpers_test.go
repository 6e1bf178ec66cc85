package ffverify_test

import (
	"fmt"
	"reflect"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// This file builds μGraphs tersely. Builders panic on an error: in a test
// it is a bug in the test itself.

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// kg is a kernel graph under construction.
type kg struct{ g *kernel.Graph }

func newKG() *kg { return &kg{kernel.New()} }

func (k *kg) in(dims ...int) kernel.TensorID {
	return must(k.g.AddInput(ugraph.MustShape(dims...), ugraph.Float16))
}

func (k *kg) op(kind ugraph.OpKind, xs ...kernel.TensorID) kernel.TensorID {
	return k.opA(kind, ugraph.Attr{}, xs...)
}

func (k *kg) opA(kind ugraph.OpKind, a ugraph.Attr, xs ...kernel.TensorID) kernel.TensorID {
	return must(k.g.Add(kind, a, xs...))
}

func (k *kg) custom(b *bg, xs ...kernel.TensorID) []kernel.TensorID {
	return must(k.g.Customized(xs, b.g))
}

func (k *kg) shape(x kernel.TensorID) ugraph.Shape { return k.g.Tensors[x].Shape }

// outputs marks ts as the outputs and returns the finished graph.
func (k *kg) outputs(ts ...kernel.TensorID) *kernel.Graph {
	for _, t := range ts {
		if err := k.g.MarkOutput(t); err != nil {
			panic(err)
		}
	}
	return k.g
}

// bg is a block graph under construction.
type bg struct{ g *block.Graph }

func newBG(grid block.Dim3, forloop, dimx int) *bg {
	return &bg{must(block.New(grid, block.Dim3{128, 1, 1}, forloop, dimx))}
}

func (b *bg) in(s ugraph.Shape, imap block.Map, fmap int) block.TensorID {
	return must(b.g.AddInput(s, ugraph.Float16, imap, fmap))
}

func (b *bg) op(kind ugraph.OpKind, xs ...block.TensorID) block.TensorID {
	return b.opA(kind, ugraph.Attr{}, xs...)
}

func (b *bg) opA(kind ugraph.OpKind, a ugraph.Attr, xs ...block.TensorID) block.TensorID {
	return must(b.g.Add(kind, a, xs...))
}

func (b *bg) accum(x block.TensorID, acc ugraph.Accum) block.TensorID {
	return b.opA(ugraph.OpForloopAccum, ugraph.Attr{Accum: acc}, x)
}

func (b *bg) out(x block.TensorID, omap block.Map) {
	if err := b.g.AddOutput(x, omap); err != nil {
		panic(err)
	}
}

func dim(d int) ugraph.Attr { return ugraph.Attr{Dim: d} }

// edits describe a mutation of a μGraph: a replay of it through the
// builders in which every op may first be changed.
type edits struct {
	kernelOp func(i int, op *kernel.Op)                     // a kernel op (its operands, kind, attributes)
	launch   func(k int, b *block.Graph)                    // the k-th customized op's grid, forloop range, reduction_dimx
	blockOp  func(k, i int, op *block.Op)                   // op i of the k-th customized op's block graph
	outputs  func(outs []kernel.TensorID) []kernel.TensorID // the marked outputs
}

// mutate replays g with edits applied. Tile and tensor ids are unchanged
// as long as the edits keep the number of ops and results.
func mutate(g *kernel.Graph, e edits) (*kernel.Graph, error) {
	r := kernel.New()
	k := 0
	for i := range g.Ops {
		op := g.Ops[i]
		op.In = append([]kernel.TensorID(nil), op.In...)
		if e.kernelOp != nil {
			e.kernelOp(i, &op)
		}
		var err error
		switch op.Kind {
		case ugraph.OpInput:
			_, err = r.AddInput(g.Tensors[op.Out[0]].Shape, g.Tensors[op.Out[0]].DType)
		case ugraph.OpCustomized:
			var b *block.Graph
			if b, err = mutateBlock(op.Block, k, e); err == nil {
				_, err = r.Customized(op.In, b)
			}
			k++
		default:
			_, err = r.Add(op.Kind, op.Attr, op.In...)
		}
		if err != nil {
			return nil, fmt.Errorf("op %d (%v): %w", i, op.Kind, err)
		}
	}
	outs := append([]kernel.TensorID(nil), g.Outputs...)
	if e.outputs != nil {
		outs = e.outputs(outs)
	}
	for _, t := range outs {
		if err := r.MarkOutput(t); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func mutateBlock(b *block.Graph, k int, e edits) (*block.Graph, error) {
	params := *b
	if e.launch != nil {
		e.launch(k, &params)
	}
	r, err := block.New(params.Grid, params.Threads, params.ForloopRange, params.ReductionDimx)
	if err != nil {
		return nil, err
	}
	for i := range b.Ops {
		op := b.Ops[i]
		if e.blockOp != nil {
			e.blockOp(k, i, &op)
		}
		switch op.Kind {
		case ugraph.OpInput:
			_, err = r.AddInput(op.Input.DShape, b.Tensors[op.Out].DType, op.Input.IMap, op.Input.FMap)
		case ugraph.OpOutput:
			err = r.AddOutput(op.In[0], op.Output.OMap)
		default:
			_, err = r.Add(op.Kind, op.Attr, op.Operands()...)
		}
		if err != nil {
			return nil, fmt.Errorf("block op %d (%v): %w", i, op.Kind, err)
		}
	}
	return r, nil
}

// sameGraph reports how two kernel graphs differ, if they do.
func sameGraph(a, b *kernel.Graph) error {
	switch {
	case !reflect.DeepEqual(a.Tensors, b.Tensors):
		return fmt.Errorf("tensors %v vs %v", a.Tensors, b.Tensors)
	case !reflect.DeepEqual(a.Outputs, b.Outputs):
		return fmt.Errorf("outputs %v vs %v", a.Outputs, b.Outputs)
	}
	if len(a.Ops) != len(b.Ops) {
		return fmt.Errorf("%d vs %d ops", len(a.Ops), len(b.Ops))
	}
	for i := range a.Ops {
		if !reflect.DeepEqual(a.Ops[i], b.Ops[i]) {
			return fmt.Errorf("op %d: %+v vs %+v", i, a.Ops[i], b.Ops[i])
		}
	}
	return nil
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// describe prints a graph's ops for failure messages.
func describe(g *kernel.Graph) string {
	var s string
	for i, op := range g.Ops {
		s += fmt.Sprintf("  %d %v in=%v out=%v attr=%+v\n", i, op.Kind, op.In, op.Out, op.Attr)
		if op.Block != nil {
			b := op.Block
			s += fmt.Sprintf("    grid=%v forloop=%d dimx=%d\n", b.Grid, b.ForloopRange, b.ReductionDimx)
			for j, bop := range b.Ops {
				s += fmt.Sprintf("    %d %v in=%v out=%d attr=%+v input=%+v output=%+v\n", j, bop.Kind, bop.Operands(), bop.Out, bop.Attr, bop.Input, bop.Output)
			}
		}
	}
	return s
}
