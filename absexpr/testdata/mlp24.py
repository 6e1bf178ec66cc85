# 24 stacked gated MLP layers: x = (silu(x @ W1) * (x @ W2)) @ W3. Each
# layer reads its input twice, so the output's expression written out as a
# tree doubles with every layer.
import mirage as mi

def layers(graph, X, n):
    for i in range(n):
        W1 = graph.new_input(dims=(64, 64), dtype=mi.float16)
        W2 = graph.new_input(dims=(64, 64), dtype=mi.float16)
        W3 = graph.new_input(dims=(64, 64), dtype=mi.float16)
        X = graph.matmul(graph.mul(graph.silu(graph.matmul(X, W1)), graph.matmul(X, W2)), W3)
    return X

graph = mi.new_kernel_graph()
X = graph.new_input(dims=(8, 64), dtype=mi.float16)
graph.mark_output(layers(graph, X, 24))
