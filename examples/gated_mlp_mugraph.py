# The fused μGraph for gated_mlp.py: one kernel, 64 blocks of 64 output
# columns each. Both matmuls share the X tile of every for-loop step; silu
# and the product run once, after the loop, on the accumulated tiles.
import mirage as mi

graph = mi.new_kernel_graph()
X = graph.new_input(dims=(8, 4096), dtype=mi.float16)
W1 = graph.new_input(dims=(4096, 4096), dtype=mi.float16)
W2 = graph.new_input(dims=(4096, 4096), dtype=mi.float16)

tb = mi.new_threadblock_graph(grid_dim=(64, 1, 1), block_dim=(128, 1, 1), forloop_range=64, reduction_dimx=64)
tX = tb.new_input(dtensor=X, input_map=(-1, -1, -1), forloop_dim=1)
tW1 = tb.new_input(dtensor=W1, input_map=(1, -1, -1), forloop_dim=0)
tW2 = tb.new_input(dtensor=W2, input_map=(1, -1, -1), forloop_dim=0)
tA1 = tb.forloop_accum(tb.matmul(tX, tW1))
tA2 = tb.forloop_accum(tb.matmul(tX, tW2))
tO = tb.mul(tb.silu(tA1), tA2)
tb.new_output(stensor=tO, output_map=(1, -1, -1))

O = graph.customized([X, W1, W2], tb)
graph.mark_output(O[0])
