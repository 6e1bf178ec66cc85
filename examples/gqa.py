# Group-query attention at decode time, as in Mirage's LLaMA-70B demo:
# O = softmax(Q @ K) @ V with Q 2x256x64, K 2x64x4096, V 2x4096x64 (fp16).
# The softmax is written out (exp, sum, divide), without the max shift.
import mirage as mi

graph = mi.new_kernel_graph()
Q = graph.new_input(dims=(2, 256, 64), dtype=mi.float16)
K = graph.new_input(dims=(2, 64, 4096), dtype=mi.float16)
V = graph.new_input(dims=(2, 4096, 64), dtype=mi.float16)
A = graph.matmul(Q, K)
E = graph.exp(A)
S = graph.reduction(E, 2)
D = graph.div(E, S)
O = graph.matmul(D, V)
graph.mark_output(O)

if __name__ == "__main__":
    graph.superoptimize(config="attention")
