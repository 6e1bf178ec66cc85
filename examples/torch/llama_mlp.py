"""The LLaMA MLP block as a torch nn.Module whose forward is one mirage op.

    mirage superopt examples/llama_mlp_block.py --dynamic X:0=1..16 -o out/llama
    python3 examples/torch/llama_mlp.py out/llama

It loads the emitted code as torch.ops.mirage.NAME (mirage_torch), builds
the module with random weights at the header's shapes (scaled as a trained
model's are), checks its forward against the same block in eager PyTorch,
then runs a decode loop over changing token counts (the dynamic entry
point takes m from the rows of x). On a GPU it also runs the module under
torch.compile (fullgraph, with m dynamic, at two m; torch 2.4 and later),
runs torch.library.opcheck on the op, captures one decode step in a CUDA
graph and replays it, and times the op against eager; each check reports
and the next runs, and the exit status is 1 if any failed. --device cpu
runs the decode loop on the CPU through mirage's emulator (slow: for small
programs and tests).
"""

import argparse
import math
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import mirage_torch  # noqa: E402


class LlamaMLP(torch.nn.Module):
    """H = X + W2·(silu(W1·n(X)) * W3·n(X)), n the RMSNorm without weight or
    epsilon (Mirage's rms_norm), through the mirage op."""

    def __init__(self, op, hidden, mlp, dtype, device, seed=0):
        super().__init__()
        self.op = op
        g = torch.Generator().manual_seed(seed)

        def weight(rows, cols):
            scale = 2.0 ** -round(math.log2(math.sqrt(rows)))
            return torch.nn.Parameter(((torch.rand(rows, cols, generator=g) * 2 - 1) * scale).to(dtype).to(device),
                                      requires_grad=False)

        self.w1, self.w3, self.w2 = weight(hidden, mlp), weight(hidden, mlp), weight(mlp, hidden)

    def forward(self, x):
        return self.op(x, self.w1, self.w3, self.w2)

    def eager(self, x):
        # At the input dtype on a GPU; in fp32 on the CPU, which has no
        # fp16 matmul.
        dt = torch.float32 if x.device.type == "cpu" else x.dtype
        x, w1, w3, w2 = (t.to(dt) for t in (x, self.w1, self.w3, self.w2))
        n = x / torch.sqrt(torch.mean(x.float() * x.float(), dim=-1, keepdim=True)).to(dt)
        return x + (torch.nn.functional.silu(n @ w1) * (n @ w3)) @ w2


def rel_err(got, want):
    return float((got.double() - want.double()).abs().max() / want.double().abs().max())


def decode_steps(flag, lo, hi):
    """The decode loop's token counts: --steps, each checked against the
    op's range lo..hi before anything runs, or by default a spread of it."""
    if flag is None:
        return list(dict.fromkeys(min(max(m, lo), hi) for m in (1, 3, 8, 16, 5)))
    try:
        steps = [int(s) for s in flag.split(",")]
    except ValueError:
        sys.exit("--steps %r: want token counts separated by commas, e.g. 1,3,8" % flag)
    bad = [m for m in steps if not lo <= m <= hi]
    if bad:
        sys.exit("--steps: %s outside the range %d..%d the op was built for" % (", ".join(map(str, bad)), lo, hi))
    return steps


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("emitted", help="the directory mirage superopt/emit wrote (with NAME.h)")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--steps", help="token counts of the decode loop, comma-separated, within the op's range "
                    "(default: 1, 3, 8, 16 and 5, each brought into the range)")
    ap.add_argument("--tol", type=float, default=2e-2, help="largest relative error against eager")
    args = ap.parse_args()

    op = mirage_torch.load(args.emitted, devices=[args.device])
    p = op.program
    if len(p.inputs) != 4 or len(p.outputs) != 1:
        sys.exit("%s: want the LLaMA MLP block's 4 inputs and 1 output, got %d and %d" % (args.emitted, len(p.inputs), len(p.outputs)))
    hidden, mlp = p.inputs[1].dims
    dtype = getattr(torch, p.inputs[0].dtype)
    model = LlamaMLP(op, hidden, mlp, dtype, args.device)
    lo, hi = p.m_range or (p.inputs[0].dims[0],) * 2
    steps = decode_steps(args.steps, lo, hi)
    g = torch.Generator().manual_seed(1)

    worst = 0.0
    for m in steps:
        x = (torch.rand(m, hidden, generator=g) * 2 - 1).to(dtype).to(args.device)
        y = model(x)
        err = rel_err(y, model.eager(x))
        worst = max(worst, err)
        if not err < args.tol:
            sys.exit("m = %d: max rel err %.3g against eager (tolerance %.3g)" % (m, err, args.tol))
    print("decode loop: %d steps, m in %s, max rel err %.2e against eager (%s)" % (len(steps), steps, worst, args.device))

    if args.device != "cuda":
        return
    # Each check below reports, and the script goes on to the next: one run
    # on a lent GPU says what works and what does not.
    failed = []

    def check(name, fn):
        try:
            fn()
        except Exception as e:  # reported, and the exit status says so
            failed.append(name)
            print("%s: FAILED: %s: %s" % (name, type(e).__name__, e))

    x = (torch.rand(steps[-1], hidden, generator=g) * 2 - 1).to(dtype).to(args.device)

    def compiled():
        # fullgraph: a graph break would run the op eagerly and prove
        # nothing about its fake implementation; dynamic: m is symbolic in
        # the trace, so the fake checks its range on a SymInt.
        fn = torch.compile(model, fullgraph=True, dynamic=bool(p.m_range))
        # torch specializes m = 1 to a constant: two m above it keep m symbolic.
        ms = sorted({m for m in steps if m > 1}) or steps[:1]
        for m in sorted({ms[0], ms[-1]}):
            xm = (torch.rand(m, hidden, generator=g) * 2 - 1).to(dtype).to(args.device)
            err = rel_err(fn(xm), model.eager(xm))
            print("torch.compile (fullgraph, dynamic=%s), m = %d: max rel err %.2e" % (bool(p.m_range), m, err))
            if not err < args.tol:
                raise AssertionError("max rel err %.3g against eager (tolerance %.3g)" % (err, args.tol))
    check("torch.compile", compiled)

    if hasattr(torch.library, "opcheck"):  # torch 2.4 and later
        def opcheck():
            # The schema, the fake implementation and the op under
            # AOTAutograd's dynamic shapes, against the real one.
            overload = getattr(torch.ops.mirage, p.name).default
            result = torch.library.opcheck(overload, (x, model.w1, model.w3, model.w2),
                                           test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_dynamic"))
            print("torch.library.opcheck: %s" % result)
        check("opcheck", opcheck)

    graphs = []
    check("CUDA graph", lambda: graphs.append(cuda_graph(model, x, g, dtype, args.tol)))

    def timed(fn, runs=200):
        for _ in range(20):
            fn()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter()
        start.record()
        for _ in range(runs):
            fn()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) * 1000 / runs, (time.perf_counter() - t0) * 1e6 / runs

    def host_only(fn, runs=20):
        # The GPU is kept busy (torch.cuda._sleep, about 0.1 s) while the
        # host enqueues the calls, so their wall time is the host's own cost
        # of a call (the checks, the allocations, the launches), none of it
        # spent waiting on the GPU. Few calls: eager's ten kernels a call
        # filled the launch queue at 100, and its enqueueing then waited.
        fn()
        torch.cuda.synchronize()
        torch.cuda._sleep(200_000_000)
        t0 = time.perf_counter()
        for _ in range(runs):
            fn()
        host = (time.perf_counter() - t0) * 1e6 / runs
        torch.cuda.synchronize()
        return host

    timings = [("mirage op", lambda: model(x)), ("eager", lambda: model.eager(x))]
    timings += [("CUDA graph replay", graph.replay) for graph in graphs]
    for label, fn in timings:
        gpu_us, wall_us = timed(fn)
        print("%-18s %8.1f µs a call (GPU), %8.1f µs (host, back to back), %6.1f µs of host time a call (GPU busy)"
              % (label, gpu_us, wall_us, host_only(fn)))
    if failed:
        sys.exit("failed: " + ", ".join(failed))


def cuda_graph(model, x, g, dtype, tol):
    """Captures one decode step at x's shape in a CUDA graph, replays it on
    new inputs, checks it against eager and returns the graph, which reads
    its input from graph.static_x at every replay."""
    static_x = x.clone()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # the first calls at this m load the kernels and make cuBLASLt's plans
        for _ in range(3):
            model(static_x)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_y = model(static_x)
    static_x.copy_((torch.rand(static_x.shape, generator=g) * 2 - 1).to(dtype))
    graph.replay()
    torch.cuda.synchronize()
    err = rel_err(static_y, model.eager(static_x))
    print("CUDA graph replay: max rel err %.2e" % err)
    if not err < tol:
        raise AssertionError("max rel err %.3g against eager (tolerance %.3g)" % (err, tol))
    graph.static_x, graph.static_y = static_x, static_y
    return graph

if __name__ == "__main__":
    main()
