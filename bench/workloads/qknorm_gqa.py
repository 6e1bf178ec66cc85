# QK-normalized group-query attention, as Mirage's benchmark writes it
# (benchmark/qknorm_gqa.py, batch 1): the queries and the values are
# RMS-normalized over the head dim (64) before attention.
# Q 2x256x64, K 2x64x4096, V 2x4096x64 (fp16).
import mirage as mi

graph = mi.new_kernel_graph()
Q = graph.new_input(dims=(2, 256, 64), dtype=mi.float16)
K = graph.new_input(dims=(2, 64, 4096), dtype=mi.float16)
V = graph.new_input(dims=(2, 4096, 64), dtype=mi.float16)
nQ = graph.rms_norm(Q, normalized_shape=(64,))
nV = graph.rms_norm(V, normalized_shape=(64,))
A = graph.matmul(nQ, K)
E = graph.exp(A)
S = graph.reduction(E, 2)
O = graph.matmul(graph.div(E, S), nV)
graph.mark_output(O)
graph.superoptimize(config="attention")
