package frontend

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// src joins lines into a program, so that a test can count lines.
func src(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

// header is the start of most error cases: lines 1 to 4.
var header = []string{
	"import mirage as mi",
	"g = mi.new_kernel_graph()",
	"X = g.new_input(dims=(16, 4096), dtype=mi.float16)",
	"W = g.new_input(dims=(4096, 6144), dtype=mi.float16)",
}

func withHeader(lines ...string) string {
	return src(append(append([]string(nil), header...), lines...)...)
}

// fused is a threadblock graph for rms_norm(X) @ W (lines 5 to 12), as in
// examples/rmsnorm_matmul_mugraph.py.
var fused = []string{
	"tb = mi.new_threadblock_graph(grid_dim=(96, 1, 1), block_dim=(128, 1, 1), forloop_range=64, reduction_dimx=64)",
	"tX = tb.new_input(dtensor=X, input_map=(-1, -1, -1), forloop_dim=1)",
	"tW = tb.new_input(dtensor=W, input_map=(1, -1, -1), forloop_dim=0)",
	"tM = tb.matmul(tX, tW)",
	"tAcc = tb.forloop_accum(tM)",
	"tRms = tb.forloop_accum(tX, \"rms\")",
	"tO = tb.div(tAcc, tRms)",
	"tb.new_output(stensor=tO, output_map=(1, -1, -1))",
}

func withFused(lines ...string) string {
	return withHeader(append(append([]string(nil), fused...), lines...)...)
}

// errorCases are programs that fail to load; FuzzLoad seeds from them too.
var errorCases = []struct {
	name   string
	src    string
	strict bool   // refuse modules other than mirage
	line   int    // 0: the error concerns the whole program
	want   string // a substring of the message
}{
	// Imports.
	{"foreign import", src("import mirage as mi", "import torch"), true, 2,
		`import of module "torch" is refused by a strict load (--strict): only ` + "`mirage`" + ` can be imported (without --strict, other modules are inert stubs)`},
	{"foreign from-import", src("from torch import nn"), true, 1, `import of module "torch" is refused`},
	{"argparse, strict", src("import argparse"), true, 1, `import of module "argparse" is refused`},
	{"dotted import", src("import os.path"), true, 1, `import of module "os.path"`},
	{"mirage submodule", src("import mirage.core"), true, 1, `import of module "mirage.core"`},
	{"relative import", src("from . import helpers"), true, 1, `import of module "."`},
	{"foreign import in a function", src("def f():", "    import numpy as np", "    return np"), true, 2, `module "numpy"`},
	{"unknown mirage name, strict", src("from mirage import new_kernel"), true, 1, `cannot import name "new_kernel" from mirage`},
	{"unknown mirage name", src("from mirage import new_kernel"), false, 1, `cannot import name "new_kernel" from mirage`},
	{"unknown mirage attribute", src("import mirage as mi", "g = mi.new_kernel()"), false, 2, `module has no .new_kernel field or method`},
	{"malformed import", src("import mirage as"), false, 1, "invalid import statement"},
	{"import in an expression", src("x = import mirage"), false, 1, "`import` must start a statement"},
	{"star import of a stub", src("from torch import *", "x = nn"), false, 2, "undefined: nn"},

	// Python that Starlark lacks.
	{"class", withHeader("", "", "class Block:", "    pass"), false, 7,
		"`class` definitions are not supported in mirage programs (Starlark subset of Python)"},
	{"try", withHeader("try:", "    Y = g.exp(X)", "except ValueError:", "    pass"), false, 5, "`try`/`except` statements are not supported"},
	{"with", withHeader("with open('w.bin') as f:", "    pass"), false, 5, "`with` statements are not supported"},
	{"raise", withHeader("if X.num_dims != 2:", "    raise ValueError('rank')"), false, 6, "`raise` statements are not supported"},
	{"global", src("n = 0", "def f():", "    global n", "    n = 1"), false, 3, "`global` declarations are not supported"},
	{"nonlocal", src("def f():", "    n = 0", "    def g():", "        nonlocal n"), false, 4, "`nonlocal` declarations"},
	{"del", withHeader("del W"), false, 5, "`del` statements are not supported"},
	{"yield", src("def layers():", "    yield 1"), false, 2, "generators (`yield`) are not supported"},
	{"async", src("async def f():", "    pass"), false, 1, "`async` functions are not supported"},
	{"matmul operator", withHeader("Y = X @ W"), false, 5, "the `@` operator on dtensor is not supported in mirage programs (Starlark subset of Python); use graph.matmul(A, B)"},
	{"matmul operator on ints", withHeader("n = 2", "n @= 3"), false, 6, "the `@` operator on int is not supported"},
	{"f-string", withHeader("print(f\"rank {X.num_dims}\")"), false, 5, "f-strings are not supported"},
	{"u string", src("s = u'x'"), false, 1, "the string prefix u is not supported"},
	{"is", withHeader("if X is W:", "    pass"), false, 5, "the `is` operator is not supported in mirage programs (Starlark subset of Python); only `x is None`, `x is not None`"},
	{"is not", withHeader("ok = X is not W"), false, 5, "the `is` operator is not supported"},
	{"is a singleton in an expression", withHeader("ok = X is None + 1"), false, 5, "the `is` operator is not supported"},
	{"is a singleton's attribute", withHeader("ok = X is not None.x"), false, 5, "the `is` operator is not supported"},
	{"is in a chain", withHeader("ok = X is None is None"), false, 5, "the `is` operator is not supported"},
	{"is after a keyword", withHeader("ok = not is None"), false, 5, "the `is` operator is not supported"},
	{"is None on a graph", withHeader("if X is not None:", "    fail('X is ' + str(X))"), false, 6, "X is <dtensor [16, 4096] float16>"},
	{"power", src("n = 2 ** 10"), false, 1, "the power operator `**` is not supported"},
	{"power assign", src("n = 2", "n **= 3"), false, 2, "the power operator `**`"},
	{"walrus", src("if (n := 10) > 5:", "    pass"), false, 1, "assignment expressions (`:=`) are not supported"},
	{"chained assignment", src("a = b = 4"), false, 1, "chained assignments (`a = b = x`) are not supported"},
	{"chained assignment after a keyword argument", src("x = 1", "a = f(k=1) = 4"), false, 2, "chained assignments"},
	{"starred target", src("a, *rest = [1, 2, 3]"), false, 1, "starred expressions outside calls (`a, *rest = x`) are not supported"},
	{"starred first target", src("x = 1", "*rest, a = [1, 2, 3]"), false, 2, "starred expressions outside calls"},
	{"parameter annotation", src("def f(x: int, y):", "    return x"), false, 1, "type annotations are not supported"},
	{"return annotation", src("def f(x) -> int:", "    return x"), false, 1, "type annotations are not supported"},
	{"variable annotation", src("n: int = 3"), false, 1, "type annotations are not supported"},
	{"for-else", src("for i in range(3):", "    pass", "else:", "    pass"), false, 3, "`else` clauses on `for`/`while` loops"},
	{"python builtin", src("n = sum([1, 2])"), false, 1, "undefined: sum (a Python built-in"},
	{"missing import", src("g = mi.new_kernel_graph()"), false, 1, "undefined: mi (missing `import mirage as mi`?)"},
	{"other syntax error", src("x = 1", "y = 2 +"), false, 2, "got newline, want primary expression"},
	{"unclosed call", withHeader("Y = g.new_input(dims=(16, 256), dtype=mi.float16", "", "Z = g.exp(X)"), false, 5, "'(' was never closed"},
	{"bracket closed by another", withHeader("Y = g.exp(X]"), false, 5, "closing parenthesis ']' does not match opening parenthesis '('"},
	{"chained comparison", src("x = 1 < 2 < 3"), false, 1, "does not associate"},
	{"unterminated string", src("x = 'abc"), false, 1, "unexpected"},
	{"kwargs are not power", src("def f(**kw):", "    return kw", "x = f(**{'a': 1})", "y = x is x"), false, 4, "the `is` operator"},

	// Shape rules, at the line of the offending call.
	{"kernel matmul", withHeader("W2 = g.new_input(dims=(4095, 6144), dtype=mi.float16)", "", "", "", "Y = g.matmul(X, W2)"), false, 9,
		"matmul([16, 4096], [4095, 6144]): inner dims differ (4096 vs 4095)"},
	{"kernel op in a function", withHeader("def mlp(a, b):", "    return g.matmul(b, a)", "Y = mlp(X, W)"), false, 6,
		"matmul([4096, 6144], [16, 4096]): inner dims differ (6144 vs 16) (in mlp, called at line 7)"},
	{"kernel op in a function's function", withHeader("def proj(a, b):", "    return g.matmul(a, b)", "def mlp(a, b):", "    return g.exp(proj(b, a))", "Y = mlp(X, W)"), false, 6,
		"inner dims differ (6144 vs 16) (in proj, called at line 8, in mlp, called at line 9)"},
	{"broadcast ranks", withHeader("R = g.reduction(X, 1)", "Y = g.add(X, g.new_input(dims=(4096,)))"), false, 6, "operand ranks differ"},
	{"reduction dim", withHeader("Y = g.reduction(X, 2)"), false, 5, "reduction([16, 4096]): dim 2 out of range"},
	{"rms_norm shape", withHeader("Y = g.rms_norm(X, normalized_shape=(16,))"), false, 5, "normalized_shape [16] is not the trailing dims"},
	{"dtype mismatch", withHeader("Y = g.new_input(dims=(16, 4096), dtype=mi.float32)", "Z = g.add(X, Y)"), false, 6, "operand dtypes differ (float16 vs float32)"},
	{"block matmul", withHeader("tb = mi.new_threadblock_graph((96, 1, 1), (128, 1, 1), 64, 64)",
		"tX = tb.new_input(X, (-1, -1, -1), 1)", "tW = tb.new_input(W, (1, -1, -1), -1)", "tM = tb.matmul(tX, tW)"), false, 8,
		"matmul([16, 64], [4096, 64]): inner dims differ (64 vs 4096)"},
	{"block input map", withHeader("tb = mi.new_threadblock_graph((96, 1, 1), (128, 1, 1), 64, 64)",
		"tX = tb.new_input(X, (0, -1, -1), 1)"), false, 6, "new_input([16, 4096]): input_map (0, -1, -1): grid axis 0 (96 blocks)"},
	{"block forloop dim", withHeader("tb = mi.new_threadblock_graph((1, 1, 1), (128, 1, 1), 3, 64)",
		"tX = tb.new_input(X, (-1, -1, -1), 1)"), false, 6, "new_input([16, 4096]): forloop_dim 1 with forloop_range 3"},
	{"pre/post-loop mixing", withFused("tBad = tb.add(tAcc, tM)"), false, 13, "add([16, 64], [16, 64]): combines a tile from inside the for-loop with one computed after it"},
	{"accumulate post-loop", withFused("tBad = tb.forloop_accum(tAcc)"), false, 13, "accumulates a tile that is already computed after the for-loop"},
	{"output of a pre-loop tile", withHeader("tb = mi.new_threadblock_graph((96, 1, 1), (128, 1, 1), 64, 64)",
		"tX = tb.new_input(X, (-1, -1, -1), 1)", "tb.new_output(tX, (1, -1, -1))"), false, 7, "new_output([16, 64]): the tile is computed inside the for-loop"},
	{"output forloop_dim", withFused("tb.new_output(stensor=tO, output_map=(1, -1, -1), forloop_dim=0)"), false, 13,
		"new_output: forloop_dim is 0, want -1"},
	{"bad accumulator", withFused("tBad = tb.forloop_accum(tM, \"max\")"), false, 13,
		`forloop_accum: for parameter acc: unknown accumulator "max"`},
	{"sum_todimx divisibility", withHeader("tb = mi.new_threadblock_graph((1, 1, 1), (128, 1, 1), 1, 48)",
		"t = tb.forloop_accum(tb.new_input(X, (-1, -1, -1), -1), \"sum_todimx\")"), false, 6, "is not a multiple of reduction_dimx 48"},

	// customized.
	{"same shape, other tensor", withFused("X2 = g.new_input(dims=(16, 4096), dtype=mi.float16)", "O = g.customized([X2, W], tb)"), false, 14,
		"customized: inputs[0] is <dtensor [16, 4096] float16> from line 13, but the threadblock graph's new_input 0 read <dtensor [16, 4096] float16> from line 3"},
	{"swapped inputs", withFused("O = g.customized([W, X], tb)"), false, 13, "customized: inputs[0] is <dtensor [4096, 6144] float16> from line 4"},
	{"input count", withFused("O = g.customized([X], tb)"), false, 13, "customized: 1 inputs, but the threadblock graph (created at prog.py:5) has 2 new_input ops"},
	{"tensor of another graph", withFused("g2 = mi.new_kernel_graph()", "O = g2.customized([X, W], tb)"), false, 14,
		"customized: for parameter inputs: element 0: <dtensor [16, 4096] float16> belongs to another kernel graph (created at prog.py:2)"},
	{"block graph used twice", withFused("O = g.customized([X, W], tb)", "P = g.customized([X, W], tb)"), false, 14,
		"customized: the threadblock graph (created at prog.py:5) is already used by customized at prog.py:13"},
	{"block graph changed after use", withFused("O = g.customized([X, W], tb)", "t = tb.exp(tO)"), false, 14, "exp: the threadblock graph (created at prog.py:5) is already used"},
	{"no output op", withHeader("tb = mi.new_threadblock_graph((1, 1, 1), (128, 1, 1), 1, 64)", "t = tb.new_input(X, (-1, -1, -1), -1)", "O = g.customized([X], tb)"), false, 7,
		"the threadblock graph has no output op"},
	{"kernel op on a tile", withFused("Y = g.exp(tO)"), false, 13, "exp: for parameter A: got stensor, want dtensor (a tile of a threadblock graph"},
	{"a number for a tensor", withHeader("Y = g.mul(X, 2.0)"), false, 5, "mul: for parameter B: got float, want dtensor (a number scales a tensor through mul_scalar(A, scalar)"},
	{"block op on a device tensor", withFused("Y = tb.exp(X)"), false, 13, "exp: for parameter A: got dtensor, want stensor (load a device tensor with tb.new_input first)"},
	{"tile of another block graph", withFused("tb2 = mi.new_threadblock_graph((1, 1, 1), (128, 1, 1), 1, 64)", "Y = tb2.exp(tO)"), false, 14, "is a tile of another threadblock graph"},

	// Arguments.
	{"dims element type", withHeader("Y = g.new_input(dims=(16, \"a\"), dtype=mi.float16)"), false, 5,
		`new_input: for parameter "dims": element 1: got string, want int`},
	{"dims type", withHeader("Y = g.new_input(dims=16)"), false, 5, `new_input: for parameter "dims": got int, want a tuple or list of ints`},
	{"dims rank", withHeader("Y = g.new_input(dims=(1, 2, 3, 4, 5))"), false, 5, "new_input: dims (1, 2, 3, 4, 5): shape [1 2 3 4 5]: rank 5"},
	{"dims zero", withHeader("Y = g.new_input(dims=(16, 0))"), false, 5, "new_input: dims (16, 0)"},
	{"dims huge", withHeader("Y = g.new_input(dims=(16, 99999999999999999999999))"), false, 5, "element 1: got int 99999999999999999999999 (out of range), want int"},
	{"dtype type", withHeader("Y = g.new_input(dims=(16,), dtype='float16')"), false, 5, "got string, want a mirage dtype"},
	{"strides", withHeader("Y = g.new_input(dims=(16, 4096), strides=(1, 16))"), false, 5,
		"new_input: strides (1, 16) are not the row-major strides (4096, 1) of a [16, 4096] tensor; only row-major layouts are supported"},
	{"mark_output strides", withHeader("g.mark_output(X, strides=(4096, 2))"), false, 5, "only row-major layouts are supported"},
	{"mark_output twice", withHeader("Y = g.exp(X)", "g.mark_output(Y)", "g.mark_output(Y)"), false, 7, "mark_output: the exp result [16, 4096] (op 2) is already an output (output 0)"},
	{"missing operand", withHeader("Y = g.matmul(X)"), false, 5, "matmul: missing argument for B"},
	{"too many arguments", withHeader("Y = g.exp(X, W)"), false, 5, "exp: got 2 arguments, want at most 1"},
	{"unknown keyword", withHeader("Y = g.reduction(X, axis=1)"), false, 5, `reduction: unexpected keyword argument "axis"`},
	{"unknown method", withHeader("Y = g.softmax(X)"), false, 5, "kernel_graph has no .softmax field or method"},
	{"kernel concat", withHeader("Y = g.concat(X, X, dim=1)"), false, 5, "kernel_graph has no .concat field or method"},
	{"clamp type", withHeader("Y = g.clamp(X, 0, 'max')"), false, 5, "clamp: for parameter max_val: got string, want float"},
	{"non-finite scalar", withHeader("Y = g.mul_scalar(X, float('nan'))"), false, 5, "mul_scalar: for parameter scalar: got nan, want a finite number"},
	{"missing forloop_range", src("import mirage as mi", "tb = mi.new_threadblock_graph(grid_dim=(1, 1, 1))"), false, 2,
		"new_threadblock_graph: missing argument for forloop_range"},
	{"grid entries", src("import mirage as mi", "tb = mi.new_threadblock_graph((1, 1, 1, 1), (128,), 1, 64)"), false, 2,
		"new_threadblock_graph: for parameter grid_dim: got 4 entries, want 1 to 3"},
	{"too many threads", src("import mirage as mi", "tb = mi.new_threadblock_graph((1,), (2097152, 2097152, 4194304), 1, 64)"), false, 2,
		"block_dim (2097152, 2097152, 4194304): axis 0 is 2097152, want 1 to 1024"},
	{"grid too large", src("import mirage as mi", "tb = mi.new_threadblock_graph((1, 100000), (128,), 1, 64)"), false, 2, "grid_dim (1, 100000, 1): axis 1 is 100000"},
	{"dim index", withHeader("n = X.dim(2)"), false, 5, "dim: index 2 out of range for a rank-2 tensor"},
	{"superoptimize griddims", withHeader("Y = g.exp(X)", "g.superoptimize(griddims=[(64, 1, 1), (0, 1, 1)])"), false, 6,
		"superoptimize: for parameter griddims: element 1: grid_dim (0, 1, 1): axis 0 is 0"},
	{"superoptimize fmaps", withHeader("Y = g.exp(X)", "g.superoptimize(fmaps=[-1, 7])"), false, 6, "superoptimize: for parameter fmaps: element 1: got 7, want -1 to 3"},
	{"superoptimize unknown keyword", withHeader("Y = g.exp(X)", "g.superoptimize(confg='mlp')"), false, 6, `superoptimize: unexpected keyword argument "confg"`},
	{"superoptimize twice, other arguments", withHeader("Y = g.exp(X)", "g.superoptimize(config='mlp')", "g.superoptimize(config='attention')"), false, 7,
		"superoptimize: already called on this graph at prog.py:6 with other arguments"},
	{"superoptimize twice, the graph changed between", withHeader("Y = g.exp(X)", "g.superoptimize(config='mlp')", "Z = g.silu(Y)", "g.superoptimize(config='mlp')"), false, 8,
		"superoptimize: already called on this graph at prog.py:6, and the graph has changed since"},
	{"unsupported dtype", withHeader("Y = g.new_input(dims=(4,), dtype=mi.int8)"), false, 5,
		`new_input: for parameter "dtype": mirage.int8 is not supported: device tensors are float16, bfloat16 or float32`},
	{"from_json", withHeader("g.from_json('g.json')"), false, 5, "from_json reads a μGraph from a file"},
	{"float8", withHeader("Y = g.new_input(dims=(4,), dtype=mi.float8)"), false, 5,
		`new_input: for parameter "dtype": mirage.float8 is not supported: device tensors are float16, bfloat16 or float32`},
	{"float8_e4m3", withHeader("Y = g.new_input(dims=(4,), dtype=mi.float8_e4m3)"), false, 5,
		`new_input: for parameter "dtype": mirage.float8_e4m3 is not supported`},
	{"online softmax", withHeader("tb = mi.new_threadblock_graph((2, 1, 1), (128, 1, 1), 4, 64)", "m = tb.reduction_max(X, 1)"), false, 6,
		"threadblock_graph.reduction_max is not supported: Mirage's online-softmax ops"},
	{"online softmax rescale", withHeader("tb = mi.new_threadblock_graph((2, 1, 1), (128, 1, 1), 4, 64)", "m = tb.forloop_accum_rescale(X, X)"), false, 6,
		"threadblock_graph.forloop_accum_rescale is not supported"},
	{"kernel graph attribute", withHeader("n = g.num_ops"), false, 5, "kernel_graph has no .num_ops field or method"},

	// Decorators and assert.
	{"assertion", withHeader("assert X.num_dims == 3, 'rank ' + str(X.num_dims)"), false, 5, "assertion failed: rank 2"},
	{"assertion without message", withHeader("if True:", "    assert (X.dim(0) > 16 or", "            X.dim(1) < 8)"), false, 6, "assertion failed"},
	{"assertion in a function", withHeader("def check(t):", "    assert not t.num_dims", "check(X)"), false, 6, "assertion failed"},
	{"assertion on a stub and a value", src("import torch", "assert torch.cuda.is_available() and 1 > 2, 'cuda'"), false, 2, "assertion failed: cuda"},
	{"assertion on a value or a stub", src("import torch", "n = 0", "assert n > 0 or torch.cuda.is_available() == n"), false, 0, "creates no kernel graph"},
	{"assertion beside a program's own compare", src("def compare(op, a, b):", "    return True", "assert 1 == 2, 'rebound'"), false, 3, "assertion failed: rebound"},
	{"assertion short-circuits", src("n = 0", "assert n != 0 and 10 // n == 2, 'n'"), false, 2, "assertion failed: n"},
	{"assert without condition", withHeader("assert"), false, 5, "invalid assert statement"},
	{"assert with three parts", withHeader("assert X, 'a', 'b'"), false, 5, "invalid assert statement"},
	{"decorator without def", src("@print", "x = 1"), false, 1, "a decorator must be followed by a def"},
	{"decorator at the end", src("def f():", "    pass", "@print"), false, 3, "a decorator must be followed by a def"},
	{"decorator not callable", src("@3", "def f():", "    pass"), false, 1, "decorator: int is not callable"},
	{"decorator that fails", src("def dec(f):", "    fail('no')", "@dec", "def f():", "    pass"), false, 2, "no"},
	{"empty decorator", src("@", "def f():", "    pass"), false, 1, "invalid decorator"},
	{"optimize positional", withHeader("Y = g.exp(X)", "mi.optimize(g, None)"), false, 6,
		"optimize: got 2 positional arguments, want 1 (the graph; the others are keyword-only)"},
	{"optimize config", withHeader("Y = g.exp(X)", "mi.optimize(g, default_config=1)"), false, 6, "optimize: for parameter default_config: got int, want string or None"},
	{"optimize superoptimize's keyword", withHeader("Y = g.exp(X)", "mi.optimize(g, config='mlp')"), false, 6, `optimize: unexpected keyword argument "config"`},
	{"optimize no graph", withHeader("Y = g.exp(X)", "mi.optimize(X)"), false, 6, "optimize: for parameter input_graph: got dtensor, want kernel_graph"},
	{"optimize then superoptimize", withHeader("Y = g.exp(X)", "mi.optimize(g, default_config='lora')", "g.superoptimize(config='mlp')"), false, 7,
		"superoptimize: already called on this graph at prog.py:6 with other arguments"},
	{"superoptimize two graphs", withHeader("Y = g.exp(X)", "g.superoptimize()", "h = mi.new_kernel_graph()", "h.superoptimize()"), false, 8,
		"superoptimize: already called on another kernel graph at prog.py:6"},

	// The program as a whole.
	{"several graphs", withHeader("Y = g.exp(X)", "h = mi.new_kernel_graph()", "Z = h.exp(h.new_input(dims=(4,)))"), false, 6,
		"the program creates 2 kernel graphs (lines 2, 6) and calls superoptimize on none"},
	{"many graphs", src("import mirage as mi", "gs = [mi.new_kernel_graph() for i in range(7)]"), false, 2,
		"the program creates 7 kernel graphs (lines 2, 2, 2, 2, 2, ...)"},
	{"no graph", src("import mirage as mi", "x = 1"), false, 0, "the program creates no kernel graph"},
	{"no outputs", withHeader(), false, 2, "the kernel graph has no outputs"},
	{"runtime error", withHeader("n = X.num_dims + 'a'"), false, 5, "unknown binary op: int + string"},
	{"endless loop", src("n = 0", "while True:", "    n += 1"), false, 3, "the program ran for more than 10000000 steps; an endless loop?"},
	{"endless loop without a position", src("x = 1", "while True:", "    pass"), false, 2, "the program ran for more than 10000000 steps; an endless loop?"},
	{"endless loop on one line", src("x = 1", "y = 2", "while True: pass"), false, 3, "the program ran for more than 10000000 steps"},
	{"endless loop in a function", src("x = 1", "def f():", "    y = 2", "    while True:", "        pass", "f()"), false, 4, "the program ran for more than 10000000 steps"},
	{"endless loop assigning", src("x = 1", "while True:", "    x = 2"), false, 2, "the program ran for more than 10000000 steps"},
	{"endless loop with a test", src("x = 1", "y = 1", "while x > 0: x = x + y"), false, 3, "the program ran for more than 10000000 steps"},
	{"endless recursion", src("def f(n):", "    return f(n + 1)", "f(0)"), false, 2, "calls nest more than 1000 deep; endless recursion?"},
	{"stub misuse", src("import mirage as mi", "import torch", "g = mi.new_kernel_graph()", "X = g.new_input(dims=torch.Size([4]))"), false, 4,
		`new_input: for parameter "dims": got inert, want a tuple or list of ints`},
	{"graph made by a builtin's callback", src("import mirage as mi", "gs = max([1, 2], key=lambda i: (mi.new_kernel_graph(), i)[1])"), false, 2,
		"the program creates 2 kernel graphs (lines 2, 2)"},
	{"no load", src("load('x.star', 'y')"), false, 1, "load not implemented"},
}

func TestLoadErrors(t *testing.T) {
	for _, tt := range errorCases {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load("prog.py", []byte(tt.src), Options{Strict: tt.strict, Stdout: io.Discard})
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v (%T), want *Error", err, err)
			}
			if e.Filename != "prog.py" || e.Line != tt.line || !strings.Contains(e.Msg, tt.want) {
				t.Errorf("err = %v\nwant prog.py:%d: ...%s...", err, tt.line, tt.want)
			}
		})
	}
}

// An error on a line the loader rewrote (a decorator, an assert, @, an
// import) names the column the user wrote, not the rewritten code's.
func TestErrorColumnsOnRewrittenLines(t *testing.T) {
	for _, tt := range []struct {
		src       string
		line, col int
	}{
		{src("import mirage as mi", "@some_decorator(1, 2)", "def f(x):", "    return x"), 2, 2},
		{src("import mirage as mi", "@mi.foo( bar)", "def f(x):", "    return x"), 2, 10},
		{src("import mirage as mi", "assert  q == 1, 'm'"), 2, 9},
		{withHeader("Y = X @ W @ Z"), 5, 13},
		{src("import mirage as mi; import os; x = zz"), 1, 37},
		{src("x = 1", "y = 'μ' + zz"), 2, 11}, // columns in runes
	} {
		_, err := Load("prog.py", []byte(tt.src), Options{Stdout: io.Discard, Warn: func(string) {}})
		var e *Error
		if !errors.As(err, &e) || e.Line != tt.line || e.Col != tt.col || !strings.HasPrefix(e.Msg, "undefined:") {
			t.Errorf("%q: %v, want prog.py:%d:%d: undefined: ...", tt.src, err, tt.line, tt.col)
		}
	}
}

func TestErrorString(t *testing.T) {
	for _, tt := range []struct {
		e    Error
		want string
	}{
		{Error{"p.py", 0, 0, "m"}, "p.py: m"},
		{Error{"p.py", 7, 0, "m"}, "p.py:7: m"},
		{Error{"p.py", 7, 3, "m"}, "p.py:7:3: m"},
	} {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("%#v.Error() = %q, want %q", tt.e, got, tt.want)
		}
	}
}
