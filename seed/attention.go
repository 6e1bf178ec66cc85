package seed

import (
	"slices"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// attentionPlan is what the attention rule found: softmax(f(Q·K))·V over
// a batch (or for one head: rank 2, b 1), f a chain of element-wise ops (a
// scale, the exp).
type attentionPlan struct {
	q, k, v kernel.TensorID // b×m×d, b×d×n, b×n×e (or m×d, d×n, n×e): the matmuls' operands
	// rank is the operands' rank: 2 (one head), 3 (a batch of heads in
	// dim 0) or 4 (groups × heads in dims 0 and 1, as a grouped-query
	// layer writes them). The plan's maps name dims as rank 3's (batch,
	// rows, columns); dim and dims place them in the plan's tensors.
	rank int
	// inputs are the program inputs q, k and v are computed from, and
	// prologues the ops that compute them (row-wise: see rowChain).
	inputs    [3]kernel.TensorID
	prologues [3][]int
	b, m, n   int
	heads     int // rank 4: dim 1, the heads of a group (grid z); else 1
	// multiQuery: at rank 3, K and V are computed from inputs of one head
	// (their batch dim 1, repeated over Q's heads by a broadcast product),
	// so one block may take every head, reading each key once.
	multiQuery bool
	e          int   // V's last dim: the output's
	scores     int   // the op of Q·K
	elem       []int // the ops of f, in order, from Q·K to the weights
	// bias are the ops that compute the other operands of f's binary ops
	// (a mask, ALiBi's slopes times the positions) from biasInputs, in
	// order: terms of the scores' shape or broadcast to it, read a tile of
	// keys at a time beside them.
	bias       []int
	biasInputs []kernel.TensorID
	weights    kernel.TensorID
	sum        int // the op summing the weights over the keys
	pv         int // the op of (weights or normalized weights)·V
	div        int // the op dividing by the sum (before or after ·V)
	divFirst   bool
}

// attentionRule writes attention as flash-decoding does: the keys are
// split among blocks (grid y), and the rows when there are more than 64
// (grid z; at rank 4 grid z walks the heads of a group, or a block takes
// them all, and the rows stay whole), each block walks its share of the
// keys in tiles with
// the for-loop, accumulating f(Q·K)·V and the sum of f(Q·K) for its rows
// in registers, and a second kernel sums the partial results of the
// splits and divides (a split of one needs no second kernel). Dividing
// after ·V instead of before is exact: the sum is constant along each
// row. Each tiling comes in the attentionForms. Its premise: the program
// is exactly that computation on inputs Q, K, V of rank 3 (batch first),
// of rank 4 (two batch dims), or of rank 2 (one head, as a program written
// head by head has it), its one output the attention's. Q, K and V may be
// computed from their inputs by row-wise ops (rowChain), among them a
// product with a factor per head that broadcasts: K and V repeated over a
// group's heads, as grouped-query attention writes them, are read once
// per block and never stored repeated.
func attentionRule(p *program, opts Options) []*kernel.Graph {
	plan, ok := planAttention(p)
	if !ok {
		return nil
	}
	var graphs []*kernel.Graph
	for _, t := range plan.tilings() {
		for _, threads := range opts.Threads {
			for _, form := range attentionForms {
				if form.lateSum && t.grid[1] == 1 || form.prologuesApart && !plan.hasNorms(p.g) {
					continue
				}
				if g, ok := attentionKernels(p, plan, t.grid, t.forloopRange, threads, opts.ReductionDimx, form); ok {
					graphs = append(graphs, g)
				}
			}
		}
	}
	return graphs
}

// attentionTiling is a grid of the attention rule's first kernel and the
// for-loop range its blocks walk their share of the keys in.
type attentionTiling struct {
	grid         block.Dim3
	forloopRange int
}

// tilings lists the rule's tilings: the keys split among 1 to 64 blocks
// (grid y, a divisor of the keys) and walked in keyTiles; grid z the row tiles (more than 64
// rows), or at rank 4 the heads of a group, a block each, or none: one
// block takes a group's heads, reading each key once where a block per
// head reads it once per head. Rank 3's multi-query heads (grid x) are
// offered both ways too.
func (plan *attentionPlan) tilings() []attentionTiling {
	if plan.b > block.MaxGridAxis || plan.heads > block.MaxGridAxis {
		return nil
	}
	zs := []int{1}
	switch {
	case plan.rank == 4 && plan.heads > 1:
		zs = []int{plan.heads, 1}
	case plan.rank < 4 && plan.m > 64:
		zs = nil
		for _, rows := range tileSizes(plan.m, 16, 64) {
			zs = append(zs, plan.m/rows)
		}
	}
	// Multi-query heads (rank 3, K and V of one head) a block each, or
	// all in one block, as rank 4 takes a group's heads; its rows stay
	// whole then.
	xs := []int{plan.b}
	if plan.multiQuery && len(zs) == 1 {
		xs = append(xs, 1)
	}
	var ts []attentionTiling
	// Every split up to 64 that divides the keys: the powers of two of a
	// cache of 4096, the 3, 7 and 21 of one of 777 (whose one power of
	// two, 1, would leave a block per head).
	for split := 1; split <= 64 && split <= plan.n; split++ {
		if plan.n%split != 0 {
			continue
		}
		share := plan.n / split
		for _, x := range xs {
			for _, z := range zs {
				for _, tile := range keyTiles(share) {
					ts = append(ts, attentionTiling{block.Dim3{x, split, z}, share / tile})
				}
			}
		}
	}
	return ts
}

// keyTiles are the tiles of keys a block walks its share of them in: 32,
// 64 and 128 where they divide it, or else the largest divisor of share
// from 8 to 128 (a cache of 1000 keys: 125), none when there is none.
func keyTiles(share int) []int {
	var tiles []int
	for _, t := range []int{32, 64, 128} {
		if share%t == 0 {
			tiles = append(tiles, t)
		}
	}
	if len(tiles) > 0 {
		return tiles
	}
	if t := largestDivisor(share, 8, 128); t > 0 {
		return []int{t}
	}
	return nil
}

// attentionForm says how the rule writes one tiling.
type attentionForm struct {
	// lateSum: the blocks accumulate f(Q·K) itself over their loop, not its
	// row sums, and write it whole; the combining kernel sums it. No
	// reduction inside the loop: the searched forms of gqa that beat the
	// row-sum one do this (kernels with a split only).
	lateSum bool
	// prologuesApart: Q's and V's prologues run before the attention, as
	// the pre-defined kernels of the program's ops, rather than on every
	// tile of every iteration (a norm per tile is a reduction in the loop);
	// built only where a prologue holds a norm (hasNorms).
	prologuesApart bool
}

var attentionForms = []attentionForm{{}, {lateSum: true}, {prologuesApart: true}, {lateSum: true, prologuesApart: true}}

// dim is dim d of a batched tensor (batch, rows, columns) as plan's
// tensors have it: d itself at rank 3, one less without the batch, one
// more past the heads at rank 4.
func (plan *attentionPlan) dim(d int) int {
	switch {
	case d < 0 || plan.rank == 3:
		return d
	case plan.rank == 2:
		return d - 1
	case d == 0:
		return 0
	}
	return d + 1
}

// dims is m, a map of batched tensors, for plan's: without the batch,
// the axis that walks it (grid x, of 1 block) maps no dim; at rank 4,
// grid z walks the heads (dim 1).
func (plan *attentionPlan) dims(m block.Map) block.Map {
	for a, d := range m {
		switch {
		case d == 0 && plan.rank == 2:
			m[a] = -1
		case d > 0:
			m[a] = plan.dim(d)
		}
	}
	if plan.rank == 4 {
		m[2] = 1
	}
	return m
}

// hasNorms reports whether a prologue holds a norm: a reduction on every
// tile of every iteration, which the prologuesApart form runs once. Other
// prologue ops are element-wise and cheap on the tiles; run apart, a
// factor's product would store the repeated K or V the rule avoids.
func (plan *attentionPlan) hasNorms(g *kernel.Graph) bool {
	for _, pro := range plan.prologues {
		for _, i := range pro {
			if g.Ops[i].Kind.Info().Class == ugraph.ClassNorm {
				return true
			}
		}
	}
	return false
}

// planAttention checks the attention rule's premise.
func planAttention(p *program) (*attentionPlan, bool) {
	g := p.g
	if len(g.Outputs) != 1 {
		return nil, false
	}
	plan := &attentionPlan{scores: -1}
	var matmuls []int
	for i, op := range g.Ops {
		if op.Kind == ugraph.OpMatmul {
			matmuls = append(matmuls, i)
		}
	}
	if len(matmuls) != 2 {
		return nil, false
	}
	plan.scores, plan.pv = matmuls[0], matmuls[1]
	qk := g.Ops[plan.scores]
	plan.q, plan.k = qk.In[0], qk.In[1]
	plan.v = g.Ops[plan.pv].In[1]
	sq, sk, sv := p.shape(plan.q), p.shape(plan.k), p.shape(plan.v)
	rank := sq.Rank()
	if rank < 2 || rank > 4 || sk.Rank() != rank || sv.Rank() != rank {
		return nil, false
	}
	for i, t := range []kernel.TensorID{plan.q, plan.k, plan.v} {
		var ok bool
		// K's rows are along the keys, which the blocks split: no norm.
		if plan.inputs[i], plan.prologues[i], ok = rowChain(p, t, i != 1); !ok {
			return nil, false
		}
	}
	plan.rank = rank
	plan.b, plan.heads, plan.m, plan.n, plan.e = 1, 1, sq.Dim(rank-2), sk.Dim(rank-1), sv.Dim(rank-1)
	if rank > 2 {
		plan.b = sq.Dim(0)
	}
	if rank == 4 {
		plan.heads = sq.Dim(1)
	}
	plan.multiQuery = rank == 3 && plan.b > 1 && p.shape(plan.inputs[1]).Dim(0) == 1 && p.shape(plan.inputs[2]).Dim(0) == 1
	for d := range rank - 2 {
		if sk.Dim(d) != sq.Dim(d) || sv.Dim(d) != sq.Dim(d) {
			return nil, false
		}
	}
	if sv.Dim(rank-2) != plan.n {
		return nil, false
	}
	// f: single-reader element-wise ops from Q·K to the weights, unary, or
	// binary with a bias term (biasChain) as the other operand.
	t := qk.Out[0]
	for {
		cs := p.consumers[t]
		if len(cs) != 1 || p.output[t] {
			break
		}
		op := g.Ops[cs[0]]
		if class := op.Kind.Info().Class; class == ugraph.ClassBinary && op.In[0] != op.In[1] && p.shape(op.Out[0]) == p.shape(t) {
			other := op.In[1]
			if other == t {
				other = op.In[0]
			}
			inputs, ops, ok := biasChain(p, other)
			if !ok {
				break
			}
			plan.bias = append(plan.bias, ops...)
			plan.biasInputs = append(plan.biasInputs, inputs...)
		} else if class != ugraph.ClassUnary {
			break
		}
		plan.elem = append(plan.elem, cs[0])
		t = op.Out[0]
	}
	plan.weights = t
	// The weights feed the sum over the keys and, directly or divided by
	// it, the second matmul.
	var sum kernel.TensorID = -1
	plan.sum, plan.div = -1, -1
	cs := p.consumers[t]
	if len(cs) != 2 || p.output[t] {
		return nil, false
	}
	for _, c := range cs {
		op := g.Ops[c]
		switch {
		case op.Kind == ugraph.OpReduction && op.Attr.Dim == rank-1:
			plan.sum, sum = c, op.Out[0]
		case op.Kind == ugraph.OpDiv && op.In[0] == t:
			plan.div, plan.divFirst = c, true
		case c == plan.pv && g.Ops[c].In[0] == t:
		default:
			return nil, false
		}
	}
	if plan.sum < 0 || p.output[sum] {
		return nil, false
	}
	pv := g.Ops[plan.pv]
	if plan.divFirst {
		d := g.Ops[plan.div]
		if d.In[1] != sum || pv.In[0] != d.Out[0] || len(p.consumers[d.Out[0]]) != 1 || len(p.consumers[sum]) != 1 ||
			g.Outputs[0] != pv.Out[0] {
			return nil, false
		}
	} else {
		out := pv.Out[0]
		if pv.In[0] != t || len(p.consumers[out]) != 1 || len(p.consumers[sum]) != 1 {
			return nil, false
		}
		plan.div = p.consumers[out][0]
		d := g.Ops[plan.div]
		if d.Kind != ugraph.OpDiv || d.In[0] != out || d.In[1] != sum || g.Outputs[0] != d.Out[0] {
			return nil, false
		}
	}
	// Three distinct inputs, none of them a factor of a prologue: the
	// blocks tile each its own way.
	in := plan.inputs
	if in[0] == in[1] || in[0] == in[2] || in[1] == in[2] {
		return nil, false
	}
	for _, b := range plan.biasInputs {
		if slices.Contains(in[:], b) {
			return nil, false
		}
	}
	for _, pro := range plan.prologues {
		for _, i := range pro {
			if slices.ContainsFunc(g.Ops[i].In, func(t kernel.TensorID) bool { return p.factor(t) && slices.Contains(in[:], t) }) {
				return nil, false
			}
		}
	}
	// Nothing else: inputs, the prologues, the two matmuls, f, the sum,
	// the div.
	ops := len(g.Inputs()) + 4 + len(plan.elem) + len(plan.bias)
	for _, pro := range plan.prologues {
		ops += len(pro)
	}
	if len(g.Ops) != ops {
		return nil, false
	}
	return plan, true
}

// rowChain follows t back to the program input it is computed from
// through ops that a block can run on whole rows of its tile: unary
// element-wise ops; binary ones whose other operand is a factor (an input
// of extent 1 in the last two dims: one value per head, which
// broadcasts); and, when norms is set, rms_norms over the last dim. Each
// is read by nothing but the next. It returns the input and the ops in
// order.
func rowChain(p *program, t kernel.TensorID, norms bool) (kernel.TensorID, []int, bool) {
	var chain []int
	for !p.isInput(t) {
		i := p.producer[t]
		op := p.g.Ops[i]
		class := op.Kind.Info().Class
		norm := norms && class == ugraph.ClassNorm && op.Attr.Dim == p.shape(t).Rank()-1
		next := op.In[0]
		switch {
		case len(p.consumers[t]) != 1 || p.output[t]:
			return -1, nil, false
		case class == ugraph.ClassUnary || norm:
		case class == ugraph.ClassBinary && p.factor(op.In[1]) && op.In[0] != op.In[1]:
		case class == ugraph.ClassBinary && p.factor(op.In[0]) && op.In[0] != op.In[1]:
			next = op.In[1]
		default:
			return -1, nil, false
		}
		chain = append([]int{i}, chain...)
		t = next
	}
	return t, chain, true
}

// biasChain follows t, an operand of f beside the scores, back to the
// program inputs it is computed from through element-wise ops, each read
// by nothing but the next: a mask or bias input, or ALiBi's slopes times
// the positions. It returns the inputs and the ops in order (operands
// first).
func biasChain(p *program, t kernel.TensorID) ([]kernel.TensorID, []int, bool) {
	if p.output[t] {
		return nil, nil, false
	}
	if p.isInput(t) {
		return []kernel.TensorID{t}, nil, true
	}
	i := p.producer[t]
	op := p.g.Ops[i]
	if class := op.Kind.Info().Class; len(p.consumers[t]) != 1 || class != ugraph.ClassUnary && class != ugraph.ClassBinary {
		return nil, nil, false
	}
	var inputs []kernel.TensorID
	var ops []int
	for j, x := range op.In {
		if j > 0 && x == op.In[0] {
			continue
		}
		xin, xops, ok := biasChain(p, x)
		if !ok {
			return nil, nil, false
		}
		inputs, ops = append(inputs, xin...), append(ops, xops...)
	}
	return inputs, append(ops, i), true
}

// factor reports whether t is an input with one value for each row and
// column of a tile (of extent 1 in its last two dims).
func (p *program) factor(t kernel.TensorID) bool {
	s := p.shape(t)
	return p.isInput(t) && s.Rank() >= 2 && s.Dim(s.Rank()-1) == 1 && s.Dim(s.Rank()-2) == 1
}

// attentionKernels builds the attention rule's graph for one split of the
// keys and for-loop range.
func attentionKernels(p *program, plan *attentionPlan, grid block.Dim3, forloopRange int, threads block.Dim3, reductionDimx int, form attentionForm) (*kernel.Graph, bool) {
	split := grid[1]
	k, ok := newKernelBuilder(p, grid, threads, forloopRange, reductionDimx)
	if !ok {
		return nil, false
	}
	maps := [3]block.Map{plan.dims(block.Map{0, -1, 1}), plan.dims(block.Map{0, 2, -1}), plan.dims(block.Map{0, 1, -1})}
	fmaps := [3]int{-1, plan.dim(2), plan.dim(1)}
	matmulOperands := [3]kernel.TensorID{plan.q, plan.k, plan.v}
	for i, in := range plan.inputs {
		if form.prologuesApart {
			k.pre = append(k.pre, plan.prologues[i]...)
			in = matmulOperands[i]
		}
		tile, ok := k.load(in, broadcast(p.shape(in), grid, maps[i]), fmaps[i])
		if !ok {
			return nil, false
		}
		k.tiles[in] = tile
		if form.prologuesApart {
			continue
		}
		for _, op := range plan.prologues[i] {
			// A factor's tile: one value per block (the same for every
			// chain that reads it).
			for _, t := range p.g.Ops[op].In {
				if _, done := k.tiles[t]; !done && p.factor(t) && !k.loadWalked(t, broadcast(p.shape(t), grid, maps[i]), -1) {
					return nil, false
				}
			}
			if !k.compute(op) {
				return nil, false
			}
		}
	}
	vt := k.tiles[plan.v]
	if !k.compute(plan.scores) {
		return nil, false
	}
	// The bias terms: a tile of the scores' rows and keys each iteration
	// (or the one value a broadcast dim has).
	scoresMap := plan.dims(block.Map{0, 2, 1})
	for _, t := range plan.biasInputs {
		if !k.loadWalked(t, broadcast(p.shape(t), grid, scoresMap), plan.dim(2)) {
			return nil, false
		}
	}
	for _, i := range plan.bias {
		if !k.compute(i) {
			return nil, false
		}
	}
	for _, i := range plan.elem {
		if !k.compute(i) {
			return nil, false
		}
	}
	w := k.tiles[plan.weights]
	pv, ok := k.add(ugraph.OpMatmul, ugraph.Attr{}, w, vt)
	if !ok {
		return nil, false
	}
	outSum, ok1 := k.add(ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumNone}, pv)
	rowAccum := ugraph.AccumSum
	if form.lateSum {
		rowAccum = ugraph.AccumNone
	}
	rowSum, ok2 := k.add(ugraph.OpForloopAccum, ugraph.Attr{Accum: rowAccum}, w)
	if !ok1 || !ok2 {
		return nil, false
	}
	out := p.g.Outputs[0]
	if split == 1 {
		o, ok := k.add(ugraph.OpDiv, ugraph.Attr{}, outSum, rowSum)
		if !ok || !k.store(out, o, plan.dims(block.Map{0, -1, 1})) {
			return nil, false
		}
		return k.graph()
	}
	// The partial results, side by side along their last dims: b×m×(split·e)
	// and b×m×split.
	if addOutput(k.b, outSum, plan.dims(block.Map{0, 2, 1})) != nil || addOutput(k.b, rowSum, plan.dims(block.Map{0, 2, 1})) != nil {
		return nil, false
	}
	return k.combined(plan, split, threads)
}

// combined finishes the split attention: k's kernel writes the partial
// results, and a second kernel (a few rows of the output per block) folds the
// split's partial outputs (sum_todimx with reduction_dimx e) and sums,
// and divides.
func (k *kernelBuilder) combined(plan *attentionPlan, split int, threads block.Dim3) (*kernel.Graph, bool) {
	pg := k.p.g
	g, _, parts, ok := k.place()
	if !ok {
		return nil, false
	}
	rows := plan.m
	for rows%2 == 0 && (rows > 64 || plan.b*plan.heads*(plan.m/rows) < 128) {
		rows /= 2
	}
	c, err := block.New(block.Dim3{plan.b, plan.m / rows, plan.heads}, threads, 1, plan.e)
	if err != nil {
		return nil, false
	}
	rowMap := plan.dims(block.Map{0, 1, -1})
	op, err1 := addInput(c, g.Tensors[parts[0]].Shape, g.Tensors[parts[0]].DType, rowMap, -1)
	sp, err2 := addInput(c, g.Tensors[parts[1]].Shape, g.Tensors[parts[1]].DType, rowMap, -1)
	if err1 != nil || err2 != nil {
		return nil, false
	}
	os, err1 := c.Add(ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumSumToDimx}, op)
	ss, err2 := c.Add(ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumSum}, sp)
	if err1 != nil || err2 != nil {
		return nil, false
	}
	o, err := c.Add(ugraph.OpDiv, ugraph.Attr{}, os, ss)
	if err != nil || addOutput(c, o, rowMap) != nil {
		return nil, false
	}
	outs, err := g.Customized(parts, c)
	if err != nil || g.Tensors[outs[0]].Shape != pg.Tensors[pg.Outputs[0]].Shape || g.MarkOutput(outs[0]) != nil {
		return nil, false
	}
	return g, true
}
