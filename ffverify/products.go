package ffverify

import (
	"fmt"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/layout"
)

// products memoises, for one draw, the matmuls that candidates' full
// checks take: the bulk of their work, and mostly the same products again
// (X·W, cut into tiles in as many ways as there are grids and loops).
//
// A tile product A[rows, k-range] · B[k-range, cols] of a graph-defined
// kernel is a sub-box of the slab product A[all rows, k-range] · B[k-range,
// all cols], which depends only on the kernel's two operands, the k-ranges
// and the batch boxes. Candidates that differ in their grid, their block
// shape or the dims their grid splits read the same slabs whenever their
// for-loops cut k alike, so each slab product is computed once per draw
// and a tile is copied out of it. A pre-defined matmul's product is kept
// whole. Operands are named by what they hold: a program input by its
// position, a computed tensor by its shape and fingerprint (candidates
// that normalise X in a kernel of their own share X·W).
//
// Values are exact in the model, so a product copied equals the product
// computed: the memo changes the time of a check, never its verdict (but
// for fingerprints that collide, see fingerprint).
//
// A products is shared by the goroutines that check candidates at once.
// It holds at most budget bytes of products; when full, it forgets the
// oldest. A product that would take more than a quarter of the budget is
// not kept: the caller multiplies itself.
type products struct {
	mu     sync.Mutex
	memo   map[any]*product // by slabKey, wholeKey or kernelKey
	order  []any            // keys in insertion order, oldest first
	used   int64            // bytes of the products in memo, ready or being computed
	pinned int64            // bytes of the products pin keeps
	budget int64
	points [2]uint64 // where fingerprints evaluate their polynomials
	// made counts the entries made, taken the lookups that found one.
	made, taken int64
	// tileLookups counts the memo's lookups of computed tiles' products
	// (tiles); tileCost is what their fingerprints cost and tileSaved what
	// the hits saved, in multiply-adds (tilesPay).
	tileLookups, tileCost, tileSaved atomic.Int64
	// summed counts the accumulators that kernels summed from a whole
	// product (wholeSums).
	summed atomic.Int64
	// lefts names the whole products kept, by their right operand's key,
	// and scaledHits counts the products made from one of them by scaling
	// its rows (scaled.go).
	lefts      map[operandKey][]wholeKey
	scaledHits atomic.Int64
}

// newProducts returns an empty memo of budget bytes for the draw whose
// key is key.
func newProducts(budget int64, key uint64) *products {
	return &products{memo: map[any]*product{}, budget: budget,
		points: [2]uint64{hash(key, 0x7072696e74) % m61, hash(key, 0x7072696e75) % m61}}
}

type product struct {
	ready chan struct{} // closed once t (or outs) is computed
	t     *tensor
	outs  []*tensor // a graph-defined kernel's results
	left  *tensor   // a whole product's left operand (scaled.go), counted in bytes
	bytes int64
}

// operand is a matmul operand with the key that names its values: a
// program input by the key of its elements (trial.inputs: the draw's and
// the input's name, so that verifiers that name their inputs alike share
// their products, see Memo), else a computed tensor's shape and
// fingerprint. t holds its values when they are at hand (computed, or an
// input the Verifier shares); else src makes them (dense), at the cost of
// the input's hashes.
type operand struct {
	t   *tensor
	src source
	key operandKey
}

// operandKey names an operand's values: input, the key of a program
// input's elements, or 0 for a computed tensor (whose fingerprint is
// print); and its shape.
type operandKey struct {
	input uint64
	shape ugraph.Shape
	print [2]uint64
}

// tensor returns o's values, materialising an input not at hand.
func (o operand) tensor() *tensor {
	if o.t != nil {
		return o.t
	}
	return o.src.dense()
}

// mulOperands computes dst = x·y, calling check between panels (matmul).
// A right operand that is an input not at hand (a weight) is computed a
// panel at a time as the product reads it (matmulInput), never stored
// whole.
func mulOperands(dst *tensor, x, y operand, check func()) {
	if y.t == nil && y.src.tr != nil && y.src.tr.dense == nil {
		matmulInput(dst, x.tensor(), y.src.shape, y.src.tr.inputs[y.src.input], check)
		return
	}
	matmul(dst, x.tensor(), y.tensor(), check)
}

// sourceOperand names the operand src: a program input by its position,
// with its values if they are at hand (materialised, or shared by the
// Verifier), else made where they are read (src); a computed tensor by
// its shape and fingerprint.
func (ps *products) sourceOperand(src source) operand {
	if src.tr == nil {
		return ps.operand(src.t, 0)
	}
	t := src.t
	if t == nil && src.tr.dense != nil {
		t = src.dense()
	}
	return operand{t: t, src: src, key: operandKey{input: src.tr.inputs[src.input], shape: src.shape}}
}

// operand names t: the program input whose elements' key is input, or a
// computed tensor when input is 0.
func (ps *products) operand(t *tensor, input uint64) operand {
	if input != 0 {
		return operand{t: t, key: operandKey{input: input, shape: t.shape}}
	}
	return operand{t: t, key: operandKey{shape: t.shape, print: fingerprint(t.v, ps.points)}}
}

// operands names the operands of a graph-defined kernel; nil when ps is.
func (ps *products) operands(ins []source) []operand {
	if ps == nil {
		return nil
	}
	ops := make([]operand, len(ins))
	for i, s := range ins {
		ops[i] = ps.sourceOperand(s)
	}
	return ops
}

// kernel returns bp.run memoised: a graph-defined kernel that another
// candidate runs too (two-kernel candidates share their first kernel by
// the dozen) on the same operand values gives the results kept then. The
// key is the block graph itself (its JSON), the operands' names and the
// key of the model's constants (Verifiers of different programs share the
// memo, and a kernel's scalars and counts are theirs).
// used, when not nil, is told the key of the results.
func (ps *products) kernel(bp *blockPlan, used func(key any)) func(fns []fn, ins []source, _ *products, check func()) []*tensor {
	return func(fns []fn, ins []source, _ *products, check func()) []*tensor {
		operands := ps.operands(ins)
		var bytes int64
		for _, i := range bp.outputs {
			bytes += tensorBytes(bp.g.Ops[i].Output.DShape)
		}
		key, err := bp.g.MarshalJSON()
		if err != nil || bytes > ps.budget/4 {
			return bp.runOn(fns, ins, ps, operands, check)
		}
		k := kernelKey{graph: string(key), consts: fns[0].consts.key}
		for _, o := range operands {
			k.operands += fmt.Sprintf("%d %v %x;", o.key.input, o.key.shape, o.key.print)
		}
		if used != nil {
			used(k)
		}
		p, first := ps.entry(k, bytes)
		if first {
			defer ps.unlessDone(k, p)
			p.outs = bp.runOn(fns, ins, ps, operands, check)
			close(p.ready)
		}
		<-p.ready
		if p.outs == nil {
			return bp.runOn(fns, ins, ps, operands, check)
		}
		// The memo's tensors themselves: nothing writes a computed
		// tensor once made (run's ops write only into fresh ones), and
		// copying a 16×6144 result for every candidate that shares it
		// was a fifth of a complete search of RMSNorm+MatMul.
		return slices.Clone(p.outs)
	}
}

// kernelKey names the results of a graph-defined kernel: its block graph
// (JSON), its operands' names and the trial's constants (constants.key).
type kernelKey struct {
	graph, operands string
	consts          uint64
}

// wholeKey names the product of a pre-defined matmul's operands.
type wholeKey struct{ a, b operandKey }

// slabKey names a slab product: of operands a and b, at the padded offsets
// of A's and B's slabs (their row and column offsets zero), with the
// slabs' common batch extents (dims 0 and 1) and k extent (dim 2).
type slabKey struct {
	a, b       operandKey
	offA, offB layout.Dims
	ext        layout.Dims
}

// whole computes into dst the product of a pre-defined matmul's operands.
func (ps *products) whole(dst *tensor, a, b operand, check func()) {
	ps.matmul(dst, wholeKey{a.key, b.key}, a, b, check)
}

// matmul computes into dst the product x·y, kept in the memo under key
// (unless it would take more than a quarter of the budget), and reports
// whether the memo had it already.
func (ps *products) matmul(dst *tensor, key any, x, y operand, check func()) (hit bool) {
	p, hit := ps.kept(key, dst.shape, x, y, check)
	if p == nil {
		mulOperands(dst, x, y, check)
		return false
	}
	copy(dst.v, p.v)
	return hit
}

// kept returns the product x·y, of shape s, from the memo under key,
// computing it if new (materialising x and y only then), and whether the
// memo had it already; nil when it would take more than a quarter of the
// budget, or when the check that was computing it stopped. The tensor is
// the memo's: read only.
func (ps *products) kept(key any, s ugraph.Shape, x, y operand, check func()) (t *tensor, hit bool) {
	bytes := tensorBytes(s)
	if bytes > ps.budget/4 {
		return nil, false
	}
	whole, isWhole := key.(wholeKey)
	if isWhole {
		bytes += tensorBytes(x.key.shape) // its left operand, kept beside it
	}
	p, first := ps.entry(key, bytes)
	if first {
		defer ps.unlessDone(key, p)
		t := newTensor(s)
		if isWhole {
			x.t = x.tensor() // made once, if an input not at hand: read here and kept
		}
		if !isWhole || !ps.scaled(t, whole, x.t) {
			mulOperands(t, x, y, check)
		}
		if isWhole {
			p.left = x.t
			ps.noteLeft(whole)
		}
		p.t = t
		close(p.ready)
	}
	<-p.ready
	return p.t, !first
}

// unlessDone, deferred by the computer of p (kept under k), lets those
// waiting for p go if the computation stopped midway (check panicked; the
// memo is shared with checks that were not): the entry goes, and they
// compute the product themselves.
func (ps *products) unlessDone(k any, p *product) {
	if p.t == nil && p.outs == nil {
		ps.forget(k, p)
		close(p.ready)
	}
}

// wholeProduct returns the product of a pre-defined matmul's operands a
// and b from the memo (the program's own matmul of them put it there), or
// nil when it is too large to keep.
func (ps *products) wholeProduct(a, b operand, check func()) *tensor {
	s := a.key.shape.WithDim(a.key.shape.Rank()-1, b.key.shape.Last())
	t, _ := ps.kept(wholeKey{a.key, b.key}, s, a, b, check)
	return t
}

// serves reports whether the memo keeps the products of tiles of shapes
// ta and tb of operands a and b: whether their values are at hand, and
// their slab product (and A's slab, copied while it is computed) take at
// most a quarter of its budget.
func (ps *products) serves(a operand, ta ugraph.Shape, b operand, tb ugraph.Shape) bool {
	if a.t == nil || b.t == nil || ta.Rank() < 2 || ta.Rank() != tb.Rank() {
		return false
	}
	slabA, _, out := slabShapes(slabKeyOf(a, ta, layout.Dims{}, b, layout.Dims{}), ta.Rank())
	return tensorBytes(out)+tensorBytes(slabA) <= ps.budget/4
}

// tileName names a tile of a graph-defined kernel (t): a loaded one by
// where it comes from (from, off), another by its fingerprint.
type tileName struct {
	t     *tensor
	shape ugraph.Shape
	from  operandKey
	off   layout.Dims
	print [2]uint64
}

// tilePair names the product of two tiles.
type tilePair struct {
	a, b tileName
}

// tiles computes into dst the product of the tiles x and y of a
// graph-defined kernel, which the memo names: the tiles that one kernel
// computes and another of the same launch computes too (P·V of attention,
// after exp(Q·K) in either) are multiplied once.
func (ps *products) tiles(dst *tensor, x, y tileName) {
	a, b := x, y
	a.t, b.t = nil, nil // the key holds names, not tensors
	ps.tileLookups.Add(1)
	ps.tileCost.Add(memoCost * int64(len(dst.v)))
	for _, n := range []tileName{x, y} {
		if n.print != ([2]uint64{}) {
			ps.tileCost.Add(fingerprintCost * int64(len(n.t.v)))
		}
	}
	if ps.matmul(dst, tilePair{a, b}, operand{t: x.t}, operand{t: y.t}, nil) {
		ps.tileSaved.Add(int64(len(dst.v) * x.shape.Last()))
	}
}

// tilesPay reports whether naming computed tiles by their fingerprints
// (tiles) pays: each lookup fingerprints its computed tiles and goes
// through the memo (memoCost), and only a hit saves the product. Where a
// search's kernels rarely compute equal tiles (one-kernel searches,
// mostly), the first thousand lookups show it, and the draw stops asking. It changes the time of a check, never its
// result.
func (ps *products) tilesPay() bool {
	return ps.tileLookups.Load() < 1024 || ps.tileSaved.Load() >= ps.tileCost.Load()
}

// fingerprintCost is a fingerprint's cost per value, in matmul
// multiply-adds (two products mod 2⁶¹-1 against one pair mod P and Q).
const fingerprintCost = 3

// memoCost is what a lookup costs per value of the product, in matmul
// multiply-adds, whether or not it hits: a miss allocates the product and
// keeps it, a hit copies it out. Without it, a kernel whose tiles are all
// loaded (no fingerprints) counted nothing against the memo, which then
// never stopped asking: a LLaMA-70B down projection's split_k seed, none
// of whose tile products repeat, took 6.2 s to check through it and
// 3.1 s without (the fresh products' pages, and their collection).
const memoCost = 3

// tile writes into dst the product of the tile of shape ta at padded
// offset offA in operand a and the tile at offB in operand b, which
// serves allows. dst has the product's shape. check is called between the
// slab product's panels.
func (ps *products) tile(dst *tensor, a operand, ta ugraph.Shape, offA layout.Dims, b operand, offB layout.Dims, check func()) {
	k := slabKeyOf(a, ta, offA, b, offB)
	slabA, slabB, out := slabShapes(k, ta.Rank())
	for {
		p, first := ps.entry(k, tensorBytes(out))
		if first {
			defer ps.unlessDone(k, p)
			sa := newTensor(slabA)
			copyBox(sa, layout.Dims{}, a.t, k.offA, layout.Pad(slabA))
			t := newTensor(out)
			matmul(t, sa, view(b.t, k.offB, slabB), check)
			p.t = t
			close(p.ready)
		}
		<-p.ready
		if p.t != nil {
			copyBox(dst, layout.Dims{}, p.t, layout.Dims{0, 0, offA[2], offB[3]}, layout.Pad(dst.shape))
			return
		}
		// Its computer stopped: compute it here (a new entry).
	}
}

// slabKeyOf names the slab product that holds the product of the tile of
// shape ta at padded offset offA in operand a and the tile at offB in b.
func slabKeyOf(a operand, ta ugraph.Shape, offA layout.Dims, b operand, offB layout.Dims) slabKey {
	ext := layout.Pad(ta)
	k := slabKey{a: a.key, b: b.key, offA: offA, offB: offB, ext: layout.Dims{ext[0], ext[1], ext[3], 0}}
	k.offA[2], k.offB[3] = 0, 0
	return k
}

// slabShapes returns the shapes of the slabs of k (of the given rank) and
// of their product.
func slabShapes(k slabKey, rank int) (slabA, slabB, out ugraph.Shape) {
	slabA, slabB = k.a.shape.WithDim(rank-1, k.ext[2]), k.b.shape.WithDim(rank-2, k.ext[2])
	for d := range rank - 2 {
		e := k.ext[layout.PadDim(d, rank)]
		slabA, slabB = slabA.WithDim(d, e), slabB.WithDim(d, e)
	}
	return slabA, slabB, slabA.WithDim(rank-1, k.b.shape.Last())
}

// entry returns the memo's entry for k, and true when it is new: the
// caller then computes it (t) and closes ready. It makes room for the
// entry's bytes by forgetting the oldest entries.
func (ps *products) entry(k any, bytes int64) (p *product, first bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if p, ok := ps.memo[k]; ok {
		ps.taken++
		return p, false
	}
	ps.made++
	for ps.used+bytes > ps.budget && len(ps.order) > 0 {
		old := ps.order[0]
		ps.order = ps.order[1:]
		ps.used -= ps.memo[old].bytes
		delete(ps.memo, old)
	}
	p = &product{ready: make(chan struct{}), bytes: bytes}
	ps.memo[k] = p
	ps.order = append(ps.order, k)
	ps.used += bytes
	return p, true
}

// pin keeps the entries under keys, in order, while the memo's pinned
// entries take at most half of its budget: forgetting makes room from the
// others. Keys pinned already, or forgotten, are passed over.
func (ps *products) pin(keys []any) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, k := range keys {
		i := slices.Index(ps.order, k)
		if i < 0 {
			continue
		}
		p := ps.memo[k]
		if ps.pinned+p.bytes > ps.budget/2 {
			break
		}
		ps.pinned += p.bytes
		ps.order = slices.Delete(ps.order, i, i+1)
	}
}

// forget removes p, kept under k, from the memo.
func (ps *products) forget(k any, p *product) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.memo[k] != p {
		return
	}
	delete(ps.memo, k)
	ps.used -= p.bytes
	if i := slices.Index(ps.order, k); i >= 0 {
		ps.order = slices.Delete(ps.order, i, i+1)
	} else {
		ps.pinned -= p.bytes // pinned while its computer ran, and that computer stopped
	}
}

// view returns the box of t at padded offset off with shape box: a slice
// of t where the box is contiguous in it, else a copy.
func view(t *tensor, off layout.Dims, box ugraph.Shape) *tensor {
	full, pbox := layout.Pad(t.shape), layout.Pad(box)
	d := 0
	for d < len(pbox)-1 && pbox[d] == 1 {
		d++
	}
	for i := d + 1; i < len(pbox); i++ {
		if pbox[i] != full[i] {
			c := newTensor(box)
			copyBox(c, layout.Dims{}, t, off, pbox)
			return c
		}
	}
	at := 0
	for i, s := range full.Strides() {
		at += off[i] * s
	}
	return &tensor{shape: box, v: t.v[at:][:box.NumElements()]}
}

// fingerprint hashes values to two residues modulo the prime 2⁶¹-1: the
// polynomials with the values as coefficients, at two points drawn from
// the draw's key. Two different vectors of n values agree at a random
// point with probability at most n/(2⁶¹-1) (a nonzero polynomial of
// degree below n has fewer than n roots), so at both with at most
// (n/2⁶¹)²: below 2⁻⁸⁰ for a tensor of 2²⁰ values, far below the
// verdict's own error. (The points come from the same key as the values,
// a dependence the bound ignores, as it does for the random functions.)
func fingerprint(v []elem, x [2]uint64) [2]uint64 {
	var h0, h1 uint64
	for _, e := range v {
		c := uint64(e.p)<<30 | uint64(e.q) // < 2⁶¹-1, one-to-one (p < 2³¹-1, q < 2³⁰)
		h0 = addM61(mulM61(h0, x[0]), c)
		h1 = addM61(mulM61(h1, x[1]), c)
	}
	return [2]uint64{h0, h1}
}

// m61 is the Mersenne prime 2⁶¹-1.
const m61 = 1<<61 - 1

// mulM61 multiplies modulo m61 two values below 2⁶¹.
func mulM61(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return addM61(hi<<3|lo>>61, lo&m61)
}

// addM61 adds modulo m61 two values below 2⁶¹.
func addM61(a, b uint64) uint64 {
	s := a + b
	if s >= m61 {
		s -= m61
	}
	return s
}
