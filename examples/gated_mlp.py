# A gated MLP (as in LLaMA's feed-forward block):
# O = silu(X @ W1) * (X @ W2) with X 8x4096 and W1, W2 4096x4096 in fp16.
import mirage as mi

def gated_mlp(graph, X, W1, W2):
    O1 = graph.matmul(X, W1)
    O2 = graph.matmul(X, W2)
    return graph.mul(graph.silu(O1), O2)

graph = mi.new_kernel_graph()
X = graph.new_input(dims=(8, 4096), dtype=mi.float16)
W1 = graph.new_input(dims=(4096, 4096), dtype=mi.float16)
W2 = graph.new_input(dims=(4096, 4096), dtype=mi.float16)
graph.mark_output(gated_mlp(graph, X, W1, W2))

if __name__ == "__main__":
    graph.superoptimize(config="mlp")
