package block

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/internal/ujson"
)

type graphJSON struct {
	Grid          Dim3     `json:"grid"`
	BlockDim      Dim3     `json:"block_dim"`
	ForloopRange  int      `json:"forloop_range"`
	ReductionDimx int      `json:"reduction_dimx"`
	Stages        int      `json:"stages,omitempty"`
	Ops           []opJSON `json:"ops"`
}

type opJSON struct {
	Op string     `json:"op"`
	In []TensorID `json:"in,omitempty"`
	ujson.Attrs
	Shape []int  `json:"shape,omitempty"`
	DType string `json:"dtype,omitempty"`
	IMap  *Map   `json:"imap,omitempty"`
	FMap  *int   `json:"fmap,omitempty"`
	Tile  []int  `json:"tile,omitempty"`
	OMap  *Map   `json:"omap,omitempty"`
}

// MarshalJSON encodes g as the "block" member of a customized op in a
// .ugraph.json document (kernel.File describes the whole document):
//
//	{"grid": [96, 1, 1], "block_dim": [128, 1, 1], "forloop_range": 64, "reduction_dimx": 64, "ops": [
//	  {"op": "input", "shape": [16, 4096], "dtype": "float16", "imap": [-1, -1, -1], "fmap": 1, "tile": [16, 64]},
//	  {"op": "input", "shape": [4096, 6144], "dtype": "float16", "imap": [1, -1, -1], "fmap": 0, "tile": [64, 64]},
//	  {"op": "matmul", "in": [0, 1], "shape": [16, 64]},
//	  {"op": "forloop_accum", "in": [2], "accum": "none", "shape": [16, 64]},
//	  {"op": "forloop_accum", "in": [0], "accum": "rms", "shape": [16, 1]},
//	  {"op": "div", "in": [3, 4], "shape": [16, 64]},
//	  {"op": "output", "in": [5], "shape": [16, 6144], "omap": [1, -1, -1]}]}
//
// Ops are listed in order; each op but an output gets the next tile id, and
// "in" names operand tiles by id. An input op gives its device tensor's
// "shape" and "dtype", its "imap" and "fmap", and the derived "tile" shape;
// an output op its "omap" and the derived device "shape"; any other op its
// attributes (those its kind uses, all required) and the derived tile
// "shape". Derived shapes are optional on reading and must match when given.
// "stages", the pipeline depth the kernel may use (Graph.Stages), is
// written only when set and read as 0 when absent.
//
// g must have been built with the builders; MarshalJSON checks only what
// it needs to write it faithfully (tiles numbered in order, operands
// defined before use, scalars that JSON can hold).
func (g *Graph) MarshalJSON() ([]byte, error) {
	j := graphJSON{
		Grid: g.Grid, BlockDim: g.Threads, ForloopRange: g.ForloopRange, ReductionDimx: g.ReductionDimx,
		Stages: g.Stages, Ops: make([]opJSON, len(g.Ops)),
	}
	next := TensorID(0) // the id the next tile gets when the JSON is read
	for i := range g.Ops {
		op := &g.Ops[i]
		oj, err := g.encodeOp(op, next)
		if err != nil {
			return nil, fmt.Errorf("op %d (%v): %w", i, op.Kind, err)
		}
		j.Ops[i] = oj
		if op.Kind != ugraph.OpOutput {
			next++
		}
	}
	return json.Marshal(j)
}

// encodeOp encodes op, whose tile (unless it is an output op) must be next.
func (g *Graph) encodeOp(op *Op, next TensorID) (opJSON, error) {
	if !op.Kind.AllowedAt(ugraph.LevelBlock) {
		return opJSON{}, fmt.Errorf("not a threadblock op")
	}
	j := opJSON{Op: op.Kind.String()}
	for _, t := range op.Operands() {
		if t < 0 || t >= next {
			return j, fmt.Errorf("operand %d is not a tile defined by an earlier op", t)
		}
	}
	if op.Kind == ugraph.OpOutput {
		j.In = op.Operands()
		j.Shape, j.OMap = op.Output.DShape.Dims(), &op.Output.OMap
		return j, nil
	}
	if op.Out != next || int(op.Out) >= len(g.Tensors) {
		return j, fmt.Errorf("result is tile %d, want %d", op.Out, next)
	}
	tile := g.Tensors[op.Out]
	if op.Kind == ugraph.OpInput {
		in := op.Input
		j.Shape, j.DType, j.IMap, j.FMap, j.Tile = in.DShape.Dims(), tile.DType.String(), &in.IMap, &in.FMap, tile.Shape.Dims()
		return j, nil
	}
	var err error
	if j.Attrs, err = ujson.EncodeAttr(op.Kind, op.Attr); err != nil {
		return j, err
	}
	j.In, j.Shape = op.Operands(), tile.Shape.Dims()
	return j, nil
}

// UnmarshalJSON replaces g with the block graph that data describes. It
// rebuilds the graph with New, AddInput, Add and AddOutput, so the result
// obeys every rule a built graph does; an error names the op and the field
// at fault.
func (g *Graph) UnmarshalJSON(data []byte) error {
	// encoding/json checks data before calling us, but a direct call may
	// not, and the reader below expects well-formed JSON.
	if !json.Valid(data) {
		return errors.New("malformed JSON")
	}
	b, err := decodeGraph(data)
	if err != nil {
		return err
	}
	*g = *b
	return nil
}

func decodeGraph(data []byte) (*Graph, error) {
	o, err := ujson.ParseObject(data)
	if err != nil {
		return nil, err
	}
	grid, err := dim3(o, "grid")
	if err != nil {
		return nil, err
	}
	threads, err := dim3(o, "block_dim")
	if err != nil {
		return nil, err
	}
	for a, n := range threads {
		// Bounded here because the product in New could overflow.
		if n > MaxThreads {
			return nil, fmt.Errorf("field \"block_dim\": axis %d is %d, at most %d", a, n, MaxThreads)
		}
	}
	f, err := o.Int("forloop_range")
	if err != nil {
		return nil, err
	}
	dimx, err := o.Int("reduction_dimx")
	if err != nil {
		return nil, err
	}
	stages := 0
	if o.Has("stages") {
		if stages, err = o.Int("stages"); err != nil {
			return nil, err
		}
	}
	ops, err := o.Array("ops")
	if err != nil {
		return nil, err
	}
	if err := o.Unread(); err != nil {
		return nil, err
	}
	g, err := New(grid, threads, f, dimx)
	if err != nil {
		return nil, err
	}
	if err := g.SetStages(stages); err != nil {
		return nil, fmt.Errorf("field \"stages\": %w", err)
	}
	for i, raw := range ops {
		if k, err := g.decodeOp(raw); err != nil {
			return nil, ujson.AtOp(i, k, err)
		}
	}
	return g, nil
}

// decodeOp appends the op that data describes and returns its kind
// (OpInvalid when the kind itself is at fault).
func (g *Graph) decodeOp(data json.RawMessage) (ugraph.OpKind, error) {
	o, err := ujson.ParseObject(data)
	if err != nil {
		return ugraph.OpInvalid, err
	}
	k, err := ujson.LookupOp(o, ugraph.LevelBlock, "threadblock")
	if err != nil {
		return k, err
	}
	switch k {
	case ugraph.OpInput:
		return k, g.decodeInput(o)
	case ugraph.OpOutput:
		return k, g.decodeOutput(o)
	}
	return k, g.decodeCompute(k, o)
}

func (g *Graph) decodeInput(o *ujson.Object) error {
	shape, err := o.Shape("shape")
	if err != nil {
		return err
	}
	dt, err := o.DType("dtype")
	if err != nil {
		return err
	}
	imap, err := mapField(o, "imap")
	if err != nil {
		return err
	}
	fmap, err := o.Int("fmap")
	if err != nil {
		return err
	}
	tile, err := o.Derived("tile")
	if err != nil {
		return err
	}
	if err := o.Unread(); err != nil {
		return err
	}
	t, err := g.AddInput(shape, dt, imap, fmap)
	if err != nil {
		return err
	}
	return tile.Check(g.Tensors[t].Shape)
}

func (g *Graph) decodeOutput(o *ujson.Object) error {
	in, err := g.operandsField(o, ugraph.OpOutput)
	if err != nil {
		return err
	}
	omap, err := mapField(o, "omap")
	if err != nil {
		return err
	}
	shape, err := o.Derived("shape")
	if err != nil {
		return err
	}
	if err := o.Unread(); err != nil {
		return err
	}
	if err := g.AddOutput(in[0], omap); err != nil {
		return err
	}
	return shape.Check(g.Ops[len(g.Ops)-1].Output.DShape)
}

func (g *Graph) decodeCompute(k ugraph.OpKind, o *ujson.Object) error {
	in, err := g.operandsField(o, k)
	if err != nil {
		return err
	}
	attr, err := ujson.DecodeAttr(k, o)
	if err != nil {
		return err
	}
	shape, err := o.Derived("shape")
	if err != nil {
		return err
	}
	if err := o.Unread(); err != nil {
		return err
	}
	t, err := g.Add(k, attr, in...)
	if err != nil {
		return err
	}
	// Add overrides rms_norm's dim; a file that says otherwise means
	// something the graph cannot.
	if got := g.Ops[len(g.Ops)-1].Attr; got != attr {
		return fmt.Errorf("field \"dim\": %d, but a threadblock %v always works on the last dim (%d)", attr.Dim, k, got.Dim)
	}
	return shape.Check(g.Tensors[t].Shape)
}

// operandsField reads "in": as many tile ids as k takes, each naming a tile
// defined by an earlier op.
func (g *Graph) operandsField(o *ujson.Object, k ugraph.OpKind) ([]TensorID, error) {
	ids, err := o.Ints("in")
	if err != nil {
		return nil, err
	}
	if n := k.Info().Arity; len(ids) != n {
		return nil, fmt.Errorf("field \"in\": %v takes %d operands, got %d", k, n, len(ids))
	}
	in := make([]TensorID, len(ids))
	for i, id := range ids {
		// Checked before the conversion to TensorID, which could wrap.
		if id < 0 || id >= len(g.Tensors) {
			return nil, fmt.Errorf("field \"in\": element %d: tile %d is not defined by an earlier op (%d tiles so far)", i, id, len(g.Tensors))
		}
		in[i] = TensorID(id)
	}
	return in, nil
}

func dim3(o *ujson.Object, name string) (Dim3, error) {
	xs, err := triple(o, name)
	return Dim3(xs), err
}

func mapField(o *ujson.Object, name string) (Map, error) {
	xs, err := triple(o, name)
	return Map(xs), err
}

func triple(o *ujson.Object, name string) ([3]int, error) {
	xs, err := o.Ints(name)
	if err != nil {
		return [3]int{}, err
	}
	if len(xs) != 3 {
		return [3]int{}, fmt.Errorf("field %q: want 3 entries (x, y, z), got %d", name, len(xs))
	}
	return [3]int(xs), nil
}
