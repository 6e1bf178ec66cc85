# QK-normalized group-query attention (Chameleon), as in Mirage's documented
# example: queries and keys are RMS-normalized over their last dim before
# attention. Q 2x256x64, K 2x64x4096, V 2x4096x64 (fp16).
import mirage as mi

graph = mi.new_kernel_graph()
Q = graph.new_input(dims=(2, 256, 64), dtype=mi.float16)
K = graph.new_input(dims=(2, 64, 4096), dtype=mi.float16)
V = graph.new_input(dims=(2, 4096, 64), dtype=mi.float16)
Qn = graph.rms_norm(Q, normalized_shape=(64,))
Kn = graph.rms_norm(K, normalized_shape=(4096,))
A = graph.matmul(Qn, Kn)
E = graph.exp(A)
S = graph.reduction(E, 2)
O = graph.matmul(graph.div(E, S), V)
graph.mark_output(O)
graph.superoptimize(config="attention")
