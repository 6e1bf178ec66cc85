package seed_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/mirage-go/mirage/cost"
	"github.com/mirage-go/mirage/ffverify"
	"github.com/mirage-go/mirage/frontend"
	"github.com/mirage-go/mirage/interp"
	"github.com/mirage-go/mirage/seed"
	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

func load(t *testing.T, body string) *kernel.Graph {
	t.Helper()
	p, err := frontend.Load("p.py", []byte("import mirage as mi\ng = mi.new_kernel_graph()\n"+body), frontend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p.Graph
}

// caseBody is the body of the seed case named name.
func caseBody(t *testing.T, name string) string {
	t.Helper()
	for _, tc := range seedCases {
		if tc.name == name {
			return tc.body
		}
	}
	t.Fatalf("no seed case %q", name)
	return ""
}

// seedCases are programs of each class a rule is for, and programs where
// a rule's premise fails (the part is left to the enumeration).
var seedCases = []struct {
	name  string
	body  string
	rules []string // the rules that must give seeds, in Build's order
}{
	{"elementwise chain and a row sum", `
X = g.new_input(dims=(16, 1024), dtype=mi.float16)
Y = g.new_input(dims=(16, 1024), dtype=mi.float16)
A = g.exp(X)
B = g.mul(A, Y)
C = g.add(B, X)
D = g.silu(C)
E = g.mul(D, D)
S = g.reduction(E, 1)
g.mark_output(S)
g.mark_output(D)
`, []string{"rows"}},
	{"rms_norm with a weight", `
X = g.new_input(dims=(8, 4096), dtype=mi.float16)
W = g.new_input(dims=(1, 4096), dtype=mi.float16)
g.mark_output(g.mul(g.rms_norm(X, normalized_shape=(4096,)), W))
`, []string{"rows"}},
	{"a norm written out", `
X = g.new_input(dims=(32, 128), dtype=mi.float16)
S = g.reduction(g.square(X), 1)
R = g.sqrt(g.mul_scalar(S, 0.0078125))
g.mark_output(g.div(X, R))
`, []string{"rows"}},
	{"a LayerNorm written out with sub", `
X = g.new_input(dims=(8, 256), dtype=mi.bfloat16)
G = g.new_input(dims=(1, 256), dtype=mi.bfloat16)
C = g.sub(X, g.mul_scalar(g.reduction(X, 1), 0.00390625))
V = g.mul_scalar(g.reduction(g.mul(C, C), 1), 0.00390625)
g.mark_output(g.mul(g.div(C, g.sqrt(V)), G))
`, []string{"rows"}},
	{"rank 3 rows", `
X = g.new_input(dims=(4, 8, 128), dtype=mi.float16)
B = g.new_input(dims=(1, 8, 128), dtype=mi.float16)
E = g.exp(g.add(X, B))
g.mark_output(g.div(E, g.reduction(E, 2)))
`, []string{"rows"}},
	// Attention's K (batch × dim × keys) normalized per key, the norm
	// written out: sums over dim 1, blocks owning whole columns.
	{"a norm of each key, written out", `
K = g.new_input(dims=(2, 64, 96), dtype=mi.float16)
B = g.new_input(dims=(1, 64, 1), dtype=mi.float16)
R = g.sqrt(g.mul_scalar(g.reduction(g.square(K), 1), 0.015625))
g.mark_output(g.mul(g.div(K, R), B))
`, []string{"rows"}},
	{"sums over two dims", `
X = g.new_input(dims=(2, 64, 96), dtype=mi.float16)
g.mark_output(g.reduction(g.reduction(X, 1), 2))
`, nil},
	{"rms_norm and a matmul", `
X = g.new_input(dims=(16, 512), dtype=mi.float16)
W = g.new_input(dims=(512, 1024), dtype=mi.float16)
g.mark_output(g.matmul(g.rms_norm(X, normalized_shape=(512,)), W))
`, []string{"matmul", "split_k"}},
	{"gated MLP with a weighted norm", `
X = g.new_input(dims=(8, 256), dtype=mi.float16)
G = g.new_input(dims=(1, 256), dtype=mi.float16)
W1 = g.new_input(dims=(256, 512), dtype=mi.float16)
W2 = g.new_input(dims=(256, 512), dtype=mi.float16)
A = g.mul(g.rms_norm(X, normalized_shape=(256,)), G)
g.mark_output(g.mul(g.silu(g.matmul(A, W1)), g.matmul(A, W2)))
`, []string{"matmul", "split_k", "library"}},
	{"element-wise prologue", `
X = g.new_input(dims=(16, 256), dtype=mi.float16)
W = g.new_input(dims=(256, 256), dtype=mi.float16)
g.mark_output(g.matmul(g.silu(X), W))
`, []string{"matmul", "split_k"}},
	{"a norm of a sum, weighted, before a matmul", `
X = g.new_input(dims=(4, 384), dtype=mi.float16)
R = g.new_input(dims=(4, 384), dtype=mi.float16)
G = g.new_input(dims=(1, 384), dtype=mi.float16)
W = g.new_input(dims=(384, 96), dtype=mi.float16)
A = g.mul(g.rms_norm(g.add(X, R), normalized_shape=(384,)), G)
g.mark_output(g.relu(g.matmul(A, W)))
`, []string{"matmul", "split_k", "library"}},
	{"a norm of a row-scaled input, weighted, an output that is a product", `
X = g.new_input(dims=(5, 192), dtype=mi.float16)
S = g.new_input(dims=(5, 1), dtype=mi.float16)
G = g.new_input(dims=(1, 192), dtype=mi.float16)
W1 = g.new_input(dims=(192, 160), dtype=mi.float16)
W2 = g.new_input(dims=(192, 160), dtype=mi.float16)
A = g.mul(g.rms_norm(g.mul(X, S), normalized_shape=(192,)), G)
M1 = g.matmul(A, W1)
g.mark_output(M1)
g.mark_output(g.mul(g.silu(M1), g.matmul(A, W2)))
`, []string{"matmul", "split_k", "library"}},
	{"one row: exp, a norm, a scale", `
X = g.new_input(dims=(1, 512), dtype=mi.float16)
W = g.new_input(dims=(512, 48), dtype=mi.float16)
g.mark_output(g.matmul(g.mul_scalar(g.rms_norm(g.exp(X), normalized_shape=(512,)), 0.5), W))
`, []string{"matmul", "split_k"}},
	{"broadcast prologue inputs, no norm", `
X = g.new_input(dims=(3, 384), dtype=mi.float16)
S = g.new_input(dims=(3, 1), dtype=mi.float16)
G = g.new_input(dims=(1, 384), dtype=mi.float16)
W = g.new_input(dims=(384, 96), dtype=mi.float16)
g.mark_output(g.matmul(g.mul(g.add(X, G), S), W))
`, []string{"matmul", "split_k"}},
	{"residual epilogue", `
X = g.new_input(dims=(8, 64), dtype=mi.float16)
W = g.new_input(dims=(64, 128), dtype=mi.float16)
R = g.new_input(dims=(8, 128), dtype=mi.float16)
g.mark_output(g.add(g.matmul(X, W), R))
`, []string{"matmul", "split_k"}},
	// The residual is the norm's operand too: the kernel reads X walked
	// along the reduced dim and whole after the loop, two input ops of
	// one tensor (each a parameter of its own in the emitted code). No
	// library seed: cuBLASLt adds X in the product's call, so its kernel
	// would replace the norm's launch alone.
	{"a residual that is the norm's operand", `
X = g.new_input(dims=(4, 256), dtype=mi.float16)
W = g.new_input(dims=(256, 256), dtype=mi.float16)
g.mark_output(g.add(g.matmul(g.rms_norm(X, normalized_shape=(256,)), W), X))
`, []string{"matmul", "split_k"}},
	// With an activation between, the library's kernel replaces three
	// launches (the norm, silu and the add, which no call can take).
	{"a residual that is the norm's operand, after silu", `
X = g.new_input(dims=(4, 256), dtype=mi.float16)
W = g.new_input(dims=(256, 256), dtype=mi.float16)
g.mark_output(g.add(g.silu(g.matmul(g.rms_norm(X, normalized_shape=(256,)), W)), X))
`, []string{"matmul", "split_k", "library"}},
	// bf16, and epilogue inputs that broadcast both ways: a column (one
	// value a row) and a scalar.
	{"a bf16 projection, then a column and a scalar", `
X = g.new_input(dims=(3, 64), dtype=mi.bfloat16)
W = g.new_input(dims=(64, 128), dtype=mi.bfloat16)
C = g.new_input(dims=(3, 1), dtype=mi.bfloat16)
S = g.new_input(dims=(1, 1), dtype=mi.bfloat16)
g.mark_output(g.mul(g.add(g.silu(g.matmul(g.rms_norm(X, normalized_shape=(64,)), W)), C), S))
`, []string{"matmul", "split_k", "library"}},
	// 3000 columns, which no power of two from 256 to 2048 divides: the
	// library's column tiles are 1500 wide.
	{"a norm and silu over 3000 columns", `
X = g.new_input(dims=(5, 64), dtype=mi.float16)
W = g.new_input(dims=(64, 3000), dtype=mi.float16)
g.mark_output(g.silu(g.matmul(g.rms_norm(X, normalized_shape=(64,)), W)))
`, []string{"library"}},
	// A residual cuBLASLt adds, then relu: one launch for the library's
	// kernel to replace, so none.
	{"a residual folded into the call, then relu, 197 rows", `
X = g.new_input(dims=(197, 64), dtype=mi.float16)
W = g.new_input(dims=(64, 256), dtype=mi.float16)
R = g.new_input(dims=(197, 256), dtype=mi.float16)
g.mark_output(g.relu(g.add(g.matmul(X, W), R)))
`, nil},
	// A prefill's gated MLP at odd sizes, for the library rule: the
	// products by the library, from X; the normed product an output too.
	{"a gated MLP of 6 rows, a normed product an output", `
X = g.new_input(dims=(6, 96), dtype=mi.float16)
W1 = g.new_input(dims=(96, 768), dtype=mi.float16)
W3 = g.new_input(dims=(96, 768), dtype=mi.float16)
N = g.rms_norm(X, normalized_shape=(96,))
M1 = g.matmul(N, W1)
g.mark_output(M1)
g.mark_output(g.mul(g.silu(M1), g.matmul(N, W3)))
`, []string{"matmul", "split_k", "library"}},
	{"many rows, tiled both ways", `
X = g.new_input(dims=(256, 128), dtype=mi.float16)
W = g.new_input(dims=(128, 256), dtype=mi.float16)
g.mark_output(g.exp(g.matmul(X, W)))
`, []string{"matmul"}},
	// 197 rows, which no power of two divides: the matmul rule tiles no
	// rows (it takes at most 128 whole), split_k splits at most 128; the
	// library rule's kernel takes one row a block.
	{"an encoder's projection with a bias, 197 rows", `
X = g.new_input(dims=(197, 32), dtype=mi.float16)
W = g.new_input(dims=(32, 64), dtype=mi.float16)
B = g.new_input(dims=(1, 64), dtype=mi.float16)
g.mark_output(g.silu(g.add(g.matmul(X, W), B)))
`, []string{"library"}},
	{"output columns enough to fill the GPU without a split", `
X = g.new_input(dims=(2, 64), dtype=mi.float16)
W = g.new_input(dims=(64, 65536), dtype=mi.float16)
g.mark_output(g.matmul(X, W))
`, []string{"matmul"}},
	{"attention, normalized before ·V", `
Q = g.new_input(dims=(2, 16, 64), dtype=mi.float16)
K = g.new_input(dims=(2, 64, 512), dtype=mi.float16)
V = g.new_input(dims=(2, 512, 64), dtype=mi.float16)
E = g.exp(g.matmul(Q, K))
g.mark_output(g.matmul(g.div(E, g.reduction(E, 2)), V))
`, []string{"attention"}},
	{"decode attention, scaled before exp, normalized after ·V", `
Q = g.new_input(dims=(8, 1, 128), dtype=mi.float16)
K = g.new_input(dims=(8, 128, 1024), dtype=mi.float16)
V = g.new_input(dims=(8, 1024, 128), dtype=mi.float16)
E = g.exp(g.mul_scalar(g.matmul(Q, K), 0.08838834764831845))
g.mark_output(g.div(g.matmul(E, V), g.reduction(E, 2)))
`, []string{"attention"}},
	{"attention with Q and V normalized (qknorm_gqa)", `
Q = g.new_input(dims=(2, 64, 64), dtype=mi.float16)
K = g.new_input(dims=(2, 64, 256), dtype=mi.float16)
V = g.new_input(dims=(2, 256, 64), dtype=mi.float16)
E = g.exp(g.matmul(g.rms_norm(Q, normalized_shape=(64,)), K))
g.mark_output(g.matmul(g.div(E, g.reduction(E, 2)), g.rms_norm(V, normalized_shape=(64,))))
`, []string{"attention"}},
	{"one head's attention (rank 2), scaled", `
Q = g.new_input(dims=(4, 64), dtype=mi.float16)
K = g.new_input(dims=(64, 512), dtype=mi.float16)
V = g.new_input(dims=(512, 64), dtype=mi.float16)
E = g.exp(g.mul_scalar(g.matmul(Q, K), 0.125))
g.mark_output(g.matmul(g.div(E, g.reduction(E, 1)), V))
`, []string{"attention"}},
	// Premises that fail.
	{"attention with K normalized along the keys' dim", `
Q = g.new_input(dims=(2, 16, 64), dtype=mi.float16)
K = g.new_input(dims=(2, 64, 512), dtype=mi.float16)
V = g.new_input(dims=(2, 512, 64), dtype=mi.float16)
E = g.exp(g.matmul(Q, g.rms_norm(K, normalized_shape=(512,))))
g.mark_output(g.matmul(g.div(E, g.reduction(E, 2)), V))
`, nil},
	{"attention whose V is Q", `
X = g.new_input(dims=(1, 128, 64), dtype=mi.float16)
K = g.new_input(dims=(1, 64, 128), dtype=mi.float16)
E = g.exp(g.matmul(X, K))
g.mark_output(g.matmul(g.div(E, g.reduction(E, 2)), X))
`, nil},
	{"a square matmul of an input by itself", `
X = g.new_input(dims=(256, 256), dtype=mi.float16)
g.mark_output(g.matmul(X, X))
`, nil},
	{"a weight that the prologue reads too", `
X = g.new_input(dims=(64, 64), dtype=mi.float16)
W = g.new_input(dims=(64, 64), dtype=mi.float16)
g.mark_output(g.matmul(g.mul(X, W), W))
`, nil},
	{"a sum over rows", `
X = g.new_input(dims=(16, 256), dtype=mi.float16)
g.mark_output(g.reduction(g.exp(X), 0))
`, nil},
	{"two matmuls in a chain", `
X = g.new_input(dims=(16, 256), dtype=mi.float16)
A = g.new_input(dims=(256, 16), dtype=mi.float16)
B = g.new_input(dims=(16, 256), dtype=mi.float16)
g.mark_output(g.matmul(g.matmul(X, A), B))
`, nil},
	// LoRA: X·W + s·(X·A)·B. X·A (16 columns) accumulates whole in
	// every block beside X·W; its product with B's column tile runs
	// after the loop. split_k declines (each split would hold a partial
	// X·A).
	{"a low-rank adapter, scaled", `
X = g.new_input(dims=(16, 256), dtype=mi.float16)
W = g.new_input(dims=(256, 512), dtype=mi.float16)
A = g.new_input(dims=(256, 16), dtype=mi.float16)
B = g.new_input(dims=(16, 512), dtype=mi.float16)
E = g.mul_scalar(g.matmul(g.matmul(X, A), B), 2.0)
g.mark_output(g.add(g.matmul(X, W), E))
`, []string{"matmul", "library"}},
	// The same on a weighted norm of 192 rows (the rows tiled on grid y,
	// B read whole along its rows by every row tile), with a bias, the
	// adapter's product written first; a rank of 12.
	{"a low-rank adapter on a normed row, 192 rows, a bias", `
X = g.new_input(dims=(192, 128), dtype=mi.bfloat16)
G = g.new_input(dims=(1, 128), dtype=mi.bfloat16)
A = g.new_input(dims=(128, 12), dtype=mi.bfloat16)
B = g.new_input(dims=(12, 384), dtype=mi.bfloat16)
W = g.new_input(dims=(128, 384), dtype=mi.bfloat16)
C = g.new_input(dims=(1, 384), dtype=mi.bfloat16)
N = g.mul(g.rms_norm(X, normalized_shape=(128,)), G)
E = g.matmul(g.matmul(N, A), B)
g.mark_output(g.add(g.add(E, g.matmul(N, W)), C))
`, []string{"matmul", "library"}},
	// X·A read by an element-wise op too: not narrow, so (X·A)·B is not
	// a low-rank product.
	{"a narrow product read after the loop", `
X = g.new_input(dims=(16, 256), dtype=mi.float16)
W = g.new_input(dims=(256, 512), dtype=mi.float16)
A = g.new_input(dims=(256, 16), dtype=mi.float16)
B = g.new_input(dims=(16, 512), dtype=mi.float16)
D = g.matmul(X, A)
g.mark_output(g.add(g.matmul(X, W), g.matmul(D, B)))
g.mark_output(g.exp(D))
`, nil},
	// B is also the weight: read two ways.
	{"a low-rank product whose right operand is the weight", `
X = g.new_input(dims=(16, 16), dtype=mi.float16)
A = g.new_input(dims=(16, 16), dtype=mi.float16)
B = g.new_input(dims=(16, 512), dtype=mi.float16)
g.mark_output(g.add(g.matmul(X, B), g.matmul(g.matmul(X, A), B)))
`, nil},
	{"the norm is read after the loop", `
X = g.new_input(dims=(16, 256), dtype=mi.float16)
W = g.new_input(dims=(256, 256), dtype=mi.float16)
N = g.rms_norm(X, normalized_shape=(256,))
g.mark_output(g.matmul(g.exp(N), W))
`, nil},
	// An attention block's output projection written head by head: each
	// head's rows times its slice of the weight, summed over the heads.
	{"an output projection summed over the heads", `
O = g.new_input(dims=(32, 4, 32), dtype=mi.float16)
W = g.new_input(dims=(32, 32, 1024), dtype=mi.float16)
g.mark_output(g.reduction(g.matmul(O, W), 0))
`, []string{"head_sum"}},
	// Grouped: groups × heads in a group, summed over both, then scaled
	// and gated (an epilogue on the sum). 3 rows.
	{"an output projection of grouped heads, with an epilogue", `
O = g.new_input(dims=(2, 4, 3, 32), dtype=mi.bfloat16)
W = g.new_input(dims=(2, 4, 32, 96), dtype=mi.bfloat16)
S = g.reduction(g.reduction(g.matmul(O, W), 1), 0)
g.mark_output(g.mul(g.silu(S), g.mul_scalar(S, 0.5)))
`, []string{"head_sum"}},
	// A batch dim of 1 summed after the heads: the trailing sum is of one
	// term and joins the chain.
	{"heads summed, then a batch dim of one", `
O = g.new_input(dims=(1, 16, 4, 32), dtype=mi.float16)
W = g.new_input(dims=(1, 16, 32, 64), dtype=mi.float16)
g.mark_output(g.reduction(g.reduction(g.matmul(O, W), 1), 0))
`, []string{"head_sum"}},
	// The residual is read after the loop over the heads: loaded every
	// iteration, summed and scaled by 1/8 (loadInvariant).
	{"heads summed, then a residual", `
O = g.new_input(dims=(8, 4, 32), dtype=mi.float16)
W = g.new_input(dims=(8, 32, 64), dtype=mi.float16)
X = g.new_input(dims=(1, 4, 64), dtype=mi.float16)
g.mark_output(g.add(X, g.reduction(g.matmul(O, W), 0)))
`, []string{"head_sum"}},
	{"heads summed over one dim of two", `
O = g.new_input(dims=(2, 4, 3, 32), dtype=mi.float16)
W = g.new_input(dims=(2, 4, 32, 96), dtype=mi.float16)
g.mark_output(g.reduction(g.matmul(O, W), 1))
`, nil},
	{"the product per head is an output too", `
O = g.new_input(dims=(8, 4, 32), dtype=mi.float16)
W = g.new_input(dims=(8, 32, 64), dtype=mi.float16)
P = g.matmul(O, W)
g.mark_output(P)
g.mark_output(g.reduction(P, 0))
`, nil},
	{"batched matmuls", `
Q = g.new_input(dims=(2, 16, 64), dtype=mi.float16)
K = g.new_input(dims=(2, 64, 128), dtype=mi.float16)
g.mark_output(g.matmul(Q, K))
`, []string{"matmul", "split_k"}},
	// A layer's q, k and v projections head by head: the normed rows
	// broadcast over the heads by a tensor of ones, each head's slice of
	// the three weights, a scale on q.
	{"q, k and v of a normed activation, batched over heads", `
X = g.new_input(dims=(1, 3, 256), dtype=mi.float16)
ones = g.new_input(dims=(4, 1, 1), dtype=mi.float16)
Wq = g.new_input(dims=(4, 256, 32), dtype=mi.float16)
Wk = g.new_input(dims=(4, 256, 32), dtype=mi.float16)
Wv = g.new_input(dims=(4, 256, 32), dtype=mi.float16)
N = g.mul(g.rms_norm(X, normalized_shape=(256,)), ones)
g.mark_output(g.mul_scalar(g.matmul(N, Wq), 0.125))
g.mark_output(g.matmul(N, Wk))
g.mark_output(g.matmul(N, Wv))
`, []string{"matmul", "split_k"}},
	// A grouped-query layer's projections at 2-D: q 256 wide, k and v
	// 64 (LLaMA-3's 4096 and 1024), each cut into as many column tiles
	// as the grid has blocks; k with a bias of its width (the library
	// rule's kernel divides by the norm and adds it).
	{"q, k and v of a normed row, k and v narrower", `
X = g.new_input(dims=(8, 256), dtype=mi.float16)
G = g.new_input(dims=(1, 256), dtype=mi.float16)
Wq = g.new_input(dims=(256, 256), dtype=mi.float16)
Wk = g.new_input(dims=(256, 64), dtype=mi.float16)
Wv = g.new_input(dims=(256, 64), dtype=mi.float16)
Bk = g.new_input(dims=(1, 64), dtype=mi.float16)
N = g.mul(g.rms_norm(X, normalized_shape=(256,)), G)
g.mark_output(g.matmul(N, Wq))
g.mark_output(g.add(g.matmul(N, Wk), Bk))
g.mark_output(g.matmul(N, Wv))
`, []string{"matmul", "split_k", "library"}},
	// A product 4 columns wide beside one of 256: no grid cuts both
	// into tiles of an mma's 8 columns or more.
	{"a product too narrow to tile beside a wide one", `
X = g.new_input(dims=(8, 256), dtype=mi.float16)
W = g.new_input(dims=(256, 256), dtype=mi.float16)
R = g.new_input(dims=(256, 4), dtype=mi.float16)
g.mark_output(g.matmul(X, W))
g.mark_output(g.matmul(X, R))
`, nil},
	// The same at rank 4, where split_k's blocks take a head's columns
	// whole: 4 columns beside 64 still make no mma tile.
	{"a product too narrow to tile beside a wide one, over groups and heads", `
X = g.new_input(dims=(2, 4, 8, 256), dtype=mi.float16)
W1 = g.new_input(dims=(2, 4, 256, 64), dtype=mi.float16)
W2 = g.new_input(dims=(2, 4, 256, 4), dtype=mi.float16)
g.mark_output(g.matmul(X, W1))
g.mark_output(g.matmul(X, W2))
`, nil},
	{"batched matmuls with a per-head bias", `
X = g.new_input(dims=(4, 8, 64), dtype=mi.bfloat16)
W = g.new_input(dims=(4, 64, 96), dtype=mi.bfloat16)
B = g.new_input(dims=(4, 1, 96), dtype=mi.bfloat16)
g.mark_output(g.add(g.matmul(g.silu(X), W), B))
`, []string{"matmul", "split_k"}},
	// Grouped-query attention as a LLaMA-70B layer writes it: groups ×
	// heads of a group, K and V repeated over a group's heads by a
	// product with a tensor that broadcasts (HF's repeat_kv).
	{"grouped-query attention of rank 4, K and V repeated", `
Q = g.new_input(dims=(2, 4, 3, 64), dtype=mi.float16)
K = g.new_input(dims=(2, 1, 64, 256), dtype=mi.float16)
V = g.new_input(dims=(2, 1, 256, 64), dtype=mi.float16)
R = g.new_input(dims=(1, 4, 1, 1), dtype=mi.float16)
E = g.exp(g.mul_scalar(g.matmul(Q, g.mul(K, R)), 0.125))
g.mark_output(g.matmul(g.div(E, g.reduction(E, 3)), g.mul(V, R)))
`, []string{"attention"}},
	// One K and V for every head (multi-query), Q scaled per head,
	// normalized after ·V.
	{"multi-query attention, Q scaled per head", `
Q = g.new_input(dims=(4, 2, 32), dtype=mi.bfloat16)
K = g.new_input(dims=(1, 32, 128), dtype=mi.bfloat16)
V = g.new_input(dims=(1, 128, 32), dtype=mi.bfloat16)
R = g.new_input(dims=(4, 1, 1), dtype=mi.bfloat16)
S = g.new_input(dims=(4, 1, 1), dtype=mi.bfloat16)
E = g.exp(g.matmul(g.mul(S, Q), g.mul(R, K)))
g.mark_output(g.div(g.matmul(E, g.mul(V, R)), g.reduction(E, 2)))
`, []string{"attention"}},
	// A cache of 1000 keys: no power of two from 32 divides it, so the
	// blocks walk it in tiles of 125 keys.
	{"attention over 1000 keys", `
Q = g.new_input(dims=(2, 3, 64), dtype=mi.float16)
K = g.new_input(dims=(2, 64, 1000), dtype=mi.float16)
V = g.new_input(dims=(2, 1000, 64), dtype=mi.float16)
E = g.exp(g.mul_scalar(g.matmul(Q, K), 0.125))
g.mark_output(g.matmul(g.div(E, g.reduction(E, 2)), V))
`, []string{"attention"}},
	// 777 keys (3 · 7 · 37), repeated over 4 heads: no power of two above 1
	// divides them, so the keys split 3, 7 or 21 ways (and walk tiles of
	// 37 keys, or the whole share).
	{"grouped-query attention over 777 keys", `
Q = g.new_input(dims=(1, 4, 2, 64), dtype=mi.float16)
K = g.new_input(dims=(1, 1, 64, 777), dtype=mi.float16)
V = g.new_input(dims=(1, 1, 777, 64), dtype=mi.float16)
R = g.new_input(dims=(1, 4, 1, 1), dtype=mi.float16)
E = g.exp(g.mul_scalar(g.matmul(Q, g.mul(K, R)), 0.125))
g.mark_output(g.matmul(g.div(E, g.reduction(E, 3)), g.mul(V, R)))
`, []string{"attention"}},
	// Terms added to the scores before exp, read a tile of keys at a time
	// beside them: a mask per head, one mask for every head (it
	// broadcasts over them), ALiBi's slope per head times the positions,
	// and a causal mask of a grouped layer (rank 4, broadcast over groups
	// and heads).
	{"attention with a mask", `
Q = g.new_input(dims=(2, 16, 64), dtype=mi.float16)
K = g.new_input(dims=(2, 64, 512), dtype=mi.float16)
V = g.new_input(dims=(2, 512, 64), dtype=mi.float16)
M = g.new_input(dims=(2, 16, 512), dtype=mi.float16)
E = g.exp(g.add(g.matmul(Q, K), M))
g.mark_output(g.matmul(g.div(E, g.reduction(E, 2)), V))
`, []string{"attention"}},
	{"multi-query attention with one mask for every head", `
Q = g.new_input(dims=(8, 2, 64), dtype=mi.float16)
K = g.new_input(dims=(1, 64, 256), dtype=mi.float16)
V = g.new_input(dims=(1, 256, 64), dtype=mi.float16)
R = g.new_input(dims=(8, 1, 1), dtype=mi.float16)
M = g.new_input(dims=(1, 2, 256), dtype=mi.float16)
E = g.exp(g.add(g.mul_scalar(g.matmul(Q, g.mul(K, R)), 0.125), M))
g.mark_output(g.matmul(g.div(E, g.reduction(E, 2)), g.mul(V, R)))
`, []string{"attention"}},
	{"attention with ALiBi", `
Q = g.new_input(dims=(4, 3, 32), dtype=mi.bfloat16)
K = g.new_input(dims=(4, 32, 192), dtype=mi.bfloat16)
V = g.new_input(dims=(4, 192, 32), dtype=mi.bfloat16)
slopes = g.new_input(dims=(4, 1, 1), dtype=mi.bfloat16)
pos = g.new_input(dims=(1, 3, 192), dtype=mi.bfloat16)
E = g.exp(g.add(g.mul_scalar(g.matmul(Q, K), 0.125), g.mul(slopes, pos)))
g.mark_output(g.div(g.matmul(E, V), g.reduction(E, 2)))
`, []string{"attention"}},
	{"grouped-query attention of rank 4 with a causal mask", `
Q = g.new_input(dims=(2, 4, 3, 64), dtype=mi.float16)
K = g.new_input(dims=(2, 1, 64, 256), dtype=mi.float16)
V = g.new_input(dims=(2, 1, 256, 64), dtype=mi.float16)
R = g.new_input(dims=(1, 4, 1, 1), dtype=mi.float16)
M = g.new_input(dims=(1, 1, 3, 256), dtype=mi.float16)
E = g.exp(g.add(M, g.mul_scalar(g.matmul(Q, g.mul(K, R)), 0.125)))
g.mark_output(g.matmul(g.div(E, g.reduction(E, 3)), g.mul(V, R)))
`, []string{"attention"}},
	// A bias that is Q itself, or that the scores feed: not a term of
	// inputs alone, declined.
	{"attention whose bias is computed from the scores", `
Q = g.new_input(dims=(2, 16, 64), dtype=mi.float16)
K = g.new_input(dims=(2, 64, 512), dtype=mi.float16)
V = g.new_input(dims=(2, 512, 64), dtype=mi.float16)
S = g.matmul(Q, K)
E = g.exp(g.add(S, g.exp(S)))
g.mark_output(g.matmul(g.div(E, g.reduction(E, 2)), V))
`, nil},
	// A factor of the wrong shape (one per key) is not a head's: declined.
	{"attention with K scaled per key", `
Q = g.new_input(dims=(2, 4, 64), dtype=mi.float16)
K = g.new_input(dims=(2, 64, 128), dtype=mi.float16)
V = g.new_input(dims=(2, 128, 64), dtype=mi.float16)
C = g.new_input(dims=(2, 1, 128), dtype=mi.float16)
E = g.exp(g.matmul(Q, g.mul(K, C)))
g.mark_output(g.matmul(g.div(E, g.reduction(E, 2)), V))
`, nil},
	{"batched matmuls of rank 4", `
Q = g.new_input(dims=(2, 2, 16, 64), dtype=mi.float16)
K = g.new_input(dims=(2, 2, 64, 128), dtype=mi.float16)
g.mark_output(g.matmul(Q, K))
`, []string{"matmul", "split_k"}},
	// q of a normed row over groups and heads (a grouped-query layer's,
	// without a bias): split_k's heads on grid x, the norm's rms in the
	// combining kernel.
	{"q of a normed row over groups and heads", `
X = g.new_input(dims=(1, 1, 3, 512), dtype=mi.float16)
ones = g.new_input(dims=(2, 4, 1, 1), dtype=mi.float16)
Wq = g.new_input(dims=(2, 4, 512, 64), dtype=mi.float16)
g.mark_output(g.matmul(g.mul(g.rms_norm(X, normalized_shape=(512,)), ones), Wq))
`, []string{"matmul", "split_k"}},
	// A grouped-query layer's projections, groups × heads of a group: k
	// and v of the normed row broadcast over the groups, q over groups
	// and heads with a bias per head (Qwen2's).
	{"k and v of a normed row, grouped (rank 4)", `
X = g.new_input(dims=(1, 1, 3, 256), dtype=mi.float16)
ones = g.new_input(dims=(2, 1, 1, 1), dtype=mi.float16)
Wk = g.new_input(dims=(2, 1, 256, 32), dtype=mi.float16)
Wv = g.new_input(dims=(2, 1, 256, 32), dtype=mi.float16)
N = g.mul(g.rms_norm(X, normalized_shape=(256,)), ones)
g.mark_output(g.matmul(N, Wk))
g.mark_output(g.matmul(N, Wv))
`, []string{"matmul", "split_k"}},
	{"q of a normed row over groups and heads, with a bias per head", `
X = g.new_input(dims=(1, 1, 2, 128), dtype=mi.bfloat16)
ones = g.new_input(dims=(2, 4, 1, 1), dtype=mi.bfloat16)
Wq = g.new_input(dims=(2, 4, 128, 64), dtype=mi.bfloat16)
B = g.new_input(dims=(2, 4, 1, 64), dtype=mi.bfloat16)
g.mark_output(g.add(g.matmul(g.mul(g.rms_norm(X, normalized_shape=(128,)), ones), Wq), B))
`, []string{"matmul", "split_k"}},
}

// TestSeedsCompute checks that every rule whose premise holds gives seeds,
// that each computes the program (finite-field verification, and float64
// within rounding), and that the rules decline where their premises fail.
func TestSeedsCompute(t *testing.T) {
	for _, tc := range seedCases {
		t.Run(tc.name, func(t *testing.T) {
			program := load(t, tc.body)
			seeds := seed.Build(program, seed.Options{})
			var rules []string
			for _, s := range seeds {
				if !slices.Contains(rules, s.Rule) {
					rules = append(rules, s.Rule)
				}
			}
			if !slices.Equal(rules, tc.rules) {
				t.Fatalf("rules %v gave seeds, want %v", rules, tc.rules)
			}
			// Every tiling of a rule is the same computation: check the
			// first and the last of each.
			for _, s := range checked(seeds) {
				// One graph-defined kernel, and nothing else; split
				// attention has a second that combines the splits, and
				// may run its prologues (norms) before, as the program's
				// ops.
				kernels, want := len(s.Graph.Ops)-len(s.Graph.Inputs()), 1
				if s.Rule == "split_k" || (s.Rule == "attention" || s.Rule == "head_sum") && firstBlock(s.Graph).Grid[1] > 1 {
					want = 2
				}
				pre := 0
				switch s.Rule {
				case "attention":
					pre = predefinedPrologues(t, program, s.Graph)
				case "library":
					pre = libraryMatmuls(t, program, s.Graph)
				}
				if n := customized(s.Graph); n != want || kernels != want+pre {
					t.Errorf("%s seed: %d kernels, %d of them graph-defined; want %d graph-defined and %d prologues", s.Rule, kernels, n, want, pre)
				}
				r, err := ffverify.Equivalent(program, s.Graph, ffverify.Options{Seed: 1})
				if err != nil {
					t.Fatalf("%s seed: %v", s.Rule, err)
				}
				if !r.Equivalent || !slices.Equal(r.Mapping, identity(len(program.Outputs))) {
					t.Errorf("%s seed (grid %v, forloop %d) is not the program: %+v", s.Rule,
						firstBlock(s.Graph).Grid, firstBlock(s.Graph).ForloopRange, r)
				}
				if err := sameInFloat64(program, s.Graph); err != nil {
					t.Errorf("%s seed: %v", s.Rule, err)
				}
			}
		})
	}
}

// Covers says whether Build gives seeds, for every case, and whether one
// of them is placed: none where placing refuses them all.
func TestCovers(t *testing.T) {
	refuse := func(*kernel.Graph) bool { return false }
	for _, tc := range seedCases {
		program := load(t, tc.body)
		premise, fits := seed.Covers(program, 0, nil)
		if want := len(tc.rules) > 0; premise != want || fits != want {
			t.Errorf("%s: Covers %v, %v; want %v for both", tc.name, premise, fits, want)
		}
		if premise, fits := seed.Covers(program, 0, refuse); premise != (len(tc.rules) > 0) || fits {
			t.Errorf("%s: Covers refusing every seed %v, %v; want %v, false", tc.name, premise, fits, len(tc.rules) > 0)
		}
	}
}

// Grouped-query attention's seeds read K and V where they lie: every op of
// each is an input or a graph-defined kernel (no kernel stores the
// repeated K or V), and the groups' four heads run on grid z, a block
// each, or in one block (grid z of 1): both forms are built.
func TestGroupedAttentionReadsTheCacheWhereItLies(t *testing.T) {
	body := caseBody(t, "grouped-query attention of rank 4, K and V repeated")
	seeds := seed.Build(load(t, body), seed.Options{})
	if len(seeds) == 0 {
		t.Fatal("no seeds")
	}
	zs := map[int]bool{}
	for _, s := range seeds {
		if n := len(s.Graph.Ops) - len(s.Graph.Inputs()); n != customized(s.Graph) {
			t.Errorf("%s seed on grid %v: %d ops past the inputs, %d of them graph-defined", s.Rule, firstBlock(s.Graph).Grid, n, customized(s.Graph))
		}
		g := firstBlock(s.Graph).Grid
		if g[0] != 2 || g[2] != 4 && g[2] != 1 {
			t.Errorf("%s seed on grid %v, want the 2 groups on x and their 4 heads on z or in each block", s.Rule, g)
		}
		zs[g[2]] = true
	}
	if !zs[1] || !zs[4] {
		t.Errorf("seeds with grid z %v, want 4 and 1", zs)
	}
}

// Multi-query attention of rank 3 (K and V of one head, repeated over the
// heads by a product) is tiled a block a head and also with every head in
// one block, which reads each key once (as rank 4 takes a group's heads);
// those tilings compute the program too. Attention whose K has a head of
// its own per Q head gets no such tiling.
func TestMultiQueryHeadsInOneBlock(t *testing.T) {
	for _, name := range []string{"multi-query attention, Q scaled per head", "multi-query attention with one mask for every head"} {
		program := load(t, caseBody(t, name))
		xs := map[int]int{}
		for _, s := range seed.Build(program, seed.Options{}) {
			x := firstBlock(s.Graph).Grid[0]
			if xs[x]++; x != 1 || xs[x] > 1 {
				continue
			}
			r, err := ffverify.Equivalent(program, s.Graph, ffverify.Options{Seed: 1})
			if err != nil || !r.Equivalent {
				t.Errorf("%s: the seed with every head in one block (grid %v) is not the program: %+v, %v", name, firstBlock(s.Graph).Grid, r, err)
			}
			if err := sameInFloat64(program, s.Graph); err != nil {
				t.Errorf("%s, every head in one block: %v", name, err)
			}
		}
		if heads := program.Tensors[0].Shape.Dim(0); len(xs) != 2 || xs[1] == 0 || xs[heads] == 0 {
			t.Errorf("%s: seeds on grid x %v, want %d (a block a head) and 1", name, xs, heads)
		}
	}
	for _, s := range seed.Build(load(t, caseBody(t, "decode attention, scaled before exp, normalized after ·V")), seed.Options{}) {
		if x := firstBlock(s.Graph).Grid[0]; x == 1 {
			t.Errorf("attention with a K per head: a seed takes every head in one block (grid %v)", firstBlock(s.Graph).Grid)
		}
	}
}

// A cache whose length no power of two above 1 divides is still split
// among blocks: 777 keys 3, 7 and 21 ways.
func TestAttentionSplitsAnOddCache(t *testing.T) {
	body := caseBody(t, "grouped-query attention over 777 keys")
	splits := map[int]bool{}
	for _, s := range seed.Build(load(t, body), seed.Options{}) {
		splits[firstBlock(s.Graph).Grid[1]] = true
	}
	for _, want := range []int{1, 3, 7, 21} {
		if !splits[want] {
			t.Errorf("splits %v, want %d among them", splits, want)
		}
	}
}

// MayCover holds wherever a rule gives seeds (it is a condition of all
// their premises), and not for three matmuls on different left operands.
func TestMayCover(t *testing.T) {
	ops := func(g *kernel.Graph) []int {
		var ops []int
		for i, op := range g.Ops {
			if op.Kind != ugraph.OpInput {
				ops = append(ops, i)
			}
		}
		return ops
	}
	for _, tc := range seedCases {
		if g := load(t, tc.body); len(tc.rules) > 0 && !seed.MayCover(g, ops(g)) {
			t.Errorf("%s: MayCover false, but rules %v give seeds", tc.name, tc.rules)
		}
	}
	chain := load(t, `
X = g.new_input(dims=(4, 64), dtype=mi.float16)
W = g.new_input(dims=(64, 64), dtype=mi.float16)
g.mark_output(g.matmul(g.matmul(g.matmul(X, W), W), W))
`)
	if seed.MayCover(chain, ops(chain)) {
		t.Error("MayCover holds for three matmuls in a chain")
	}
	if !seed.MayCover(chain, ops(chain)[:2]) {
		t.Error("MayCover fails for two matmuls in a chain (attention's count)")
	}
}

// TestSeedTilings checks the tilings a rule offers at a LLaMA-7B shape:
// the rmsnorm-matmul seeds include the expert's kernel of
// examples/rmsnorm_matmul_mugraph.py (96 blocks of 64 columns, 64
// iterations), and the rows rule gives one block per row among others.
func TestSeedTilings(t *testing.T) {
	program := load(t, `
X = g.new_input(dims=(16, 4096), dtype=mi.float16)
W = g.new_input(dims=(4096, 6144), dtype=mi.float16)
g.mark_output(g.matmul(g.rms_norm(X, normalized_shape=(4096,)), W))
`)
	var tilings []string
	for _, s := range seed.Build(program, seed.Options{}) {
		b := firstBlock(s.Graph)
		tilings = append(tilings, fmt.Sprintf("%s %v %d", s.Rule, b.Grid, b.ForloopRange))
	}
	if want := "matmul (96, 1, 1) 64"; !slices.Contains(tilings, want) {
		t.Errorf("tilings %v, want %q among them", tilings, want)
	}
	rows := load(t, `
X = g.new_input(dims=(16, 4096), dtype=mi.float16)
g.mark_output(g.rms_norm(X, normalized_shape=(4096,)))
`)
	var grids []int
	for _, s := range seed.Build(rows, seed.Options{}) {
		grids = append(grids, firstBlock(s.Graph).Grid[0])
	}
	if want := []int{16, 8, 4, 2, 1}; !slices.Equal(grids, want) {
		t.Errorf("rows seeds on grids %v, want %v", grids, want)
	}
}

// TestColumnGridsOfSeveralWidths checks the matmul rule's column grids
// for matmuls of different widths: the widest's tiles of 32 to 256 where
// every width divides into as many, each tile 8 columns or more, and the
// powers of two that divide every width with the widest's tiles in that
// range (Qwen2's 3584 and 512, scaled down: 224 and 32, whose 32-column
// tiles of 224 are 7 blocks, which do not divide 32).
func TestColumnGridsOfSeveralWidths(t *testing.T) {
	cases := []struct {
		wide, narrow int
		want         []int // grid x of the matmul rule's seeds, most first, each once
	}{
		{256, 64, []int{8, 4, 2, 1}}, // 32-256 columns of 256; 8 to 64 of 64
		{4096, 1024, []int{128, 64, 32, 16}},
		{224, 32, []int{4, 2, 1}}, // 56, 112 and 224 columns; 8, 16 and 32
		{256, 16, []int{2, 1}},    // 128 or 256 columns beside 8 or 16
	}
	for _, c := range cases {
		program := load(t, fmt.Sprintf(`
X = g.new_input(dims=(8, 256), dtype=mi.float16)
Wq = g.new_input(dims=(256, %d), dtype=mi.float16)
Wk = g.new_input(dims=(256, %d), dtype=mi.float16)
g.mark_output(g.matmul(X, Wq))
g.mark_output(g.matmul(X, Wk))
`, c.wide, c.narrow))
		var grids []int
		for _, s := range seed.Build(program, seed.Options{}) {
			if gx := firstBlock(s.Graph).Grid[0]; s.Rule == "matmul" && !slices.Contains(grids, gx) {
				grids = append(grids, gx)
			}
		}
		if !slices.Equal(grids, c.want) {
			t.Errorf("%d and %d columns: matmul seeds on grids x %v, want %v", c.wide, c.narrow, grids, c.want)
		}
	}
}

// TestLibraryTilings checks the library rule's grids: its column tiles
// (x) are the whole row or 256 to 2048 columns, powers of two where one
// divides the columns, else their largest divisor in that range (3000:
// 1500; a vocabulary of 151936 = 2^7 * 1187: 1187, whose whole rows fit
// in no shared memory); its row tiles (y) 1 to 16 rows that divide them.
func TestLibraryTilings(t *testing.T) {
	cases := []struct {
		m, n int
		want []string // grids of the library seeds, in order
	}{
		{197, 3072, []string{"(12, 197, 1)", "(6, 197, 1)", "(3, 197, 1)", "(1, 197, 1)"}},
		{13, 3000, []string{"(2, 13, 1)", "(1, 13, 1)", "(2, 1, 1)", "(1, 1, 1)"}},
		{2, 151936, []string{"(128, 2, 1)", "(1, 2, 1)", "(128, 1, 1)", "(1, 1, 1)"}},
		{4, 1000, []string{"(1, 4, 1)", "(1, 2, 1)", "(1, 1, 1)"}},
	}
	for _, tc := range cases {
		program := load(t, fmt.Sprintf(`
X = g.new_input(dims=(%d, 64), dtype=mi.float16)
W = g.new_input(dims=(64, %d), dtype=mi.float16)
g.mark_output(g.silu(g.matmul(g.rms_norm(X, normalized_shape=(64,)), W)))
`, tc.m, tc.n))
		var grids []string
		for _, s := range seed.Build(program, seed.Options{Threads: []block.Dim3{{128, 1, 1}}}) {
			if s.Rule == "library" {
				grids = append(grids, fmt.Sprint(firstKernel(s.Graph).Grid))
			}
		}
		if !slices.Equal(grids, tc.want) {
			t.Errorf("%d x 64 x %d: library seeds on grids %v, want %v", tc.m, tc.n, grids, tc.want)
		}
	}
}

// TestHeadSumSplits checks how the head_sum rule splits the heads among
// the blocks: at LLaMA-7B's output projection (32 heads, 4096 columns) 64
// column tiles take splits of 2, 4 and 8 (128 to 512 blocks for 132 SMs)
// besides none; with 8 heads and 4 column tiles, no split near the 64
// that would fill the SMs divides the heads, so the largest that does, 8,
// is taken; 3 heads are not split. Every tiling walks all the heads.
func TestHeadSumSplits(t *testing.T) {
	cases := []struct {
		heads, n int
		want     []string // grid and for-loop range of tilings among those built
		none     string   // one not built
	}{
		{32, 4096, []string{"(64, 1, 1) 32", "(64, 2, 1) 16", "(64, 4, 1) 8", "(64, 8, 1) 4", "(128, 1, 1) 32"}, "(64, 16, 1) 2"},
		{8, 1024, []string{"(4, 1, 1) 8", "(4, 8, 1) 1", "(32, 4, 1) 2"}, "(4, 2, 1) 4"},
		{3, 256, []string{"(8, 1, 1) 3", "(1, 1, 1) 3"}, "(8, 3, 1) 1"},
	}
	for _, tc := range cases {
		program := load(t, fmt.Sprintf(`
O = g.new_input(dims=(%d, 4, 128), dtype=mi.float16)
W = g.new_input(dims=(%d, 128, %d), dtype=mi.float16)
g.mark_output(g.reduction(g.matmul(O, W), 0))
`, tc.heads, tc.heads, tc.n))
		var tilings []string
		for _, s := range seed.Build(program, seed.Options{}) {
			b := firstBlock(s.Graph)
			tilings = append(tilings, fmt.Sprintf("%v %d", b.Grid, b.ForloopRange))
			if s.Rule != "head_sum" || b.Grid[1]*b.ForloopRange != tc.heads {
				t.Errorf("%d heads: %s seed on grid %v walks %d iterations", tc.heads, s.Rule, b.Grid, b.ForloopRange)
			}
		}
		for _, w := range tc.want {
			if !slices.Contains(tilings, w) {
				t.Errorf("%d heads, %d columns: tilings %v, want %q among them", tc.heads, tc.n, tilings, w)
			}
		}
		if slices.Contains(tilings, tc.none) {
			t.Errorf("%d heads, %d columns: tilings %v hold %q", tc.heads, tc.n, tilings, tc.none)
		}
	}
}

// TestRulesNamed keeps the rule names, which documents carry (meta.seed),
// stable.
func TestRulesNamed(t *testing.T) {
	if got, want := seed.Rules(), []string{"rows", "matmul", "split_k", "attention", "head_sum", "library"}; !slices.Equal(got, want) {
		t.Errorf("Rules() = %v, want %v", got, want)
	}
}

// libraryMatmuls counts a library seed's pre-defined ops, failing t
// unless they are the program's prologue but its rms_norm, then its
// matmuls but the low-rank products (whose left operand is a product:
// the kernel computes them), and the graph-defined kernel comes last.
func libraryMatmuls(t *testing.T, program, seed *kernel.Graph) int {
	t.Helper()
	var want, got []ugraph.OpKind
	matmuls := 0
	products := map[kernel.TensorID]bool{}
	for _, op := range program.Ops {
		switch op.Kind {
		case ugraph.OpMatmul:
			if !products[op.In[0]] {
				matmuls++
			}
			products[op.Out[0]] = true
		case ugraph.OpInput, ugraph.OpRMSNorm:
		default:
			if matmuls == 0 {
				want = append(want, op.Kind) // before the products: the prologue
			}
		}
	}
	for range matmuls {
		want = append(want, ugraph.OpMatmul)
	}
	for i, op := range seed.Ops {
		switch op.Kind {
		case ugraph.OpInput:
		case ugraph.OpCustomized:
			if i != len(seed.Ops)-1 {
				t.Errorf("library seed: its kernel is op %d of %d, not the last", i, len(seed.Ops))
			}
		default:
			got = append(got, op.Kind)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("library seed runs %v before its kernel, want %v", got, want)
	}
	return len(got)
}

// checked is the first and the last seed of each rule.
// predefinedPrologues counts seed's pre-defined ops, failing t unless
// they are the program's ops on Q and V before the attention, each once:
// all of them or none.
func predefinedPrologues(t *testing.T, program, seed *kernel.Graph) int {
	t.Helper()
	// The prologues: the ops computed from the inputs alone, before a
	// matmul.
	var want, got []ugraph.OpKind
	before := map[kernel.TensorID]bool{}
	for _, op := range program.Ops {
		switch {
		case op.Kind == ugraph.OpInput:
			before[op.Out[0]] = true
		case op.Kind != ugraph.OpMatmul && !slices.ContainsFunc(op.In, func(t kernel.TensorID) bool { return !before[t] }):
			before[op.Out[0]] = true
			want = append(want, op.Kind)
		}
	}
	for _, op := range seed.Ops {
		if op.Kind != ugraph.OpInput && op.Kind != ugraph.OpCustomized {
			got = append(got, op.Kind)
		}
	}
	if len(got) > 0 && !slices.Equal(got, want) {
		t.Errorf("attention seed runs %v before its kernels, want none or the prologues %v", got, want)
	}
	return len(got)
}

// TestAttentionForms checks that the attention rule writes each tiling in
// its four forms (the row sums or f(Q·K) accumulated, the prologues on
// the tiles or before), that each is the program, and that at qknorm_gqa's
// shape the form the search could not reach (prologues apart, sums late)
// is the one the cost model ranks first.
func TestAttentionForms(t *testing.T) {
	program := load(t, `
Q = g.new_input(dims=(2, 256, 64), dtype=mi.float16)
K = g.new_input(dims=(2, 64, 4096), dtype=mi.float16)
V = g.new_input(dims=(2, 4096, 64), dtype=mi.float16)
E = g.exp(g.matmul(g.rms_norm(Q, normalized_shape=(64,)), K))
g.mark_output(g.matmul(g.div(E, g.reduction(E, 2)), g.rms_norm(V, normalized_shape=(64,))))
`)
	first := map[attentionForm]*kernel.Graph{}
	var best *kernel.Graph
	var bestUs float64
	for _, s := range seed.Build(program, seed.Options{}) {
		if f := formOf(s.Graph); first[f] == nil {
			first[f] = s.Graph
		}
		e, err := cost.EstimateGraph(s.Graph, target.MustLookup("sm_90"))
		if err != nil {
			t.Fatal(err)
		}
		if best == nil || e.Micros < bestUs {
			best, bestUs = s.Graph, e.Micros
		}
	}
	for _, f := range []attentionForm{{false, false}, {true, false}, {false, true}, {true, true}} {
		g := first[f]
		if g == nil {
			t.Errorf("no seed of form %+v", f)
			continue
		}
		if r, err := ffverify.Equivalent(program, g, ffverify.Options{Seed: 1}); err != nil || !r.Equivalent {
			t.Errorf("form %+v is not the program: %+v, %v", f, r, err)
		}
	}
	if f := formOf(best); f != (attentionForm{late: true, apart: true}) {
		t.Errorf("the best-ranked seed (%.1f µs) is of form %+v, not the one with late sums and prologues apart", bestUs, f)
	}
}

// attentionForm is how an attention seed is written (seed.attentionForm).
type attentionForm struct{ late, apart bool }

// formOf tells an attention seed's form from its graph: late sums write
// the split's whole tiles of f(Q·K) where row sums write one value per
// split, and prologues apart are pre-defined kernels.
func formOf(g *kernel.Graph) attentionForm {
	b := firstKernel(g)
	f := attentionForm{apart: len(g.Ops) > len(g.Inputs())+customized(g)}
	if outs := b.OutputOps(); len(outs) == 2 {
		f.late = outs[1].Output.DShape.Dim(2) > b.Grid[1]
	}
	return f
}

func firstKernel(g *kernel.Graph) *block.Graph {
	for _, op := range g.Ops {
		if op.Kind == ugraph.OpCustomized {
			return op.Block
		}
	}
	return nil
}

func checked(seeds []seed.Seed) []seed.Seed {
	var out []seed.Seed
	for i, s := range seeds {
		if i == 0 || seeds[i-1].Rule != s.Rule || i == len(seeds)-1 || seeds[i+1].Rule != s.Rule {
			out = append(out, s)
		}
	}
	return out
}

func customized(g *kernel.Graph) int {
	n := 0
	for _, op := range g.Ops {
		if op.Kind == ugraph.OpCustomized {
			n++
		}
	}
	return n
}

func firstBlock(g *kernel.Graph) *blockInfo {
	if b := firstKernel(g); b != nil {
		return &blockInfo{Grid: b.Grid, ForloopRange: b.ForloopRange}
	}
	return &blockInfo{}
}

type blockInfo struct {
	Grid         block.Dim3
	ForloopRange int
}

func identity(n int) []int {
	m := make([]int, n)
	for i := range m {
		m[i] = i
	}
	return m
}

// sameInFloat64 runs both graphs on the same random inputs in float64 and
// compares their outputs.
func sameInFloat64(a, b *kernel.Graph) error {
	ins := interp.RandomInputs(a, 7)
	want, err := interp.Run(a, ins)
	if err != nil {
		return err
	}
	got, err := interp.Run(b, ins)
	if err != nil {
		return err
	}
	d, err := interp.CompareAll(want, got)
	if err != nil {
		return err
	}
	if d.MaxRelErr > 1e-9 {
		return fmt.Errorf("differs from the program in float64: %v", d)
	}
	return nil
}

// Seeds write their maps as the search's enumeration does, so that a seed
// and the enumeration's twin are one graph (block.Canonical) and one
// kernel: no grid axis of one block mapped to a dim, no dim walked by a
// loop of one iteration.
func TestSeedsWriteMapsAsTheEnumeration(t *testing.T) {
	oneBlockAxes, oneIteration := 0, 0
	for _, tc := range seedCases {
		for _, s := range seed.Build(load(t, tc.body), seed.Options{}) {
			for _, op := range s.Graph.Ops {
				b := op.Block
				if b == nil {
					continue
				}
				if b.ForloopRange == 1 {
					oneIteration++
				}
				for _, bop := range b.Ops {
					var m block.Map
					switch bop.Kind {
					case ugraph.OpInput:
						m = bop.Input.IMap
					case ugraph.OpOutput:
						m = bop.Output.OMap
					default:
						continue
					}
					for axis, n := range b.Grid {
						if n == 1 {
							oneBlockAxes++
							if m[axis] >= 0 {
								t.Errorf("%s: a %s seed (grid %v) maps grid axis %d of one block to dim %d in its %v",
									tc.name, s.Rule, b.Grid, axis, m[axis], bop.Kind)
							}
						}
					}
					if bop.Kind == ugraph.OpInput && b.ForloopRange == 1 && bop.Input.FMap >= 0 {
						t.Errorf("%s: a %s seed's loop of one iteration walks dim %d", tc.name, s.Rule, bop.Input.FMap)
					}
				}
			}
		}
	}
	if oneBlockAxes == 0 || oneIteration == 0 {
		t.Errorf("the cases build %d inputs beside a grid axis of one block and %d kernels of one iteration: the test tests nothing",
			oneBlockAxes, oneIteration)
	}
}
