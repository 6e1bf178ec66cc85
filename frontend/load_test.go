package frontend

import (
	"bytes"
	"io"
	"maps"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

func mustLoad(t *testing.T, src string, opts Options) *Program {
	t.Helper()
	if opts.Stdout == nil {
		opts.Stdout = io.Discard
	}
	p, err := Load("prog.py", []byte(src), opts)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return p
}

// outputShapes returns the shapes of p's outputs.
func outputShapes(p *Program) []ugraph.Shape {
	var s []ugraph.Shape
	for _, o := range p.Graph.Outputs {
		s = append(s, p.Graph.Tensors[o].Shape)
	}
	return s
}

// kinds returns the kinds of g's ops.
func kinds(g *kernel.Graph) []ugraph.OpKind {
	var ks []ugraph.OpKind
	for _, op := range g.Ops {
		ks = append(ks, op.Kind)
	}
	return ks
}

// blockInput is what a test expects of a threadblock input op.
type blockInput struct {
	imap block.Map
	fmap int
}

// blockSpec is what a test expects of a customized op's threadblock graph.
type blockSpec struct {
	grid, threads   block.Dim3
	forloop, dimx   int
	inputs          []blockInput
	omaps           []block.Map
	outputs         []ugraph.Shape // device shapes of the output ops
	accums          []ugraph.Accum
	postLoopKinds   []ugraph.OpKind // kinds of the post-loop compute ops, in order
	operandsOfInput []kernel.TensorID
}

func checkBlock(t *testing.T, g *kernel.Graph, op kernel.Op, want blockSpec) {
	t.Helper()
	b := op.Block
	if b.Grid != want.grid || b.Threads != want.threads || b.ForloopRange != want.forloop || b.ReductionDimx != want.dimx {
		t.Errorf("block graph: grid %v threads %v forloop %d dimx %d, want %v %v %d %d",
			b.Grid, b.Threads, b.ForloopRange, b.ReductionDimx, want.grid, want.threads, want.forloop, want.dimx)
	}
	var ins []blockInput
	for _, in := range b.InputOps() {
		ins = append(ins, blockInput{in.Input.IMap, in.Input.FMap})
	}
	if !slices.Equal(ins, want.inputs) {
		t.Errorf("input ops %v, want %v", ins, want.inputs)
	}
	if !slices.Equal(op.In, want.operandsOfInput) {
		t.Errorf("customized operands %v, want %v", op.In, want.operandsOfInput)
	}
	var omaps []block.Map
	var outs []ugraph.Shape
	for _, o := range b.OutputOps() {
		omaps = append(omaps, o.Output.OMap)
		outs = append(outs, o.Output.DShape)
	}
	if !slices.Equal(omaps, want.omaps) || !slices.Equal(outs, want.outputs) {
		t.Errorf("output ops %v %v, want %v %v", omaps, outs, want.omaps, want.outputs)
	}
	var accums []ugraph.Accum
	var post []ugraph.OpKind
	for _, o := range b.Ops {
		switch {
		case o.Kind == ugraph.OpForloopAccum:
			accums = append(accums, o.Attr.Accum)
		case o.Out != block.NoTensor && b.Tensors[o.Out].PostLoop:
			post = append(post, o.Kind)
		}
	}
	if !slices.Equal(accums, want.accums) || !slices.Equal(post, want.postLoopKinds) {
		t.Errorf("accumulators %v, post-loop ops %v; want %v, %v", accums, post, want.accums, want.postLoopKinds)
	}
}

func TestExamples(t *testing.T) {
	S := ugraph.MustShape
	M := func(x, y, z int) block.Map { return block.Map{x, y, z} }
	threads := block.Dim3{128, 1, 1}
	tests := []struct {
		file   string
		outs   []ugraph.Shape
		config string // of superoptimize; "" when not called
		kinds  []ugraph.OpKind
		blocks []blockSpec // of the customized ops, in order
	}{
		{file: "rmsnorm_matmul.py", outs: []ugraph.Shape{S(16, 6144)}, config: "mlp",
			kinds: []ugraph.OpKind{ugraph.OpInput, ugraph.OpInput, ugraph.OpRMSNorm, ugraph.OpMatmul}},
		{file: "gated_mlp.py", outs: []ugraph.Shape{S(8, 4096)}, config: "mlp",
			kinds: []ugraph.OpKind{ugraph.OpInput, ugraph.OpInput, ugraph.OpInput, ugraph.OpMatmul, ugraph.OpMatmul, ugraph.OpSilu, ugraph.OpMul}},
		{file: "gqa.py", outs: []ugraph.Shape{S(2, 256, 64)}, config: "attention",
			kinds: []ugraph.OpKind{ugraph.OpInput, ugraph.OpInput, ugraph.OpInput, ugraph.OpMatmul, ugraph.OpExp, ugraph.OpReduction, ugraph.OpDiv, ugraph.OpMatmul}},
		{file: "rmsnorm_matmul_mugraph.py", outs: []ugraph.Shape{S(16, 6144)},
			kinds: []ugraph.OpKind{ugraph.OpInput, ugraph.OpInput, ugraph.OpCustomized},
			blocks: []blockSpec{{
				grid: block.Dim3{96, 1, 1}, threads: threads, forloop: 64, dimx: 64,
				inputs:          []blockInput{{block.Replicate, 1}, {M(1, -1, -1), 0}},
				operandsOfInput: []kernel.TensorID{0, 1},
				omaps:           []block.Map{M(1, -1, -1)}, outputs: []ugraph.Shape{S(16, 6144)},
				accums:        []ugraph.Accum{ugraph.AccumNone, ugraph.AccumRMS},
				postLoopKinds: []ugraph.OpKind{ugraph.OpDiv},
			}}},
		{file: "gated_mlp_mugraph.py", outs: []ugraph.Shape{S(8, 4096)},
			kinds: []ugraph.OpKind{ugraph.OpInput, ugraph.OpInput, ugraph.OpInput, ugraph.OpCustomized},
			blocks: []blockSpec{{
				grid: block.Dim3{64, 1, 1}, threads: threads, forloop: 64, dimx: 64,
				inputs:          []blockInput{{block.Replicate, 1}, {M(1, -1, -1), 0}, {M(1, -1, -1), 0}},
				operandsOfInput: []kernel.TensorID{0, 1, 2},
				omaps:           []block.Map{M(1, -1, -1)}, outputs: []ugraph.Shape{S(8, 4096)},
				accums:        []ugraph.Accum{ugraph.AccumNone, ugraph.AccumNone},
				postLoopKinds: []ugraph.OpKind{ugraph.OpSilu, ugraph.OpMul},
			}}},
		{file: "gqa_mugraph.py", outs: []ugraph.Shape{S(2, 256, 64)},
			kinds: []ugraph.OpKind{ugraph.OpInput, ugraph.OpInput, ugraph.OpInput, ugraph.OpCustomized, ugraph.OpCustomized},
			blocks: []blockSpec{{
				grid: block.Dim3{2, 16, 1}, threads: threads, forloop: 4, dimx: 64,
				inputs:          []blockInput{{M(0, -1, -1), -1}, {M(0, 2, -1), 2}, {M(0, 1, -1), 1}},
				operandsOfInput: []kernel.TensorID{0, 1, 2},
				omaps:           []block.Map{M(0, 2, -1), M(0, 2, -1)},
				outputs:         []ugraph.Shape{S(2, 256, 1024), S(2, 256, 16)},
				accums:          []ugraph.Accum{ugraph.AccumSum, ugraph.AccumNone},
			}, {
				grid: block.Dim3{2, 4, 1}, threads: threads, forloop: 1, dimx: 64,
				inputs:          []blockInput{{M(0, 1, -1), -1}, {M(0, 1, -1), -1}},
				operandsOfInput: []kernel.TensorID{3, 4},
				omaps:           []block.Map{M(0, 1, -1)}, outputs: []ugraph.Shape{S(2, 256, 64)},
				accums:        []ugraph.Accum{ugraph.AccumSumToDimx, ugraph.AccumSum},
				postLoopKinds: []ugraph.OpKind{ugraph.OpDiv},
			}}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			p, err := LoadFile(filepath.Join("..", "examples", tt.file), Options{Stdout: io.Discard})
			if err != nil {
				t.Fatal(err)
			}
			if want := strings.TrimSuffix(tt.file, ".py"); p.Name != want {
				t.Errorf("Name = %q, want %q", p.Name, want)
			}
			if got := outputShapes(p); !slices.Equal(got, tt.outs) {
				t.Errorf("outputs %v, want %v", got, tt.outs)
			}
			if got := kinds(p.Graph); !slices.Equal(got, tt.kinds) {
				t.Errorf("ops %v, want %v", got, tt.kinds)
			}
			switch {
			case tt.config == "" && p.Superopt != nil:
				t.Errorf("Superopt = %+v, want nil", p.Superopt)
			case tt.config != "" && (p.Superopt == nil || p.Superopt.Config != tt.config):
				t.Errorf("Superopt = %+v, want config %q", p.Superopt, tt.config)
			}
			if len(p.Warnings) > 0 {
				t.Errorf("warnings: %q", p.Warnings)
			}
			var custom []kernel.Op
			for _, op := range p.Graph.Ops {
				if op.Kind == ugraph.OpCustomized {
					custom = append(custom, op)
				}
			}
			for i, want := range tt.blocks {
				checkBlock(t, p.Graph, custom[i], want)
			}
		})
	}
}

func TestRMSNormDim(t *testing.T) {
	p := mustLoad(t, withHeader(
		"A = g.new_input(dims=(2, 16, 64))",
		"g.mark_output(g.rms_norm(A, (16, 64)))",
		"g.mark_output(g.rms_norm(A, normalized_shape=[64]))",
	), Options{})
	var dims []int
	for _, op := range p.Graph.Ops {
		if op.Kind == ugraph.OpRMSNorm {
			dims = append(dims, op.Attr.Dim)
		}
	}
	if !slices.Equal(dims, []int{1, 2}) {
		t.Errorf("rms_norm dims %v, want [1 2]", dims)
	}
}

func TestOutputsDefaultToSinks(t *testing.T) {
	// Mirage's gated-MLP demo never marks its output; the loader takes the
	// results nothing consumes, in creation order.
	p := mustLoad(t, withHeader(
		"A = g.matmul(X, W)",    // consumed by B
		"B = g.exp(A)",          // sink
		"C = g.reduction(X, 1)", // sink
	), Options{})
	if got, want := p.Graph.Outputs, []kernel.TensorID{3, 4}; !slices.Equal(got, want) {
		t.Errorf("outputs %v, want %v", got, want)
	}
	// Marked outputs win, in marking order.
	p = mustLoad(t, withHeader("A = g.exp(X)", "B = g.exp(W)", "g.mark_output(B)", "g.mark_output(X)"), Options{})
	if got, want := p.Graph.Outputs, []kernel.TensorID{3, 0}; !slices.Equal(got, want) {
		t.Errorf("outputs %v, want %v", got, want)
	}
}

func TestSuperoptimizePicksTheGraph(t *testing.T) {
	p := mustLoad(t, src(
		"import mirage as mi",
		"ref = mi.new_kernel_graph()",
		"ref.mark_output(ref.exp(ref.new_input(dims=(8, 8))))",
		"g = mi.new_kernel_graph()",
		"X = g.new_input(dims=(4, 4), dtype=mi.bfloat16)",
		"g.mark_output(g.sqrt(X))",
		"opt = g.superoptimize(config='mlp')",
	), Options{})
	if got := outputShapes(p); !slices.Equal(got, []ugraph.Shape{ugraph.MustShape(4, 4)}) {
		t.Errorf("outputs %v: picked the wrong graph", got)
	}
	if dt := p.Graph.Tensors[0].DType; dt != ugraph.BFloat16 {
		t.Errorf("dtype %v, want bfloat16", dt)
	}
}

func TestSuperoptArgs(t *testing.T) {
	p := mustLoad(t, withHeader(
		"g.mark_output(g.matmul(X, W))",
		"opt = g.superoptimize(",
		"    config='mlp',",
		"    griddims=[(96, 1, 1), [48, 2]],",
		"    blockdims=[(128, 1, 1)],",
		"    imaps=[(-1, -1, -1), (1,)],",
		"    omaps=[(1, -1, -1)],",
		"    fmaps=[1, 0, -1],",
		"    franges=[],",
		"    verbose=True, backend='cuda', warmup_iters=16, profile_iters=1000,",
		"    previous_checkpoint='ckpt.json', save_codes=False,",
		")",
		// Demos call and time the optimized graph; all of that is inert.
		"out = opt(inputs=[X, W])",
		"out[0].cuda().synchronize()",
		"for o in out:",
		"    fail('inert values iterate as empty')",
		"t = opt.elapsed_time(opt) / 1000 + 1",
	), Options{})
	want := &SuperoptArgs{Config: "mlp", Lists: Lists{
		Grids:   []block.Dim3{{96, 1, 1}, {48, 2, 1}},
		Threads: []block.Dim3{{128, 1, 1}},
		IMaps:   []block.Map{block.Replicate, {1, -1, -1}},
		OMaps:   []block.Map{{1, -1, -1}},
		FMaps:   []int{1, 0, -1},
		FRanges: []int{},
	}, Line: 6}
	if !reflect.DeepEqual(p.Superopt, want) {
		t.Errorf("Superopt = %+v\nwant %+v", p.Superopt, want)
	}

	p = mustLoad(t, withHeader("g.mark_output(g.matmul(X, W))", "g.superoptimize()"), Options{})
	if !reflect.DeepEqual(p.Superopt, &SuperoptArgs{Line: 6}) {
		t.Errorf("Superopt = %+v, want all fields unset (nil) but the line", p.Superopt)
	}
}

func TestImports(t *testing.T) {
	tests := []struct {
		name string
		src  string
	}{
		{"plain", src("import mirage", "g = mirage.new_kernel_graph()", "g.exp(g.new_input((4,), dtype=mirage.float32))")},
		{"from", src("from mirage import new_kernel_graph, float16 as half", "g = new_kernel_graph()", "g.exp(g.new_input((4,), dtype=half))")},
		{"star", src("from mirage import *", "g = new_kernel_graph()", "g.exp(g.new_input((4,), dtype=bfloat16))")},
		{"parenthesized", src(
			"from mirage import (",
			"    new_kernel_graph,  # the graph",
			"    float16,",
			")",
			"g = new_kernel_graph()",
			"g.exp(g.new_input((4,), dtype=float16))")},
		{"continued", src("import mirage \\", "    as mi", "g = mi.new_kernel_graph()", "g.exp(g.new_input((4,)))")},
		{"future", src("from __future__ import annotations", "import mirage as mi", "g = mi.new_kernel_graph()", "g.exp(g.new_input((4,)))")},
		{"semicolons", src("import mirage as mi; g = mi.new_kernel_graph(); import mirage as m2", "g.exp(g.new_input((4,), dtype=m2.float16))")},
		{"in a function", src("def build():", "    import mirage as mi", "    g = mi.new_kernel_graph()", "    g.exp(g.new_input((4,)))", "build()")},
		{"after a colon", src("if True: import mirage as mi", "g = mi.new_kernel_graph()", "g.exp(g.new_input((4,)))")},
		{"byte order mark", "\ufeff" + src("import mirage as mi", "g = mi.new_kernel_graph()", "g.exp(g.new_input((4,)))")},
		{"in strings", src(
			`"""A docstring that says`,
			`import torch`,
			`"""`,
			"import mirage as mi",
			`s = "import torch"  # import torch`,
			"t = '''",
			"from torch import nn'''",
			"g = mi.new_kernel_graph()",
			"g.exp(g.new_input((4,)))")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustLoad(t, tt.src, Options{})
			if got := outputShapes(p); !slices.Equal(got, []ugraph.Shape{ugraph.MustShape(4)}) {
				t.Errorf("outputs %v, want [[4]]", got)
			}
		})
	}
}

// Rewritten imports keep every later statement on its line.
func TestImportsKeepLines(t *testing.T) {
	_, err := Load("prog.py", []byte(src(
		"from mirage import (",
		"    new_kernel_graph,",
		")",
		"import mirage \\",
		"    as mi",
		"g = new_kernel_graph()",
		"X = g.new_input((4, 8))",
		"Y = g.matmul(X, X)",
	)), Options{})
	if err == nil || !strings.HasPrefix(err.Error(), "prog.py:8: matmul([4, 8], [4, 8])") {
		t.Errorf("err = %v, want it at prog.py:8", err)
	}
}

// lenientDemo has the shape of Mirage's demos: torch for test data and timing.
var lenientDemo = src(
	"import mirage as mi",
	"import torch",
	"from torch.nn import functional as F",
	"import numpy as np, argparse",
	"parser = argparse.ArgumentParser()",
	"args = parser.parse_args()",
	"g = mi.new_kernel_graph()",
	"X = g.new_input(dims=(8, 4096), dtype=mi.float16)",
	"W = g.new_input(dims=(4096, 4096), dtype=mi.float16)",
	"g.mark_output(g.matmul(X, W))",
	"opt = g.superoptimize(config='mlp')",
	"x = torch.randn((8, 4096), dtype=torch.float16, device='cuda:0') * 0.1",
	"torch.backends.cudnn.enabled = True",
	"cache = {}",
	"cache['x'] = -x",
	"starter = torch.cuda.Event(enable_timing=True)",
	"for _ in range(16):",
	"    opt(inputs=[x, torch.randn(4096, 4096)])",
	"if torch.cuda.is_available():",
	"    fail('stubs are false')",
	"print(F.silu(x)[0], len(np.zeros(3)))",
)

// Modules other than mirage are stubs by default, with one warning for
// them all; Strict refuses them.
func TestStubs(t *testing.T) {
	prog := lenientDemo
	var warned []string
	var out bytes.Buffer
	p := mustLoad(t, prog, Options{Stdout: &out, Warn: func(m string) { warned = append(warned, m) }})
	want := "prog.py:2: modules torch, torch.nn, numpy and argparse are stubs, with no file, network or process access: " +
		"their attributes, calls and results are inert values, but argparse reads the program's arguments (those after --) (--strict refuses such imports)"
	if len(warned) != 1 || warned[0] != want || !slices.Equal(warned, p.Warnings) {
		t.Errorf("warnings %q (Program.Warnings %q), want one: %q", warned, p.Warnings, want)
	}
	if got := out.String(); got != "<inert torch.nn.functional.silu()[]> <inert len(numpy.zeros())>\n" {
		t.Errorf("printed %q", got)
	}
	if p.Superopt == nil || p.Superopt.Config != "mlp" {
		t.Errorf("Superopt = %+v", p.Superopt)
	}
	_, err := Load("prog.py", []byte(prog), Options{Strict: true, Stdout: io.Discard})
	if err == nil || !strings.HasPrefix(err.Error(), `prog.py:2: import of module "torch" is refused by a strict load`) {
		t.Errorf("strict: %v", err)
	}
}

func TestPython(t *testing.T) {
	// The Python a program may use: functions, loops, while, tuples,
	// reassignment, sets, recursion, __name__, __file__, print.
	var out bytes.Buffer
	p := mustLoad(t, src(
		"import mirage as mi",
		"def layer(g, x, w):",
		"    return g.silu(g.matmul(x, w))",
		"def depth(n):",
		"    return 0 if n == 0 else 1 + depth(n - 1)",
		"g = mi.new_kernel_graph()",
		"dims = [(8, 64)] + [(64, 64)] * 3",
		"x = g.new_input(dims=dims[0])",
		"ws = [g.new_input(dims=d) for d in dims[1:]]",
		"for w in ws:",
		"    x = layer(g, x, w)",
		"n = 0",
		"while n < depth(3):",
		"    n += 1",
		"seen = set([x.num_dims, x.dim(0), x.dim(1)])",
		"if __name__ == \"__main__\":",
		"    g.mark_output(x)",
		"    print('rank', x.num_dims, x.dtype == mi.float16, sorted(seen), n, __file__)",
	), Options{Stdout: &out})
	if got := outputShapes(p); !slices.Equal(got, []ugraph.Shape{ugraph.MustShape(8, 64)}) {
		t.Errorf("outputs %v", got)
	}
	if got := len(p.Graph.Ops); got != 4+3*2 {
		t.Errorf("%d ops, want 10", got)
	}
	if got, want := out.String(), "rank 2 True [2, 8, 64] 3 prog.py\n"; got != want {
		t.Errorf("printed %q, want %q", got, want)
	}
}

func TestBlockGraphWarnings(t *testing.T) {
	p := mustLoad(t, withHeader(
		"tb = mi.new_threadblock_graph((1, 1, 1), (128,), 1, 64)",
		"tX = tb.new_input(X, (-1, -1, -1), -1, store_in_dmem=True)",
		"g.mark_output(g.exp(X))",
	), Options{})
	want := []string{
		"prog.py:6: new_input: store_in_dmem=True is ignored",
		"prog.py:5: this threadblock graph is never used by customized",
		"prog.py:4: input float16 [4096, 6144] is read by no op", // W
	}
	if len(p.Warnings) != len(want) {
		t.Fatalf("warnings %q, want %q", p.Warnings, want)
	}
	for i := range want {
		if !strings.HasPrefix(p.Warnings[i], want[i]) {
			t.Errorf("warning %q, want %q", p.Warnings[i], want[i])
		}
	}
}

func TestBlockGraphDefaults(t *testing.T) {
	p := mustLoad(t, withHeader(
		"tb = mi.new_threadblock_graph(grid_dim=(4,), forloop_range=1, reduction_dimx=64)",
		"t = tb.forloop_accum(tb.new_input(X, (0,), -1), acc=None)",
		"tb.new_output(t, output_map=[0])",
		"O = g.customized(inputs=(X,), bgraph=tb)[0]",
		"g.mark_output(O)",
	), Options{})
	b := p.Graph.Ops[len(p.Graph.Ops)-1].Block
	if b.Grid != (block.Dim3{4, 1, 1}) || b.Threads != (block.Dim3{128, 1, 1}) {
		t.Errorf("grid %v threads %v, want (4, 1, 1) (128, 1, 1)", b.Grid, b.Threads)
	}
	if m := b.InputOps()[0].Input.IMap; m != (block.Map{0, -1, -1}) {
		t.Errorf("input map %v, want (0, -1, -1)", m)
	}
}

// The op methods follow the IR's op table, with Mirage's parameter names.
func TestOpMethods(t *testing.T) {
	for k, names := range scalarParams {
		if len(names) != k.Info().Scalars {
			t.Errorf("%v: %d scalar parameters, the op table says %d", k, len(names), k.Info().Scalars)
		}
	}
	var kg kgraph
	var tb tbgraph
	for _, name := range []string{"matmul", "exp", "square", "sqrt", "silu", "gelu", "relu", "log", "clamp",
		"mul_scalar", "add", "sub", "mul", "div", "pow", "reduction", "rms_norm", "new_input", "mark_output", "customized", "superoptimize"} {
		if v, _ := kg.Attr(name); v == nil {
			t.Errorf("kernel graph has no method %s", name)
		}
	}
	for _, name := range []string{"matmul", "exp", "square", "sqrt", "silu", "gelu", "relu", "log", "clamp", "mul_scalar",
		"add", "sub", "mul", "div", "pow", "reduction", "reduction_to_dimx", "rms_norm", "concat", "forloop_accum", "new_input", "new_output"} {
		if v, _ := tb.Attr(name); v == nil {
			t.Errorf("threadblock graph has no method %s", name)
		}
	}
	p := mustLoad(t, withHeader(
		"Y = g.clamp(X, min_val=-1, max_val=2.5)",
		"Z = g.mul_scalar(A=Y, scalar=0.5)",
		"tb = mi.new_threadblock_graph((1, 1, 1), (128,), 1, 64)",
		"a = tb.new_input(X, (-1,), -1)",
		"c = tb.concat(a, tb.sub(a, a), dim=1)",
		"r = tb.reduction_to_dimx(tb.rms_norm(c), 1)",
		"o = tb.forloop_accum(tb.pow(r, tb.clamp(r, 0, 1)), 'mean')",
		"tb.new_output(o, (-1, -1, -1))",
		"O = g.customized([X], tb)",
	), Options{})
	op := p.Graph.Ops[2]
	if op.Kind != ugraph.OpClamp || op.Attr.Scalars != [2]float64{-1, 2.5} {
		t.Errorf("clamp op %+v", op)
	}
	if op := p.Graph.Ops[3]; op.Attr.Scalars[0] != 0.5 {
		t.Errorf("mul_scalar op %+v", op)
	}
	if got := outputShapes(p); !slices.Equal(got, []ugraph.Shape{ugraph.MustShape(16, 4096), ugraph.MustShape(16, 1)}) {
		t.Errorf("outputs %v", got)
	}
}

// TestInputNamesAndLines: the globals that hold inputs name them, and
// each tensor records the line that made it.
func TestInputNamesAndLines(t *testing.T) {
	p := mustLoad(t, withHeader(
		"A = g.exp(X)",
		"Y = X",
		"def f():",
		"    Z = g.new_input(dims=(16, 4096))",
		"    return Z",
		"V = f()",
		"g.mark_output(g.add(A, V))",
	), Options{})
	want := map[string]int{"X": 0, "W": 1, "Y": 0, "V": 2}
	if !maps.Equal(p.Names, want) {
		t.Errorf("names %v, want %v", p.Names, want)
	}
	if len(p.Lines) != len(p.Graph.Tensors) {
		t.Fatalf("%d lines for %d tensors", len(p.Lines), len(p.Graph.Tensors))
	}
	first := p.Lines[2] // exp(X), the first line after the header
	if p.Lines[3] != first+3 || p.Lines[4] != first+6 {
		t.Errorf("lines %v: want new_input at %d and add at %d", p.Lines, first+3, first+6)
	}
}

// math is Python's (package pymath), no stub: the scale of attention
// written with it is the number, with no warning; Python's errors are the
// program's; `from math import *` binds nothing, and says so; a strict
// load refuses it as every module but mirage.
func TestMathModule(t *testing.T) {
	const prog = `import math
from math import sqrt as root
import mirage as mi
g = mi.new_kernel_graph()
X = g.new_input(dims=(4, 128), dtype=mi.float16)
g.mark_output(g.mul_scalar(X, 1.0 / math.sqrt(128) + root(0)))
`
	var warned []string
	p := mustLoad(t, prog, Options{Warn: func(m string) { warned = append(warned, m) }})
	if len(warned) != 0 {
		t.Errorf("warnings %q, want none", warned)
	}
	op := p.Graph.Ops[len(p.Graph.Ops)-1]
	if op.Kind != ugraph.OpMulScalar || op.Attr.Scalars[0] != 1/math.Sqrt(128) {
		t.Errorf("last op %v %v, want mul_scalar by 1/sqrt(128)", op.Kind, op.Attr.Scalars)
	}
	if _, err := Load("prog.py", []byte(strings.Replace(prog, "sqrt(128)", "sqrt(-128)", 1)), Options{}); err == nil ||
		err.Error() != "prog.py:6: math.sqrt(-128): math domain error" {
		t.Errorf("sqrt(-128): %v", err)
	}
	warned = nil
	star := "from math import *\nimport mirage as mi\ng = mi.new_kernel_graph()\ng.mark_output(g.exp(g.new_input(dims=(4, 128), dtype=mi.float16)))\n"
	mustLoad(t, star, Options{Warn: func(m string) { warned = append(warned, m) }})
	if want := "prog.py:1: `from math import *` binds nothing: import math, or the names the program uses"; len(warned) != 1 || warned[0] != want {
		t.Errorf("from math import *: warnings %q, want %q", warned, want)
	}
	if _, err := Load("prog.py", []byte(prog), Options{Strict: true}); err == nil || !strings.HasPrefix(err.Error(), `prog.py:1: import of module "math" is refused by a strict load`) {
		t.Errorf("strict: %v", err)
	}
}

// An input that no op reads (and that is no output) is warned about at
// its line: it stays a parameter of the entry point.
func TestUnreadInputWarnings(t *testing.T) {
	p := mustLoad(t, src(
		"import mirage as mi",
		"g = mi.new_kernel_graph()",
		"X = g.new_input(dims=(8, 64), dtype=mi.float16)",
		"Unused = g.new_input(dims=(2, 3), dtype=mi.bfloat16)",
		"Y = g.new_input(dims=(8, 64), dtype=mi.float16)",
		"g.mark_output(g.exp(X))",
		"g.mark_output(Y)",
	), Options{})
	want := []string{"prog.py:4: input bfloat16 [2, 3] is read by no op: it stays a parameter of the entry point, unused"}
	if !slices.Equal(p.Warnings, want) {
		t.Errorf("warnings %q, want %q", p.Warnings, want)
	}
}

// A result that no op reads and that is not marked as an output, in a
// program that marks its outputs, is warned about at its line: no kernel
// computes it (a layer's K projection, computed and never marked). Where
// the program marks none, its unread results are its outputs (no warning).
func TestForgottenResultWarnings(t *testing.T) {
	p := mustLoad(t, src(
		"import mirage as mi",
		"g = mi.new_kernel_graph()",
		"X = g.new_input(dims=(8, 64), dtype=mi.float16)",
		"W = g.new_input(dims=(64, 16), dtype=mi.float16)",
		"Q = g.exp(X)",
		"K = g.matmul(X, W)",
		"g.mark_output(Q)",
	), Options{})
	want := []string{"prog.py:6: the result of matmul (float16 [8, 16]) is read by no op and not marked as an output (mark_output): no kernel computes it"}
	if !slices.Equal(p.Warnings, want) {
		t.Errorf("warnings %q, want %q", p.Warnings, want)
	}
	p = mustLoad(t, src(
		"import mirage as mi",
		"g = mi.new_kernel_graph()",
		"X = g.new_input(dims=(8, 64), dtype=mi.float16)",
		"W = g.new_input(dims=(64, 16), dtype=mi.float16)",
		"Q = g.exp(X)",
		"K = g.matmul(X, W)",
	), Options{})
	if len(p.Warnings) != 0 || len(p.Graph.Outputs) != 2 {
		t.Errorf("no outputs marked: warnings %q, outputs %v; want none and Q, K", p.Warnings, p.Graph.Outputs)
	}
}
