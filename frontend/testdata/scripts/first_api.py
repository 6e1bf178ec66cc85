# LoRA written against Mirage's first Python API, as its older demos are:
# mi.new_graph and mi.optimize, no mark_output (both products are the
# outputs), an optional checkpoint tested with `is None`, and Triton code
# written next to the script, found through __file__.
import mirage as mi
import argparse
import os

def build_lora(tokens, hidden, out_features, rank):
    graph = mi.new_graph()
    X = graph.new_input(dims=(tokens, hidden), dtype=mi.float16)
    W = graph.new_input(dims=(hidden, out_features), dtype=mi.float16)
    A = graph.new_input(dims=(hidden, rank), dtype=mi.float16)
    B = graph.new_input(dims=(rank, out_features), dtype=mi.float16)
    low_rank = graph.matmul(graph.matmul(X, A), B)
    base = graph.matmul(X, W)
    return graph

def main(checkpoint, out_dir):
    graph = build_lora(8, 64, 128, 8)
    if out_dir is None:
        out_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "generated")
    graph.generate_triton_program(os.path.join(out_dir, "lora_input.py"))
    if checkpoint is not None:
        graphs = mi.optimize(graph, previous_checkpoint=checkpoint)
    else:
        graphs = mi.optimize(graph, default_config="lora")
    for i, g in enumerate(graphs):
        g.generate_triton_program("{}/lora_optimized_{}.py".format(out_dir, i))

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument('--checkpoint')
    parser.add_argument('--out-dir')
    args = parser.parse_args()
    main(args.checkpoint, args.out_dir)
