# Shapes from the command line: RMSNorm followed by a projection, batch
# taken from --bs (mirage superopt rmsnorm_args.py -- --bs 8).
import mirage as mi
import numpy as np
import torch
import argparse

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="rmsnorm + matmul benchmark")
    parser.add_argument('--bs', type=int, default=1, help='batch size')
    parser.add_argument('--hidden', type=int, default=4096)
    parser.add_argument('--out-features', type=int, default=128)
    parser.add_argument('--file', type=str, default='rmsnorm_args.json')
    parser.add_argument('--save_codes', action='store_true')
    args = parser.parse_args()
    batch_size = args.bs
    hidden = args.hidden

    graph = mi.new_kernel_graph()
    X = graph.new_input(dims=(2 * batch_size, hidden), dtype=mi.float16)
    W = graph.new_input(dims=(hidden, args.out_features), dtype=mi.float16)
    D = graph.rms_norm(X, normalized_shape=(hidden,))
    O = graph.matmul(D, W)
    graph.mark_output(O)
    optimized_graph = graph.superoptimize(config="mlp", previous_checkpoint=args.file, save_codes=args.save_codes)

    x = torch.randn(2 * batch_size, hidden, dtype=torch.float16, device='cuda:0')
    w = torch.randn(hidden, args.out_features, dtype=torch.float16, device='cuda:0')
    out = optimized_graph(inputs=[x, w])[0]
    print("output", out.shape, "strides", out.stride(0), out.stride(1))
