# Attention at decode time, O = softmax(Q @ K) @ V, at shapes chosen on the
# command line (mirage superopt bench/shapes/attention.py -- --heads 32
# --keys 4096 --rows 16): the search-speed figures of the search-space
# issue at shapes other than gqa.py's.
import argparse

import mirage as mi

parser = argparse.ArgumentParser()
parser.add_argument("--heads", type=int, default=8)
parser.add_argument("--rows", type=int, default=64)
parser.add_argument("--keys", type=int, default=512)
parser.add_argument("--head-dim", type=int, default=64)
args = parser.parse_args()

graph = mi.new_kernel_graph()
Q = graph.new_input(dims=(args.heads, args.rows, args.head_dim), dtype=mi.float16)
K = graph.new_input(dims=(args.heads, args.head_dim, args.keys), dtype=mi.float16)
V = graph.new_input(dims=(args.heads, args.keys, args.head_dim), dtype=mi.float16)
E = graph.exp(graph.matmul(Q, K))
O = graph.matmul(graph.div(E, graph.reduction(E, 2)), V)
graph.mark_output(O)
graph.superoptimize(config="attention")
