# A chain of 50 element-wise ops (exp, add, mul, silu, div) over X and Y:
# each binary op combines the newest value with the one before it, so that
# its expression written out as a tree doubles every few ops. Superopt it
# with --time-limit: the limit applies only once the search has started.
import mirage as mi

def chain(graph, X, Y, n):
    prev, cur = X, Y
    for i in range(n):
        k = i % 5
        if k == 0:
            nxt = graph.exp(cur)
        elif k == 1:
            nxt = graph.add(cur, prev)
        elif k == 2:
            nxt = graph.mul(cur, prev)
        elif k == 3:
            nxt = graph.silu(cur)
        else:
            nxt = graph.div(cur, prev)
        prev, cur = cur, nxt
    return cur

graph = mi.new_kernel_graph()
X = graph.new_input(dims=(8, 64), dtype=mi.float16)
Y = graph.new_input(dims=(8, 64), dtype=mi.float16)
graph.mark_output(chain(graph, X, Y, 50))
