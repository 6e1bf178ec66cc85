# A linear layer with a low-rank adapter (LoRA), Mirage's benchmark shapes:
# O = X @ W + (X @ A) @ B with X 16x256, W 256x4096, A 256x16, B 16x4096.
import mirage as mi

graph = mi.new_kernel_graph()
X = graph.new_input(dims=(16, 256), dtype=mi.float16)
W = graph.new_input(dims=(256, 4096), dtype=mi.float16)
A = graph.new_input(dims=(256, 16), dtype=mi.float16)
B = graph.new_input(dims=(16, 4096), dtype=mi.float16)
D = graph.matmul(X, A)
E = graph.matmul(D, B)
C = graph.matmul(X, W)
graph.mark_output(graph.add(C, E))
graph.superoptimize(config="lora")
