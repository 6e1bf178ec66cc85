# A hand-written μGraph (RMSNorm fused into the matmul) whose CUDA the
# script asks mirage to generate and prints.
import mirage as mi
import numpy as np
import torch

if __name__ == "__main__":
    graph = mi.new_kernel_graph()
    X = graph.new_input(dims=(16, 512), dtype=mi.float16)
    W = graph.new_input(dims=(512, 256), dtype=mi.float16)
    tb_graph = mi.new_threadblock_graph(grid_dim=(4, 1, 1), block_dim=(128, 1, 1), forloop_range=8, reduction_dimx=64)
    tX = tb_graph.new_input(dtensor=X, input_map=(-1, -1, -1), forloop_dim=1)
    tW = tb_graph.new_input(dtensor=W, input_map=(1, -1, -1), forloop_dim=0)
    tM = tb_graph.matmul(tX, tW)
    tAccX = tb_graph.forloop_accum(tX, "rms")
    tAccM = tb_graph.forloop_accum(tM)
    tO = tb_graph.div(tAccM, tAccX)
    tb_graph.new_output(stensor=tO, output_map=(1, -1, -1))
    O = graph.customized([X, W], tb_graph)

    input_tensors = [
        torch.randn(16, 512, dtype=torch.float16, device='cuda:0'),
        torch.randn(512, 256, dtype=torch.float16, device='cuda:0'),
    ]
    input_strides = [tensor.stride() for tensor in input_tensors]
    p = mi.generate_cuda_program(graph.cygraph, target_cc=80, input_strides=input_strides, output_tensors=O)
    print(p["code"])
    print("max shared memory:", p["max_smem_size"], "of", mi.get_shared_memory_capacity(80))
