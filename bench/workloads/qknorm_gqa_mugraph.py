# The two-kernel partial-sum μGraph for qknorm_gqa.py, written by hand: the
# gqa_mugraph.py form with both rms_norms fused into the first kernel (Q's
# rows and V's rows are whole in their tiles). Its first kernel has 10
# threadblock ops, the attention configuration's limit.
import mirage as mi

graph = mi.new_kernel_graph()
Q = graph.new_input(dims=(2, 256, 64), dtype=mi.float16)
K = graph.new_input(dims=(2, 64, 4096), dtype=mi.float16)
V = graph.new_input(dims=(2, 4096, 64), dtype=mi.float16)

tb1 = mi.new_threadblock_graph(grid_dim=(2, 16, 1), block_dim=(128, 1, 1), forloop_range=4, reduction_dimx=64)
tQ = tb1.new_input(dtensor=Q, input_map=(0, -1, -1), forloop_dim=-1)  # 1x256x64
tK = tb1.new_input(dtensor=K, input_map=(0, 2, -1), forloop_dim=2)    # 1x64x64 per step
tV = tb1.new_input(dtensor=V, input_map=(0, 1, -1), forloop_dim=1)    # 1x64x64 per step
tE = tb1.exp(tb1.matmul(tb1.rms_norm(tQ), tK))
tS = tb1.forloop_accum(tE, "sum")                           # 1x256x1
tO = tb1.forloop_accum(tb1.matmul(tE, tb1.rms_norm(tV)))    # 1x256x64
tb1.new_output(stensor=tO, output_map=(0, 2, -1))
tb1.new_output(stensor=tS, output_map=(0, 2, -1))
Opart, Spart = graph.customized([Q, K, V], tb1)

tb2 = mi.new_threadblock_graph(grid_dim=(2, 4, 1), block_dim=(128, 1, 1), forloop_range=1, reduction_dimx=64)
tOp = tb2.new_input(dtensor=Opart, input_map=(0, 1, -1), forloop_dim=-1)  # 1x64x1024
tSp = tb2.new_input(dtensor=Spart, input_map=(0, 1, -1), forloop_dim=-1)  # 1x64x16
tOs = tb2.forloop_accum(tOp, "sum_todimx")   # 1x64x64
tSs = tb2.forloop_accum(tSp, "sum")          # 1x64x1
tb2.new_output(stensor=tb2.div(tOs, tSs), output_map=(0, 1, -1))
O = graph.customized([Opart, Spart], tb2)
graph.mark_output(O[0])
