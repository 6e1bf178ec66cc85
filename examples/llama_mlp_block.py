# The MLP block of a LLaMA-7B layer at decode (8 tokens), as a model
# writes it: H = X + W2·(silu(W1·n(X)) * W3·n(X)), with n the RMSNorm over
# the hidden size 4096 and the MLP size 11008, fp16. Seven ops: more than
# one search takes; superopt cuts it into parts, searches each and
# stitches the answer.
import mirage as mi

tokens, hidden, mlp = 8, 4096, 11008

graph = mi.new_kernel_graph()
X = graph.new_input(dims=(tokens, hidden), dtype=mi.float16)
W1 = graph.new_input(dims=(hidden, mlp), dtype=mi.float16)
W3 = graph.new_input(dims=(hidden, mlp), dtype=mi.float16)
W2 = graph.new_input(dims=(mlp, hidden), dtype=mi.float16)
N = graph.rms_norm(X, normalized_shape=(hidden,))
gate = graph.silu(graph.matmul(N, W1))
up = graph.matmul(N, W3)
down = graph.matmul(graph.mul(gate, up), W2)
graph.mark_output(graph.add(down, X))
