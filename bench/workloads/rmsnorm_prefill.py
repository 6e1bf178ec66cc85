# A prefill's RMSNorm and its scale: 2048 tokens of LLaMA-7B's hidden 4096
# (fp16), Y = rms_norm(X) * G. 32 MiB in and out, no matmul: the GPU run
# measures how fast the rows kernels stream it, and whether a grid of many
# small blocks, several an SM, beats one of a block an SM as the model
# says it does not (it runs a block's copy and compute in turn).
import mirage as mi

graph = mi.new_kernel_graph()
X = graph.new_input(dims=(2048, 4096), dtype=mi.float16)
G = graph.new_input(dims=(1, 4096), dtype=mi.float16)
graph.mark_output(graph.mul(graph.rms_norm(X, normalized_shape=(4096,)), G))
graph.superoptimize()
