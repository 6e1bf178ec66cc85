"""bench/gpu/torch_host.py DIR [--device cuda|cpu]: where a torch op's host
time goes, part by part, for the program mirage emitted into DIR.

Each part is called back to back while the GPU sleeps (torch.cuda._sleep),
so its wall time is the host's own cost a call, none of it spent waiting on
the GPU. The line that #43 asks about is "added by the wrapper": the op's
host time through torch.ops less the emitted C entry's alone. --device cpu
runs the same parts through mirage's CPU emulator, where the C entry is the
emulated kernels (milliseconds) and a no-op C function stands in for it.
"""

import argparse
import ctypes
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import mirage_torch  # noqa: E402


def host_time(fn, device, runs):
    """The median over five rounds of a call's host time, in µs."""
    fn()
    rounds = []
    for _ in range(5):
        if device == "cuda":
            torch.cuda.synchronize()
            torch.cuda._sleep(100_000_000)  # about 0.05-0.1 s: longer than the calls
        t0 = time.perf_counter()
        for _ in range(runs):
            fn()
        rounds.append((time.perf_counter() - t0) * 1e6 / runs)
        if device == "cuda":
            torch.cuda.synchronize()
    return statistics.median(rounds)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", help="a directory mirage emit (or superopt) wrote: NAME.h, NAME.cu")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--runs", type=int, default=20, help="calls a round (cuda: few, so the launch queue never fills)")
    args = ap.parse_args()
    op = mirage_torch.load(args.dir, devices=[args.device])
    p = op.program
    so, entry, ws_bytes = op._entry[args.device]
    if args.device == "cpu":  # the emulated kernels take ms: time the wrapper around a C call that does nothing
        noop = ctypes.CDLL(None).getpid
        noop.restype, noop.argtypes = ctypes.c_int, entry.argtypes
        op._entry["cpu"] = (so, lambda *a: noop(*a) * 0, ws_bytes)
        entry = op._entry["cpu"][1]
    ms = [None]
    if p.m_range:
        lo, hi = p.m_range
        ms = sorted({m for m in (1, 8, 16) if lo <= m <= hi} or {lo})
    g = torch.Generator().manual_seed(0)
    for m in ms:
        ins = [((torch.rand(t.shape(m), generator=g) * 2 - 1) * 0.01).to(getattr(torch, t.dtype)).to(args.device)
               for t in p.inputs]
        outs = [torch.empty(t.shape(m), dtype=getattr(torch, t.dtype), device=args.device) for t in p.outputs]
        nws = ws_bytes(m) if p.m_range else ws_bytes()
        ws = torch.empty(nws + 256, dtype=torch.uint8, device=args.device) if nws else None
        optr = (ctypes.c_void_p * len(outs))(*[o.data_ptr() for o in outs])
        iptr = (ctypes.c_void_p * max(1, len(ins)))(*[x.data_ptr() for x in ins])
        wsp = -(-ws.data_ptr() // 256) * 256 if ws is not None else None
        stream = torch.cuda.current_stream().cuda_stream if args.device == "cuda" else None
        raw = (lambda: entry(optr, iptr, m, wsp, stream)) if p.m_range else (lambda: entry(optr, iptr, wsp, stream))
        overload = getattr(torch.ops.mirage, p.name).default
        parts = [
            ("the op (torch.ops.mirage)", lambda: overload(*ins)),
            ("Op.run (no dispatcher)", lambda: op.run(*ins)),
            ("Op.check + check_data", lambda: (op.check(ins), op.check_data(ins))),
            ("the C entry alone (ctypes)", raw),
            ("torch.empty: outputs, workspace", lambda: ([torch.empty(o.shape, dtype=o.dtype, device=args.device) for o in outs],
                                                         torch.empty(nws + 256, dtype=torch.uint8, device=args.device))),
        ]
        times = {}
        print("%s, m = %s, %s, workspace %d bytes" % (p.name, m, args.device, nws))
        for name, fn in parts:
            times[name] = host_time(fn, args.device, args.runs)
            print("  %-34s %7.1f µs of host time a call" % (name, times[name]))
        print("  %-34s %7.1f µs" % ("added by the wrapper", times[parts[0][0]] - times[parts[3][0]]))


if __name__ == "__main__":
    main()
