package search

import (
	"slices"
	"unique"

	"github.com/mirage-go/mirage/absexpr"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// blockConfig is how a graph-defined kernel is launched and how each of its
// inputs is tiled: the part of a threadblock graph fixed before its ops.
type blockConfig struct {
	grid, threads block.Dim3
	forloop       int
	imaps         []block.Map // per input
	fmaps         []int       // per input
}

// blockConfigs returns the configurations for a customized op reading ins,
// in a fixed order. Inputs are tiled by dimension classes (dims.go): each
// grid axis of size > 1 splits one class present among the inputs (distinct
// axes, distinct classes), and the for-loop walks one class or none; every
// input with a dim of the chosen class is split (walked) along it, the
// others replicated. The for-loop range is 1 exactly when nothing is
// walked. When the customized op is to be the kernel graph's last (last),
// its outputs are the program's: each grid axis then splits a class of the
// program's outputs, for blocks that split another class (the summed keys
// of attention, say) write partial results, which a last kernel cannot
// leave unsummed. The imaps and fmaps so made must also be in the config's lists
// (a program's superoptimize arguments restrict them). Divisibility is left
// to the builders.
func (s *searcher) blockConfigs(g *kernel.Graph, ins []kernel.TensorID, last bool) []blockConfig {
	cfg := &s.cfg
	cls, outCls := dimClassesAndOutputs(s.program, g)
	var present []int32 // classes of the inputs' dims, in order of appearance
	for _, t := range ins {
		for _, c := range cls[t] {
			if !slices.Contains(present, c) {
				present = append(present, c)
			}
		}
	}
	// dimsOf lists the dims of input i in class c, or {-1} when it has none.
	dimsOf := func(i int, c int32) []int {
		var ds []int
		for d, dc := range cls[ins[i]] {
			if dc == c {
				ds = append(ds, d)
			}
		}
		if len(ds) == 0 {
			ds = []int{-1}
		}
		return ds
	}
	n := len(ins)
	var confs []blockConfig
	emit := func(grid block.Dim3, f int, imaps []block.Map, fmaps []int) {
		for i := range n {
			if !slices.Contains(cfg.IMaps, imaps[i]) || !slices.Contains(cfg.FMaps, fmaps[i]) {
				return
			}
		}
		for _, th := range cfg.Threads {
			confs = append(confs, blockConfig{grid: grid, threads: th, forloop: f,
				imaps: slices.Clone(imaps), fmaps: slices.Clone(fmaps)})
		}
	}
	splittable := present
	if last {
		splittable = nil
		for _, c := range present {
			if slices.Contains(outCls, c) {
				splittable = append(splittable, c)
			}
		}
	}
	for _, grid := range cfg.Grids {
		for _, split := range classAssignments(grid, splittable) {
			for w := -1; w < len(present); w++ {
				ranges := []int{1}
				if w >= 0 {
					ranges = cfg.FRanges
				}
				for _, f := range ranges {
					if w >= 0 && f == 1 {
						continue
					}
					imaps := make([]block.Map, n)
					fmaps := make([]int, n)
					// expand picks, input by input and axis by axis (3 is
					// the for-loop), the dim of the chosen class.
					var expand func(i, a int)
					expand = func(i, a int) {
						switch {
						case i == n:
							emit(grid, f, imaps, fmaps)
						case a < 3 && grid[a] == 1:
							imaps[i][a] = -1
							expand(i, a+1)
						case a < 3:
							for _, d := range dimsOf(i, split[a]) {
								imaps[i][a] = d
								expand(i, a+1)
							}
						case w < 0:
							fmaps[i] = -1
							expand(i+1, 0)
						default:
							for _, d := range dimsOf(i, present[w]) {
								fmaps[i] = d
								expand(i+1, 0)
							}
						}
					}
					expand(0, 0)
				}
			}
		}
	}
	return confs
}

// classAssignments returns every way to give each axis of size > 1 of grid
// its own class from present (entries of axes of size 1 are unused).
func classAssignments(grid block.Dim3, present []int32) [][3]int32 {
	var out [][3]int32
	var cur [3]int32
	var rec func(a int)
	rec = func(a int) {
		if a == 3 {
			out = append(out, cur)
			return
		}
		if grid[a] == 1 {
			cur[a] = -1
			rec(a + 1)
			return
		}
		for _, c := range present {
			if slices.Contains(cur[:a], c) {
				continue
			}
			cur[a] = c
			rec(a + 1)
		}
	}
	rec(0)
	return out
}

// blockState is a threadblock graph under construction inside a kernel
// state, with what the search tracks per tile and op.
type blockState struct {
	k    *kernelState
	ins  []kernel.TensorID
	g    *block.Graph
	expr []*absexpr.Expr // per tile
	uses []int32         // per tile: how many ops consume it
	keys []opKey         // per op
	done []completeBlock // the complete graphs found, in order
}

// completeBlock is a threadblock graph ready to attach, with the
// expressions of its outputs.
type completeBlock struct {
	g        *block.Graph
	hash     uint64 // block.Hash(g), computed once for every replay
	outExprs []*absexpr.Expr
}

// blockSearchKey is everything the threadblock search of one customized op
// depends on: the configuration and, per input, its expression, shape and
// dtype (not which kernel tensor it is, nor how that was computed). Below a
// first graph-defined kernel, the second's search meets the same key for
// many first kernels (other grids computing the same partial results, say),
// and replays the graphs found the first time instead of searching again.
type blockSearchKey struct {
	grid, threads block.Dim3
	forloop       int
	n             int
	imaps         [len(opKey{}.in)]block.Map
	fmaps         [len(opKey{}.in)]int
	exprs         [len(opKey{}.in)]unique.Handle[string]
	shapes        [len(opKey{}.in)]ugraph.Shape
	dtypes        [len(opKey{}.in)]ugraph.DType
}

// maxReplayedBlocks bounds the complete threadblock graphs kept for replay,
// over all keys (each costs a kilobyte or two).
const maxReplayedBlocks = 1 << 19

func (k *kernelState) blockSearchKey(ins []kernel.TensorID, conf blockConfig) blockSearchKey {
	key := blockSearchKey{grid: conf.grid, threads: conf.threads, forloop: conf.forloop, n: len(ins)}
	for i, t := range ins {
		key.imaps[i], key.fmaps[i] = conf.imaps[i], conf.fmaps[i]
		if e := k.expr[t]; e != nil {
			key.exprs[i] = e.Handle()
		}
		key.shapes[i], key.dtypes[i] = k.g.Tensors[t].Shape, k.g.Tensors[t].DType
	}
	return key
}

// openBlock starts a customized op on ins with configuration conf, explores
// its threadblock graphs and, below each complete one, the kernel graph.
// A search already done for the same key is replayed.
func (k *kernelState) openBlock(ins []kernel.TensorID, conf blockConfig) {
	s := k.s
	key := k.blockSearchKey(ins, conf)
	if done, ok := s.blockSearches.Load(key); ok {
		for _, c := range done.([]completeBlock) {
			k.attach(ins, c)
			if s.stop() {
				return
			}
		}
		return
	}
	g, err := block.New(conf.grid, conf.threads, conf.forloop, s.cfg.ReductionDimx)
	if err != nil {
		s.prunedShape.Add(1)
		return
	}
	b := &blockState{k: k, ins: ins, g: g}
	defer func() {
		// A search cut short is not complete: only a whole one is kept.
		if !s.stop() && s.replayedBlocks.Add(int64(len(b.done))) <= maxReplayedBlocks {
			s.blockSearches.Store(key, b.done)
		}
	}()
	for i, t := range ins {
		dt := k.g.Tensors[t]
		if _, err := g.AddInput(dt.Shape, dt.DType, conf.imaps[i], conf.fmaps[i]); err != nil {
			s.prunedShape.Add(1)
			return
		}
		b.expr = append(b.expr, k.expr[t]) // grid and for-loop tiling are invisible to expressions
		b.uses = append(b.uses, 0)
		b.keys = append(b.keys, keyOf(ugraph.OpInput, ugraph.Attr{}, nil, 0))
	}
	s.states.Add(1)
	if !b.canFinish() {
		s.prunedDead.Add(1)
		return
	}
	b.explore()
}

// opsLeft is how many more ops (output ops aside) the size limit allows.
func (b *blockState) opsLeft() int { return b.k.s.cfg.MaxBlockOps - len(b.g.Ops) }

// canFinish reports whether the open tiles (those no op consumes) can still
// all become outputs within the size limits: each op closes at most one
// open tile net, and turns at most one per-iteration open tile into a
// post-loop one (an accumulator, or a binary op merging two).
func (b *blockState) canFinish() bool {
	open, inLoop := 0, 0
	for t, n := range b.uses {
		if n == 0 {
			open++
			if !b.g.Tensors[t].PostLoop {
				inLoop++
			}
		}
	}
	left := b.opsLeft()
	return inLoop <= left && open-b.k.s.cfg.MaxBlockOutputs <= left
}

// explore tries to finish b into a customized op, then extends it by every
// op the config allows, depth first.
func (b *blockState) explore() {
	s := b.k.s
	if s.stop() {
		return
	}
	b.finish()
	if b.opsLeft() <= 0 {
		return
	}
	for _, c := range s.cfg.BlockOps {
		b.eachOperands(c, func(in []block.TensorID) { b.tryOp(c, in) })
	}
}

// eachOperands calls f with every operand list for c in canonical order
// after the last op. The slice is reused between calls.
func (b *blockState) eachOperands(c OpChoice, f func([]block.TensorID)) {
	n := block.TensorID(len(b.g.Tensors))
	last := b.keys[len(b.keys)-1]
	info := c.Kind.Info()
	in := make([]block.TensorID, info.Arity)
	var ids [2]int32
	try := func() {
		for i, t := range in {
			ids[i] = int32(t)
		}
		if keyOf(c.Kind, c.Attr, ids[:len(in)], 0).compare(last) <= 0 {
			b.k.s.prunedOrder.Add(1)
			return
		}
		f(in)
	}
	switch len(in) {
	case 1:
		for a := range n {
			if c.Kind == ugraph.OpForloopAccum && b.g.Tensors[a].PostLoop {
				continue // accumulators take per-iteration tiles
			}
			in[0] = a
			try()
		}
	case 2:
		for a := range n {
			for c2 := range n {
				if info.Commutative && c2 < a {
					continue
				}
				if b.g.Tensors[a].PostLoop != b.g.Tensors[c2].PostLoop {
					continue // never valid: one phase per op
				}
				in[0], in[1] = a, c2
				try()
			}
		}
	}
}

// tryOp adds block op c on in, explores below it and removes it.
func (b *blockState) tryOp(c OpChoice, in []block.TensorID) {
	s := b.k.s
	e, ok := s.exprs.blockOp(b, c, in)
	if !ok {
		s.prunedAbsexpr.Add(1)
		return
	}
	_, err := b.g.Add(c.Kind, c.Attr, in...)
	if err != nil {
		s.prunedShape.Add(1)
		return
	}
	var ids [2]int32
	for i, t := range in {
		ids[i] = int32(t)
		b.uses[t]++
	}
	b.expr = append(b.expr, e)
	b.uses = append(b.uses, 0)
	b.keys = append(b.keys, keyOf(c.Kind, c.Attr, ids[:len(in)], 0))
	s.states.Add(1)
	if b.canFinish() {
		b.explore()
	} else {
		s.prunedDead.Add(1)
	}
	b.pop()
}

func (b *blockState) pop() {
	op := b.g.Ops[len(b.g.Ops)-1]
	for _, t := range op.Operands() {
		b.uses[t]--
	}
	b.g.Pop()
	n := len(b.g.Tensors)
	b.expr, b.uses = b.expr[:n], b.uses[:n]
	b.keys = b.keys[:len(b.keys)-1]
}

// finish completes b when every open tile is post-loop and there are at
// most MaxBlockOutputs of them: each becomes an output, under each output
// map that is canonical for the grid, and the resulting customized op is
// added to the kernel graph.
func (b *blockState) finish() {
	s := b.k.s
	var open []block.TensorID
	for t, n := range b.uses {
		if n > 0 {
			continue
		}
		if !b.g.Tensors[t].PostLoop {
			return
		}
		open = append(open, block.TensorID(t))
	}
	if len(open) == 0 || len(open) > s.cfg.MaxBlockOutputs {
		return
	}
	if b.copiesOnly() {
		s.prunedDead.Add(1)
		return
	}
	outExprs := make([]*absexpr.Expr, len(open))
	for i, t := range open {
		outExprs[i] = b.expr[t]
	}
	for _, omap := range s.cfg.OMaps {
		if !omapFits(omap, b.g.Grid) {
			continue
		}
		g := b.g.Clone()
		ok := true
		for _, t := range open {
			if err := g.AddOutput(t, omap); err != nil {
				ok = false
				break
			}
		}
		if !ok {
			s.prunedShape.Add(1)
			continue
		}
		if !s.fitsSmem(g) {
			s.prunedShape.Add(1)
			continue
		}
		c := completeBlock{g: g, hash: block.Hash(g), outExprs: outExprs}
		b.done = append(b.done, c)
		b.k.attach(b.ins, c)
		if s.stop() {
			return
		}
	}
}

// copiesOnly reports whether b computes nothing: inputs stored as they
// were loaded, through accumulators that change no value (none, or sum,
// mean or sum_todimx over a single iteration of a tile already dimx wide:
// those whose expression is their operand's). Such a kernel only copies
// (or re-tiles) tensors that the kernel graph could read directly, and
// below it the search would explore again, on the copies, everything it
// explores on the originals.
func (b *blockState) copiesOnly() bool {
	for _, op := range b.g.Ops {
		switch op.Kind {
		case ugraph.OpInput:
		case ugraph.OpForloopAccum:
			x, y := b.expr[op.In[0]], b.expr[op.Out]
			if x == nil || y == nil || !x.Equal(y) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// omapFits reports whether m is a canonical output map for grid: every axis
// of size > 1 mapped (the builder checks that too), axes of size 1 not.
func omapFits(m block.Map, grid block.Dim3) bool {
	for a, d := range m {
		if (grid[a] == 1) != (d == -1) {
			return false
		}
	}
	return true
}
