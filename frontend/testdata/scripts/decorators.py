# Decorated functions: torch's (no-ops here) on the reference, the
# script's own on the graph builder.
import mirage as mi
import torch
import functools

def traced(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        print("building", fn)
        return fn(*args, **kwargs)
    return wrapper

@torch.compile
def torch_gated_mlp(x, w1, w2):
    return torch.nn.functional.silu(x @ w1) * (x @ w2)

@torch.no_grad()
@traced
def gated_mlp(graph, x, w1, w2):
    return graph.mul(graph.silu(graph.matmul(x, w1)), graph.matmul(x, w2))

if __name__ == "__main__":
    graph = mi.new_kernel_graph()
    X = graph.new_input(dims=(8, 64), dtype=mi.float16)
    W1 = graph.new_input(dims=(64, 64), dtype=mi.float16)
    W2 = graph.new_input(dims=(64, 64), dtype=mi.float16)
    graph.mark_output(gated_mlp(graph, X, W1, W2))
    optimized_graph = graph.superoptimize(config="mlp")
    x, w1, w2 = [torch.randn(8, 64, dtype=torch.float16, device='cuda:0') for _ in range(3)]
    expected = torch_gated_mlp(x, w1, w2)
