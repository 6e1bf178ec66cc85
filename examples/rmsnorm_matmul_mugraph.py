# The fused μGraph an expert writes for rmsnorm_matmul.py: one kernel whose
# 96 blocks each own 64 columns of W. The for-loop walks the 4096-long
# reduction dim in 64 steps of 64; every step multiplies a 16x64 tile of X by
# a 64x64 tile of W and feeds X's tile to an rms accumulator. After the loop
# the accumulated product is divided by the rms (rms_norm(X) @ W ==
# (X @ W) / rms(X) because the rms is constant along each row).
import mirage as mi

graph = mi.new_kernel_graph()
X = graph.new_input(dims=(16, 4096), dtype=mi.float16)
W = graph.new_input(dims=(4096, 6144), dtype=mi.float16)

tb = mi.new_threadblock_graph(grid_dim=(96, 1, 1), block_dim=(128, 1, 1), forloop_range=64, reduction_dimx=64)
tX = tb.new_input(dtensor=X, input_map=(-1, -1, -1), forloop_dim=1)  # 16x64 per step
tW = tb.new_input(dtensor=W, input_map=(1, -1, -1), forloop_dim=0)   # 64x64 per step
tM = tb.matmul(tX, tW)
tAccM = tb.forloop_accum(tM)              # sum over the loop: 16x64
tRms = tb.forloop_accum(tX, "rms")        # rms of each row of X: 16x1
tO = tb.div(tAccM, tRms)
tb.new_output(stensor=tO, output_map=(1, -1, -1))

O = graph.customized([X, W], tb)
graph.mark_output(O[0])
