package frontend

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// kgraph is a kernel graph (Mirage's KNGraph) under construction.
type kgraph struct {
	l     *loader
	g     *kernel.Graph
	pos   syntax.Position // where mi.new_kernel_graph() was called
	lines []int32         // the line that created each tensor of g

	superopt    *SuperoptArgs // nil until superoptimize is called
	superoptPos syntax.Position
	// called is g as it was when superoptimize was called: what Mirage
	// searches (it passes the graph at the call), whatever the program
	// adds to g afterwards (a reference check, say).
	called *kernel.Graph
}

func (l *loader) newKernelGraph(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 0); err != nil {
		return nil, err
	}
	kg := &kgraph{l: l, g: kernel.New(), pos: l.callPos(th)}
	l.graphs = append(l.graphs, kg)
	return kg, nil
}

var _ starlark.HasAttrs = (*kgraph)(nil)

func (kg *kgraph) String() string        { return fmt.Sprintf("<kernel_graph %s>", kg.l.where(kg.pos)) }
func (kg *kgraph) Type() string          { return "kernel_graph" }
func (kg *kgraph) Freeze()               {} // graphs change only through their methods
func (kg *kgraph) Truth() starlark.Bool  { return true }
func (kg *kgraph) Hash() (uint32, error) { return uint32(kg.pos.Line)<<16 ^ uint32(kg.pos.Col), nil }

func (kg *kgraph) AttrNames() []string { return kgraphMethods.names() }

func (kg *kgraph) Attr(name string) (starlark.Value, error) {
	if m := kgraphMethods.attr(kg, name); m != nil {
		return m, nil
	}
	switch {
	case slices.Contains(kgraphRuntimeAttrs, name):
		kg.l.ignore("graph."+name, syntax.Position{})
		return inert{"graph." + name}, nil
	case name == "from_json":
		return nil, fmt.Errorf("from_json reads a μGraph from a file, and mirage programs cannot read files; give the .ugraph.json file to mirage instead")
	}
	return nil, nil
}

// CallInternal runs the graph, as Mirage's KNGraph.__call__ does: inert.
func (kg *kgraph) CallInternal(th *starlark.Thread, _ starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	kg.l.ignore("graph(inputs=...)", kg.l.callPos(th))
	return inert{"graph()"}, nil
}

func (kg *kgraph) Name() string { return "kernel_graph" }

var kgraphMethods = func() methodSet[*kgraph] {
	ms := methodSet[*kgraph]{
		"new_input":     (*kgraph).newInput,
		"mark_output":   (*kgraph).markOutput,
		"customized":    (*kgraph).customized,
		"superoptimize": (*kgraph).superoptimize,
	}
	for _, k := range ugraph.OpKinds(ugraph.LevelKernel) {
		if opMethod(k, ugraph.LevelKernel) {
			ms[k.String()] = kernelOp(k)
		}
	}
	for _, name := range kgraphRuntimeMethods {
		ms[name] = func(kg *kgraph, th *starlark.Thread, fn string, _ starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			kg.l.ignore("graph."+fn, kg.l.callPos(th))
			return inert{"graph." + fn + "()"}, nil
		}
	}
	return ms
}()

// tensors returns the tensors with the given ids as Starlark values,
// recording the line that created the new ones.
func (kg *kgraph) tensors(th *starlark.Thread, ids ...kernel.TensorID) []starlark.Value {
	if len(kg.lines) < len(kg.g.Tensors) {
		line := kg.l.callPos(th).Line
		for len(kg.lines) < len(kg.g.Tensors) {
			kg.lines = append(kg.lines, line)
		}
	}
	vs := make([]starlark.Value, len(ids))
	for i, id := range ids {
		vs[i] = dtensor{kg, id}
	}
	return vs
}

// operand checks that v is a tensor of kg.
func (kg *kgraph) operand(v starlark.Value) (kernel.TensorID, error) {
	t, ok := v.(dtensor)
	if !ok {
		want := "dtensor"
		switch v.(type) {
		case stensor:
			want += " (a tile of a threadblock graph cannot be used in a kernel graph)"
		case starlark.Int, starlark.Float:
			want += " (a number scales a tensor through mul_scalar(A, scalar): the other ops take tensors)"
		}
		return 0, wrongType(v, want)
	}
	if t.kg != kg {
		return 0, fmt.Errorf("%v belongs to another kernel graph (created at %s)", t, kg.l.where(t.kg.pos))
	}
	return t.id, nil
}

func kernelOp(k ugraph.OpKind) method[*kgraph] {
	return func(kg *kgraph, th *starlark.Thread, fn string, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		c, err := unpackOp(fn, k, ugraph.LevelKernel, args, kwargs)
		if err != nil {
			return nil, err
		}
		ids := make([]kernel.TensorID, len(c.operands))
		for i, v := range c.operands {
			if ids[i], err = kg.operand(v); err != nil {
				return nil, argError(fn, operandParams[i], err)
			}
		}
		if k == ugraph.OpRMSNorm {
			if c.attr.Dim, err = ugraph.NormDim(kg.g.Tensors[ids[0]].Shape, c.normalized); err != nil {
				return nil, err
			}
		}
		id, err := kg.g.Add(k, c.attr, ids...)
		if err != nil {
			return nil, err
		}
		return kg.tensors(th, id)[0], nil
	}
}

// new_input(dims, strides=None, dtype=mi.float16)
func (kg *kgraph) newInput(th *starlark.Thread, fn string, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var dims ints
	var strides starlark.Value = starlark.None
	dt := dtypeArg(ugraph.Float16)
	if err := starlark.UnpackArgs(fn, args, kwargs, "dims", &dims, "strides?", &strides, "dtype?", &dt); err != nil {
		return nil, err
	}
	shape, err := ugraph.NewShape(dims...)
	if err != nil {
		return nil, fmt.Errorf("%s: dims %s: %v", fn, pyTuple(dims), err)
	}
	if err := checkStrides(fn, shape, strides); err != nil {
		return nil, err
	}
	id, err := kg.g.AddInput(shape, ugraph.DType(dt))
	if err != nil {
		return nil, err
	}
	return kg.tensors(th, id)[0], nil
}

// checkStrides accepts None or the row-major strides of s: the only layout
// our kernels read and write.
func checkStrides(fn string, s ugraph.Shape, v starlark.Value) error {
	if v == starlark.None {
		return nil
	}
	var st ints
	if err := st.Unpack(v); err != nil {
		return fmt.Errorf("%s: for parameter strides: %v", fn, err)
	}
	if want := s.Strides(); !slices.Equal(st, want) {
		return fmt.Errorf("%s: strides %s are not the row-major strides %s of a %v tensor; only row-major layouts are supported",
			fn, pyTuple(st), pyTuple(want), s)
	}
	return nil
}

// mark_output(A, strides=None)
func (kg *kgraph) markOutput(_ *starlark.Thread, fn string, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var a starlark.Value
	var strides starlark.Value = starlark.None
	if err := starlark.UnpackArgs(fn, args, kwargs, "A", &a, "strides?", &strides); err != nil {
		return nil, err
	}
	id, err := kg.operand(a)
	if err != nil {
		return nil, argError(fn, "A", err)
	}
	if err := checkStrides(fn, kg.g.Tensors[id].Shape, strides); err != nil {
		return nil, err
	}
	if err := kg.g.MarkOutput(id); err != nil {
		return nil, err
	}
	return starlark.None, nil
}

// customized(inputs, bgraph) returns the list of the kernel's outputs.
func (kg *kgraph) customized(th *starlark.Thread, fn string, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var inputs starlark.Value
	var tb *tbgraph
	if err := starlark.UnpackArgs(fn, args, kwargs, "inputs", &inputs, "bgraph", &tb); err != nil {
		return nil, err
	}
	if err := tb.mutable(fn); err != nil {
		return nil, err
	}
	ids, err := listOf(fn, "inputs", inputs, kg.operand)
	if err != nil {
		return nil, err
	}
	if len(ids) != len(tb.inputs) {
		return nil, fmt.Errorf("%s: %d inputs, but the threadblock graph (created at %s) has %d new_input ops",
			fn, len(ids), kg.l.where(tb.pos), len(tb.inputs))
	}
	// The k-th input must be the very tensor the k-th new_input read:
	// the block graph was built for it, and another tensor of the same
	// shape would silently compute something else.
	for k, id := range ids {
		got, want := dtensor{kg, id}, tb.inputs[k]
		switch {
		case got == want:
			continue
		case want.kg != kg:
			return nil, fmt.Errorf("%s: the threadblock graph's new_input %d read a tensor of another kernel graph (created at %s)",
				fn, k, kg.l.where(want.kg.pos))
		}
		return nil, fmt.Errorf("%s: inputs[%d] is %v from line %d, but the threadblock graph's new_input %d read %v from line %d; pass the very tensor given to new_input",
			fn, k, got, kg.lines[got.id], k, want, kg.lines[want.id])
	}
	outs, err := kg.g.Customized(ids, tb.b)
	if err != nil {
		return nil, err
	}
	tb.usedAt = kg.l.callPos(th)
	return starlark.NewList(kg.tensors(th, outs...)), nil
}

// superoptimize(imaps=None, omaps=None, griddims=None, blockdims=None,
// fmaps=None, franges=None, verbose=False, config=None, backend="cuda",
// warmup_iters=16, profile_iters=1000, previous_checkpoint=None,
// save_codes=False, use_graph_dataset=True, use_cached_graphs=True,
// is_formal_verified=False): records the search arguments and marks kg as
// the program. The parameters that steer Mirage's profiling, code
// generation and caching are accepted and ignored (the load's note names
// them). The result is inert: demos call the optimized graph and time it.
func (kg *kgraph) superoptimize(th *starlark.Thread, fn string, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var sp searchParams
	ignored := make([]starlark.Value, len(superoptRuntimeParams))
	pairs := append(sp.pairs(), "verbose?", &ignored[0], "config?", &sp.config)
	for i, name := range superoptRuntimeParams[1:] {
		pairs = append(pairs, name+"?", &ignored[i+1])
	}
	if err := starlark.UnpackArgs(fn, args, kwargs, pairs...); err != nil {
		return nil, err
	}
	var given []string
	for i, v := range ignored {
		if v != nil {
			given = append(given, superoptRuntimeParams[i])
		}
	}
	return kg.search(th, fn, sp, given)
}

// optimize(input_graph, *, imaps=None, omaps=None, griddims=None,
// blockdims=None, fmaps=None, franges=None, previous_checkpoint=None,
// default_config=None) is Mirage's first API for superoptimize (mirage.
// optimize, with mirage.new_graph for new_kernel_graph), which its LoRA
// demo still uses: default_config is config, previous_checkpoint is
// ignored. Mirage returns the list of optimized graphs; here the result is
// inert, as superoptimize's is, so a loop over it does nothing.
func (l *loader) optimize(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	fn := b.Name()
	if len(args) > 1 {
		return nil, fmt.Errorf("%s: got %d positional arguments, want 1 (the graph; the others are keyword-only)", fn, len(args))
	}
	var kg *kgraph
	sp := searchParams{configParam: "default_config"}
	var checkpoint starlark.Value
	pairs := append([]any{"input_graph", &kg}, sp.pairs()...)
	pairs = append(pairs, "previous_checkpoint?", &checkpoint, "default_config?", &sp.config)
	if err := starlark.UnpackArgs(fn, args, kwargs, pairs...); err != nil {
		return nil, err
	}
	var given []string
	if checkpoint != nil {
		given = append(given, "previous_checkpoint")
	}
	return kg.search(th, fn, sp, given)
}

// searchParams are the arguments of superoptimize (and optimize) that
// steer the search; nil when not given.
type searchParams struct {
	imaps, omaps, griddims, blockdims, fmaps, franges, config starlark.Value

	configParam string // config's parameter name; "" for "config"
}

// pairs are the UnpackArgs pairs of the candidate lists, in Mirage's order.
func (sp *searchParams) pairs() []any {
	return []any{"imaps?", &sp.imaps, "omaps?", &sp.omaps, "griddims?", &sp.griddims, "blockdims?", &sp.blockdims,
		"fmaps?", &sp.fmaps, "franges?", &sp.franges}
}

// args checks and converts the parameters of a call of fn.
func (sp *searchParams) args(fn string) (SuperoptArgs, error) {
	var sa SuperoptArgs
	var err error
	if sp.config != nil && sp.config != starlark.None {
		s, ok := starlark.AsString(sp.config)
		if !ok {
			name := cmp.Or(sp.configParam, "config")
			return sa, argError(fn, name, wrongType(sp.config, "string or None"))
		}
		sa.Config = s
	}
	if sa.Lists.Grids, err = listOf(fn, "griddims", sp.griddims, gridDim); err != nil {
		return sa, err
	}
	if sa.Lists.Threads, err = listOf(fn, "blockdims", sp.blockdims, blockDim); err != nil {
		return sa, err
	}
	if sa.Lists.IMaps, err = listOf(fn, "imaps", sp.imaps, tensorMap); err != nil {
		return sa, err
	}
	if sa.Lists.OMaps, err = listOf(fn, "omaps", sp.omaps, tensorMap); err != nil {
		return sa, err
	}
	if sa.Lists.FMaps, err = listOf(fn, "fmaps", sp.fmaps, intIn(-1, ugraph.MaxRank-1)); err != nil {
		return sa, err
	}
	if sa.Lists.FRanges, err = listOf(fn, "franges", sp.franges, intIn(1, ugraph.MaxDim)); err != nil {
		return sa, err
	}
	return sa, nil
}

// search records a call of fn (superoptimize or optimize) on kg: the
// search arguments, and the ignored parameters the program gave.
func (kg *kgraph) search(th *starlark.Thread, fn string, sp searchParams, ignored []string) (starlark.Value, error) {
	sa, err := sp.args(fn)
	if err != nil {
		return nil, err
	}
	pos := kg.l.callPos(th)
	for _, name := range ignored {
		kg.l.ignore(fn+"("+name+"=)", pos)
	}
	result := inert{fn + "()"}
	// A program may superoptimize again, as Mirage's rms_norm demo does in
	// a loop: the same graph, or another one built the same way, with the
	// same arguments, is the same program, searched once.
	if prev := kg.l.super; prev != nil {
		sameArgs := reflect.DeepEqual(*prev.superopt, sa)
		switch {
		case sameArgs && kernel.Hash(prev.called) == kernel.Hash(kg.g):
			kg.l.ignore("repeated "+fn+" calls on identical graphs (searched once)", pos)
			return result, nil
		case prev == kg && sameArgs:
			return nil, fmt.Errorf("%s: already called on this graph at %s, and the graph has changed since; a program optimizes one graph, once", fn, kg.l.where(kg.superoptPos))
		case prev == kg:
			return nil, fmt.Errorf("%s: already called on this graph at %s with other arguments; a program optimizes one graph, once", fn, kg.l.where(kg.superoptPos))
		}
		return nil, fmt.Errorf("%s: already called on another kernel graph at %s; a program optimizes one graph", fn, kg.l.where(prev.superoptPos))
	}
	kg.superopt, kg.superoptPos, kg.l.super = &sa, pos, kg
	kg.called = kg.g.Clone()
	return result, nil
}

// gridDim converts a candidate grid of superoptimize, checked as
// block.New checks a threadblock graph's grid.
func gridDim(v starlark.Value) (block.Dim3, error) {
	var d dim3
	if err := d.Unpack(v); err != nil {
		return block.Dim3{}, err
	}
	_, err := block.New(block.Dim3(d), block.Dim3{1, 1, 1}, 1, 1)
	return block.Dim3(d), err
}

// blockDim converts a candidate block of superoptimize.
func blockDim(v starlark.Value) (block.Dim3, error) {
	var d dim3
	if err := d.Unpack(v); err != nil {
		return block.Dim3{}, err
	}
	return block.Dim3(d), checkThreads(block.Dim3(d))
}

// checkThreads checks a block's thread counts; each axis first, as their
// product could overflow.
func checkThreads(d block.Dim3) error {
	for a, n := range d {
		if n < 1 || n > block.MaxThreads {
			return fmt.Errorf("block_dim %v: axis %d is %d, want 1 to %d", d, a, n, block.MaxThreads)
		}
	}
	_, err := block.New(block.Dim3{1, 1, 1}, d, 1, 1)
	return err
}

// tensorMap converts a candidate imap or omap of superoptimize.
func tensorMap(v starlark.Value) (block.Map, error) {
	var m gridMap
	if err := m.Unpack(v); err != nil {
		return block.Map{}, err
	}
	for a, d := range m {
		if d < -1 || d >= ugraph.MaxRank {
			return block.Map{}, fmt.Errorf("axis %d maps to dim %d, want -1 to %d", a, d, ugraph.MaxRank-1)
		}
	}
	return block.Map(m), nil
}

func intIn(lo, hi int) func(starlark.Value) (int, error) {
	return func(v starlark.Value) (int, error) {
		var n int
		if err := starlark.AsInt(v, &n); err != nil {
			return 0, fmt.Errorf("got %s, want int", describe(v))
		}
		if n < lo || n > hi {
			return 0, fmt.Errorf("got %d, want %d to %d", n, lo, hi)
		}
		return n, nil
	}
}

// dtensor is a device tensor of a kernel graph. Two dtensor values are the
// same tensor exactly when they are equal.
type dtensor struct {
	kg *kgraph
	id kernel.TensorID
}

var _ starlark.HasAttrs = dtensor{}

func (t dtensor) tensor() kernel.Tensor { return t.kg.g.Tensors[t.id] }

func (t dtensor) String() string {
	return fmt.Sprintf("<dtensor %v %v>", t.tensor().Shape, t.tensor().DType)
}
func (t dtensor) Type() string          { return "dtensor" }
func (t dtensor) Freeze()               {}
func (t dtensor) Truth() starlark.Bool  { return true }
func (t dtensor) Hash() (uint32, error) { return uint32(t.id), nil }

func (t dtensor) Attr(name string) (starlark.Value, error) {
	return shapeAttr(t, name, t.tensor().Shape, t.tensor().DType), nil
}
func (t dtensor) AttrNames() []string { return shapeAttrNames }
