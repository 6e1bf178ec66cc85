package seed

import (
	"slices"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// matmulPlan is what the matmul rule found in a program: the ops in the
// for-loop (the prologue, computing the shared left operand from K-wide
// tiles), the matmuls, and the ops after it (the epilogue).
type matmulPlan struct {
	a    kernel.TensorID // the left operand every matmul shares: m×k, or b×m×k
	m, k int
	// n is the widest result's columns; widths holds every result's that
	// grid x cuts (the matmuls', the low-rank products'), which may differ:
	// a grouped-query layer's q (4096) beside its k and v (1024). Each is
	// cut into as many tiles as the widest (columnBlocks).
	n      int
	widths []int
	// rank is the matmuls' rank: 2; 3 with a batch (heads) in dim 0,
	// which grid z walks (batch 1 for rank 2); or 4 with groups in dim 0
	// (grid z) and the heads of a group in dim 1 (grid y, heads; else 1).
	// The plan's other fields and methods name dims as a 2-D matmul's
	// (dim), shifted past the batch.
	rank, batch, heads int
	// headsOnX: grid x walks the heads (split_k's, whose grid y splits
	// the reduced dim; the columns are then one tile), not grid y.
	headsOnX bool
	matmuls  []int // op indices, in program order
	// narrow are matmuls on a of at most maxRank columns whose results
	// only low-rank products read as their left operand (LoRA's X·A, of
	// X·W + (X·A)·B): accumulated whole in every block, beside the
	// matmuls, at rank 2.
	narrow   []int
	prologue []int // op indices, in program order
	// epilogue holds the element-wise ops after the loop and the low-rank
	// products ((X·A)·B: a narrow result times an input of rank × n, read
	// whole per block in a column tile, lowRank).
	epilogue []int
	// norm is the prologue's rms_norm (-1: none): it runs as its operand,
	// and the matmuls' results are divided by the operand's rms after the
	// loop. Only row-linear ops (mul by what does not depend on it,
	// mul_scalar) lie between it and a.
	norm int
	// extra are program inputs the epilogue reads (a bias, a residual):
	// loaded whole per block (loadInvariant).
	extra []kernel.TensorID
	// lowRank are the low-rank products' right operands (LoRA's B), loaded
	// as extra is but never cut along the rows.
	lowRank []kernel.TensorID
}

// maxRank is the most columns a narrow matmul has: its result is held
// whole by every block (an adapter's rank is 8 to 64).
const maxRank = 128

// matmulRule fuses matmuls that share their left operand, its element-wise
// prologue (with at most one rms_norm) and the element-wise epilogues of
// their results into one graph-defined kernel: the grid's x axis cuts the
// output columns into tiles of 32 to 256, its y axis the rows when there
// are more than 128, its z axis the batch of batched matmuls (the heads
// of q, k and v projected from one normed activation, broadcast over
// them), and the for-loop walks the reduced dim in tiles of 32 to 256 (or
// whole, when the epilogue reads an input). At rank 4 (groups × heads,
// as a grouped-query layer writes its projections) grid z walks the
// groups, grid y the heads of a group, and the rows stay whole. Its
// premise: 2-D matmuls, or 3-D and 4-D ones batched over the dims before
// their last two, one left operand, weights that are inputs, every other
// op element-wise (or that rms_norm, over the last dim), and outputs
// computed after the loop. At rank 2 a matmul on the left operand of at
// most maxRank columns whose result only other matmuls read (an
// adapter's X·A) is narrow: every block accumulates it whole, and its
// products with inputs of that many rows ((X·A)·B) join the epilogue.
func matmulRule(p *program, opts Options) []*kernel.Graph {
	plan, ok := planMatmul(p)
	if !ok {
		return nil
	}
	var tms []int
	if plan.m > 128 && plan.rank < 4 {
		tms = tileSizes(plan.m, 64, 128)
	} else {
		tms = []int{plan.m}
	}
	tks := tileSizes(plan.k, 32, 256)
	if len(plan.extra) > 0 && !slices.Contains(tks, plan.k) {
		tks = append(tks, plan.k) // one iteration: the epilogue's inputs read once
	}
	var graphs []*kernel.Graph
	for _, gx := range plan.columnGrids(32, 256) {
		for _, tm := range tms {
			grid := block.Dim3{gx, plan.m / tm, plan.batch}
			if plan.rank == 4 {
				grid[1] = plan.heads
			}
			if grid[0] > block.MaxGridAxis || grid[1] > block.MaxGridAxis || grid[2] > block.MaxGridAxis {
				continue
			}
			for _, tk := range tks {
				for _, threads := range opts.Threads {
					if g, ok := matmulKernel(p, plan, grid, threads, plan.k/tk, opts.ReductionDimx); ok {
						graphs = append(graphs, g)
					}
				}
			}
		}
	}
	return graphs
}

// planMatmul checks the matmul rule's premise and sorts the ops.
func planMatmul(p *program) (*matmulPlan, bool) {
	g := p.g
	plan := &matmulPlan{a: -1, norm: -1}
	for i, op := range g.Ops {
		if op.Kind != ugraph.OpMatmul {
			continue
		}
		a, b := op.In[0], op.In[1]
		sa, sb := p.shape(a), p.shape(b)
		r := sa.Rank()
		if r > 4 || !p.isInput(b) {
			return nil, false
		}
		if p.isMatmul(a) {
			continue // a low-rank product, placed with the epilogue
		}
		if plan.a < 0 {
			plan.a, plan.m, plan.k = a, sa.Dim(r-2), sa.Dim(r-1)
			plan.rank, plan.batch, plan.heads = r, 1, 1
			if r >= 3 {
				plan.batch = sa.Dim(0)
			}
			if r == 4 {
				plan.heads = sa.Dim(1)
			}
		}
		if a != plan.a {
			return nil, false
		}
		if p.narrow(i) {
			plan.narrow = append(plan.narrow, i)
			continue
		}
		plan.addWidth(sb.Dim(r - 1))
		plan.matmuls = append(plan.matmuls, i)
	}
	if len(plan.matmuls) == 0 || len(plan.narrow) > 0 && plan.rank != 2 || p.output[plan.a] {
		return nil, false
	}
	// The prologue: the ops a depends on.
	inPrologue := make([]bool, len(g.Ops))
	if !p.isInput(plan.a) {
		stack := []kernel.TensorID{plan.a}
		for len(stack) > 0 {
			t := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			i := p.producer[t]
			if g.Ops[i].Kind == ugraph.OpInput || inPrologue[i] {
				continue
			}
			inPrologue[i] = true
			stack = append(stack, g.Ops[i].In...)
		}
	}
	post := make([]bool, len(g.Tensors)) // computed after the loop
	for i, op := range g.Ops {
		switch {
		case op.Kind == ugraph.OpInput:
		case op.Kind == ugraph.OpMatmul && p.isMatmul(op.In[0]):
			// A low-rank product: a narrow result times rank × n (the
			// graph's shape rules hold B's rows to the rank).
			if !slices.Contains(plan.narrow, p.producer[op.In[0]]) {
				return nil, false
			}
			plan.addWidth(p.shape(op.In[1]).Dim(1))
			plan.lowRank = append(plan.lowRank, op.In[1])
			post[op.Out[0]] = true
			plan.epilogue = append(plan.epilogue, i)
		case op.Kind == ugraph.OpMatmul:
			post[op.Out[0]] = true
		case inPrologue[i]:
			if op.Kind == ugraph.OpRMSNorm && plan.norm < 0 && op.Attr.Dim == plan.dim(1) {
				plan.norm = i
			} else if !op.Kind.IsElementwise() {
				return nil, false
			}
			for _, t := range op.In {
				if !plan.tiles(p.shape(t), plan.k) {
					return nil, false
				}
			}
			plan.prologue = append(plan.prologue, i)
		default:
			// An element-wise op after the loop has one of the results'
			// widths (the graph's shape rules let no input widen a result).
			width := p.shape(op.Out[0]).Last()
			if !op.Kind.IsElementwise() || !slices.Contains(plan.widths, width) {
				return nil, false
			}
			for _, t := range op.In {
				switch {
				case post[t]:
				case p.isInput(t):
					if !plan.tiles(p.shape(t), width) {
						return nil, false
					}
					if !slices.Contains(plan.extra, t) {
						plan.extra = append(plan.extra, t)
					}
				default:
					return nil, false // reads the prologue after the loop
				}
			}
			post[op.Out[0]] = true
			plan.epilogue = append(plan.epilogue, i)
		}
	}
	// Prologue tensors feed only the prologue and, a, the matmuls; none is
	// an output.
	for _, i := range plan.prologue {
		t := g.Ops[i].Out[0]
		if p.output[t] {
			return nil, false
		}
		for _, c := range p.consumers[t] {
			if !inPrologue[c] && (g.Ops[c].Kind != ugraph.OpMatmul || t != plan.a) {
				return nil, false
			}
		}
	}
	if plan.norm >= 0 && !rowLinear(p, g.Ops[plan.norm].Out[0], plan.a, inPrologue) {
		return nil, false
	}
	// A weight is tiled along its columns and walked along its rows, a
	// narrow one walked whole; the prologue's inputs are walked along
	// their columns; a low-rank product's right operand is read after the
	// loop, whole along its rows. One tensor cannot be two of these (the
	// kernel loads each walked input once, and a tile read after the loop
	// is known by its tensor). The epilogue's other inputs are loaded
	// apart from the loop's.
	roles := map[kernel.TensorID]int{plan.a: 0}
	claim := func(t kernel.TensorID, role int) bool {
		r, ok := roles[t]
		roles[t] = role
		return !ok || r == role
	}
	for _, i := range plan.prologue {
		for _, t := range g.Ops[i].In {
			if p.isInput(t) && !claim(t, 0) {
				return nil, false
			}
		}
	}
	for role, ops := range [][]int{plan.matmuls, plan.narrow} {
		for _, i := range ops {
			if !claim(g.Ops[i].In[1], 1+role) {
				return nil, false
			}
		}
	}
	for _, t := range plan.lowRank {
		if !claim(t, 3) {
			return nil, false
		}
	}
	for _, t := range plan.extra {
		if roles[t] == 3 {
			return nil, false
		}
	}
	return plan, true
}

// minColumnTile is the fewest columns of a result's tile where the
// results' widths differ: the n of an mma instruction.
const minColumnTile = 8

// addWidth records a result's columns.
func (plan *matmulPlan) addWidth(n int) {
	if !slices.Contains(plan.widths, n) {
		plan.widths = append(plan.widths, n)
	}
	plan.n = max(plan.n, n)
}

// columnBlocks reports whether gx blocks along grid x can cut every
// result's columns: gx divides each width, and a result narrower than
// the widest keeps at least minColumnTile columns a block (q's 64 beside
// k's and v's 16 for a grouped-query layer's 4096 and 1024).
func (plan *matmulPlan) columnBlocks(gx int) bool {
	for _, w := range plan.widths {
		if w%gx != 0 || w != plan.n && w/gx < minColumnTile {
			return false
		}
	}
	return true
}

// columnGrids are the blocks grid x may cut the results' columns into,
// most first: the widest's tiles of lo to hi columns (tileSizes), and
// where the widths differ, the powers of two dividing them all that give
// the widest such tiles (Qwen2's 3584 and 512: 16, 32 and 64 blocks,
// where 3584's powers of two from 32 to 256 leave 512 in uneven parts);
// each where columnBlocks holds.
func (plan *matmulPlan) columnGrids(lo, hi int) []int {
	var gs []int
	for _, tn := range tileSizes(plan.n, lo, hi) {
		if gx := plan.n / tn; plan.columnBlocks(gx) {
			gs = append(gs, gx)
		}
	}
	if len(plan.widths) > 1 {
		for gx := 1; plan.n/gx >= lo; gx *= 2 {
			if plan.n/gx <= hi && !slices.Contains(gs, gx) && plan.columnBlocks(gx) {
				gs = append(gs, gx)
			}
		}
	}
	slices.SortFunc(gs, func(a, b int) int { return b - a })
	return gs
}

// dim is dim d of a 2-D matmul's operands or result (-1: none) in the
// plan's tensors: past the batch dim, when there is one.
func (plan *matmulPlan) dim(d int) int {
	if d < 0 {
		return d
	}
	return d + plan.rank - 2
}

// tiles reports whether a tensor of shape s broadcasts against the plan's
// m × cols tensors (its batch too): of their rank, each dim theirs or 1.
func (plan *matmulPlan) tiles(s ugraph.Shape, cols int) bool {
	want := []int{plan.m, cols}
	switch plan.rank {
	case 3:
		want = []int{plan.batch, plan.m, cols}
	case 4:
		want = []int{plan.batch, plan.heads, plan.m, cols}
	}
	return s.BroadcastsTo(ugraph.MustShape(want...))
}

// axes is the map that lays grid x along 2-D dim dx and y along dy (as
// axisMap does) and z along the batch dim, for a tensor of the plan's; at
// rank 4 with heads, y (x with headsOnX) lays along them (dim 1) whatever
// dy (dx) is.
func (plan *matmulPlan) axes(s ugraph.Shape, grid block.Dim3, dx, dy int) block.Map {
	heads := plan.headsAxis()
	switch heads {
	case 0:
		dx = -1
	case 1:
		dy = -1
	}
	m := axisMap(s, grid, plan.dim(dx), plan.dim(dy))
	if plan.rank >= 3 && grid[2] > 1 && s.Dim(0) > 1 {
		m[2] = 0
	}
	if heads >= 0 && grid[heads] > 1 && s.Dim(1) > 1 {
		m[heads] = 1
	}
	return m
}

// headsAxis is the grid axis that walks the heads: 1 (y), 0 (x) with
// headsOnX, -1 without heads.
func (plan *matmulPlan) headsAxis() int {
	switch {
	case plan.heads == 1:
		return -1
	case plan.headsOnX:
		return 0
	}
	return 1
}

// rowLinear reports whether a is r scaled row by row: r itself, or r
// through a chain of ops each of which is a mul_scalar or a mul by a
// tensor that does not depend on r, each the only reader of the last.
// Then a(X)·W divided by rms(X) equals a computed from X in r's place.
func rowLinear(p *program, r, a kernel.TensorID, inPrologue []bool) bool {
	for t := r; t != a; {
		cs := p.consumers[t]
		if len(cs) != 1 || !inPrologue[cs[0]] {
			return false
		}
		op := p.g.Ops[cs[0]]
		switch op.Kind {
		case ugraph.OpMulScalar:
		case ugraph.OpMul:
			other := op.In[0]
			if other == t {
				other = op.In[1]
			}
			if other == t || dependsOn(p, other, r) {
				return false
			}
		default:
			return false
		}
		t = op.Out[0]
	}
	return true
}

// dependsOn reports whether tensor t is computed from tensor r.
func dependsOn(p *program, t, r kernel.TensorID) bool {
	if t == r {
		return true
	}
	if p.isInput(t) {
		return false
	}
	for _, x := range p.g.Ops[p.producer[t]].In {
		if dependsOn(p, x, r) {
			return true
		}
	}
	return false
}

// placePrologue places the plan's prologue in k's for-loop: its inputs
// and the shared left operand in tiles walked along the reduced dim (grid
// y partitioning their dim dy, where they have it), and its ops, the
// rms_norm as its operand (rms_norm(X)·W = (X·W) / rms(X)). It returns
// the norm's operand, -1 when there is no norm.
func (k *kernelBuilder) placePrologue(plan *matmulPlan, dy int) (kernel.TensorID, bool) {
	p, grid := k.p, k.b.Grid
	walk := func(t kernel.TensorID) bool {
		return !p.isInput(t) || k.loadWalked(t, plan.axes(p.shape(t), grid, -1, dy), plan.dim(1))
	}
	var normIn kernel.TensorID = -1
	for _, i := range plan.prologue {
		op := p.g.Ops[i]
		for _, t := range op.In {
			if !walk(t) {
				return -1, false
			}
		}
		if i == plan.norm {
			normIn = op.In[0]
			k.tiles[op.Out[0]] = k.tiles[normIn]
			continue
		}
		if !k.compute(i) {
			return -1, false
		}
	}
	return normIn, walk(plan.a)
}

// matmulKernel builds the matmul rule's kernel on one grid and for-loop
// range.
func matmulKernel(p *program, plan *matmulPlan, grid, threads block.Dim3, forloopRange, reductionDimx int) (*kernel.Graph, bool) {
	k, ok := newKernelBuilder(p, grid, threads, forloopRange, reductionDimx)
	if !ok {
		return nil, false
	}
	g := p.g
	// In the loop: the prologue (grid y along the rows), the weights and
	// the matmuls.
	normIn, ok := k.placePrologue(plan, 0)
	if !ok {
		return nil, false
	}
	var rms block.TensorID
	if normIn >= 0 {
		if rms, ok = k.add(ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumRMS}, k.tiles[normIn]); !ok {
			return nil, false
		}
	}
	for _, i := range plan.matmuls {
		w := g.Ops[i].In[1]
		if !k.loadWalked(w, plan.axes(p.shape(w), grid, 1, -1), plan.dim(0)) || !k.compute(i) {
			return nil, false
		}
	}
	for _, i := range plan.narrow {
		w := g.Ops[i].In[1]
		if !k.loadWalked(w, block.Replicate, 0) || !k.compute(i) {
			return nil, false
		}
	}
	// After it: the matmuls' sums (divided by the rms), the epilogue's
	// inputs, the epilogue.
	for _, i := range slices.Concat(plan.matmuls, plan.narrow) {
		c := g.Ops[i].Out[0]
		acc, ok := k.add(ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumNone}, k.tiles[c])
		if ok && normIn >= 0 {
			acc, ok = k.add(ugraph.OpDiv, ugraph.Attr{}, acc, rms)
		}
		if !ok {
			return nil, false
		}
		k.tiles[c] = acc
	}
	if !k.finishEpilogue(plan, func(s ugraph.Shape) block.Map { return plan.axes(s, grid, 1, 0) }) {
		return nil, false
	}
	return k.graph()
}

// finishEpilogue places, after the loop, the plan's epilogue: its inputs
// (a bias, a residual: loadInvariant), its ops on the tiles k holds, and
// the stores of the program's outputs, each tile laid out by axes.
func (k *kernelBuilder) finishEpilogue(plan *matmulPlan, axes func(ugraph.Shape) block.Map) bool {
	for _, t := range plan.extra {
		tile, ok := k.loadInvariant(t, axes(k.p.shape(t)))
		if !ok {
			return false
		}
		k.tiles[t] = tile
	}
	for _, t := range plan.lowRank {
		imap := axes(k.p.shape(t))
		imap[1] = -1 // its rows are the adapter's rank: every row tile reads them all
		tile, ok := k.loadInvariant(t, imap)
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
	for _, t := range k.p.g.Outputs {
		if !k.store(t, k.tiles[t], axes(k.p.shape(t))) {
			return false
		}
	}
	return true
}
