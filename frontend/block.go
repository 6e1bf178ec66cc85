package frontend

import (
	"fmt"
	"slices"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
)

// tbgraph is a threadblock graph (Mirage's TBGraph) under construction. It
// becomes immutable once a customized op holds it.
type tbgraph struct {
	l      *loader
	b      *block.Graph
	pos    syntax.Position // where mi.new_threadblock_graph() was called
	inputs []dtensor       // the device tensor each new_input read, in order
	usedAt syntax.Position // where customized took the graph; zero until then
}

// new_threadblock_graph(grid_dim, block_dim=(128, 1, 1), forloop_range, reduction_dimx)
func (l *loader) newThreadblockGraph(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	fn := b.Name()
	var grid dim3
	threads := dim3{128, 1, 1}
	var forloopRange, dimx starlark.Value
	if err := starlark.UnpackArgs(fn, args, kwargs, "grid_dim", &grid, "block_dim??", &threads,
		"forloop_range", &forloopRange, "reduction_dimx", &dimx); err != nil {
		return nil, err
	}
	f, err := requiredInt(fn, "forloop_range", forloopRange)
	if err != nil {
		return nil, err
	}
	d, err := requiredInt(fn, "reduction_dimx", dimx)
	if err != nil {
		return nil, err
	}
	if err := checkThreads(block.Dim3(threads)); err != nil {
		return nil, fmt.Errorf("%s: %v", fn, err)
	}
	bg, err := block.New(block.Dim3(grid), block.Dim3(threads), f, d)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", fn, err)
	}
	tb := &tbgraph{l: l, b: bg, pos: l.callPos(th)}
	l.blocks = append(l.blocks, tb)
	return tb, nil
}

var _ starlark.HasAttrs = (*tbgraph)(nil)

func (tb *tbgraph) String() string       { return fmt.Sprintf("<threadblock_graph %s>", tb.l.where(tb.pos)) }
func (tb *tbgraph) Type() string         { return "threadblock_graph" }
func (tb *tbgraph) Freeze()              {} // graphs change only through their methods
func (tb *tbgraph) Truth() starlark.Bool { return true }
func (tb *tbgraph) Hash() (uint32, error) {
	return uint32(tb.pos.Line)<<16 ^ uint32(tb.pos.Col), nil
}

func (tb *tbgraph) Attr(name string) (starlark.Value, error) {
	if m := tbgraphMethods.attr(tb, name); m != nil {
		return m, nil
	}
	if slices.Contains(mirageOnlineSoftmaxMethods, name) {
		return nil, fmt.Errorf("threadblock_graph.%s is not supported: Mirage's online-softmax ops (%s) have no counterpart here; "+
			"write the attention with exp, reduction (or forloop_accum) and div, as bench/workloads/gqa.py does, and the search finds its split forms",
			name, strings.Join(mirageOnlineSoftmaxMethods, ", "))
	}
	return nil, nil
}

// mirageOnlineSoftmaxMethods are the methods of Mirage's TBGraph
// (python/mirage/threadblock.py) that build ops this IR lacks.
var mirageOnlineSoftmaxMethods = []string{"reduction_max", "forloop_accum_max", "forloop_accum_rescale"}

func (tb *tbgraph) AttrNames() []string { return tbgraphMethods.names() }

var tbgraphMethods = func() methodSet[*tbgraph] {
	ms := methodSet[*tbgraph]{
		"new_input":  (*tbgraph).newInput,
		"new_output": (*tbgraph).newOutput,
	}
	for _, k := range ugraph.OpKinds(ugraph.LevelBlock) {
		if opMethod(k, ugraph.LevelBlock) {
			ms[k.String()] = blockOp(k)
		}
	}
	return ms
}()

func (tb *tbgraph) attached() bool { return tb.usedAt.IsValid() }

// mutable fails once a customized op holds tb: the kernel it defines must
// not change behind the op's back.
func (tb *tbgraph) mutable(fn string) error {
	if tb.attached() {
		return fmt.Errorf("%s: the threadblock graph (created at %s) is already used by customized at %s and cannot change; build a new one",
			fn, tb.l.where(tb.pos), tb.l.where(tb.usedAt))
	}
	return nil
}

func (tb *tbgraph) tile(id block.TensorID) starlark.Value { return stensor{tb, id} }

// operand checks that v is a tile of tb.
func (tb *tbgraph) operand(v starlark.Value) (block.TensorID, error) {
	t, ok := v.(stensor)
	if !ok {
		want := "stensor"
		if _, ok := v.(dtensor); ok {
			want += " (load a device tensor with tb.new_input first)"
		}
		return 0, wrongType(v, want)
	}
	if t.tb != tb {
		return 0, fmt.Errorf("%v is a tile of another threadblock graph (created at %s)", t, tb.l.where(t.tb.pos))
	}
	return t.id, nil
}

func blockOp(k ugraph.OpKind) method[*tbgraph] {
	return func(tb *tbgraph, _ *starlark.Thread, fn string, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if err := tb.mutable(fn); err != nil {
			return nil, err
		}
		c, err := unpackOp(fn, k, ugraph.LevelBlock, args, kwargs)
		if err != nil {
			return nil, err
		}
		ids := make([]block.TensorID, len(c.operands))
		for i, v := range c.operands {
			if ids[i], err = tb.operand(v); err != nil {
				return nil, argError(fn, operandParams[i], err)
			}
		}
		id, err := tb.b.Add(k, c.attr, ids...)
		if err != nil {
			return nil, err
		}
		return tb.tile(id), nil
	}
}

// new_input(dtensor, input_map, forloop_dim, store_in_dmem=False)
func (tb *tbgraph) newInput(th *starlark.Thread, fn string, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if err := tb.mutable(fn); err != nil {
		return nil, err
	}
	var d starlark.Value
	var imap gridMap
	var fmap int
	var dmem bool
	if err := starlark.UnpackArgs(fn, args, kwargs, "dtensor", &d, "input_map", &imap, "forloop_dim", &fmap, "store_in_dmem?", &dmem); err != nil {
		return nil, err
	}
	t, ok := d.(dtensor)
	if !ok {
		return nil, argError(fn, "dtensor", wrongType(d, "dtensor"))
	}
	if len(tb.inputs) > 0 && tb.inputs[0].kg != t.kg {
		return nil, fmt.Errorf("%s: the tensor belongs to the kernel graph created at %s, but this threadblock graph's inputs to that created at %s",
			fn, tb.l.where(t.kg.pos), tb.l.where(tb.inputs[0].kg.pos))
	}
	dt := t.tensor()
	id, err := tb.b.AddInput(dt.Shape, dt.DType, block.Map(imap), fmap)
	if err != nil {
		return nil, renameOp(fn, err)
	}
	if dmem {
		tb.l.warnAt(tb.l.callPos(th), "%s: store_in_dmem=True is ignored: tiles are staged in shared memory", fn)
	}
	tb.inputs = append(tb.inputs, t)
	return tb.tile(id), nil
}

// new_output(stensor, output_map, forloop_dim=-1)
func (tb *tbgraph) newOutput(_ *starlark.Thread, fn string, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if err := tb.mutable(fn); err != nil {
		return nil, err
	}
	var s starlark.Value
	var omap gridMap
	fmap := -1
	if err := starlark.UnpackArgs(fn, args, kwargs, "stensor", &s, "output_map", &omap, "forloop_dim?", &fmap); err != nil {
		return nil, err
	}
	id, err := tb.operand(s)
	if err != nil {
		return nil, argError(fn, "stensor", err)
	}
	if fmap != -1 {
		return nil, fmt.Errorf("%s: forloop_dim is %d, want -1: a block stores its output once, after the for-loop", fn, fmap)
	}
	if err := tb.b.AddOutput(id, block.Map(omap)); err != nil {
		return nil, renameOp(fn, err)
	}
	return starlark.None, nil
}

// stensor is a tile of a threadblock graph (Mirage's STensor).
type stensor struct {
	tb *tbgraph
	id block.TensorID
}

var _ starlark.HasAttrs = stensor{}

func (t stensor) tensor() block.Tensor { return t.tb.b.Tensors[t.id] }

func (t stensor) String() string {
	return fmt.Sprintf("<stensor %v %v>", t.tensor().Shape, t.tensor().DType)
}
func (t stensor) Type() string          { return "stensor" }
func (t stensor) Freeze()               {}
func (t stensor) Truth() starlark.Bool  { return true }
func (t stensor) Hash() (uint32, error) { return uint32(t.id), nil }

func (t stensor) Attr(name string) (starlark.Value, error) {
	return shapeAttr(t, name, t.tensor().Shape, t.tensor().DType), nil
}
func (t stensor) AttrNames() []string { return shapeAttrNames }
