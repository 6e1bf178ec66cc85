# LoRA: the base projection plus a low-rank update, drawn before and after
# superoptimization.
import mirage as mi
import argparse
import os

def lora_graph(tokens, hidden, out_features, rank):
    graph = mi.new_kernel_graph()
    X = graph.new_input(dims=(tokens, hidden), dtype=mi.float16)
    W = graph.new_input(dims=(hidden, out_features), dtype=mi.float16)
    A = graph.new_input(dims=(hidden, rank), dtype=mi.float16)
    B = graph.new_input(dims=(rank, out_features), dtype=mi.float16)
    D = graph.matmul(X, A)
    E = graph.matmul(D, B)
    C = graph.matmul(X, W)
    O = graph.add(C, E)
    graph.mark_output(O)
    return graph

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument('--checkpoint')
    parser.add_argument('--out-dir', default=os.getcwd())
    args = parser.parse_args()
    graph = lora_graph(16, 64, 128, 8)
    graph.visualize(os.path.join(args.out_dir, "lora_input"))
    optimized = graph.superoptimize(config="lora", previous_checkpoint=args.checkpoint)
    optimized.visualize("lora_optimized")
