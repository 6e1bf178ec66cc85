package seed

import (
	"slices"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// splitRule is the matmul rule's computation with the reduced dim split
// among the blocks as well, for outputs with too few column tiles to
// occupy the GPU (a matmul of a few rows): the grid's x axis cuts the
// output columns, its y axis the reduced dim into splits, and each block
// walks its split with the for-loop. Its partial products go out stacked
// along the rows (splits·m × n), and a second kernel, whose for-loop walks
// the splits of one column tile, sums them and runs the epilogue.
//
// A norm in the prologue needs the whole row: the first kernel computes
// with the norm's operand in its place (rms_norm(X)·W = (X·W) / rms(X)),
// and the second accumulates the operand's rms over the splits, from
// tiles of a split's columns (m × k/splits: a tiling that does not fit
// shared memory is dropped by the search, as any), and divides.
//
// Batched matmuls (a grouped-query layer's projections) keep their batch
// on grid z in both kernels; at rank 4 the heads of a group take grid x,
// each block computing all the columns (at most 256).
//
// The splits are powers of two that bring the blocks to the target's SMs
// (Options.SMs) and to twice that; the rule declines when the columns
// (and the batch) alone fill them. Its premise is the matmul rule's, with
// m at most 128 and no narrow matmul (each split would hold a partial
// X·A that every column tile computes alike). The combining kernel reads the epilogue's inputs (a bias,
// a residual: loadInvariant).
func splitRule(p *program, opts Options) []*kernel.Graph {
	plan, ok := planMatmul(p)
	if !ok || plan.m > 128 || plan.batch > block.MaxGridAxis || plan.heads > block.MaxGridAxis || len(plan.narrow) > 0 {
		return nil
	}
	grids := plan.columnGrids(32, 256)
	if plan.heads > 1 {
		if plan.n > 256 || !plan.columnBlocks(1) {
			return nil
		}
		plan.headsOnX, grids = true, []int{1}
	}
	var graphs []*kernel.Graph
	for _, gx := range grids {
		cols := gx * plan.heads // grid x: column tiles, or heads
		if cols*plan.batch >= opts.SMs || cols > block.MaxGridAxis {
			continue
		}
		split := 2
		for cols*plan.batch*split < opts.SMs {
			split *= 2
		}
		for _, s := range []int{split, 2 * split} {
			if plan.k%s != 0 || s > block.MaxGridAxis {
				continue
			}
			for _, tk := range tileSizes(plan.k/s, 32, 128) {
				for _, threads := range opts.Threads {
					for _, per := range combinedPer(s) {
						if g, ok := splitKernels(p, plan, block.Dim3{cols, s, plan.batch}, plan.k/s/tk, threads, opts.ReductionDimx, per); ok {
							graphs = append(graphs, g)
						}
					}
				}
			}
		}
	}
	return graphs
}

// combinedPer is how many of s splits the combining kernel may sum an
// iteration: one (its for-loop walks the splits), all of them (no loop),
// or a half or a quarter of them; the model ranks the forms.
func combinedPer(s int) []int {
	per := []int{1}
	for _, f := range []int{1, 2, 4} {
		if s%f == 0 && s/f > 1 && !slices.Contains(per, s/f) {
			per = append(per, s/f)
		}
	}
	return per
}

// splitKernels builds the split rule's two kernels on one grid (columns
// tiles × splits) and for-loop range, the second summing per splits an
// iteration.
func splitKernels(p *program, plan *matmulPlan, grid block.Dim3, forloopRange int, threads block.Dim3, reductionDimx, per int) (*kernel.Graph, bool) {
	k, ok := newKernelBuilder(p, grid, threads, forloopRange, reductionDimx)
	if !ok {
		return nil, false
	}
	g := p.g
	// Column tiles (or heads) side by side, splits stacked along the rows,
	// the batch in its dim.
	stacked := block.Map{plan.xDim(), plan.dim(0), -1}
	if grid[2] > 1 {
		stacked[2] = 0
	}
	// The prologue in tiles of the block's split (grid y along k).
	normIn, ok := k.placePrologue(plan, 1)
	if !ok {
		return nil, false
	}
	for _, i := range plan.matmuls {
		w := g.Ops[i].In[1]
		if !k.loadWalked(w, plan.axes(p.shape(w), grid, 1, 0), plan.dim(0)) || !k.compute(i) {
			return nil, false
		}
		acc, ok := k.add(ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumNone}, k.tiles[g.Ops[i].Out[0]])
		if !ok || addOutput(k.b, acc, stacked) != nil {
			return nil, false
		}
	}
	return k.combinedSplits(plan, threads, normIn, per)
}

// combinedSplits adds the split rule's second kernel after k's: a block
// per column tile, whose for-loop walks the splits, summing each matmul's
// partial products, and the norm's operand normIn (when >= 0) in tiles of
// a split's columns, accumulating its rms; then dividing by the rms and
// running the epilogue. (The first kernel cannot hand on sums of squares:
// stored in the program's dtype, fp16 overflows at |x| above 256. Its
// partial products are X·W before the division by the rms, also stored in
// the program's dtype: they overflow fp16 only past 65504, where the
// one-kernel form, which divides before it stores, would not.)
func (k *kernelBuilder) combinedSplits(plan *matmulPlan, threads block.Dim3, normIn kernel.TensorID, per int) (*kernel.Graph, bool) {
	pg := k.p.g
	c, ok := k.combiner(threads, plan.xDim(), plan.dim(0), 0, per, plan.m)
	if !ok {
		return nil, false
	}
	var rms block.TensorID = block.NoTensor
	if normIn >= 0 {
		// The prologue's ops that the norm's operand depends on, on its
		// inputs' tiles of the iteration's split.
		for _, i := range plan.prologue {
			if i == plan.norm {
				break
			}
			if !dependsOn(k.p, normIn, pg.Ops[i].Out[0]) {
				continue
			}
			for _, t := range pg.Ops[i].In {
				if k.p.isInput(t) && !c.loadWalked(t, plan.axes(k.p.shape(t), c.b.Grid, -1, -1), plan.dim(1)) {
					return nil, false
				}
			}
			if !c.compute(i) {
				return nil, false
			}
		}
		if k.p.isInput(normIn) && !c.loadWalked(normIn, plan.axes(k.p.shape(normIn), c.b.Grid, -1, -1), plan.dim(1)) {
			return nil, false
		}
		if rms, ok = c.add(ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumRMS}, c.tiles[normIn]); !ok {
			return nil, false
		}
	}
	for j, i := range plan.matmuls {
		x := c.sums[j]
		if normIn >= 0 {
			var ok bool
			if x, ok = c.add(ugraph.OpDiv, ugraph.Attr{}, x, rms); !ok {
				return nil, false
			}
		}
		c.tiles[pg.Ops[i].Out[0]] = x
	}
	if !c.finishEpilogue(plan, func(s ugraph.Shape) block.Map { return plan.axes(s, c.b.Grid, 1, -1) }) {
		return nil, false
	}
	return c.finish()
}

// xDim is the dim of a result that grid x lays its blocks' tiles along:
// the columns, or the heads with headsOnX.
func (plan *matmulPlan) xDim() int {
	if plan.headsOnX {
		return 1
	}
	return plan.dim(1)
}
