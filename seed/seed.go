// Package seed builds fused μGraphs by rule from a program of pre-defined
// ops: the kernels a rule-based fuser (torch.compile's) would write, so
// that a search starts from them and looks for better ones.
//
// A rule looks at the whole program and either builds graph-defined
// kernels that compute it, one graph per tiling it tries, or declines (its
// premise fails: an op it cannot place, a shape it cannot tile). Every
// graph is an ordinary μGraph, built with the ugraph builders, so it obeys
// every shape rule; that it computes the program is the verifier's to
// prove, as for any candidate. A rule whose graph fails the verifier is a
// bug in the rule.
//
// The rules, in the order Build tries them:
//
//   - rows: element-wise ops, sums over the last dim and rms_norms over
//     it, in one kernel whose blocks each own whole rows (one or more);
//     or, for rank 3, sums over dim 1 (a norm of each of attention's
//     keys), with blocks that own whole columns.
//   - matmul: matmuls that share their left operand, with an element-wise
//     prologue on it (and an rms_norm, by the identity
//     rms_norm(X)·W = (X·W) / rms(X)) and element-wise epilogues on their
//     results, in one kernel tiled over the output columns (and rows, and
//     the batch of batched matmuls: heads, or groups × heads) with a
//     for-loop over the reduced dim. A low-rank adapter's products
//     (LoRA's X·W + (X·A)·B) join them: X·A accumulates whole beside
//     X·W, and its product with B's column tile runs after the loop.
//   - split_k: the matmul rule's computation for a few rows, with the
//     reduced dim split among the blocks too, so that they fill the
//     target's SMs, and a second kernel that sums the splits' partial
//     products and runs the epilogue.
//   - attention: softmax(f(Q·K))·V as flash-decoding computes it: the keys
//     split among blocks, each walking its share with the for-loop and
//     accumulating f(Q·K)·V and the row sums, and a second kernel that
//     sums the splits' partial results and divides; over heads or groups ×
//     heads, with K and V repeated over a group's heads by a broadcast
//     product read where they lie.
//   - head_sum: a matmul batched over heads whose results a chain of
//     reductions sums over the heads (an output projection, written head
//     by head), with the for-loop walking the heads; a second summed dim,
//     or splits of the heads, on the grid, and a second kernel that sums
//     the blocks' partial results and runs the epilogue.
//   - library: 2-D matmuls left to the library (pre-defined ops, after
//     the prologue's other ops), and one kernel after them that reads
//     their products, divides them by the rms of the norm's operand (the
//     norm moved behind them) and runs the epilogue (with an adapter's
//     (X·A)·B, X·A left to the library too).
//
// The matmul, split_k and head_sum rules read an epilogue's inputs (a
// bias, a residual) after a for-loop of any length (loadInvariant).
package seed

import (
	"slices"

	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// Seed is a fused μGraph built by a rule.
type Seed struct {
	Rule  string // the rule's name (Rules)
	Graph *kernel.Graph
}

// Options say which launch parameters the rules may choose from.
type Options struct {
	// Threads are the block sizes tried; nil means 128 threads (four
	// warps, Mirage's default).
	Threads []block.Dim3
	// ReductionDimx is the blocks' reduction_dimx; 0 means 64.
	ReductionDimx int
	// SMs is the target's streaming multiprocessors, which the split_k
	// rule's grids fill; 0 means target.Default's.
	SMs int
}

// rule builds the graphs of one fusion rule for a program: none when its
// premise fails.
type rule struct {
	name  string
	build func(p *program, opts Options) []*kernel.Graph
}

// rules, in the order Build tries them.
var rules = []rule{
	{"rows", rowsRule},
	{"matmul", matmulRule},
	{"split_k", splitRule},
	{"attention", attentionRule},
	{"head_sum", headSumRule},
	{"library", libraryRule},
}

// Rules lists the rules' names, in the order Build tries them.
func Rules() []string {
	names := make([]string, len(rules))
	for i, r := range rules {
		names[i] = r.name
	}
	return names
}

// Build returns the seeds of every rule whose premise holds for program,
// rule by rule, each rule's tilings in a fixed order. A program holding
// graph-defined kernels already, or computing none of its outputs, has
// none.
func Build(program *kernel.Graph, opts Options) []Seed {
	if len(opts.Threads) == 0 {
		opts.Threads = []block.Dim3{{128, 1, 1}}
	}
	if opts.ReductionDimx == 0 {
		opts.ReductionDimx = 64
	}
	if opts.SMs == 0 {
		opts.SMs = target.MustLookup(target.Default).SMs
	}
	p, ok := analyze(program)
	if !ok {
		return nil
	}
	var seeds []Seed
	for _, r := range rules {
		for _, g := range r.build(p, opts) {
			seeds = append(seeds, Seed{Rule: r.name, Graph: g})
		}
	}
	return seeds
}

// Covers reports whether some rule's premise holds for program (it
// builds seeds), and whether one of those seeds is one placed accepts
// (nil: any), trying the rules and each rule's tilings in order and
// stopping at the first accepted. The partition of a program into parts
// prefers parts that a rule covers (they have a fused answer at once);
// placed says whether a seed can run on the target (its tiles fit the
// shared memory), which a rule's premise alone does not. It builds with
// one block size, for sms SMs (0: the default target's).
func Covers(program *kernel.Graph, sms int, placed func(*kernel.Graph) bool) (premise, fits bool) {
	p, ok := analyze(program)
	if !ok {
		return false, false
	}
	if sms == 0 {
		sms = target.MustLookup(target.Default).SMs
	}
	opts := Options{Threads: []block.Dim3{{128, 1, 1}}, ReductionDimx: 64, SMs: sms}
	for _, r := range rules {
		for _, g := range r.build(p, opts) {
			premise = true
			if placed == nil || placed(g) {
				return true, true
			}
		}
	}
	return premise, false
}

// MayCover is a cheap condition that Covers needs of the program the ops
// of g (indices) make as a part, asked before that program is built:
// every rule takes at most two matmuls (attention; head_sum one), or
// matmuls that share their left operand (matmul, split_k, library), and
// low-rank products of their results; and no graph-defined kernel.
func MayCover(g *kernel.Graph, ops []int) bool {
	var left kernel.TensorID = -1
	loop := map[kernel.TensorID]bool{} // results of the matmuls on left
	matmuls, shared := 0, true
	for _, i := range ops {
		switch op := g.Ops[i]; op.Kind {
		case ugraph.OpCustomized:
			return false
		case ugraph.OpMatmul:
			matmuls++
			if loop[op.In[0]] {
				continue // a low-rank product
			}
			shared = shared && (left < 0 || op.In[0] == left)
			left = op.In[0]
			loop[op.Out[0]] = true
		}
	}
	return matmuls <= 2 || shared
}

// program is a program with the links the rules follow.
type program struct {
	g         *kernel.Graph
	producer  []int   // by tensor: the op that makes it
	consumers [][]int // by tensor: the ops that read it, in order
	output    []bool  // by tensor: marked as an output
}

// analyze indexes g; it reports false when no rule applies to it: it holds
// a graph-defined kernel, or an output no op computes.
func analyze(g *kernel.Graph) (*program, bool) {
	if len(g.Outputs) == 0 {
		return nil, false
	}
	p := &program{g: g, producer: make([]int, len(g.Tensors)), consumers: make([][]int, len(g.Tensors)), output: make([]bool, len(g.Tensors))}
	for i, op := range g.Ops {
		if op.Kind == ugraph.OpCustomized {
			return nil, false
		}
		for _, t := range op.Out {
			p.producer[t] = i
		}
		for _, t := range op.In {
			p.consumers[t] = append(p.consumers[t], i)
		}
	}
	for _, t := range g.Outputs {
		if p.isInput(t) {
			return nil, false
		}
		p.output[t] = true
	}
	return p, true
}

func (p *program) isInput(t kernel.TensorID) bool {
	return p.g.Ops[p.producer[t]].Kind == ugraph.OpInput
}

// isMatmul reports whether t is a matmul's result.
func (p *program) isMatmul(t kernel.TensorID) bool {
	return p.g.Ops[p.producer[t]].Kind == ugraph.OpMatmul
}

// narrow reports whether matmul op i is a narrow one (matmulPlan.narrow):
// of rank 2 and at most maxRank columns, not an output, and read only as
// the left operand of matmuls.
func (p *program) narrow(i int) bool {
	t := p.g.Ops[i].Out[0]
	s := p.shape(t)
	if s.Rank() != 2 || s.Dim(1) > maxRank || p.output[t] || len(p.consumers[t]) == 0 {
		return false
	}
	for _, c := range p.consumers[t] {
		if op := p.g.Ops[c]; op.Kind != ugraph.OpMatmul || op.In[0] != t || op.In[1] == t {
			return false
		}
	}
	return true
}

func (p *program) shape(t kernel.TensorID) ugraph.Shape { return p.g.Tensors[t].Shape }

// kernelBuilder assembles a seed: one graph-defined kernel b over the
// program's inputs.
type kernelBuilder struct {
	p *program
	b *block.Graph
	// tiles maps the program's tensors to b's tiles as they are placed.
	tiles map[kernel.TensorID]block.TensorID
	// pre are program ops that run before b as pre-defined kernels, each
	// after the ops of pre whose results it reads (else on inputs).
	pre []int
	// alias maps a program tensor to the one ops of pre read in its place
	// (the library rule's: a norm's result read as its operand).
	alias map[kernel.TensorID]kernel.TensorID
	// operands are the program tensors b's input ops read, in order:
	// inputs, or results of pre.
	operands []kernel.TensorID
	// results are the program tensors b's output ops store, in order.
	results []kernel.TensorID
}

func newKernelBuilder(p *program, grid, threads block.Dim3, forloopRange, reductionDimx int) (*kernelBuilder, bool) {
	b, err := block.New(grid, threads, forloopRange, reductionDimx)
	if err != nil {
		return nil, false
	}
	return &kernelBuilder{p: p, b: b, tiles: map[kernel.TensorID]block.TensorID{}}, true
}

// load places an input op reading program tensor t: an input, or the
// result of an op of pre.
func (k *kernelBuilder) load(t kernel.TensorID, imap block.Map, fmap int) (block.TensorID, bool) {
	tile, err := addInput(k.b, k.p.shape(t), k.p.g.Tensors[t].DType, imap, fmap)
	if err != nil {
		return block.NoTensor, false
	}
	k.operands = append(k.operands, t)
	return tile, true
}

// addInput adds an input op to b as the search's enumeration writes it: no
// grid axis of one block mapped (block.Graph.Splitting), and no dim walked
// by a loop of one iteration (Walking). A seed then is written as the
// enumeration's twin where they build one graph.
func addInput(b *block.Graph, shape ugraph.Shape, dtype ugraph.DType, imap block.Map, fmap int) (block.TensorID, error) {
	return b.AddInput(shape, dtype, b.Splitting(imap), b.Walking(fmap))
}

// addOutput adds an output op to b as the enumeration writes it: no grid
// axis of one block mapped.
func addOutput(b *block.Graph, t block.TensorID, omap block.Map) error {
	return b.AddOutput(t, b.Splitting(omap))
}

// loadWalked places an input op reading program tensor t, walked by the
// for-loop along dim fmap (-1: none; nor where t's extent there is 1: it
// broadcasts), unless t has its tile already.
func (k *kernelBuilder) loadWalked(t kernel.TensorID, imap block.Map, fmap int) bool {
	if _, done := k.tiles[t]; done {
		return true
	}
	if fmap >= 0 && k.p.shape(t).Dim(fmap) == 1 {
		fmap = -1
	}
	tile, ok := k.load(t, imap, fmap)
	k.tiles[t] = tile
	return ok
}

// loadInvariant places program input t, which ops after the loop read, as
// a post-loop tile equal to t. A block graph loads its inputs inside the
// loop, once an iteration: t's tile is loaded whole each time (not
// walked), summed over the loop's R iterations and scaled by 1/R. Exact
// where it matters: the verifier takes a loop-invariant tile's sum as R
// times it and the scalar 1/R as R's inverse (ffverify's constants), and
// R copies of an fp16 or bf16 value sum exactly in fp32.
func (k *kernelBuilder) loadInvariant(t kernel.TensorID, imap block.Map) (block.TensorID, bool) {
	tile, ok := k.load(t, imap, -1)
	if ok {
		tile, ok = k.add(ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumNone}, tile)
	}
	if r := k.b.ForloopRange; ok && r > 1 {
		tile, ok = k.add(ugraph.OpMulScalar, ugraph.Attr{Scalars: [2]float64{1 / float64(r)}}, tile)
	}
	return tile, ok
}

// compute places the program's op i on the tiles of its operands, and maps
// its result to the tile it makes.
func (k *kernelBuilder) compute(i int) bool {
	op := k.p.g.Ops[i]
	in := make([]block.TensorID, len(op.In))
	for j, t := range op.In {
		x, ok := k.tiles[t]
		if !ok {
			return false
		}
		in[j] = x
	}
	y, err := k.b.Add(op.Kind, op.Attr, in...)
	if err != nil {
		return false
	}
	k.tiles[op.Out[0]] = y
	return true
}

// add places an op of the block level that no program op stands for.
func (k *kernelBuilder) add(kind ugraph.OpKind, attr ugraph.Attr, in ...block.TensorID) (block.TensorID, bool) {
	y, err := k.b.Add(kind, attr, in...)
	return y, err == nil
}

// store places an output op storing post-loop tile x as program tensor t.
func (k *kernelBuilder) store(t kernel.TensorID, x block.TensorID, omap block.Map) bool {
	if addOutput(k.b, x, omap) != nil {
		return false
	}
	k.results = append(k.results, t)
	return true
}

// graph returns the seed's kernel graph: the program's inputs, in order,
// the graph-defined kernel, and the program's outputs in the program's
// order. It reports false when the kernel's results do not have the
// program's shapes or do not cover its outputs.
func (k *kernelBuilder) graph() (*kernel.Graph, bool) {
	pg := k.p.g
	g, ids, outs, ok := k.place()
	if !ok || !markResults(pg, g, ids, outs, k.results) {
		return nil, false
	}
	return g, true
}

// markResults maps program tensors results to outs, the results of the
// last kernel placed in g (ids maps the program's tensors to g's), and
// marks g's outputs in the program's order. It reports false when a
// result does not have the program tensor's shape, or an output has no
// tensor in g.
func markResults(pg, g *kernel.Graph, ids map[kernel.TensorID]kernel.TensorID, outs, results []kernel.TensorID) bool {
	for i, t := range results {
		if g.Tensors[outs[i]].Shape != pg.Tensors[t].Shape {
			return false
		}
		ids[t] = outs[i]
	}
	for _, t := range pg.Outputs {
		id, ok := ids[t]
		if !ok || g.MarkOutput(id) != nil {
			return false
		}
	}
	return true
}

// place starts the seed's kernel graph: the program's inputs, in order
// (ids maps the program's to the graph's), the ops of pre, and the
// graph-defined kernel, whose results are outs.
func (k *kernelBuilder) place() (g *kernel.Graph, ids map[kernel.TensorID]kernel.TensorID, outs []kernel.TensorID, ok bool) {
	pg := k.p.g
	g = kernel.New()
	ids = map[kernel.TensorID]kernel.TensorID{}
	for _, in := range pg.Inputs() {
		t := pg.Tensors[in]
		id, err := g.AddInput(t.Shape, t.DType)
		if err != nil {
			return nil, nil, nil, false
		}
		ids[in] = id
	}
	for _, i := range k.pre {
		op := pg.Ops[i]
		in := make([]kernel.TensorID, len(op.In))
		for j, t := range op.In {
			if a, ok := k.alias[t]; ok {
				t = a
			}
			in[j] = ids[t]
		}
		id, err := g.Add(op.Kind, op.Attr, in...)
		if err != nil {
			return nil, nil, nil, false
		}
		ids[op.Out[0]] = id
	}
	operands := make([]kernel.TensorID, len(k.operands))
	for i, t := range k.operands {
		operands[i] = ids[t]
	}
	outs, err := g.Customized(operands, k.b)
	if err != nil {
		return nil, nil, nil, false
	}
	return g, ids, outs, true
}

// combiner is a kernel that combines the partial results of the one
// before it (k, placed in the seed's graph g): one block per column tile
// of k's grid, whose for-loop walks the stack of k's results, one split
// an iteration, or several (a tile of them, summed by reduction_to_dimx:
// 64 splits of one row walked one by one were a loop of 64 round trips).
// Rules add its ops after the sums, then finish it.
type combiner struct {
	*kernelBuilder
	g     *kernel.Graph
	ids   map[kernel.TensorID]kernel.TensorID // the program's tensors in g
	parts []kernel.TensorID                   // k's results in g
	sums  []block.TensorID                    // each part summed over the splits
}

// combiner places k (whose grid's y axis splits the work, its results
// stacked along dim stack, rows of each split after those of the one
// before, their column tiles along dim cols and, when grid z walks a
// batch, its blocks' results along dim batch) and starts the kernel that
// sums its results over the splits, on k's grid without the splits,
// per splits an iteration (a divisor of them) of rows rows each.
func (k *kernelBuilder) combiner(threads block.Dim3, cols, stack, batch, per, rows int) (*combiner, bool) {
	g, ids, parts, ok := k.place()
	if !ok || per < 1 || k.b.Grid[1]%per != 0 {
		return nil, false
	}
	dimx := k.b.ReductionDimx
	if per > 1 {
		dimx = rows // reduction_to_dimx sums rows t·dimx + j into row j
	}
	b, ok := newKernelBuilder(k.p, block.Dim3{k.b.Grid[0], 1, k.b.Grid[2]}, threads, k.b.Grid[1]/per, dimx)
	if !ok {
		return nil, false
	}
	c := &combiner{kernelBuilder: b, g: g, ids: ids, parts: parts}
	imap := block.Replicate
	imap[0] = cols
	if k.b.Grid[2] > 1 {
		imap[2] = batch
	}
	for _, part := range parts {
		x, err := addInput(c.b, g.Tensors[part].Shape, g.Tensors[part].DType, imap, stack)
		if err != nil {
			return nil, false
		}
		if per > 1 {
			if x, ok = c.add(ugraph.OpReductionToDimx, ugraph.Attr{Dim: stack}, x); !ok {
				return nil, false
			}
		}
		sum, ok := c.add(ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumNone}, x)
		if !ok {
			return nil, false
		}
		c.sums = append(c.sums, sum)
	}
	return c, true
}

// finish places the combining kernel after k's, reading k's results and
// what it loaded itself, and returns the seed's graph.
func (c *combiner) finish() (*kernel.Graph, bool) {
	operands := slices.Clone(c.parts)
	for _, t := range c.operands {
		operands = append(operands, c.ids[t])
	}
	outs, err := c.g.Customized(operands, c.b)
	if err != nil || !markResults(c.p.g, c.g, c.ids, outs, c.results) {
		return nil, false
	}
	return c.g, true
}

// tileSizes are the extents a rule tries for a tiled dim of extent n: the
// powers of two from lo to hi that divide it, and n itself when it is at
// most hi. None when nothing fits.
func tileSizes(n, lo, hi int) []int {
	var ts []int
	for t := lo; t <= hi && t < n; t *= 2 {
		if n%t == 0 {
			ts = append(ts, t)
		}
	}
	if n <= hi {
		ts = append(ts, n)
	}
	return ts
}

// largestDivisor is n's largest divisor from lo to hi (and at most n), 0
// when none: the tile taken where no power of two divides n.
func largestDivisor(n, lo, hi int) int {
	for t := min(n, hi); t >= lo; t-- {
		if n%t == 0 {
			return t
		}
	}
	return 0
}

// axisMap is the map that lays grid axis x along dim dx and y along dy
// (-1: none), for a tensor whose dims there have the extents the grid
// tiles; where a tensor's dim is 1 (it broadcasts), the axis replicates.
func axisMap(s ugraph.Shape, grid block.Dim3, dx, dy int) block.Map {
	m := block.Replicate
	if grid[0] > 1 {
		m[0] = dx
	}
	if grid[1] > 1 {
		m[1] = dy
	}
	return broadcast(s, grid, m)
}

// broadcast is m for a tensor of shape s on grid: an axis of more than
// one block replicates where s's dim is 1 (the tensor broadcasts there).
func broadcast(s ugraph.Shape, grid block.Dim3, m block.Map) block.Map {
	for a, d := range m {
		if d >= 0 && grid[a] > 1 && s.Dim(d) == 1 {
			m[a] = -1
		}
	}
	return m
}
