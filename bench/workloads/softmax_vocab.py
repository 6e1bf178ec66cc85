# Sampling's softmax over a vocabulary at decode: 16 tokens' logits over
# LLaMA-3's 128256 tokens, in fp32, written out (exp, sum, divide; no max
# shift) as the other programs write it. Few rows, each long: its unfused
# program runs the runtime library's split row sum (reduce_rows_split),
# which the GPU harness measures here (bench/results/predicted-h100.md).
import mirage as mi

tokens, vocab = 16, 128256

g = mi.new_kernel_graph()
X = g.new_input(dims=(tokens, vocab), dtype=mi.float32)
E = g.exp(X)
g.mark_output(g.div(E, g.reduction(E, 1)))
