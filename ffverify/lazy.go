package ffverify

import (
	"errors"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/layout"
)

// lazy evaluates single elements on demand: only the cone of values that an
// element needs, each computed once (memoised per tensor or tile, block,
// iteration and index). Its results equal the dense evaluator's, element
// for element; the fast path of the verifier relies on that.
//
// An element's operands are demanded by recursion, at most maxDepth deep:
// the graphs the search builds are a few dozen ops deep, but a graph read
// from a file may be a chain of a million ops, too deep for the Go stack.
// A demand met deeper is deferred: value computes it first, from a stack
// of its own, and asks again.
type lazy struct {
	p  *plan
	tr *trial
	// pages hold the memoised values, one dense page per tensor, or per
	// tile of a block graph in one block at one iteration: most demands
	// read runs of the same tile, which then cost an index rather than a
	// hash lookup. lastKey and lastPage cache the page used last.
	pages    map[pageKey]*page
	lastKey  pageKey
	lastPage *page
	groups   map[pageKey]map[int]elem // per-group statistics (rms_norm's inverse rms)
	tensors  []*page                  // the pages of kernel tensors, by tensor
	// budget bounds the work done (spend; see errBudget), and room the
	// elements of the pages allocated (a dense evaluation's worth).
	budget, computed, room int
	// last holds, per input, the last strip read from it: consecutive
	// elements of a matmul read the same row of one operand (rows of an
	// attention score tile share a row of Q), which this saves rehashing.
	last []strip
	// depth is the number of demands being computed on the Go stack;
	// deferred holds those met at maxDepth, for value to compute first.
	depth    int
	deferred []demand
	demands  int // begun (descend), for the trial's stop check
}

// maxDepth bounds the demands on the Go stack at once (each takes a few
// frames): deeper than the graphs the search builds, so that their values
// are computed once, and far from what a goroutine's stack holds.
const maxDepth = 256

// demand is an element to compute: element idx of kernel tensor t when
// s.bp is nil, else of tile t at site s.
type demand struct {
	s      site
	t, idx int
}

type strip struct {
	start, stride int
	v             []elem
}

// pageKey names the page of a tile: node is blockPlan.base + the tile,
// block and iter the linear block index and the for-loop iteration (-1
// after the loop); or, for group statistics, of a kernel tensor (node,
// zero).
type pageKey struct {
	node, block, iter int32
}

// page holds the values of one tensor or tile computed so far, in chunks
// allocated when first written (a demand touches few of them).
type page struct {
	size   int // values in the page
	chunks []*chunk
}

const chunkBits = 10 // a chunk holds 1 << chunkBits values

// chunk holds 1 << chunkBits values of a page, or what is left of the page
// in its last chunk: a page of a small tile or tensor takes its size, not a
// whole chunk (a chain of tiny tensors would take a hundred times more
// memory than a dense evaluation).
type chunk struct {
	v   []elem
	has []uint64 // bit i: v[i] is computed
}

// newLazy returns a demand-driven evaluator of p on draw tr that does at
// most budget work (spend), in pages of at most room elements in all.
func newLazy(p *plan, tr *trial, budget, room int) *lazy {
	return &lazy{p: p, tr: tr, pages: map[pageKey]*page{}, groups: map[pageKey]map[int]elem{},
		budget: budget, room: room, last: make([]strip, len(tr.inputs)),
		tensors: make([]*page, len(p.g.Tensors))}
}

func newPage(size int) *page {
	return &page{size: size, chunks: make([]*chunk, (size+1<<chunkBits-1)>>chunkBits)}
}

// tensorPage returns the page of kernel tensor t.
func (l *lazy) tensorPage(t int) *page {
	if pg := l.tensors[t]; pg != nil {
		return pg
	}
	size := l.p.g.Tensors[t].Shape.NumElements()
	if l.room -= size; l.room < 0 {
		panic(errBudget)
	}
	pg := newPage(size)
	l.tensors[t] = pg
	return pg
}

// errBudget is the panic value of a lazy evaluation that exceeds its
// budget: the cone of the demanded elements is most of the graph, and a
// dense evaluation would be cheaper. It unwinds the recursion in one step;
// the caller recovers it.
var errBudget = errors.New("ffverify: demand-driven evaluation over budget")

// page returns the page of key, of size elements, allocating it if need be.
func (l *lazy) page(key pageKey, size int) *page {
	if l.lastPage != nil && l.lastKey == key {
		return l.lastPage
	}
	pg := l.pages[key]
	if pg == nil {
		if l.room -= size; l.room < 0 {
			panic(errBudget)
		}
		pg = newPage(size)
		l.pages[key] = pg
	}
	l.lastKey, l.lastPage = key, pg
	return pg
}

func (pg *page) get(i int) (elem, bool) {
	c := pg.chunks[i>>chunkBits]
	if c == nil {
		return elem{}, false
	}
	i &= 1<<chunkBits - 1
	if c.has[i>>6]&(1<<(i&63)) == 0 {
		return elem{}, false
	}
	return c.v[i], true
}

// spend counts n units of work against the budget: a value computed, a
// term of a sum (a multiply-add of a product), an input element drawn, as
// plan.denseWork counts a dense evaluation's. Counting values alone let
// a sample whose cone is a whole layer's products (an output of a
// LLaMA-70B MLP: every column of W1 and W3, drawn again for each row)
// cost ten dense evaluations within budget.
func (l *lazy) spend(n int) {
	if l.computed += n; l.computed > l.budget {
		panic(errBudget)
	}
}

// remember stores value i of page pg.
func (l *lazy) remember(pg *page, i int, v elem) {
	l.spend(1)

	c := pg.chunks[i>>chunkBits]
	if c == nil {
		n := min(1<<chunkBits, pg.size-i&^(1<<chunkBits-1))
		c = &chunk{v: make([]elem, n), has: make([]uint64, (n+63)/64)}
		pg.chunks[i>>chunkBits] = c
	}
	i &= 1<<chunkBits - 1
	c.v[i] = v
	c.has[i>>6] |= 1 << (i & 63)
}

// site is where an op runs: kernel op op (bp == nil), or block op op of the
// customized kernel op kop, in block b at iteration it (-1 after the loop).
type site struct {
	bp      *blockPlan
	kop, op int
	b       block.Dim3
	it      int
}

// blockIndex is the linear index of block b in the grid.
func (bp *blockPlan) blockIndex(b block.Dim3) int32 {
	return int32(b[0] + bp.g.Grid[0]*(b[1]+bp.g.Grid[1]*b[2]))
}

// value returns element idx of kernel tensor t: the demand of the caller
// from outside, which runs the deferred demands. A value computed while a
// demand under it was deferred stands on a placeholder (zero) and is not
// remembered, so asking again recomputes it, this time from remembered
// operands; the deferred demands are computed first, each as deep as
// maxDepth and deferring in turn what lies deeper. Each ask that defers
// something moves at least one demand onto the stack, and each demand there
// is computed once, so the loop ends.
func (l *lazy) value(t, idx int) elem {
	stack := []demand{{t: t, idx: idx}}
	for {
		d := stack[len(stack)-1]
		l.deferred = l.deferred[:0]
		var v elem
		if d.s.bp == nil {
			v = l.at(d.t, d.idx)
		} else {
			v = l.tile(d.s, d.t, d.idx)
		}
		if len(l.deferred) > 0 {
			stack = append(stack, l.deferred...)
			continue
		}
		if stack = stack[:len(stack)-1]; len(stack) == 0 {
			return v
		}
	}
}

// descend begins computing demand d, which is not remembered. Past maxDepth
// it defers d instead and returns false; the caller then returns a
// placeholder.
func (l *lazy) descend(d demand) (mark int, ok bool) {
	if l.demands++; l.demands&(1<<12-1) == 0 {
		l.tr.check() // a demand computed again, deferred, is not remembered: count them all
	}
	if l.depth == maxDepth {
		l.deferred = append(l.deferred, d)
		return 0, false
	}
	l.depth++
	return len(l.deferred), true
}

// ascend ends the demand that descend began, and reports whether its value
// is exact: no demand under it was deferred.
func (l *lazy) ascend(mark int) bool {
	l.depth--
	return len(l.deferred) == mark
}

// at returns element idx of kernel tensor t.
func (l *lazy) at(t, idx int) elem {
	p := l.p
	if k := p.inputPos[t]; k >= 0 {
		l.spend(1)
		return l.tr.input(k, idx)
	}
	pg := l.tensorPage(t)
	if v, ok := pg.get(idx); ok {
		return v
	}
	mark, ok := l.descend(demand{t: t, idx: idx})
	if !ok {
		return elem{}
	}
	var v elem
	if i := p.producer[t]; p.blocks[i] != nil {
		v = l.customizedAt(i, p.result[t], idx)
	} else {
		v = l.element(site{kop: i, op: i}, idx)
	}
	if l.ascend(mark) {
		l.remember(pg, idx, v)
	}
	return v
}

// customizedAt returns element idx of result r of customized op kop: the
// element of one block's output tile.
func (l *lazy) customizedAt(kop, r, idx int) elem {
	bp := l.p.blocks[kop]
	op := &bp.g.Ops[bp.outputs[r]]
	ts := bp.g.Tensors[op.In[0]].Shape
	x := layout.Pad(op.Output.DShape).Index(idx)
	var b block.Dim3
	for a, d := range op.Output.OMap {
		if d >= 0 && bp.g.Grid[a] > 1 {
			pd := layout.PadDim(d, ts.Rank())
			b[a], x[pd] = x[pd]/ts.Dim(d), x[pd]%ts.Dim(d)
		}
	}
	return l.tile(site{bp: bp, kop: kop, b: b, it: -1}, int(op.In[0]), layout.Pad(ts).Offset(x))
}

// tile returns element idx of tile t of s's block graph, in s's block at
// s's iteration.
func (l *lazy) tile(s site, t, idx int) elem {
	bp, g := s.bp, s.bp.g
	s.op = bp.producer[t]
	op := &g.Ops[s.op]
	if op.Kind == ugraph.OpInput {
		// A tile of a device tensor: read the device tensor itself.
		ts := g.Tensors[t].Shape
		x := layout.Pad(ts).Index(idx)
		off := bp.inputOffset(op, s.b, s.it)
		for i := range x {
			x[i] += off[i]
		}
		return l.at(int(l.p.g.Ops[s.kop].In[bp.operand[s.op]]), layout.Pad(op.Input.DShape).Offset(x))
	}
	if g.Tensors[t].PostLoop {
		s.it = -1
	}
	pg := l.page(pageKey{node: int32(bp.base + t), block: bp.blockIndex(s.b), iter: int32(s.it)}, g.Tensors[t].Shape.NumElements())
	if v, ok := pg.get(idx); ok {
		return v
	}
	mark, ok := l.descend(demand{s: s, t: t, idx: idx})
	if !ok {
		return elem{}
	}
	var v elem
	if op.Kind == ugraph.OpForloopAccum {
		v = l.accum(s, op, idx)
	} else {
		v = l.element(s, idx)
	}
	if l.ascend(mark) {
		l.remember(pg, idx, v)
	}
	return v
}

// accum returns element idx of the accumulator op at s: the sum over every
// iteration of the strided group of its operand's last dim (see accumulate),
// an invariant operand's (blockPlan.invariant) as one iteration's times
// their count.
func (l *lazy) accum(s site, op *block.Op, idx int) elem {
	g := s.bp.g
	x := int(op.In[0])
	n, d := g.Tensors[x].Shape.Last(), g.Tensors[op.Out].Shape.Last()
	o, j := idx/d, idx%d
	terms := make([]elem, n/d)
	f, iters, times := l.fn(s), g.ForloopRange, one
	if s.bp.invariant[x] {
		iters, times = 1, f.consts.count(g.ForloopRange)
	}
	var sum elem
	for it := range iters {
		s.it = it
		l.spend(len(terms))
		l.tileStrip(s, x, o*n+j, d, terms)
		for _, v := range terms {
			if op.Attr.Accum == ugraph.AccumRMS {
				v = v.mul(v)
			}
			sum = sum.add(v)
		}
	}
	return f.finishAccum(op.Attr.Accum, sum.mul(times), s.bp.accumTerms(op))
}

// Strips: most ops need runs of equally spaced elements of an operand (a
// row, a column, a reduced dim). Reading a run at once lets a run of an
// input tile map to a run of its device tensor, and a run of an input to
// hashes, with the index arithmetic done once.

// strip fills dst with elements start, start+stride, ... of operand i of
// the op at s.
func (l *lazy) strip(s site, i, start, stride int, dst []elem) {
	if s.bp == nil {
		l.tensorStrip(int(l.p.g.Ops[s.op].In[i]), start, stride, dst)
		return
	}
	l.tileStrip(s, int(s.bp.g.Ops[s.op].In[i]), start, stride, dst)
}

func (l *lazy) tensorStrip(t, start, stride int, dst []elem) {
	if k := l.p.inputPos[t]; k >= 0 {
		last := &l.last[k]
		if last.start == start && last.stride == stride && len(last.v) == len(dst) {
			copy(dst, last.v)
			return
		}
		l.spend(len(dst))
		for j := range dst {
			dst[j] = l.tr.input(k, start+j*stride)
		}
		*last = strip{start, stride, append(last.v[:0], dst...)}
		return
	}
	for j := range dst {
		dst[j] = l.at(t, start+j*stride)
	}
}

func (l *lazy) tileStrip(s site, t, start, stride int, dst []elem) {
	bp := s.bp
	if op := &bp.g.Ops[bp.producer[t]]; op.Kind == ugraph.OpInput {
		ts := layout.Pad(bp.g.Tensors[t].Shape)
		x := ts.Index(start)
		if d, ok := stripDim(ts, x, stride, len(dst)); ok {
			off := bp.inputOffset(op, s.b, s.it)
			for i := range x {
				x[i] += off[i]
			}
			dev := layout.Pad(op.Input.DShape)
			l.tensorStrip(int(l.p.g.Ops[s.kop].In[bp.operand[bp.producer[t]]]), dev.Offset(x), dev.Strides()[d], dst)
			return
		}
	}
	for j := range dst {
		dst[j] = l.tile(s, t, start+j*stride)
	}
}

// stripDim returns the dim along which a strip of n elements with the given
// stride runs from index x of a tensor with extents ts, if it stays in one.
func stripDim(ts layout.Dims, x layout.Dims, stride, n int) (int, bool) {
	if n <= 1 {
		return ugraph.MaxRank - 1, true
	}
	st := ts.Strides()
	for d := range ts {
		if st[d] == stride && ts[d] > 1 {
			return d, x[d]+n <= ts[d]
		}
	}
	return 0, false
}

// The shapes and model of the op at s, and its operands' elements, whichever
// level it is at.

func (l *lazy) fn(s site) *fn {
	if s.bp == nil {
		return &l.tr.ops[s.op]
	}
	return &l.tr.block[s.kop][s.op]
}

func (l *lazy) outShape(s site) ugraph.Shape {
	if s.bp == nil {
		return l.p.g.Tensors[l.p.g.Ops[s.op].Out[0]].Shape
	}
	return s.bp.g.Tensors[s.bp.g.Ops[s.op].Out].Shape
}

func (l *lazy) inShape(s site, i int) ugraph.Shape {
	if s.bp == nil {
		return l.p.g.Tensors[l.p.g.Ops[s.op].In[i]].Shape
	}
	return s.bp.g.Tensors[s.bp.g.Ops[s.op].In[i]].Shape
}

func (l *lazy) operand(s site, i, idx int) elem {
	if s.bp == nil {
		return l.at(int(l.p.g.Ops[s.op].In[i]), idx)
	}
	return l.tile(s, int(s.bp.g.Ops[s.op].In[i]), idx)
}

// group returns the memoised per-group statistic of the op at s.
func (l *lazy) group(s site, grp int, compute func() elem) elem {
	var key pageKey
	if bp := s.bp; bp != nil {
		key = pageKey{node: int32(bp.base + int(bp.g.Ops[s.op].Out)), block: bp.blockIndex(s.b), iter: int32(s.it)}
	} else {
		key = pageKey{node: int32(l.p.g.Ops[s.op].Out[0])}
	}
	if v, ok := l.groups[key][grp]; ok {
		return v
	}
	mark := len(l.deferred)
	v := compute()
	if len(l.deferred) != mark {
		return v // a placeholder: see value
	}
	l.spend(1)
	if l.groups[key] == nil {
		l.groups[key] = map[int]elem{}
	}
	l.groups[key][grp] = v
	return v
}

// element computes element idx of the result of the stateless op at s, the
// same function as apply in dense.go, one element at a time.
func (l *lazy) element(s site, idx int) elem {
	f := l.fn(s)
	switch f.kind.Info().Class {
	case ugraph.ClassUnary:
		return f.unary(l.operand(s, 0, idx))
	case ugraph.ClassBinary:
		od := layout.Pad(l.outShape(s))
		x := od.Index(idx)
		xs, ys := layout.BroadcastStrides(l.inShape(s, 0), od), layout.BroadcastStrides(l.inShape(s, 1), od)
		var xo, yo int
		for i := range x {
			xo += x[i] * xs[i]
			yo += x[i] * ys[i]
		}
		return f.bin(l.operand(s, 0, xo), l.operand(s, 1, yo))
	case ugraph.ClassMatmul:
		a, b := l.inShape(s, 0), l.inShape(s, 1)
		r := a.Rank()
		m, k, n := a.Dim(r-2), a.Dim(r-1), b.Dim(r-1)
		batch, i, j := idx/(m*n), idx/n%m, idx%n
		l.spend(k)
		row, col := make([]elem, k), make([]elem, k)
		l.strip(s, 0, batch*m*k+i*k, 1, row)
		l.strip(s, 1, batch*k*n+j, n, col)
		var sum elem
		for t, v := range row {
			sum = sum.add(v.mul(col[t]))
		}
		return sum
	case ugraph.ClassReduction:
		_, n, inner := layout.Split(l.inShape(s, 0), f.attr.Dim)
		d := l.outShape(s).Dim(f.attr.Dim)
		o, j, in := idx/(d*inner), idx/inner%d, idx%inner
		terms := make([]elem, n/d)
		l.spend(len(terms))
		l.strip(s, 0, (o*n+j)*inner+in, d*inner, terms)
		var sum elem
		for _, v := range terms {
			sum = sum.add(v)
		}
		return sum
	case ugraph.ClassNorm:
		_, n, inner := layout.Split(l.inShape(s, 0), f.attr.Dim)
		m := n * inner
		grp := idx / m
		inv := l.group(s, grp, func() elem {
			l.spend(m)
			row := make([]elem, m)
			l.strip(s, 0, grp*m, 1, row)
			return f.rms(sumSquares(row), m).inv()
		})
		return l.operand(s, 0, idx).mul(inv)
	case ugraph.ClassConcat:
		a, b := l.inShape(s, 0), l.inShape(s, 1)
		x := layout.Pad(l.outShape(s)).Index(idx)
		pd := layout.PadDim(f.attr.Dim, a.Rank())
		if na := a.Dim(f.attr.Dim); x[pd] >= na {
			x[pd] -= na
			return l.operand(s, 1, layout.Pad(b).Offset(x))
		}
		return l.operand(s, 0, layout.Pad(a).Offset(x))
	}
	panic("ffverify: no element rule for " + f.kind.String())
}
