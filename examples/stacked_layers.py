# Three stacked layers, each H = H + silu(n(H)·W) with n the RMSNorm over
# the hidden size 4096, at decode (8 tokens), fp16. Twelve ops; the layers
# are alike but for their weights, so superopt searches one part and uses
# its answer for all three.
import mirage as mi

tokens, hidden, layers = 8, 4096, 3

graph = mi.new_kernel_graph()
H = graph.new_input(dims=(tokens, hidden), dtype=mi.float16)
for layer in range(layers):
    W = graph.new_input(dims=(hidden, hidden), dtype=mi.float16)
    H = graph.add(H, graph.silu(graph.matmul(graph.rms_norm(H, normalized_shape=(hidden,)), W)))
graph.mark_output(H)
