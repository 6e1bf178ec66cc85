# The normalized Transformer (nGPT) update, Mirage's benchmark shapes:
# O = rms_norm(X + alpha * (rms_norm(H) + X)) over rows of 4096, with H, X
# and alpha 32x4096 (fp16). As in Mirage's benchmark, RMS normalization
# stands for the L2 normalization and addition for the subtraction.
import mirage as mi

graph = mi.new_kernel_graph()
H = graph.new_input(dims=(32, 4096), dtype=mi.float16)
X = graph.new_input(dims=(32, 4096), dtype=mi.float16)
alpha = graph.new_input(dims=(32, 4096), dtype=mi.float16)
A = graph.add(graph.rms_norm(H, normalized_shape=(4096,)), X)
C = graph.add(X, graph.mul(alpha, A))
graph.mark_output(graph.rms_norm(C, normalized_shape=(4096,)))
graph.superoptimize()
