# Falcon-7B's decode attention, multi-query: 71 query heads of 64 and one
# K/V head, repeated over the heads by a product with a 71x1x1 tensor of
# ones, 1 token, a 2048-token cache, bf16; the softmax written out (exp,
# sum, divide), scaled by 1/sqrt(64).
import mirage as mi

graph = mi.new_kernel_graph()
Q = graph.new_input(dims=(71, 1, 64), dtype=mi.bfloat16)
ones = graph.new_input(dims=(71, 1, 1), dtype=mi.bfloat16)
K = graph.new_input(dims=(1, 64, 2048), dtype=mi.bfloat16)
V = graph.new_input(dims=(1, 2048, 64), dtype=mi.bfloat16)
E = graph.exp(graph.mul_scalar(graph.matmul(Q, graph.mul(K, ones)), 0.125))
graph.mark_output(graph.matmul(graph.div(E, graph.reduction(E, 2)), graph.mul(V, ones)))
