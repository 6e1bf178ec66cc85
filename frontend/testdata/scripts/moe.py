# Mixture of experts at real shapes: 8 experts of 4096x4096, 8 tokens each,
# batched over the experts: exp(X @ A) @ B.
import mirage as mi
import numpy as np
import torch
import argparse

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument('--experts', type=int, default=8)
    parser.add_argument('--tokens', type=int, default=8)
    parser.add_argument('--hidden', type=int, default=4096)
    parser.add_argument('--file', type=str, default='moe.json')
    parser.add_argument('--backend', type=str, default='cuda')
    parser.add_argument('--warmup', type=int, default=16)
    parser.add_argument('--profile', type=int, default=1000)
    args = parser.parse_args()
    e, t, h = args.experts, args.tokens, args.hidden

    graph = mi.new_kernel_graph()
    X = graph.new_input(dims=(e, t, h), dtype=mi.float16)
    A = graph.new_input(dims=(e, h, h), dtype=mi.float16)
    B = graph.new_input(dims=(e, h, h), dtype=mi.float16)
    D = graph.matmul(X, A)
    E = graph.exp(D)
    O = graph.matmul(E, B)
    graph.mark_output(O)
    optimized_graph = graph.superoptimize(previous_checkpoint=args.file, backend=args.backend,
                                          warmup_iters=args.warmup, profile_iters=args.profile)

    input_tensors = [
        torch.randn(e, t, h, dtype=torch.float16, device='cuda:0'),
        torch.randn(e, h, h, dtype=torch.float16, device='cuda:0'),
        torch.randn(e, h, h, dtype=torch.float16, device='cuda:0'),
    ]
    for _ in range(args.warmup):
        optimized_graph(inputs=input_tensors)
    torch.cuda.synchronize()
    starter, ender = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    starter.record()
    for _ in range(args.profile):
        optimized_graph(inputs=input_tensors)
    ender.record()
    torch.cuda.synchronize()
    print("Best muGraph run time (ms): ", starter.elapsed_time(ender) / args.profile)
