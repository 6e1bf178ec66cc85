// Package frontend loads tensor programs written against Mirage's Python API
// (`import mirage as mi`) into kernel graphs.
//
// A program runs in Starlark, a hermetic subset of Python: it cannot touch
// files, the network or processes. What it may use is bounded, so any file
// is safe to load: its source to MaxSourceSize (1 MiB), its execution steps
// to Options.MaxSteps (DefaultMaxSteps, 10,000,000), its call depth to
// 1000, and the values it builds (strings, lists, dicts, ints: by +, *, %,
// slices, str(), list(), join, split, ...) to Options.MaxAlloc bytes in
// all (DefaultMaxAlloc, 64 MiB). A program past a bound stops with an
// *Error at the line it was running. Python's top-level control
// flow, while loops, reassignment, sets and recursion are allowed; so is
// `if __name__ == "__main__":` (__name__ is "__main__"; __file__ is the
// program's path, as Load was given it), and so are
// decorators and assert statements, which Starlark lacks (package rewrite).
//
// Mirage's own benchmark and demo scripts load unchanged, up to what they
// cannot mean here (several kernel graphs, online-softmax ops). Imports are
// rewritten before Starlark sees the program (lines keep their numbers):
// `import mirage [as mi]` and `from mirage import ...` bind the mirage
// module and its names, `from __future__ import ...` is ignored, and any
// other module (torch, numpy, os, time, ...) is an inert stub, with one
// warning for the load that names them all: its attributes, calls, results,
// indexing and arithmetic give inert values, it iterates as empty and is
// false, so test data, warm-up loops and CUDA-event timing do nothing; it
// unpacks into stubs (a, b = x.chunk(2)), takes several indices
// (x[:, :n], x[..., 0]) and its len is a stub. A
// decorator that is a stub (@torch.no_grad()) leaves its function as it
// is; an assert whose condition depends on a stub passes; x @ y works on
// stubs. argparse is a stub that works (package argparse): parse_args parses
// Options.Args, the arguments mirage's command line gives after --, so
// shapes such as (2 * args.bs, 4096) are real. With Options.Strict, any
// import other than mirage is an error instead. `x is None` and
// `x is not None`, and the same with True or False, are identity tests
// (package rewrite); other Python constructs that Starlark lacks (class,
// try, with, f-strings, `is` between other values, `**`, ...) are errors
// that name the construct. Where Starlark's values compare otherwise than
// Python's, comparisons take Python's meaning (pyvalues.go): a bool is the
// int 0 or 1 (1 == True), NaN equals and orders with nothing, and type(x)
// is the built-in it is compared with (type(x) == tuple).
//
// The mirage module provides new_kernel_graph, new_threadblock_graph and
// the dtypes float16, bfloat16 and float32, with Mirage's parameter names:
//
//	graph.new_input(dims, strides=None, dtype=mi.float16)   # strides: None or row-major
//	graph.mark_output(A, strides=None)
//	graph.matmul(A, B)  graph.reduction(A, dim)  graph.rms_norm(A, normalized_shape)
//	graph.exp(A) square sqrt silu gelu relu log tanh sigmoid  graph.clamp(A, min_val, max_val)
//	graph.mul_scalar(A, scalar)  graph.add(A, B) sub mul div pow
//	graph.customized(inputs, bgraph) -> [outputs]
//	graph.superoptimize(config=None, griddims=None, blockdims=None, imaps=None,
//	                    omaps=None, fmaps=None, franges=None, ...) -> inert
//
// superoptimize's other parameters (verbose, backend, warmup_iters,
// profile_iters, previous_checkpoint, save_codes, use_graph_dataset,
// use_cached_graphs, is_formal_verified) steer Mirage's profiling and
// caching: they are accepted and ignored. So are the rest of Mirage's
// published module (set_gpu_device_id, convert_dtype_to_torch_type,
// generate_cuda_program, get_shared_memory_capacity, global_config, ...:
// inert values) and KNGraph's runtime methods (graph.visualize, to_json,
// cygraph, calling the graph): the load ends with one warning naming those
// the program used (runtime.go). Calling superoptimize again on an
// identical graph with the same arguments (a demo's loop) is the same
// program. Mirage's first API, which its LoRA demo still uses, works too:
// mi.new_graph() is new_kernel_graph(), and mi.optimize(graph, imaps=...,
// franges=..., default_config=None, previous_checkpoint=None) is
// graph.superoptimize(imaps=..., franges=..., config=default_config),
// inert as well (the generate_triton_program of the graphs Mirage returns
// is a runtime method).
//
//	tb = mi.new_threadblock_graph(grid_dim, block_dim=(128, 1, 1), forloop_range, reduction_dimx)
//	tb.new_input(dtensor, input_map, forloop_dim, store_in_dmem=False)
//	tb.new_output(stensor, output_map, forloop_dim=-1)
//	tb.matmul  tb.exp ... (as above)  tb.add(A, B) sub mul div pow
//	tb.reduction(A, dim)  tb.reduction_to_dimx(A, dim)  tb.rms_norm(A)
//	tb.concat(A, B, dim)  tb.forloop_accum(A, acc=None)  # None "sum" "mean" "rms" "sum_todimx"
//
// Tensors have num_dims, dim(i) and dtype. grid_dim, block_dim and the maps
// may have fewer than 3 entries: missing dims are 1, missing map entries -1.
//
// Which graph is the program: the one superoptimize was called on (one
// graph, or identical ones), as it was at the call (Mirage searches it
// then: what the program adds afterwards is left out, with a warning),
// else the only kernel graph created. Its outputs are the tensors passed to
// mark_output or, if there are none, the op results that no op consumes,
// in creation order (Mirage's gated-MLP demo never calls mark_output).
//
// Besides the shape rules of package ugraph, the loader enforces what only
// the program's text shows (DESIGN §3): customized(inputs, tb) needs
// inputs[k] to be the very tensor given to tb's k-th new_input, a
// threadblock graph serves one customized op and cannot change afterwards,
// and new_output's forloop_dim must be -1.
//
// A load runs in phases; those that stand alone are packages of their own:
//
//   - frontend/pylex tokenizes the source, and gives Python's message for
//     brackets that do not pair up;
//   - frontend/rewrite rewrites what Starlark's parser would reject
//     (imports, decorators, assert, @, `is` against None, True or False) on
//     the same lines; once Starlark has parsed the program, it gives
//     decorators and asserts their meaning; and when Starlark rejects the
//     program, it names the Python construct to blame;
//   - this package then rewrites the syntax tree so that what can build a
//     large value is checked against the bounds (guard.go, bounds.go,
//     sizes.go) and comparisons have Python's meaning (pyvalues.go), and
//     runs the program (load.go) against the mirage module
//     (kernel.go, block.go, ops.go, args.go, runtime.go), the inert stubs
//     of other modules (inert.go, imports.go), the built-ins that the
//     rewritten statements call (statements.go), frontend/argparse (the
//     argparse emulation) and frontend/pyformat (Python's % and
//     str.format, as the bounded built-ins of bounds.go call them).
package frontend
