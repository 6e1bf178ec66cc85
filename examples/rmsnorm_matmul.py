# RMSNorm followed by a matmul, the running example of the Mirage paper:
# O = rms_norm(X) @ W with X 16x4096 and W 4096x6144 in fp16.
import mirage as mi

graph = mi.new_kernel_graph()
X = graph.new_input(dims=(16, 4096), dtype=mi.float16)
W = graph.new_input(dims=(4096, 6144), dtype=mi.float16)
D = graph.rms_norm(X, normalized_shape=(4096,))
O = graph.matmul(D, W)
graph.mark_output(O)

if __name__ == "__main__":
    graph.superoptimize(config="mlp")
