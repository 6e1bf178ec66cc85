package seed

import (
	"slices"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// headSumPlan is what the head_sum rule found: a matmul batched over the
// dims before its last two, whose batch dims a chain of reductions sums,
// and an element-wise epilogue on the sum. It is an attention block's
// output projection as a program without reshapes writes it: each head's
// output times its slice of the weight, summed over the heads (and over
// the groups of a grouped layout).
type headSumPlan struct {
	matmul   int
	a, b     kernel.TensorID // batch…×m×k and batch…×k×n
	rank     int
	n        int
	sums     []int // the reductions, in order, the first reading the matmul's result
	walked   int   // the summed batch dim the for-loop walks
	stacked  int   // the other summed batch dim of extent above 1, or -1
	extents  ugraph.Shape
	epilogue []int
	// extra are program inputs the epilogue reads (a residual, a bias),
	// loaded whole per block (loadInvariant).
	extra []kernel.TensorID
}

// headSumRule computes such a program with the for-loop walking the heads:
// the grid's x axis cuts the output columns into tiles of 32 to 256, and
// each iteration multiplies one head's rows by its weight tile,
// accumulating in registers. With a second summed batch dim, the grid's y
// axis takes the smaller of the two (the for-loop walks the larger); with
// one only, and too few column tiles to occupy the target's SMs, y splits
// the heads (powers of two near those that fill the SMs). Either way each
// block then writes its partial sum stacked along that dim, in the
// program's dtype, and a second kernel, whose for-loop walks the stack,
// sums the partials and runs the epilogue. Its premise: one matmul of rank
// 3 or more on two inputs, its result read only by the reductions, which
// sum every batch dim of extent above 1 (at most two), at most 128 rows,
// and an epilogue of element-wise ops on the sum and on inputs shaped as
// it or broadcast against it (a residual, a bias).
func headSumRule(p *program, opts Options) []*kernel.Graph {
	plan, ok := planHeadSum(p)
	if !ok {
		return nil
	}
	heads := plan.extents.Dim(plan.walked)
	var graphs []*kernel.Graph
	for _, tn := range tileSizes(plan.n, 32, 256) {
		cols := plan.n / tn
		if cols > block.MaxGridAxis {
			continue
		}
		splits := []int{1}
		switch {
		case plan.stacked >= 0:
			splits = []int{plan.extents.Dim(plan.stacked)}
		case cols < opts.SMs:
			// The powers of two that bring the blocks to the SMs, half
			// that and twice that, where they divide the heads; else the
			// largest below them that does.
			split := 2
			for cols*split < opts.SMs {
				split *= 2
			}
			for _, s := range []int{split / 2, split, 2 * split} {
				if s >= 2 && heads%s == 0 {
					splits = append(splits, s)
				}
			}
			if len(splits) == 1 && heads%2 == 0 {
				s := 2
				for heads%(2*s) == 0 && 2*s < split {
					s *= 2
				}
				splits = append(splits, s)
			}
		}
		for _, s := range splits {
			if s > block.MaxGridAxis {
				continue
			}
			for _, threads := range opts.Threads {
				if g, ok := headSumKernels(p, plan, block.Dim3{cols, s, 1}, threads, opts.ReductionDimx); ok {
					graphs = append(graphs, g)
				}
			}
		}
	}
	return graphs
}

// planHeadSum checks the head_sum rule's premise.
func planHeadSum(p *program) (*headSumPlan, bool) {
	g := p.g
	plan := &headSumPlan{matmul: -1, walked: -1, stacked: -1}
	for i, op := range g.Ops {
		if op.Kind == ugraph.OpMatmul {
			if plan.matmul >= 0 {
				return nil, false
			}
			plan.matmul = i
		}
	}
	if plan.matmul < 0 {
		return nil, false
	}
	mm := g.Ops[plan.matmul]
	plan.a, plan.b = mm.In[0], mm.In[1]
	sa := p.shape(plan.a)
	r := sa.Rank()
	if r < 3 || plan.a == plan.b || !p.isInput(plan.a) || !p.isInput(plan.b) || sa.Dim(r-2) > 128 {
		return nil, false
	}
	plan.rank, plan.n = r, p.shape(plan.b).Dim(r-1)
	plan.extents = p.shape(mm.Out[0])
	// The sums: a chain from the product, each link a reduction over a
	// batch dim and the only reader of the one before, which is no
	// output, until no batch dim of extent above 1 is left; sums over
	// dims of extent 1 after that (in whichever order the program wrote
	// them) join it.
	sum := mm.Out[0]
	for {
		cs := p.consumers[sum]
		link := !p.output[sum] && len(cs) == 1 && g.Ops[cs[0]].Kind == ugraph.OpReduction && g.Ops[cs[0]].Attr.Dim < r-2
		if !link {
			if batched(p.shape(sum)) {
				return nil, false
			}
			break
		}
		plan.sums = append(plan.sums, cs[0])
		sum = g.Ops[cs[0]].Out[0]
	}
	for d := range r - 2 {
		e := plan.extents.Dim(d)
		switch {
		case e == 1:
		case plan.walked < 0 || e >= plan.extents.Dim(plan.walked):
			plan.walked, plan.stacked = d, plan.walked
		case plan.stacked < 0:
			plan.stacked = d
		default:
			return nil, false // a third summed dim: one for-loop and one grid axis take two
		}
	}
	if plan.walked < 0 {
		return nil, false // nothing summed: a matmul of one head
	}
	// The epilogue: element-wise ops on the sum and on each other.
	post := make([]bool, len(g.Tensors))
	post[sum] = true
	for i, op := range g.Ops {
		if op.Kind == ugraph.OpInput || i == plan.matmul || slices.Contains(plan.sums, i) {
			continue
		}
		if !op.Kind.IsElementwise() {
			return nil, false
		}
		for _, t := range op.In {
			switch {
			case post[t]:
			case p.isInput(t) && t != plan.a && t != plan.b && p.shape(t).BroadcastsTo(p.shape(sum)):
				if !slices.Contains(plan.extra, t) {
					plan.extra = append(plan.extra, t)
				}
			default:
				return nil, false
			}
		}
		post[op.Out[0]] = true
		plan.epilogue = append(plan.epilogue, i)
	}
	for _, t := range g.Outputs {
		if !post[t] {
			return nil, false
		}
	}
	return plan, true
}

// batched reports whether a tensor of shape s has a batch dim (one before
// its last two) of extent above 1.
func batched(s ugraph.Shape) bool {
	for d := range s.Rank() - 2 {
		if s.Dim(d) > 1 {
			return true
		}
	}
	return false
}

// headSumKernels builds the head_sum rule's kernels on one grid: column
// tiles × the stacked dim, or × splits of the walked one.
func headSumKernels(p *program, plan *headSumPlan, grid, threads block.Dim3, reductionDimx int) (*kernel.Graph, bool) {
	g := p.g
	r := plan.rank
	stack := -1 // the dim grid y lays the blocks' partial sums along
	if grid[1] > 1 {
		stack = plan.stacked
		if stack < 0 {
			stack = plan.walked
		}
	}
	iterations := plan.extents.Dim(plan.walked)
	if stack == plan.walked {
		iterations /= grid[1]
	}
	k, ok := newKernelBuilder(p, grid, threads, iterations, reductionDimx)
	if !ok {
		return nil, false
	}
	if !k.loadWalked(plan.a, axisMap(p.shape(plan.a), grid, -1, stack), plan.walked) ||
		!k.loadWalked(plan.b, axisMap(p.shape(plan.b), grid, r-1, stack), plan.walked) ||
		!k.compute(plan.matmul) {
		return nil, false
	}
	acc, ok := k.add(ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumNone}, k.tiles[g.Ops[plan.matmul].Out[0]])
	if !ok {
		return nil, false
	}
	if stack < 0 {
		// The loop summed the walked dim; every other batch dim is 1 in
		// the tile and in the program: the tile is the sum.
		if !k.finishHeadSum(plan, acc) {
			return nil, false
		}
		return k.graph()
	}
	omap := block.Replicate
	omap[0], omap[1] = r-1, stack
	if addOutput(k.b, acc, omap) != nil {
		return nil, false
	}
	c, ok := k.combiner(threads, r-1, stack, -1, 1, 0)
	if !ok || !c.finishHeadSum(plan, c.sums[0]) {
		return nil, false
	}
	return c.finish()
}

// finishHeadSum gives the plan's sums the tile acc, their whole sum, runs
// the epilogue and stores the outputs.
func (k *kernelBuilder) finishHeadSum(plan *headSumPlan, acc block.TensorID) bool {
	g := k.p.g
	for _, i := range plan.sums {
		k.tiles[g.Ops[i].Out[0]] = acc
	}
	for _, t := range plan.extra {
		tile, ok := k.loadInvariant(t, axisMap(k.p.shape(t), k.b.Grid, plan.rank-1, -1))
		if !ok {
			return false
		}
		k.tiles[t] = tile
	}
	for _, i := range plan.epilogue {
		if !k.compute(i) {
			return false
		}
	}
	for _, t := range g.Outputs {
		if !k.store(t, k.tiles[t], axisMap(k.p.shape(t), k.b.Grid, plan.rank-1, -1)) {
			return false
		}
	}
	return true
}
