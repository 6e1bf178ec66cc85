package search

import (
	"runtime/metrics"
	"slices"
	"time"

	"github.com/mirage-go/mirage/absexpr"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// kernelState is a kernel graph under construction, with what the search
// tracks per tensor and op. It is owned by one goroutine; ops are added and
// removed in place (push, then pop on the way back).
type kernelState struct {
	s       *searcher
	g       *kernel.Graph
	tensors []tensorInfo // per tensor of g
	keys    []opKey      // per op
	ncust   int          // customized ops in g
	memo    *judgeMemo   // the owning goroutine's
	// blocks[i] is the block state of the (i+1)-th customized op, reused
	// (newBlockState).
	blocks []*blockState

	// spawn, when set, receives the subtrees below customized ops instead
	// of exploring them (the root state, which cuts the tree into tasks).
	spawn func(*task)
	tally tally        // pruned so far, not yet added to the searcher's counters
	reach reachScratch // closureReaches's memory
}

// tally counts what one goroutine's enumeration pruned, for Stats. It is
// added to the searcher's counters in batches (flush): counters that the
// workers bump for every op judged would bounce one cache line between
// their cores.
type tally struct{ order, absexpr, shape, dead int64 }

// flushEvery is how many states (over all workers) pass between the
// additions of a worker's tally, so that progress reports stay current.
const flushEvery = 1 << 12

// flush adds k's tally to the searcher's counters.
func (k *kernelState) flush() {
	s, t := k.s, &k.tally
	s.prunedOrder.Add(t.order)
	s.prunedAbsexpr.Add(t.absexpr)
	s.prunedShape.Add(t.shape)
	s.prunedDead.Add(t.dead)
	*t = tally{}
}

// heapEvery is how many states pass between two looks at the live heap
// (Options.MaxLiveHeap): tens of milliseconds of search.
const heapEvery = flushEvery << 4

// countState counts a state; now and then it flushes k's tally, and
// looks at the live heap.
func (k *kernelState) countState() {
	if n := k.s.states.Add(1); n%flushEvery == 0 {
		k.flush()
		if n%heapEvery == 0 {
			k.s.checkHeap()
		}
	}
}

// checkHeap records whether the live heap (as of the last collection) has
// passed Options.MaxLiveHeap.
func (s *searcher) checkHeap() {
	if s.opts.MaxLiveHeap <= 0 {
		return
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() == metrics.KindUint64 && sample[0].Value.Uint64() > uint64(s.opts.MaxLiveHeap) {
		s.overHeap.Store(true)
	}
}

// tensorInfo is what a state tracks of one of its tensors (or tiles): its
// expression, its operand id in the memo (of the expression and shape),
// how many ops consume it and, for a tile, whether it changes from one
// iteration of the for-loop to the next (some input it is computed from is
// walked). States push one when an op adds a tensor and cut the slice back
// when they pop the op.
type tensorInfo struct {
	expr   *absexpr.Expr
	id     uint32
	uses   int32
	varies bool
}

// pushTensor tracks the tensor t just added, with expression e.
func (k *kernelState) pushTensor(t kernel.TensorID, e *absexpr.Expr) {
	k.tensors = append(k.tensors, tensorInfo{expr: e, id: k.memo.id(e, k.g.Tensors[t].Shape)})
}

func (s *searcher) newKernelState() *kernelState {
	k := &kernelState{s: s, g: kernel.New(), memo: newJudgeMemo()}
	for i, in := range s.program.Inputs() {
		t := s.program.Tensors[in]
		id, err := k.g.AddInput(t.Shape, t.DType)
		if err != nil {
			panic(err) // the program's own inputs are valid
		}
		k.pushTensor(id, s.exprs.input(i))
		k.keys = append(k.keys, keyOf(ugraph.OpInput, ugraph.Attr{}, nil, 0))
	}
	return k
}

// clone returns a private copy of k for a task (block graphs are shared:
// they are immutable once attached). Its operand ids are k's memo's until
// it takes a memo of its own (useMemo).
func (k *kernelState) clone() *kernelState {
	return &kernelState{
		s: k.s, g: k.g.Clone(), tensors: slices.Clone(k.tensors),
		keys: slices.Clone(k.keys), ncust: k.ncust,
	}
}

// useMemo makes m k's memo, naming k's tensors anew in it.
func (k *kernelState) useMemo(m *judgeMemo) {
	k.memo = m
	for t := range k.tensors {
		k.tensors[t].id = m.id(k.tensors[t].expr, k.g.Tensors[t].Shape)
	}
}

// sinks returns the tensors no op consumes, in id order.
func (k *kernelState) sinks() []kernel.TensorID {
	var ts []kernel.TensorID
	for t, info := range k.tensors {
		if info.uses == 0 {
			ts = append(ts, kernel.TensorID(t))
		}
	}
	return ts
}

// opsLeft is how many more ops the size limit allows.
func (k *kernelState) opsLeft() int { return k.s.cfg.MaxKernelOps - len(k.g.Ops) }

// canComplete reports whether a state with the given open tensors and ops
// left could still end with exactly the program's outputs: an op consumes
// at most maxIn open tensors and opens at least one, so it closes at most
// maxIn-1 (at least 1 for any useful op: unary ops replace one).
func (k *kernelState) canComplete(open, left int) bool {
	extra := open - len(k.s.outShapes)
	if extra <= 0 {
		return true
	}
	closes := 1
	if k.ncust < k.s.cfg.MaxCustomized {
		closes = max(closes, k.s.cfg.MaxBlockInputs-1)
	}
	return extra <= left*closes
}

// explore extends k by every op the config allows, depth first.
func (k *kernelState) explore() {
	s := k.s
	if s.stop() {
		return
	}
	if k.complete() {
		k.record()
	}
	if k.opsLeft() <= 0 {
		return
	}
	// Graph-defined kernels first: fused candidates, the point of the
	// search, come early (and are found first under a time limit).
	if k.ncust < s.cfg.MaxCustomized {
		if k.spawn != nil {
			k.spawnTasks()
		} else {
			k.eachInputSet(func(in openInputs) {
				k.openBlocks(in, s.blockConfigs(k.g, in.ins, k.opsLeft() == 1))
			})
		}
	}
	for i, c := range s.cfg.KernelOps {
		k.eachOperands(c, func(in []kernel.TensorID) { k.tryOp(i, c, in) })
	}
}

// spawnTasks cuts the tree below k's customized ops into tasks, one per
// input set and configuration. The order only decides what is searched
// first under a time limit (every task runs when there is none): larger
// input sets first (eachInputSet), each set's configurations cheapest
// first.
func (k *kernelState) spawnTasks() {
	k.eachInputSet(func(in openInputs) {
		confs := slices.Clone(k.s.blockConfigs(k.g, in.ins, k.opsLeft() == 1)) // sorted below: the lists are shared
		k.cheapestFirst(in.ins, confs)
		for _, conf := range confs {
			k.spawn(&task{prefix: k.clone(), in: in, conf: conf})
		}
	})
}

// cheapestFirst orders the configurations of a customized op on ins by the
// device memory their blocks read (an input is read once per block that
// does not split it), least first, stably. It is a lower bound on the
// kernel's traffic, so under a time limit the tasks likeliest to be fast
// kernels run first (for attention, the blocks that split the keys read K
// and V once, the partial-sum form); the set searched is unchanged.
func (k *kernelState) cheapestFirst(ins []kernel.TensorID, confs []blockConfig) {
	slices.SortStableFunc(confs, func(a, b blockConfig) int { return k.readBytes(ins, a) - k.readBytes(ins, b) })
}

// readBytes is the device memory that the blocks of a customized op on ins
// under configuration c read: each input once per block that does not
// split it.
func (k *kernelState) readBytes(ins []kernel.TensorID, c blockConfig) int {
	n := 0
	for i, t := range ins {
		reads := 1
		for a, size := range c.grid {
			if c.imaps[i][a] == -1 {
				reads *= size
			}
		}
		n += k.g.Tensors[t].Bytes() * reads
	}
	return n
}

// complete reports whether k's open tensors have the program's output
// shapes.
func (k *kernelState) complete() bool {
	open := k.sinks()
	if len(open) != len(k.s.outShapes) {
		return false
	}
	shapes := make([]ugraph.Shape, len(open))
	for i, t := range open {
		shapes[i] = k.g.Tensors[t].Shape
	}
	slices.SortFunc(shapes, compareShapes)
	return slices.Equal(shapes, k.s.outShapes)
}

// record keeps the complete state k as a candidate, unless its outputs'
// expressions cannot equal the program's. Each op on the way was a
// subexpression of the program, but a subexpression is not yet the whole
// (for attention, the unnormalised exp(QK)·V); the premise is the one the
// pruning makes of every op: a correct graph's outputs equal the program's
// modulo the axioms. The verifier judges candidates after the search, best
// first (verifyBest): most are correct, and proving all of them so would
// cost more than the search.
func (k *kernelState) record() {
	s := k.s
	outs := k.sinks()
	for _, t := range outs {
		// A nil expression is one that cannot be derived (concat's): it
		// might be anything.
		if e := k.tensors[t].expr; e != nil && !s.exprs.oracle.MayEqualTarget(e) {
			k.tally.absexpr++
			return
		}
	}
	g := k.g.Clone()
	g.Outputs = outs
	h := kernel.HashWith(g, s.blockHash)
	if _, dup := s.recorded.LoadOrStore(h, struct{}{}); dup {
		return
	}
	s.complete.Add(1)
	if c := (&Candidate{Graph: g, Hash: h}); s.describe(c) {
		s.kept.add(c)
	}
	if k.ncust > 0 && s.firstFused.Load() == 0 && s.verifier != nil {
		// Until a fused candidate has passed the fast path, each is tried,
		// for Stats.FirstFused.
		if reject, err := s.verifier.Reject(g); err == nil && !reject {
			s.firstFused.CompareAndSwap(0, int64(time.Since(s.start)))
		}
	}
}

// eachOperands calls f with every operand list for c in canonical order
// after the last op. The slice is reused between calls.
func (k *kernelState) eachOperands(c OpChoice, f func([]kernel.TensorID)) {
	n := kernel.TensorID(len(k.g.Tensors))
	last := k.keys[len(k.keys)-1]
	in := make([]kernel.TensorID, c.Kind.Info().Arity)
	var ids [2]int32 // operands of a pre-defined op: at most 2
	try := func() {
		for i, t := range in {
			ids[i] = int32(t)
		}
		if keyOf(c.Kind, c.Attr, ids[:len(in)], 0).compare(last) <= 0 {
			k.tally.order++
			return
		}
		f(in)
	}
	switch len(in) {
	case 1:
		for a := range n {
			in[0] = a
			try()
		}
	case 2:
		for a := range n {
			for b := range n {
				if c.Kind.Info().Commutative && b < a {
					continue
				}
				in[0], in[1] = a, b
				try()
			}
		}
	}
}

// tryOp adds pre-defined op c (choice i) on in, explores below it and
// removes it.
func (k *kernelState) tryOp(i int, c OpChoice, in []kernel.TensorID) {
	s := k.s
	e, ok := s.exprs.kernelOp(k, i, c, in)
	if !ok {
		k.tally.absexpr++
		return
	}
	out, err := k.g.Add(c.Kind, c.Attr, in...)
	if err != nil {
		k.tally.shape++
		return
	}
	var ids [2]int32
	for i, t := range in {
		ids[i] = int32(t)
		k.tensors[t].uses++
	}
	k.pushTensor(out, e)
	k.keys = append(k.keys, keyOf(c.Kind, c.Attr, ids[:len(in)], 0))
	k.descend()
}

// descend explores below the op just pushed, unless the state cannot end
// with the program's outputs, and pops the op.
//
// The canonical order (order.go) and the cut into tasks reach each list
// of ops once, so a state is never checked against those already seen:
// a set of them (a print per state) cost qknorm_gqa's search 2.5% of its
// time and 4% of its memory, and pruned nothing (TestStatesAreReachedOnce).
func (k *kernelState) descend() {
	k.countState()
	switch {
	case k.opsLeft() == 0 && !k.complete(), !k.canComplete(len(k.sinks()), k.opsLeft()):
		k.tally.dead++
	default:
		if k.s.visit != nil {
			k.s.visit(k.keys)
		}
		k.explore()
	}
	k.pop()
}

// pop removes the last op and what the state tracks for it.
func (k *kernelState) pop() {
	op := k.g.Ops[len(k.g.Ops)-1]
	for _, t := range op.In {
		k.tensors[t].uses--
	}
	k.g.Pop()
	k.tensors = k.tensors[:len(k.g.Tensors)]
	k.keys = k.keys[:len(k.keys)-1]
	if op.Kind == ugraph.OpCustomized {
		k.ncust--
	}
}

// eachInputSet calls f with every set of existing tensors (in id order, up
// to MaxBlockInputs) that a customized op may read next in canonical order
// and that can complete the graph (openInputs). Larger sets come first: a
// kernel that reads all the program's inputs is the likeliest to fuse it
// whole, and under a time limit it is searched first.
func (k *kernelState) eachInputSet(f func(openInputs)) {
	s := k.s
	n := len(k.g.Tensors)
	last := k.keys[len(k.keys)-1]
	var sets [][]kernel.TensorID
	var set []kernel.TensorID
	var rec func(from int)
	rec = func(from int) {
		if len(set) > 0 {
			ids := make([]int32, len(set))
			for i, t := range set {
				ids[i] = int32(t)
			}
			// A customized op may equal the last op's key up to its block
			// graph, which is compared when the block graph is complete.
			key := keyOf(ugraph.OpCustomized, ugraph.Attr{}, ids, 0)
			if key.compare(last) < 0 && !(key.newest == last.newest && key.in == last.in && last.kind == ugraph.OpCustomized) {
				k.tally.order++
			} else {
				sets = append(sets, slices.Clone(set))
			}
		}
		if len(set) == s.cfg.MaxBlockInputs {
			return
		}
		for t := from; t < n; t++ {
			set = append(set, kernel.TensorID(t))
			rec(t + 1)
			set = set[:len(set)-1]
		}
	}
	rec(0)
	slices.SortStableFunc(sets, func(a, b []kernel.TensorID) int { return len(b) - len(a) })
	for _, set := range sets {
		if in, ok := k.openInputs(set); ok {
			f(in)
		} else {
			k.tally.dead++
		}
	}
}

// attach adds the customized op running c.g (complete, with its output
// ops) on ins, explores below it and removes it.
func (k *kernelState) attach(ins []kernel.TensorID, c completeBlock) {
	ids := make([]int32, len(ins))
	for i, t := range ins {
		ids[i] = int32(t)
	}
	key := keyOf(ugraph.OpCustomized, ugraph.Attr{}, ids, c.hash)
	if key.compare(k.keys[len(k.keys)-1]) <= 0 {
		k.tally.order++
		return
	}
	outs, err := k.g.Customized(ins, c.g)
	if err != nil {
		k.tally.shape++
		return
	}
	for _, t := range ins {
		k.tensors[t].uses++
	}
	for i, t := range outs {
		k.pushTensor(t, c.outExprs[i])
	}
	k.keys = append(k.keys, key)
	k.ncust++
	k.descend()
}
