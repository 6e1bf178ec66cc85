# Shape checks with assert, and a correctness check against torch that
# only a GPU could run (it passes here: its result is unknown).
import mirage as mi
import torch

if __name__ == "__main__":
    graph = mi.new_kernel_graph()
    X = graph.new_input(dims=(16, 128), dtype=mi.float16)
    W = graph.new_input(dims=(128, 64), dtype=mi.float16)
    assert X.num_dims == 2 and X.dim(1) == W.dim(0), "inner dims must agree"
    Y = graph.exp(graph.matmul(X, W))
    assert Y.dim(0) == 16
    assert (Y.dim(1) == 64), "output columns"
    graph.mark_output(Y)
    optimized_graph = graph.superoptimize(config="mlp")

    x = torch.randn(16, 128, dtype=torch.float16, device='cuda:0')
    w = torch.randn(128, 64, dtype=torch.float16, device='cuda:0')
    out = optimized_graph(inputs=[x, w])[0]
    assert out.shape == (16, 64)
    assert torch.allclose(out, torch.exp(x @ w), rtol=1e-2, atol=1e-2), "mismatch"
    assert not torch.isnan(out).any()
