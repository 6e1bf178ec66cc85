# Attention whose optimized graph is called and its outputs inspected.
import mirage as mi
import torch

def attention(graph, q_shape, k_shape, v_shape):
    Q = graph.new_input(dims=q_shape, dtype=mi.float16)
    K = graph.new_input(dims=k_shape, dtype=mi.float16)
    V = graph.new_input(dims=v_shape, dtype=mi.float16)
    A = graph.matmul(Q, K)
    E = graph.exp(A)
    S = graph.reduction(E, 2)
    D = graph.div(E, S)
    return graph.matmul(D, V)

if __name__ == "__main__":
    graph = mi.new_kernel_graph()
    O = attention(graph, (2, 16, 32), (2, 32, 64), (2, 64, 32))
    graph.mark_output(O)
    optimized_graph = graph.superoptimize(config="attention")

    input_tensors = [
        torch.randn(2, 16, 32, dtype=torch.float16, device='cuda:0'),
        torch.randn(2, 32, 64, dtype=torch.float16, device='cuda:0'),
        torch.randn(2, 64, 32, dtype=torch.float16, device='cuda:0'),
    ]
    outputs = optimized_graph(inputs=input_tensors)
    output = outputs[0]
    print(output.shape, output.stride(0), output.stride(1))
    reference = torch.softmax(torch.matmul(input_tensors[0], input_tensors[1]), dim=-1) @ input_tensors[2] if False else None
    for i, out in enumerate(outputs):
        print("output", i, out.shape)
