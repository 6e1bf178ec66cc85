package frontend

import (
	"bytes"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
)

// Mirage's runtime functions, graph methods and superoptimize parameters
// are accepted; the load ends with one note naming those used.
func TestRuntimeAPI(t *testing.T) {
	prog := src(
		"import mirage as mi",
		"from mirage import set_gpu_device_id, generate_cuda_program",
		"mi.set_gpu_device_id(7)",
		"set_gpu_device_id(0)",
		"mi.bypass_compile_errors()",
		"mi.global_config.verbose = True",
		"torch_dtype = mi.convert_dtype_to_torch_type(mi.bfloat16)",
		"g = mi.new_kernel_graph()",
		"X = g.new_input(dims=(16, 4096), dtype=mi.bfloat16)",
		"W = g.new_input(dims=(4096, 64), dtype=mi.bfloat16)",
		"O = g.matmul(g.rms_norm(X, normalized_shape=(4096,)), W)",
		"g.mark_output(O)",
		"g.visualize('graph')",
		"g.to_json('g.json')",
		"outs = g(inputs=[torch_dtype], outputs=[O])",
		"p = generate_cuda_program(g.cygraph, target_cc=80, input_strides=[], output_tensors=[O])",
		"print(p['code'][:10], mi.get_shared_memory_capacity(80))",
		"opt = g.superoptimize(config='mlp', griddims=[(64, 1, 1)], franges=[16], backend='cuda', warmup_iters=16,",
		"    profile_iters=1000, previous_checkpoint='rms.json', save_codes=True, verbose=False, use_graph_dataset=False,",
		"    use_cached_graphs=False, is_formal_verified=False)",
		"outputs = opt(inputs=[torch_dtype])",
		"print(outputs[0].shape, len(outputs))",
	)
	var warned []string
	var out bytes.Buffer
	p := mustLoad(t, prog, Options{Stdout: &out, Warn: func(m string) { warned = append(warned, m) }})
	want := "prog.py:3: ignored, as they concern Mirage's GPU runtime, not the search: mirage.set_gpu_device_id, " +
		"mirage.bypass_compile_errors, mirage.global_config, mirage.convert_dtype_to_torch_type, graph.visualize, graph.to_json, " +
		"graph(inputs=...), graph.cygraph, mirage.generate_cuda_program, mirage.get_shared_memory_capacity, " +
		"superoptimize(verbose=), superoptimize(backend=), superoptimize(warmup_iters=), superoptimize(profile_iters=), " +
		"superoptimize(previous_checkpoint=), superoptimize(save_codes=), superoptimize(use_graph_dataset=), " +
		"superoptimize(use_cached_graphs=), superoptimize(is_formal_verified=)"
	if len(warned) != 1 || warned[0] != want {
		t.Errorf("warnings %q\nwant one: %q", warned, want)
	}
	if got := out.String(); got != "<inert mirage.generate_cuda_program()[][:]> <inert mirage.get_shared_memory_capacity()>\n<inert superoptimize()()[].shape> <inert len(superoptimize()())>\n" {
		t.Errorf("printed %q", got)
	}
	// The search arguments are honoured.
	if s := p.Superopt; s == nil || s.Config != "mlp" || !slices.Equal(s.Lists.Grids, []block.Dim3{{64, 1, 1}}) || !slices.Equal(s.Lists.FRanges, []int{16}) {
		t.Errorf("Superopt = %+v", p.Superopt)
	}
	if dt := p.Graph.Tensors[p.Graph.Inputs()[0]].DType; dt != ugraph.BFloat16 {
		t.Errorf("input dtype %v", dt)
	}
	// A program that uses none of them gets no note.
	q := mustLoad(t, withHeader("Y = g.matmul(X, W)", "g.superoptimize(config='mlp')"), Options{})
	if len(q.Warnings) != 0 {
		t.Errorf("warnings %q", q.Warnings)
	}
}

// Mirage's first API, which its LoRA demo uses: mi.new_graph, mi.optimize
// and the generate_triton_program of the graphs it returns.
func TestFirstAPI(t *testing.T) {
	prog := src(
		"import mirage as mi",
		"graph = mi.new_graph()",
		"X = graph.new_input(dims=(16, 256), dtype=mi.float16)",
		"A = graph.new_input(dims=(256, 16), dtype=mi.float16)",
		"B = graph.new_input(dims=(16, 4096), dtype=mi.float16)",
		"E = graph.matmul(graph.matmul(X, A), B)",
		"graph.generate_triton_program('before.py')",
		"graphs = mi.optimize(graph, imaps=[(0, -1, -1)], griddims=[(16, 1, 1)], fmaps=[-1], franges=[1, 4],",
		"    default_config='lora', previous_checkpoint='lora.json')",
		"for i, g in enumerate(graphs):",
		"    g.generate_triton_program('generated_program_{}.py'.format(i))",
		"print(len(graphs), graphs)",
	)
	var out bytes.Buffer
	p := mustLoad(t, prog, Options{Stdout: &out})
	if got := kinds(p.Graph); !slices.Equal(got, []ugraph.OpKind{ugraph.OpInput, ugraph.OpInput, ugraph.OpInput, ugraph.OpMatmul, ugraph.OpMatmul}) {
		t.Errorf("ops %v", got)
	}
	s := p.Superopt
	if s == nil || s.Config != "lora" || !slices.Equal(s.Lists.IMaps, []block.Map{{0, -1, -1}}) || !slices.Equal(s.Lists.Grids, []block.Dim3{{16, 1, 1}}) ||
		!slices.Equal(s.Lists.FMaps, []int{-1}) || !slices.Equal(s.Lists.FRanges, []int{1, 4}) || s.Lists.OMaps != nil || s.Lists.Threads != nil {
		t.Errorf("Superopt = %+v", s)
	}
	want := "prog.py:7: ignored, as they concern Mirage's GPU runtime, not the search: graph.generate_triton_program, optimize(previous_checkpoint=)"
	if len(p.Warnings) != 1 || p.Warnings[0] != want {
		t.Errorf("warnings %q\nwant %q", p.Warnings, want)
	}
	if got := out.String(); got != "<inert len(optimize())> <inert optimize()>\n" {
		t.Errorf("printed %q", got)
	}
	// Without a config, and optimize called again on the same graph.
	q := mustLoad(t, withHeader("Y = g.matmul(X, W)", "for _ in range(2):", "    mi.optimize(g)"), Options{})
	if q.Superopt == nil || q.Superopt.Config != "" || len(q.Warnings) != 1 || !strings.Contains(q.Warnings[0], "repeated optimize calls") {
		t.Errorf("Superopt %+v, warnings %q", q.Superopt, q.Warnings)
	}
}

// Mirage's rms_norm demo superoptimizes the same graph, rebuilt, in a
// loop: one program, searched once.
func TestRepeatedSuperoptimize(t *testing.T) {
	prog := src(
		"import mirage as mi",
		"for _ in range(10):",
		"    g = mi.new_kernel_graph()",
		"    X = g.new_input(dims=(1, 7168), dtype=mi.bfloat16)",
		"    W = g.new_input(dims=(7168, 256), dtype=mi.bfloat16)",
		"    g.mark_output(g.matmul(g.rms_norm(X, normalized_shape=(7168,)), W))",
		"    opt = g.superoptimize(config='mlp')",
		"opt(inputs=[])",
	)
	p := mustLoad(t, prog, Options{})
	if len(p.Graph.Ops) != 4 || p.Superopt == nil || p.Superopt.Config != "mlp" {
		t.Errorf("program %v, %+v", kinds(p.Graph), p.Superopt)
	}
	if len(p.Warnings) != 1 || !strings.HasSuffix(p.Warnings[0], "prog.py:7: ignored, as they concern Mirage's GPU runtime, not the search: repeated superoptimize calls on identical graphs (searched once)") {
		t.Errorf("warnings %q", p.Warnings)
	}
	// Different graphs are not one program.
	diff := strings.Replace(prog, "dims=(7168, 256)", "dims=(7168, 256 + _)", 1)
	if _, err := Load("prog.py", []byte(diff), Options{Stdout: io.Discard}); err == nil || !strings.Contains(err.Error(), "prog.py:7: superoptimize: already called on another kernel graph at prog.py:7") {
		t.Errorf("different graphs: %v", err)
	}
}

// Mirage searches the graph as it is when superoptimize is called: ops and
// outputs the program adds afterwards (a reference check, say) are not
// part of the program, and a warning says so.
func TestOpsAfterSuperoptimize(t *testing.T) {
	p := mustLoad(t, src(
		"import mirage as mi",
		"g = mi.new_kernel_graph()",
		"X = g.new_input((16, 64))",
		"W = g.new_input((64, 64))",
		"O = g.matmul(X, W)",
		"g.mark_output(O)",
		"best = g.superoptimize(config='mlp')",
		"E = g.exp(O)",
		"g.mark_output(E)",
	), Options{})
	if got := kinds(p.Graph); !slices.Equal(got, []ugraph.OpKind{ugraph.OpInput, ugraph.OpInput, ugraph.OpMatmul}) || len(p.Graph.Outputs) != 1 {
		t.Errorf("program %v with %d outputs, want the graph at the call: input, input, matmul, one output", got, len(p.Graph.Outputs))
	}
	if len(p.Warnings) != 1 || !strings.HasPrefix(p.Warnings[0], "prog.py:7: the program adds ops or outputs to the graph after superoptimize") {
		t.Errorf("warnings %q", p.Warnings)
	}
	// The globals name the program's tensors (--dynamic X:0=...), not
	// those made after the call.
	if want := map[string]int{"X": 0, "W": 1}; !maps.Equal(p.Names, want) || !maps.Equal(p.Computed, map[string]bool{"O": true}) {
		t.Errorf("names %v, computed %v; want %v and O", p.Names, p.Computed, want)
	}
	// With no output marked by the call, the graph's sinks then are.
	q := mustLoad(t, src(
		"import mirage as mi",
		"g = mi.new_kernel_graph()",
		"X = g.new_input((16, 64))",
		"S = g.silu(X)",
		"g.superoptimize()",
		"g.mark_output(g.exp(S))",
	), Options{})
	if got := kinds(q.Graph); !slices.Equal(got, []ugraph.OpKind{ugraph.OpInput, ugraph.OpSilu}) || len(q.Graph.Outputs) != 1 || q.Graph.Outputs[0] != q.Graph.Ops[1].Out[0] {
		t.Errorf("program %v, outputs %v, want silu's", got, q.Graph.Outputs)
	}
}

// Decorators apply as in Python, except stubs, which leave the function
// as it is; asserts check what can be checked.
func TestDecoratorsAndAssert(t *testing.T) {
	var out bytes.Buffer
	p := mustLoad(t, src(
		"import mirage as mi",
		"import torch, functools, sys",
		"def twice(f):",
		"    def g(x):",
		"        return f(f(x))",
		"    return g",
		"def tag(name):",
		"    def deco(f):",
		"        print('decorating', name)",
		"        return f",
		"    return deco",
		"@torch.no_grad()",
		"@tag('outer')",
		"@twice",
		"@functools.lru_cache(maxsize=None)",
		"def layer(x):",
		"    return graph.exp(x)",
		"@torch.compile",
		"def build():",
		"    @tag('inner')",
		"    def inner(): return 1",
		"    return inner()",
		"if __name__ == '__main__':",
		"    graph = mi.new_kernel_graph()",
		"    X = graph.new_input(dims=(8, 64), dtype=mi.float16)",
		"    Y = layer(X)",
		"    assert build() == 1",
		"    assert Y.dim(0) == 8 and Y.num_dims == 2, 'shape'",
		"    assert not (Y.dim(1) != 64)",
		"    assert (Y.dim(0), 1)",
		"    assert torch.allclose(Y, X), 'unknown: passes'",
		"    assert Y.dim(0) == torch.Size([8])[0]",
		"    assert not torch.isnan(X).any() or 1 > 2",
		"    if True: assert 1 in [1, 2] and 3 not in [1]",
		"    ref = torch.softmax(torch.randn(8, 64) @ torch.randn(64, 64), dim=-1) @ X",
		"    ref @= torch.eye(64)",
		"    print('ref', ref, file=sys.stderr, flush=True)",
		"    graph.mark_output(Y)",
	), Options{Stdout: &out})
	if got := kinds(p.Graph); !slices.Equal(got, []ugraph.OpKind{ugraph.OpInput, ugraph.OpExp, ugraph.OpExp}) {
		t.Errorf("ops %v, want exp twice (@twice)", got)
	}
	if got := out.String(); got != "decorating outer\ndecorating inner\nref <inert torch.softmax()>\n" {
		t.Errorf("printed %q", got)
	}
}
