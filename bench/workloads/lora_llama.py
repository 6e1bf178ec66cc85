# A LLaMA-7B projection with a LoRA adapter at decode: O = X·W + 2·(X·A)·B
# with X 8x4096 (8 tokens), W 4096x4096, A 4096x16 and B 16x4096 (rank 16,
# scaled by alpha/rank = 2), fp16, written as the adapter's users write it.
import mirage as mi

graph = mi.new_kernel_graph()
X = graph.new_input(dims=(8, 4096), dtype=mi.float16)
W = graph.new_input(dims=(4096, 4096), dtype=mi.float16)
A = graph.new_input(dims=(4096, 16), dtype=mi.float16)
B = graph.new_input(dims=(16, 4096), dtype=mi.float16)
E = graph.mul_scalar(graph.matmul(graph.matmul(X, A), B), 2.0)
graph.mark_output(graph.add(graph.matmul(X, W), E))
