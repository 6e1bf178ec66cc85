# A gated MLP timed the way the demos time their kernels: torch inputs,
# warm-up, CUDA events, numpy for the statistics.
import mirage as mi
import numpy as np
import torch
import time, os, sys

torch.manual_seed(0)
torch.backends.cuda.matmul.allow_tf32 = True
device = torch.device("cuda:0")

if __name__ == "__main__":
    graph = mi.new_kernel_graph()
    X = graph.new_input(dims=(8, 64), dtype=mi.float16)
    W1 = graph.new_input(dims=(64, 64), dtype=mi.float16)
    W2 = graph.new_input(dims=(64, 64), dtype=mi.float16)
    G = graph.silu(graph.matmul(X, W1))
    U = graph.matmul(X, W2)
    O = graph.mul(G, U)
    optimized_graph = graph.superoptimize(config="mlp", backend="cuda", warmup_iters=16, profile_iters=1000)

    input_tensors = [
        torch.randn(8, 64, dtype=torch.float16, device=device),
        torch.randn(64, 64, dtype=torch.float16, device=device),
        torch.randn(64, 64, dtype=torch.float16, device=device),
    ]
    for _ in range(16):
        optimized_graph(inputs=input_tensors)
    torch.cuda.synchronize()

    repetitions = 100
    timings = np.zeros((repetitions, 1))
    starter, ender = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0 = time.time()
    for rep in range(repetitions):
        starter.record()
        optimized_graph(inputs=input_tensors)
        ender.record()
        torch.cuda.synchronize()
        timings[rep] = starter.elapsed_time(ender)
    wall = time.time() - t0
    print("mean (ms):", np.mean(timings), "std:", np.std(timings), "wall (s):", wall, file=sys.stderr)
    if os.environ.get("MIRAGE_DUMP"):
        np.save("timings.npy", timings)
