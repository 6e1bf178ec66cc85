# A whole LLaMA-7B decoder layer at decode, as a serving engine runs it:
# 4 tokens, a 1024-token KV cache, fp16. There is no reshape, so the 32
# heads are a batch dim: the normed activations are broadcast against a
# 32x1x1 tensor of ones, and Q, K and V are products with per-head weights
# (32 x 4096 x 128). Attention over the cache (K 32x128x1024, V
# 32x1024x128), the softmax written out (exp, sum, divide; no max shift),
# scaled by 1/sqrt(128). The output projection per head, summed over the
# heads, plus the residual; RMSNorm; the SwiGLU MLP (11008) plus the
# residual. Outputs: the layer's output, and the new K and V (the engine
# appends them to its cache).
import mirage as mi

tokens, seq, hidden, heads, head_dim, mlp = 4, 1024, 4096, 32, 128, 11008

g = mi.new_kernel_graph()
X = g.new_input(dims=(1, tokens, hidden), dtype=mi.float16)
ones = g.new_input(dims=(heads, 1, 1), dtype=mi.float16)
Wq = g.new_input(dims=(heads, hidden, head_dim), dtype=mi.float16)
Wk = g.new_input(dims=(heads, hidden, head_dim), dtype=mi.float16)
Wv = g.new_input(dims=(heads, hidden, head_dim), dtype=mi.float16)
Kc = g.new_input(dims=(heads, head_dim, seq), dtype=mi.float16)
Vc = g.new_input(dims=(heads, seq, head_dim), dtype=mi.float16)
Wo = g.new_input(dims=(heads, head_dim, hidden), dtype=mi.float16)
W1 = g.new_input(dims=(1, hidden, mlp), dtype=mi.float16)
W3 = g.new_input(dims=(1, hidden, mlp), dtype=mi.float16)
W2 = g.new_input(dims=(1, mlp, hidden), dtype=mi.float16)

N = g.rms_norm(X, normalized_shape=(hidden,))
Nh = g.mul(N, ones)  # heads x tokens x hidden
Q = g.matmul(Nh, Wq)
Kn = g.matmul(Nh, Wk)
Vn = g.matmul(Nh, Wv)
E = g.exp(g.mul_scalar(g.matmul(Q, Kc), 0.08838834764831845))
O = g.matmul(g.div(E, g.reduction(E, 2)), Vc)  # heads x tokens x head_dim
H1 = g.add(X, g.reduction(g.matmul(O, Wo), 0))
N2 = g.rms_norm(H1, normalized_shape=(hidden,))
up = g.mul(g.silu(g.matmul(N2, W1)), g.matmul(N2, W3))
g.mark_output(g.add(H1, g.matmul(up, W2)))
g.mark_output(Kn)
g.mark_output(Vn)
