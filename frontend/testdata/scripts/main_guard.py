# The graph is built in a function, everything runs under the main guard,
# and the optimized graph comes back from the function.
import mirage as mi
import argparse
import os
import torch

def optimize_norm_transformer(batch, checkpoint):
    graph = mi.new_kernel_graph()
    H = graph.new_input(dims=(batch, 256), dtype=mi.float16)
    X = graph.new_input(dims=(batch, 256), dtype=mi.float16)
    alpha = graph.new_input(dims=(batch, 256), dtype=mi.float16)
    H_norm = graph.rms_norm(H, normalized_shape=(256,))
    A = graph.add(H_norm, X)
    B = graph.mul(alpha, A)
    C = graph.add(X, B)
    O = graph.rms_norm(C, normalized_shape=(256,))
    graph.mark_output(O)
    return graph.superoptimize(previous_checkpoint=checkpoint)

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument('--checkpoint')
    parser.add_argument('-b', '--batch', type=int, default=8)
    args = parser.parse_args()
    best = optimize_norm_transformer(args.batch, args.checkpoint)
    tensors = [torch.randn(args.batch, 256, dtype=torch.float16, device='cuda:0') for _ in range(3)]
    best(inputs=tensors)
