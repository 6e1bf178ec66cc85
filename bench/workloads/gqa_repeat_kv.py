# Grouped-query attention at decode as a LLaMA-3-8B layer writes it, with
# no reshape: 8 groups (KV heads) x 4 query heads each, 4 tokens, head dim
# 128, a 2048-token KV cache (fp16). K and V are repeated over a group's
# heads by a product with a 1x4x1x1 tensor of ones (HF's repeat_kv); the
# softmax is written out (exp, sum, divide), scaled by 1/sqrt(128).
import mirage as mi

graph = mi.new_kernel_graph()
Q = graph.new_input(dims=(8, 4, 4, 128), dtype=mi.float16)
ones = graph.new_input(dims=(1, 4, 1, 1), dtype=mi.float16)
K = graph.new_input(dims=(8, 1, 128, 2048), dtype=mi.float16)
V = graph.new_input(dims=(8, 1, 2048, 128), dtype=mi.float16)
A = graph.mul_scalar(graph.matmul(Q, graph.mul(K, ones)), 0.08838834764831845)
E = graph.exp(A)
O = graph.matmul(graph.div(E, graph.reduction(E, 3)), graph.mul(V, ones))
graph.mark_output(O)
