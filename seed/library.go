package seed

import (
	"slices"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// libraryRule leaves the matmuls to the library (pre-defined ops, which
// codegen runs through cuBLASLt) and fuses what follows them into one
// graph-defined kernel after them: torch.compile's form for the
// epilogue of products large enough to be compute-bound (a prefill, a
// batch of sequences, an encoder's rows that the matmul rule cannot
// tile), where the other rules' kernels lose to the library's or place
// none, and the program as written launches a kernel per op.
//
// A norm in the prologue moves behind the products by the matmul rule's
// identity (rms_norm(X)·W = (X·W) / rms(X), with X in the norm's place in
// the row-linear ops between it and the products, a weight γ), where
// torch.compile would run it as a kernel of its own: the kernel computes
// each row's rms from X's whole row, divides the products by it and runs
// the epilogue. The products X·W are stored in the program's dtype before
// that division, as split_k's partial products are: in fp16 they
// overflow only past 65504, which |x·w| ≤ rms(x)·√k·‖w‖ keeps them from
// unless rms(x) is hundreds (LLaMA-7B's columns: ‖w‖ ≈ 1.3, k = 4096).
// The prologue's other ops run before the products as pre-defined ops.
//
// The grid's x axis cuts the columns (blocks of one row tile recompute
// its rms), its y axis the rows; the for-loop has one iteration. Its
// premise is the matmul rule's, at rank 2, with a kernel that replaces at
// least two of the program's launches (replacedLaunches).
func libraryRule(p *program, opts Options) []*kernel.Graph {
	plan, ok := planMatmul(p)
	if !ok || plan.rank != 2 || replacedLaunches(p, plan) < 2 {
		return nil
	}
	var x kernel.TensorID = -1 // the norm's operand
	var pre []int
	for _, i := range plan.prologue {
		if i == plan.norm {
			x = p.g.Ops[i].In[0]
		} else {
			pre = append(pre, i)
		}
	}
	pre = append(pre, plan.matmuls...)
	pre = append(pre, plan.narrow...)
	var graphs []*kernel.Graph
	for _, tm := range tileSizes(plan.m, 1, 16) {
		for _, tn := range libraryColumns(plan.n) {
			grid := block.Dim3{plan.n / tn, plan.m / tm, 1}
			if !plan.columnBlocks(grid[0]) || grid[0] > block.MaxGridAxis || grid[1] > block.MaxGridAxis {
				continue
			}
			for _, threads := range opts.Threads {
				if g, ok := libraryKernel(p, plan, pre, x, grid, threads, opts.ReductionDimx); ok {
					graphs = append(graphs, g)
				}
			}
		}
	}
	return graphs
}

// replacedLaunches counts the program's launches that the library rule's
// kernel replaces: the norm's and each epilogue op's, but for a residual
// add that cuBLASLt performs in the product's call as the program is
// written (kernel.Graph.ProductAdd). The kernel is one launch itself: it
// gains only where it replaces two or more (the norm and an add of X
// after the product, or an add folded and an activation after it, are
// one).
func replacedLaunches(p *program, plan *matmulPlan) int {
	n := len(plan.epilogue)
	if plan.norm >= 0 {
		n++
	}
	for _, i := range plan.matmuls {
		if add, _, ok := p.g.ProductAdd(nil, i); ok && slices.Contains(plan.epilogue, add) {
			n--
		}
	}
	return n
}

// libraryColumns are the library rule's column tiles for n columns: all
// of them (a row's rms computed once), or tiles of 256 to 2048 (more
// blocks for a few rows; each recomputes the rms of its rows): powers of
// two where they divide n, or else n's largest divisor in that range (a
// vocabulary of 151936 = 2⁷·1187: 1187), since whole rows of a
// vocabulary's columns fit in no block's shared memory.
func libraryColumns(n int) []int {
	ts := tileSizes(n, 256, 2048) // ends with n where n <= 2048
	if len(ts) == 0 {
		if t := largestDivisor(n, 256, 2048); t > 0 {
			ts = []int{t}
		}
	}
	if len(ts) == 0 || ts[len(ts)-1] != n {
		ts = append(ts, n)
	}
	return ts
}

// libraryKernel builds the library rule's seed on one grid: the ops of pre
// (the prologue but its norm, then the matmuls) as pre-defined ops, with
// the norm's operand x, when there is one, in its result's place; then
// the kernel that divides the products by x's rms and runs the epilogue.
func libraryKernel(p *program, plan *matmulPlan, pre []int, x kernel.TensorID, grid, threads block.Dim3, reductionDimx int) (*kernel.Graph, bool) {
	k, ok := newKernelBuilder(p, grid, threads, 1, reductionDimx)
	if !ok {
		return nil, false
	}
	k.pre = pre
	var rms block.TensorID
	if x >= 0 {
		k.alias = map[kernel.TensorID]kernel.TensorID{p.g.Ops[plan.norm].Out[0]: x}
		row, ok := k.load(x, axisMap(p.shape(x), grid, -1, 0), -1)
		if ok {
			rms, ok = k.add(ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumRMS}, row)
		}
		if !ok {
			return nil, false
		}
	}
	axes := func(s ugraph.Shape) block.Map { return plan.axes(s, grid, 1, 0) }
	for _, i := range plan.matmuls {
		c := p.g.Ops[i].Out[0]
		tile, ok := k.loadInvariant(c, axes(p.shape(c)))
		if ok && x >= 0 {
			tile, ok = k.add(ugraph.OpDiv, ugraph.Attr{}, tile, rms)
		}
		if !ok {
			return nil, false
		}
		k.tiles[c] = tile
	}
	for _, i := range plan.narrow {
		// X·A whole along its columns, for the low-rank products.
		c := p.g.Ops[i].Out[0]
		tile, ok := k.loadInvariant(c, axisMap(p.shape(c), grid, -1, 0))
		if ok && x >= 0 {
			tile, ok = k.add(ugraph.OpDiv, ugraph.Attr{}, tile, rms)
		}
		if !ok {
			return nil, false
		}
		k.tiles[c] = tile
	}
	if !k.finishEpilogue(plan, axes) {
		return nil, false
	}
	return k.graph()
}
