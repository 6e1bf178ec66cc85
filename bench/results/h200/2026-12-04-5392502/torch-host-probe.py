# Where the op's host time goes: each part timed while the GPU sleeps.
import ctypes, sys, time, torch
sys.path.insert(0, "python")
import mirage_torch
op = mirage_torch.load("out/gpu2/h200/torch/llama", devices=["cuda"])
p = op.program
hidden, mlp = p.inputs[1].dims
dt = torch.float16
w1 = torch.randn(hidden, mlp, dtype=dt, device="cuda") * 0.01
w3 = torch.randn(hidden, mlp, dtype=dt, device="cuda") * 0.01
w2 = torch.randn(mlp, hidden, dtype=dt, device="cuda") * 0.01
def host(fn, runs=20):
    fn(); torch.cuda.synchronize()
    torch.cuda._sleep(100_000_000)
    t0 = time.perf_counter()
    for _ in range(runs):
        fn()
    h = (time.perf_counter() - t0) * 1e6 / runs
    torch.cuda.synchronize()
    return h
def gpu(fn, runs=50):
    for _ in range(5): fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(50_000_000)
    s.record()
    for _ in range(runs): fn()
    e.record(); torch.cuda.synchronize()
    return s.elapsed_time(e) * 1000 / runs
_, entry, ws_bytes = op._entry["cuda"]
def enter(d):
    with torch.cuda.device(d):
        pass
for m in (1, 5, 8, 16):
    x = torch.randn(m, hidden, dtype=dt, device="cuda")
    ins = (x, w1, w3, w2)
    out = torch.empty(m, hidden, dtype=dt, device="cuda")
    nws = ws_bytes(m)
    ws = torch.empty(nws + 256, dtype=torch.uint8, device="cuda") if nws else None
    optr = (ctypes.c_void_p * 1)(out.data_ptr())
    iptr = (ctypes.c_void_p * 4)(*[t.data_ptr() for t in ins])
    wsp = -(-ws.data_ptr() // 256) * 256 if ws is not None else None
    st = torch.cuda.current_stream().cuda_stream
    parts = [
        ("torch.ops.mirage (the op)", lambda: getattr(torch.ops.mirage, p.name)(*ins)),
        ("Op.run (no dispatch)", lambda: op.run(*ins)),
        ("Op.check", lambda: op.check(ins)),
        ("Op.check_data", lambda: op.check_data(ins)),
        ("raw entry (ctypes)", lambda: entry(optr, iptr, m, wsp, st)),
        ("torch.empty x2", lambda: (torch.empty(m, hidden, dtype=dt, device="cuda"), torch.empty(nws + 256, dtype=torch.uint8, device="cuda"))),
        ("current_stream", lambda: torch.cuda.current_stream(x.device).cuda_stream),
        ("with torch.cuda.device", lambda: enter(x.device)),
    ]
    print("m = %d, workspace %d bytes, raw entry on the GPU %.1f µs" % (m, nws, gpu(lambda: entry(optr, iptr, m, wsp, st))))
    for name, fn in parts:
        try:
            print("  %-28s %8.1f µs of host time a call" % (name, host(fn)))
        except Exception as e:
            print("  %-28s FAILED %s: %s" % (name, type(e).__name__, e))
