# LLaMA-3-8B's attention input at decode: RMSNorm weighted by γ, then the
# q, k and v projections as three matmuls of different widths (32 query
# heads of 128: 4096 columns; 8 key/value heads: 1024), 8 tokens, fp16.
import mirage as mi

graph = mi.new_kernel_graph()
X = graph.new_input(dims=(8, 4096), dtype=mi.float16)
G = graph.new_input(dims=(1, 4096), dtype=mi.float16)
Wq = graph.new_input(dims=(4096, 4096), dtype=mi.float16)
Wk = graph.new_input(dims=(4096, 1024), dtype=mi.float16)
Wv = graph.new_input(dims=(4096, 1024), dtype=mi.float16)
N = graph.mul(graph.rms_norm(X, normalized_shape=(4096,)), G)
graph.mark_output(graph.matmul(N, Wq))
graph.mark_output(graph.matmul(N, Wk))
graph.mark_output(graph.matmul(N, Wv))
