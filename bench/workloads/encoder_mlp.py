# An encoder layer's MLP at a ViT-B/16's shapes (197 tokens: 196 patches
# and the class token; hidden 768, MLP 3072), pre-norm with RMSNorm, fp16:
# H = X + W2·silu(W1·n(X) + b1) + b2. 197 rows are what no power of two
# divides: the matmul rule tiles none, and the products are large enough
# for the library's. Five inputs past a search's limits: superopt cuts it
# into parts.
import mirage as mi

tokens, hidden, mlp = 197, 768, 3072

graph = mi.new_kernel_graph()
X = graph.new_input(dims=(tokens, hidden), dtype=mi.float16)
W1 = graph.new_input(dims=(hidden, mlp), dtype=mi.float16)
B1 = graph.new_input(dims=(1, mlp), dtype=mi.float16)
W2 = graph.new_input(dims=(mlp, hidden), dtype=mi.float16)
B2 = graph.new_input(dims=(1, hidden), dtype=mi.float16)
N = graph.rms_norm(X, normalized_shape=(hidden,))
H = graph.silu(graph.add(graph.matmul(N, W1), B1))
graph.mark_output(graph.add(graph.add(graph.matmul(H, W2), B2), X))
