package search

import (
	"math/bits"
	"slices"

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
	classes       *inputClasses
	split         [3]int8 // per grid axis, the label of the class it splits; -1 for none
	id            uint32  // the interned confKey
	list          uint32  // the interned configsKey of the list it is in (blockConfigs)
}

// blockConfigs returns the configurations for a customized op reading ins,
// in a fixed order. Inputs are tiled by dimension classes (dims.go): each
// grid axis of size > 1 splits one class present among the inputs (distinct
// axes, distinct classes), and the for-loop walks one class or none; every
// input with a dim of the chosen class is split (walked) along it, the
// others replicated. The for-loop range is 1 exactly when nothing is
// walked. Three rules narrow the choice:
//
//   - The for-loop never walks a free class (classes.free). Every post-loop
//     tile is a sum over the iterations, which would add up values of
//     different positions of the class, where a program output depends on
//     one position only.
//   - When the customized op is to be the kernel graph's last (last), its
//     outputs are the program's: each grid axis then splits a class of the
//     program's outputs, for blocks that split another class (the summed
//     keys of attention, say) write partial results, which a last kernel
//     cannot leave unsummed.
//   - Of two configurations that differ only by which grid axis splits
//     which class, one is kept (mirrored).
//
// The imaps and fmaps so made must also be in the config's lists (a
// program's superoptimize arguments restrict them). Divisibility is
// checked when a configuration is opened (kernelState.divides).
//
// The configurations depend only on the classes of the inputs' dims (which
// are free, which are the outputs'), and last: they are computed once for
// each such signature (configsKey) and shared, read-only. Each is numbered
// (confKey) for blockSearchKey.
func (s *searcher) blockConfigs(g *kernel.Graph, ins []kernel.TensorID, last bool) []blockConfig {
	classes := classify(s.program, g)
	inCls, present := classes.inputs(ins) // present: the classes by label
	key := configsKey{n: len(ins), last: last}
	for i, labels := range inCls.label {
		copy(key.labels[i][:], labels)
	}
	for l, c := range present {
		if inCls.free[l] {
			key.free |= 1 << l
		}
		if slices.Contains(classes.outputs, c) {
			key.outputs |= 1 << l
		}
	}
	if confs, ok := s.configLists.Load(key); ok {
		return confs.([]blockConfig)
	}
	confs := s.makeBlockConfigs(classes, ins, inCls, present, last)
	list := s.intern(key)
	for i, c := range confs {
		confs[i].list = list
		ck := confKey{grid: c.grid, threads: c.threads, forloop: c.forloop, n: len(ins), labels: key.labels, free: key.free}
		copy(ck.imaps[:], c.imaps)
		copy(ck.fmaps[:], c.fmaps)
		confs[i].id = s.intern(ck)
	}
	actual, _ := s.configLists.LoadOrStore(key, confs)
	return actual.([]blockConfig)
}

// confKey is a configuration as its threadblock searches see it: its
// launch parameters and maps, and the classes of the inputs' dims.
type confKey struct {
	grid, threads block.Dim3
	forloop, n    int
	imaps         [len(opKey{}.in)]block.Map
	fmaps         [len(opKey{}.in)]int
	labels        [len(opKey{}.in)][ugraph.MaxRank]int8
	free          uint64
}

// configsKey is what blockConfigs depends on (besides the Config).
type configsKey struct {
	n       int
	labels  [len(opKey{}.in)][ugraph.MaxRank]int8 // inputClasses.label
	free    uint64                                // bit l: label l is a free class
	outputs uint64                                // bit l: label l is a class of the program's outputs
	last    bool
}

func (s *searcher) makeBlockConfigs(classes classes, ins []kernel.TensorID, inCls *inputClasses, present []int32, last bool) []blockConfig {
	cfg := &s.cfg
	cls, outCls := classes.of, classes.outputs
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
	grids := cfg.Grids
	var confs []blockConfig
	emit := func(grid block.Dim3, split [3]int32, f int, imaps []block.Map, fmaps []int) {
		for i := range n {
			if !slices.Contains(cfg.IMaps, imaps[i]) || !slices.Contains(cfg.FMaps, fmaps[i]) {
				return
			}
		}
		var labels [3]int8
		for a, c := range split {
			labels[a] = int8(slices.Index(present, c)) // -1 for none
		}
		if mirrored(grid, labels, grids) {
			return
		}
		// One block size: the others compute the same, and the best
		// candidates are sized after (sizeAll).
		confs = append(confs, blockConfig{grid: grid, threads: cfg.Threads[0], forloop: f,
			imaps: slices.Clone(imaps), fmaps: slices.Clone(fmaps), classes: inCls, split: labels})
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
	for _, grid := range grids {
		for _, split := range classAssignments(grid, splittable) {
			for w := -1; w < len(present); w++ {
				if w >= 0 && slices.Contains(classes.free, present[w]) {
					continue // see above
				}
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
							emit(grid, split, f, imaps, fmaps)
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

// mirrored reports whether the configuration with grid axes a < b swapped
// (grid and class labels split) is also generated, and comes first: it
// is the same kernel with its blocks numbered the other way round, so only
// the one that splits the lower label along the lower axis is kept.
func mirrored(grid block.Dim3, split [3]int8, grids []block.Dim3) bool {
	for a := range 3 {
		for b := a + 1; b < 3; b++ {
			if grid[a] == 1 || grid[b] == 1 || split[a] < split[b] {
				continue
			}
			swapped := grid
			swapped[a], swapped[b] = grid[b], grid[a]
			if slices.Contains(grids, swapped) {
				return true
			}
		}
	}
	return false
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
	k   *kernelState
	ins []kernel.TensorID
	// confs are the configurations of the group enumerated together
	// (group.go) and graphs their block graphs. Configurations whose
	// shape rules agree (shapePattern) follow one of them, rep[j]: only
	// the representatives' graphs take the ops as they are tried, the
	// others catch up when they finish (catchUp). alive is the set of
	// representatives whose graphs hold every op on the path; each graph
	// alive before the last op holds the ops up to it. g is the first
	// alive graph: the tiles' expressions, phases and uses are the same in
	// all of them.
	confs  []blockConfig
	graphs []*block.Graph
	rep    []int
	alive  uint64
	alives []uint64 // a stack: alive before each op on the path
	g      *block.Graph
	tiles  []tensorInfo      // per tile of g; ids are in the kernel state's memo
	cands  []blockCand       // a stack of the candidate ops of the states on the path (addCands)
	done   [][]completeBlock // per configuration, the complete graphs found, in order
	// want, when the customized op is the kernel graph's last, are the
	// shapes its outputs must have, sorted (kernelState.lastOutputs).
	want []ugraph.Shape
}

// completeBlock is a threadblock graph ready to attach, with the
// expressions of its outputs.
type completeBlock struct {
	g        *block.Graph
	hash     uint64 // block.Hash(g), computed once for every replay
	outExprs []*absexpr.Expr
}

// blockSearchKey is everything the threadblock search of one customized op
// depends on: its inputs (inputSig) and the configuration (confKey), each
// interned. Below a first graph-defined kernel, the second's search
// meets the same key for many first kernels (other grids computing the
// same partial results, say), and replays the graphs found the first time
// instead of searching again.
type blockSearchKey struct {
	inputs, conf uint32
}

// fruitlessKey names the searches of a customized op on inputs (an
// interned inputSig) under a list of configurations (blockConfig.list).
type fruitlessKey struct {
	inputs, list uint32
}

// inputSig is what a customized op's search needs to know of its inputs:
// per input, its expression, shape and dtype (not which kernel tensor it
// is, nor how that was computed), and the shapes its outputs must have
// (blockState.want). searcher.intern numbers them.
type inputSig struct {
	n      int
	exprs  [len(opKey{}.in)]uint64
	shapes [len(opKey{}.in)]ugraph.Shape
	dtypes [len(opKey{}.in)]ugraph.DType
	nwant  int
	want   [maxOutputs]ugraph.Shape
}

// openInputs are the inputs of a customized op about to be opened.
type openInputs struct {
	ins  []kernel.TensorID
	want []ugraph.Shape // blockState.want
	sig  uint32         // the interned inputSig
}

// openInputs describes ins as the inputs of a customized op to add to k;
// false when that op cannot complete the graph.
func (k *kernelState) openInputs(ins []kernel.TensorID) (openInputs, bool) {
	want, ok := k.lastOutputs(ins)
	if !ok {
		return openInputs{}, false
	}
	sig := inputSig{n: len(ins), nwant: len(want)}
	copy(sig.want[:], want)
	for i, t := range ins {
		if e := k.tensors[t].expr; e != nil {
			sig.exprs[i] = e.ID()
		}
		sig.shapes[i], sig.dtypes[i] = k.g.Tensors[t].Shape, k.g.Tensors[t].DType
	}
	return openInputs{ins: ins, want: want, sig: k.s.intern(sig)}, true
}

// intern numbers input signatures and configurations (distinct numbers
// for distinct keys, the same for equal ones in every worker).
func (s *searcher) intern(key any) uint32 {
	if id, ok := s.interned.Load(key); ok {
		return id.(uint32)
	}
	id, _ := s.interned.LoadOrStore(key, s.nextID.Add(1))
	return id.(uint32)
}

// MaxKernelInputs and MaxKernelOutputs bound Config.MaxBlockInputs and
// Config.MaxBlockOutputs: the inputs and outputs of a graph-defined kernel
// the generator can hold.
const (
	MaxKernelInputs  = len(opKey{}.in)
	MaxKernelOutputs = maxOutputs
)

// maxOutputs bounds Config.MaxBlockOutputs (blockSearchKey holds as many
// output shapes).
const maxOutputs = 4

// lastOutputs returns, when a customized op on ins is to be the kernel
// graph's last op, the shapes its outputs must have: those of the
// program's outputs that the open tensors it leaves do not have. It
// reports false when no outputs can complete the graph.
func (k *kernelState) lastOutputs(ins []kernel.TensorID) ([]ugraph.Shape, bool) {
	if k.opsLeft() != 1 {
		return nil, true
	}
	want := slices.Clone(k.s.outShapes)
	for _, t := range k.sinks() {
		if slices.Contains(ins, t) {
			continue
		}
		i := slices.Index(want, k.g.Tensors[t].Shape)
		if i < 0 {
			return nil, false
		}
		want = slices.Delete(want, i, i+1)
	}
	return want, len(want) > 0 && len(want) <= k.s.cfg.MaxBlockOutputs
}

// maxReplayedBlocks bounds the complete threadblock graphs kept for replay,
// over all keys (each costs a kilobyte or two).
const maxReplayedBlocks = 1 << 19

// openBlocks starts a customized op on in.ins with each configuration of
// confs, explores its threadblock graphs and, below each complete one, the
// kernel graph. A search already done for the same key is replayed; the
// others are enumerated in groups (group.go).
//
// Most last kernels' input sets give nothing under any configuration
// (reaches): those are told apart at once when met again.
func (k *kernelState) openBlocks(in openInputs, confs []blockConfig) {
	s := k.s
	if len(confs) == 0 {
		return
	}
	fruitless := fruitlessKey{inputs: in.sig, list: confs[0].list}
	if _, ok := s.fruitless.load(fruitless); ok {
		k.tally.dead++
		return
	}
	if in.want != nil && !k.unsizedReaches(in) {
		k.tally.dead++
		s.fruitless.store(fruitless, struct{}{})
		return
	}
	if !k.openConfs(in, confs) && !s.stop() {
		s.fruitless.store(fruitless, struct{}{})
	}
}

// openConfs is openBlocks for some of a list's configurations. It reports
// false when none can give a graph.
func (k *kernelState) openConfs(in openInputs, confs []blockConfig) bool {
	s := k.s
	var todo []blockConfig
	found := false
	for _, conf := range confs {
		if done, ok := s.blockSearches.load(blockSearchKey{inputs: in.sig, conf: conf.id}); ok {
			found = found || len(done) > 0
			for _, c := range done {
				k.attach(in.ins, c)
				if s.stop() {
					return true
				}
			}
			continue
		}
		if in.want != nil {
			if tiles, ok := k.tileShapes(in.ins, conf); ok && !k.reaches(in, conf, tiles[:len(in.ins)]) {
				k.tally.dead++
				continue
			}
		}
		todo = append(todo, conf)
	}
	for _, group := range k.enumGroups(in.ins, todo) {
		k.searchGroup(in, group)
		if s.stop() {
			break
		}
	}
	return found || len(todo) > 0
}

// searchGroup enumerates the threadblock graphs of a customized op on
// in.ins under the configurations confs together, and keeps each
// configuration's complete graphs for replay.
func (k *kernelState) searchGroup(in openInputs, confs []blockConfig) {
	s := k.s
	b := k.newBlockState(in.ins, confs, in.want)
	if len(b.confs) == 0 {
		return
	}
	defer func() {
		// A search cut short is not complete: only a whole one is kept.
		if s.stop() {
			return
		}
		for j, conf := range b.confs {
			if s.replayedBlocks.Add(int64(len(b.done[j]))) <= maxReplayedBlocks {
				s.blockSearches.store(blockSearchKey{inputs: in.sig, conf: conf.id}, b.done[j])
			}
		}
	}()
	k.countState()
	if !b.canFinish() {
		k.tally.dead++
		return
	}
	b.explore(0, len(b.cands))
}

// tileShapes returns the tiles conf cuts ins into, and whether its grid
// and for-loop divide the dims of ins they split, into tiles of at least
// minWalkedTile along a dim the for-loop walks: most configurations that
// the builder would reject fail this, which costs no allocation.
func (k *kernelState) tileShapes(ins []kernel.TensorID, conf blockConfig) (tiles [MaxKernelInputs]ugraph.Shape, ok bool) {
	for i, t := range ins {
		tile, failed := block.TileShape(k.g.Tensors[t].Shape, conf.grid, conf.forloop, conf.imaps[i], conf.fmaps[i])
		if failed >= 0 {
			return tiles, false
		}
		if f := conf.fmaps[i]; f >= 0 && conf.forloop > 1 && tile.Dim(f) < minWalkedTile {
			return tiles, false
		}
		tiles[i] = tile
	}
	return tiles, true
}

// minWalkedTile bounds the tiles of a walked dim from below: a matmul's K
// tile below the tensor-core instruction's K (16) cannot use it, and a
// for-loop of more, smaller steps only adds steps. (The ranges derived for
// a real model's K, Complete, would otherwise cut a dim the grid splits
// already into slivers of 4 or 8.)
const minWalkedTile = 16

// newBlockState starts the threadblock graphs of a customized op on ins
// with the configurations confs (a group: enumGroups): their input ops,
// and the candidates for their first op. Configurations whose input ops
// the builder rejects are left out of b.confs.
func (k *kernelState) newBlockState(ins []kernel.TensorID, confs []blockConfig, want []ugraph.Shape) *blockState {
	// One block state per nesting level is reused, with its memory.
	for len(k.blocks) <= k.ncust {
		k.blocks = append(k.blocks, &blockState{})
	}
	b := k.blocks[k.ncust]
	*b = blockState{k: k, ins: ins, want: want, confs: b.confs[:0], graphs: b.graphs,
		rep: b.rep[:0], alives: b.alives[:0], tiles: b.tiles[:0], cands: b.cands[:0]}
	for _, conf := range confs {
		n := len(b.confs)
		if len(b.graphs) == n {
			b.graphs = append(b.graphs, new(block.Graph))
		}
		if k.openGraph(b.graphs[n], ins, conf) != nil {
			k.tally.shape++
			continue
		}
		b.confs = append(b.confs, conf)
	}
	if len(b.confs) == 0 {
		return b
	}
	reps := map[shapePattern]int{}
	for j := range b.confs {
		p := k.s.shapePattern(b.graphs[j], len(ins))
		r, ok := reps[p]
		if !ok {
			r = j
			reps[p] = j
			b.alive |= 1 << j
		}
		b.rep = append(b.rep, r)
	}
	b.g = b.graphs[0]
	b.done = make([][]completeBlock, len(b.confs))
	conf := b.confs[0]
	for i, t := range ins {
		// Grid and for-loop tiling are invisible to expressions.
		b.pushTile(block.TensorID(i), k.tensors[t].expr, block.InputVaries(conf.forloop, conf.fmaps[i]))
	}
	b.inputCands()
	return b
}

// openGraph resets g to the input ops of a customized op on ins with
// configuration conf.
func (k *kernelState) openGraph(g *block.Graph, ins []kernel.TensorID, conf blockConfig) error {
	if err := g.Reset(conf.grid, conf.threads, conf.forloop, k.s.cfg.ReductionDimx); err != nil {
		return err
	}
	for i, t := range ins {
		dt := k.g.Tensors[t]
		if _, err := g.AddInput(dt.Shape, dt.DType, conf.imaps[i], conf.fmaps[i]); err != nil {
			return err
		}
	}
	return nil
}

// inputCands sets b.cands, for a block state of input ops alone, to the ops
// on its inputs. They depend only on what the inputs are (their operand
// ids), which of them vary and the for-loop, so the memo keeps them.
func (b *blockState) inputCands() {
	key := inputCandsKey{n: len(b.tiles), loop: [2]int32{int32(b.g.ForloopRange), int32(b.g.ReductionDimx)}}
	for t, info := range b.tiles {
		key.ids[t] = info.id
		key.varies[t] = info.varies
	}
	// The memo holds the ops the oracle accepts; which of the group's
	// configurations accept their shapes is b's own (keepValid).
	m := b.k.memo
	cs, ok := m.inputCands[key]
	if !ok {
		for t := range b.g.Tensors {
			cs = b.judgeCands(cs, block.TensorID(t))
		}
		if len(m.inputCands) >= maxInputCands {
			clear(m.inputCands)
		}
		m.inputCands[key] = cs
	}
	b.cands = append(b.cands, cs...)
	b.keepValid(len(b.cands) - len(cs))
}

// opsLeft is how many more ops (output ops aside) the size limit allows.
func (b *blockState) opsLeft() int { return b.k.s.cfg.MaxBlockOps - len(b.g.Ops) }

// canFinish reports whether the open tiles (those no op consumes) can still
// all become outputs within the size limits: each op closes at most one
// open tile net, and turns at most one per-iteration open tile into a
// post-loop one (an accumulator, or a binary op merging two).
func (b *blockState) canFinish() bool {
	open, inLoop := 0, 0
	for t, info := range b.tiles {
		if info.uses == 0 {
			open++
			if !b.g.Tensors[t].PostLoop {
				inLoop++
			}
		}
	}
	left := b.opsLeft()
	return inLoop <= left && open-b.maxOutputs() <= left
}

// blockCand is an op that may be added to a block state: a choice of
// Config.BlockOps on operands in canonical order after the last op, whose
// expression the oracle accepted.
type blockCand struct {
	choice int32
	in     [2]block.TensorID // in[1] is -1 for a unary op
	e      *absexpr.Expr
	valid  uint64 // the configurations of the group whose shapes accept it (validIn)
}

// operands returns the op's operands.
func (c *blockCand) operands() []block.TensorID {
	if c.in[1] < 0 {
		return c.in[:1]
	}
	return c.in[:2]
}

// explore tries to finish b into a customized op, then extends it by every
// op of cands (those that may follow its last op, in canonical order),
// depth first.
func (b *blockState) explore(from, to int) {
	s := b.k.s
	if s.stop() {
		return
	}
	b.finish()
	if b.opsLeft() <= 0 {
		return
	}
	for j := from; j < to; j++ {
		b.tryOp(b.cands[j], j+1, to)
	}
}

// addCands appends to b.cands the ops whose newest operand is tile t, in
// canonical order: (a, t) for a < t, then unary ops on t, then (t, a) for
// a <= t; at equal operands, by kind and attributes (the order of
// searcher.blockUnary and the other lists). Every op of an older state
// that follows its last op still follows the op that made t, whose key is
// less than theirs, and ops on t follow all of them: so a state's
// candidates are its parent's after the op taken, then addCands of the new
// tile. Each op is judged once, when its newest operand appears, rather
// than in every state below. An op is a candidate when the oracle accepts
// it and the shapes of at least one alive configuration do.
func (b *blockState) addCands(t block.TensorID) {
	start := len(b.cands)
	b.cands = b.judgeCands(b.cands, t)
	b.keepValid(start)
}

// keepValid sets the valid set of each candidate of b.cands[from:] and
// drops those no alive configuration's shapes accept.
func (b *blockState) keepValid(from int) {
	kept := b.cands[:from]
	for _, c := range b.cands[from:] {
		if c.valid = b.validIn(&c); c.valid != 0 {
			kept = append(kept, c)
		} else {
			b.k.tally.shape++
		}
	}
	b.cands = kept
}

// judgeCands appends to cs the ops whose newest operand is tile t, in
// canonical order (addCands), that the oracle accepts.
func (b *blockState) judgeCands(cs []blockCand, t block.TensorID) []blockCand {
	s := b.k.s
	postT := b.g.Tensors[t].PostLoop
	add := func(id int32, list []int, in0, in1 block.TensorID) {
		j := s.exprs.blockOps(b, id, list, in0, in1)
		for k, i := range list {
			if !j[k].ok {
				b.k.tally.absexpr++
				continue
			}
			cs = append(cs, blockCand{choice: int32(i), in: [2]block.TensorID{in0, in1}, e: j[k].e})
		}
	}
	binary := s.blockBinary
	for a := range t {
		if b.g.Tensors[a].PostLoop == postT { // one phase per op
			add(blockBinaryList, binary, a, t)
		}
	}
	unary := s.blockUnary
	j := s.exprs.blockOps(b, blockUnaryList, unary, t, -1)
	for k, i := range unary {
		c := s.cfg.BlockOps[i]
		switch {
		case refusedAccum(c, postT, b.g.ForloopRange, b.tiles[t].varies):
		case !j[k].ok:
			b.k.tally.absexpr++
		default:
			cs = append(cs, blockCand{choice: int32(i), in: [2]block.TensorID{t, -1}, e: j[k].e})
		}
	}
	for a := range t + 1 {
		if b.g.Tensors[a].PostLoop != postT {
			continue
		}
		if a < t {
			add(blockNoncommutativeList, s.blockNoncommutative, t, a) // (a, t) was tried for the others
		} else {
			add(blockBinaryList, binary, t, a)
		}
	}
	return cs
}

// refusedAccum reports whether c is an accumulator that the generator does
// not add on a tile in phase post (true: after the loop) that varies
// across the forloop iterations or not. Accumulators take per-iteration
// tiles. And a sum over F > 1 iterations of a tile that does not change
// between them is F times the tile (or its row sums): a candidate would
// need a division by F to undo that, and the same values come from the
// tile itself in a block without the loop. (mean and rms divide by F:
// they are kept.)
func refusedAccum(c OpChoice, post bool, forloop int, varies bool) bool {
	if c.Kind != ugraph.OpForloopAccum {
		return false
	}
	switch c.Attr.Accum {
	case ugraph.AccumNone, ugraph.AccumSum, ugraph.AccumSumToDimx:
		return post || forloop > 1 && !varies
	}
	return post
}

// tryOp adds block op c, explores below it (its candidates are
// b.cands[from:to] and those on its result) and removes it.
func (b *blockState) tryOp(c blockCand, from, to int) {
	out, ok := b.push(c)
	if !ok {
		b.k.tally.shape++
		return
	}
	b.k.countState()
	if b.canFinish() {
		start := len(b.cands)
		b.cands = append(b.cands, b.cands[from:to]...)
		b.addCands(out)
		b.explore(start, len(b.cands))
		b.cands = b.cands[:start]
	} else {
		b.k.tally.dead++
	}
	b.pop()
}

// push adds op c to the graphs of b's alive configurations whose shape
// rules accept it, unless none does, and returns its result.
func (b *blockState) push(c blockCand) (block.TensorID, bool) {
	choice := b.k.s.cfg.BlockOps[c.choice]
	in := c.operands()
	var out block.TensorID
	var alive uint64
	for m := b.alive & c.valid; m != 0; m &= m - 1 {
		j := bits.TrailingZeros64(m)
		if t, err := b.graphs[j].Add(choice.Kind, choice.Attr, in...); err == nil {
			out, alive = t, alive|1<<j
		}
	}
	if alive == 0 {
		return 0, false
	}
	b.alives = append(b.alives, b.alive)
	b.alive, b.g = alive, b.graphs[bits.TrailingZeros64(alive)]
	varies := false
	for _, t := range in {
		b.tiles[t].uses++
		varies = varies || b.tiles[t].varies
	}
	b.pushTile(out, c.e, block.OpVaries(choice.Kind, varies))
	return out, true
}

// pushTile tracks the tile t just added, with expression e.
func (b *blockState) pushTile(t block.TensorID, e *absexpr.Expr, varies bool) {
	b.tiles = append(b.tiles, tensorInfo{expr: e, id: b.k.memo.id(e, b.k.s.judgedShape(b.g.Tensors[t].Shape)), varies: varies})
}

// pop removes the last op pushed.
func (b *blockState) pop() {
	op := b.g.Ops[len(b.g.Ops)-1]
	for _, t := range op.Operands() {
		b.tiles[t].uses--
	}
	for m := b.alive; m != 0; m &= m - 1 {
		b.graphs[bits.TrailingZeros64(m)].Pop()
	}
	n := len(b.alives) - 1
	b.alive, b.alives = b.alives[n], b.alives[:n]
	b.g = b.graphs[bits.TrailingZeros64(b.alive)]
	b.tiles = b.tiles[:len(b.g.Tensors)]
}

// maxOutputs is how many outputs b may have.
func (b *blockState) maxOutputs() int {
	if b.want != nil {
		return len(b.want)
	}
	return b.k.s.cfg.MaxBlockOutputs
}

// finish completes b when every open tile is post-loop and there are at
// most MaxBlockOutputs of them: in the graph of each alive configuration,
// each becomes an output, under each output map that is canonical for the
// grid (each output its own), and the resulting customized op is added to
// the kernel graph.
func (b *blockState) finish() {
	var open []block.TensorID
	for t, info := range b.tiles {
		if info.uses > 0 {
			continue
		}
		if !b.g.Tensors[t].PostLoop {
			return
		}
		open = append(open, block.TensorID(t))
	}
	if len(open) == 0 || len(open) > b.maxOutputs() || b.want != nil && len(open) != len(b.want) {
		return
	}
	if b.copiesOnly() {
		b.k.tally.dead++
		return
	}
	outExprs := make([]*absexpr.Expr, len(open))
	for i, t := range open {
		outExprs[i] = b.tiles[t].expr
	}
	for j, r := range b.rep {
		if b.alive&(1<<r) == 0 {
			continue
		}
		if r != j && !b.catchUp(j) {
			continue
		}
		if !b.finishIn(j, open, outExprs) {
			return
		}
	}
}

// catchUp makes the graph of configuration j hold the ops of its
// representative's: it pops the ops past the first that differs and adds
// the rest. It reports false if the builder rejects one, which the shape
// patterns rule out.
func (b *blockState) catchUp(j int) bool {
	g, to := b.graphs[j], b.graphs[b.rep[j]]
	same := len(b.ins)
	for same < len(g.Ops) && same < len(to.Ops) && sameOp(g.Ops[same], to.Ops[same]) {
		same++
	}
	for len(g.Ops) > same {
		g.Pop()
	}
	for _, op := range to.Ops[same:] {
		if _, err := g.Add(op.Kind, op.Attr, op.Operands()...); err != nil {
			return false
		}
	}
	return true
}

// sameOp reports whether compute ops x and y are the same op on the same
// operands.
func sameOp(x, y block.Op) bool {
	return x.Kind == y.Kind && x.In == y.In && x.Attr == y.Attr
}

// finishIn completes the graph of configuration j with the open tiles as
// outputs (finish), and reports false when the search is to stop.
func (b *blockState) finishIn(j int, open []block.TensorID, outExprs []*absexpr.Expr) bool {
	s := b.k.s
	bg, conf := b.graphs[j], b.confs[j]
	// The outputs share an output map when one fits them all: a layout
	// per output would multiply the kernels (partial results, whose
	// layout is free, fit every map) without one that moves fewer bytes.
	// Where none fits them all (an rms beside a matmul's tile), each
	// output takes, in turn, every map its own dims allow.
	grid := bg.Grid
	dims := conf.classes.outputDims(bg, conf.split, open)
	omaps := make([]block.Map, len(open))
	emit := func() bool { // false: stop
		g := bg.Clone()
		for i, t := range open {
			if err := g.AddOutput(t, omaps[i]); err != nil {
				b.k.tally.shape++
				return true
			}
		}
		if !b.wanted(g) || !s.fitsSmem(g) {
			b.k.tally.shape++
			return true
		}
		c := completeBlock{g: g, hash: block.Hash(g), outExprs: outExprs}
		b.done[j] = append(b.done[j], c)
		b.k.attach(b.ins, c)
		return !s.stop()
	}
	shared := false
	for _, m := range s.cfg.OMaps {
		if slices.ContainsFunc(dims, func(d [3]uint8) bool { return !omapFits(m, grid, d) }) {
			continue
		}
		shared = true
		for i := range omaps {
			omaps[i] = m
		}
		if !emit() {
			return false
		}
	}
	if shared {
		return true
	}
	var each func(i int) bool // false: stop
	each = func(i int) bool {
		if i == len(open) {
			return emit()
		}
		for _, m := range s.cfg.OMaps {
			if omapFits(m, grid, dims[i]) {
				omaps[i] = m
				if !each(i + 1) {
					return false
				}
			}
		}
		return true
	}
	return each(0)
}

// wanted reports whether the outputs of the complete graph g have the
// shapes b.want asks for, if it asks.
func (b *blockState) wanted(g *block.Graph) bool {
	if b.want == nil {
		return true
	}
	var shapes [maxOutputs]ugraph.Shape
	outs := g.OutputOps()
	for i, op := range outs {
		shapes[i] = op.Output.DShape
	}
	slices.SortFunc(shapes[:len(outs)], compareShapes)
	return slices.Equal(shapes[:len(outs)], b.want)
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
			x, y := b.tiles[op.In[0]].expr, b.tiles[op.Out].expr
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
// of size > 1 mapped (the builder checks that too) to one of the dims that
// the classes allow (inputClasses.outputDims), axes of size 1 not.
func omapFits(m block.Map, grid block.Dim3, dims [3]uint8) bool {
	for a, d := range m {
		if (grid[a] == 1) != (d == -1) || d >= 0 && dims[a]&(1<<d) == 0 {
			return false
		}
	}
	return true
}
