# Picks a GPU and a dtype through mirage's runtime helpers, and rebuilds and
# superoptimizes the same graph in a loop, as warm-up runs do.
import mirage as mi
import numpy as np
import torch

if __name__ == "__main__":
    mi.set_gpu_device_id(3)
    mirage_dtype = mi.bfloat16
    torch_dtype = mi.convert_dtype_to_torch_type(mirage_dtype)
    for trial in range(3):
        graph = mi.new_kernel_graph()
        X = graph.new_input(dims=(1, 256), dtype=mirage_dtype)
        W = graph.new_input(dims=(256, 128), dtype=mirage_dtype)
        N = graph.rms_norm(X, normalized_shape=(256,))
        O = graph.matmul(N, W)
        graph.mark_output(O)
        optimized_graph = graph.superoptimize(config="mlp")

    device = 'cuda:3'
    inputs = [
        torch.randn(1, 256, dtype=torch_dtype, device=device),
        torch.randn(256, 128, dtype=torch_dtype, device=device),
    ]
    result = optimized_graph(inputs=inputs)
