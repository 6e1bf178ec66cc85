package frontend

import (
	"bytes"
	"strings"
	"testing"
)

// Timing code as Mirage's scripts write it runs with the inert time and
// torch stubs: a stub's value compares as NaN does (false), in min and max
// too, and % and format print it as nan.
func TestTimingCodeWithStubs(t *testing.T) {
	prog := src(
		"import mirage as mi",
		"import time",
		"import torch",
		"g = mi.new_kernel_graph()",
		"X = g.new_input(dims=(16, 256), dtype=mi.float16)",
		"g.mark_output(g.exp(X))",
		"best = 1e9",
		"for i in range(3):",
		"    t0 = time.time()",
		"    torch.cuda.synchronize()",
		"    dt = time.time() - t0",
		"    if dt < best:",
		"        best = dt",
		"    if dt > 10 or dt >= 10 or dt <= 0:",
		"        fail('a stub compared true')",
		"start = time.perf_counter()",
		"while time.perf_counter() - start < 1.0:",
		"    fail('the loop ran')",
		"print('%f' % best)",
		`print("%.3f" % 1.5)`,
		`print("{:.3f}".format(best))`,
		`print("{:.2f} ms".format(dt * 1000))`,
		`print("%.3f ms, %5.1f%%" % (dt, 12.34))`,
		"print(min(best, dt), max([dt, 2.5]), min(dt, 1, key=lambda x: x))", // as with NaN: the first is kept
		"msg = 'took %.1f'",
		"msg %= 2.25",
		"print(msg, 1 < 2, 'a' < 'b', [1] < [2])",
	)
	var out bytes.Buffer
	if _, err := Load("timing.py", []byte(prog), Options{Stdout: &out}); err != nil {
		t.Fatal(err)
	}
	want := "1000000000.000000\n1.500\n1000000000.000\nnan ms\nnan ms,  12.3%\n1e+09 <inert time.time()> <inert time.time()>\ntook 2.2 True True True\n"
	if out.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
	}
	// An ordered comparison of values that do not compare is still an
	// error at its line.
	_, err := Load("bad.py", []byte(src("import mirage as mi", "g = mi.new_kernel_graph()", "g.mark_output(g.exp(g.new_input(dims=(4,))))", "x = 1 < 'a'")), Options{})
	if err == nil || !strings.Contains(err.Error(), "bad.py:4:") || !strings.Contains(err.Error(), "int < string not implemented") {
		t.Errorf("1 < 'a': %v", err)
	}
}

// The length of a stub is a stub (Mirage's demo/reference_mugraphs/
// qwen_mlp_part2.py asserts on the inputs of the graph it compiled), and a
// range to it iterates as the stub does, not at all. The length of a real
// value is its length.
func TestLenOfAStub(t *testing.T) {
	prog := src(
		"import mirage as mi",
		"import torch",
		"graph = mi.new_kernel_graph()",
		"X = graph.new_input(dims=(1, 256), dtype=mi.bfloat16)",
		"W = graph.new_input(dims=(256, 64), dtype=mi.bfloat16)",
		"graph.mark_output(graph.matmul(X, W))",
		`opt = graph.superoptimize(config="mlp")`,
		"input_tensors = [torch.randn(1, 256), torch.randn(256, 64)]",
		`assert len(opt.cygraph.get_input_dtensors()) == len(input_tensors), "inputs do not match"`,
		"out = opt(inputs=input_tensors)[0]",
		"assert len(out.shape) == 2",
		"for i in range(len(out.shape)):",
		"    fail('a range to a stub ran')",
		"for i in range(0, len(out), 2):",
		"    fail('a range to a stub ran')",
		"print(len(input_tensors), len('abc'), list(range(2)))",
	)
	var out bytes.Buffer
	if _, err := Load("qwen_mlp_part2.py", []byte(prog), Options{Stdout: &out}); err != nil {
		t.Fatal(err)
	}
	if want := "2 3 [0, 1]\n"; out.String() != want {
		t.Errorf("printed %q, want %q", out.String(), want)
	}
}

// Mirage's demos (demo/demo_llama3-8b.py, benchmark/end-to-end/llama.py)
// index the torch tensors their kernels return with several subscripts
// and write numbers with digit separators: such a program loads, the
// stubs indexed by tuples, a dict by its tuple key, and a list refuses
// one, as Python's does.
func TestSubscriptsWithSeveralIndices(t *testing.T) {
	prog := src(
		"import mirage as mi",
		"import torch",
		"n_heads, head_dim = 32, 128",
		"Xqkv = torch.randn(8, 6_144)",
		"Xq = Xqkv[:, : (n_heads * head_dim)]",
		"Xkv = Xqkv[:, (n_heads * head_dim) :]",
		"y = Xqkv[..., 0] + Xqkv[:, None] + Xqkv[1:2:1, ::2]",
		"d = {(1, 2): 'pair'}",
		"print(d[1, 2], Xq, 4_096)",
		"g = mi.new_kernel_graph()",
		"X = g.new_input(dims=(8, 4_096), dtype=mi.float16)",
		"g.mark_output(g.exp(X))",
	)
	var out bytes.Buffer
	p, err := Load("demo.py", []byte(prog), Options{Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	if want := "pair <inert torch.randn()[]> 4096\n"; out.String() != want {
		t.Errorf("printed %q, want %q", out.String(), want)
	}
	if s := p.Graph.Tensors[0].Shape; s.Dim(1) != 4096 {
		t.Errorf("X is %v, want 8x4096", s)
	}
	_, err = Load("list.py", []byte(src("l = [1, 2, 3]", "x = l[0, 1]")), Options{})
	if err == nil || !strings.Contains(err.Error(), "list.py:2:") || !strings.Contains(err.Error(), "got tuple, want int") {
		t.Errorf("a list indexed by a tuple: %v", err)
	}
}

// Unpacking a stub gives a stub per name (Mirage's demo/reference_mugraphs/
// llama3-8b.py: Xk, Xv = Xkv.chunk(2, 1)); unpacking a value is Starlark's.
func TestUnpackingAStub(t *testing.T) {
	prog := src(
		"import mirage as mi",
		"import torch",
		"Xk, Xv = torch.randn(8, 64).chunk(2, 1)",
		"a, b = 1, 2",
		"(c, d), e = [3, 4], 5",
		"print(Xk, Xv, a, b, c, d, e)",
		"g = mi.new_kernel_graph()",
		"g.mark_output(g.exp(g.new_input(dims=(8, 64), dtype=mi.float16)))",
	)
	var out bytes.Buffer
	if _, err := Load("unpack.py", []byte(prog), Options{Stdout: &out}); err != nil {
		t.Fatal(err)
	}
	if want := "<inert torch.randn().chunk()[]> <inert torch.randn().chunk()[]> 1 2 3 4 5\n"; out.String() != want {
		t.Errorf("printed %q, want %q", out.String(), want)
	}
	_, err := Load("few.py", []byte(src("a, b, c = [1, 2]")), Options{})
	if err == nil || !strings.Contains(err.Error(), "few.py:1:") || !strings.Contains(err.Error(), "too few values to unpack (got 2, want 3)") {
		t.Errorf("a, b, c = [1, 2]: %v", err)
	}
}
