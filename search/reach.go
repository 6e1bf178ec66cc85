package search

import (
	"errors"
	"math/bits"
	"slices"

	"github.com/mirage-go/mirage/absexpr"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
)

// A graph-defined kernel that is to be the kernel graph's last op writes
// the program's outputs: a candidate keeps it only if each output's
// expression may equal a program output's (kernelState.record), and its
// block graph consumes every input tile (blockState.finish). Below a first
// graph-defined kernel, most input sets and configurations of the last
// one cannot meet both (for attention: partial sums of exp(QK) beside V,
// which must be read too, but which no op can combine with them at those
// tile shapes), and their threadblock searches enumerate every op DAG on
// them for nothing: on gqa, 97% of the states were in such searches.
//
// Two checks tell them apart before the search, each a closure: the set
// of tiles the search could make on the inputs under the op choices, as
// many times as the ops left allow, keeping what the oracle accepts, with
// for each tile the sets of inputs it can be computed from. A last kernel
// is searched only if some tiles that may be outputs are computed from all
// its inputs. The closures ignore what only narrows the search (the
// canonical order, shared memory, output maps), so they hold every tile
// the search can make, and prune only searches that cannot end in a
// candidate.
//
//   - unsizedReaches, for every configuration of an input set at once,
//     closes the inputs' unsized expressions (absexpr.Unsized) under an
//     oracle for the unsized outputs: what no tile shape or for-loop can
//     make. Its answer depends on the inputs' expressions alone.
//   - reaches, for one configuration, closes its tiles: an expression, a
//     phase (ops take one, as judgeCands), whether it varies across
//     iterations (refusedAccum), and a reach shape (reachShapes): the dims that
//     the expressions see (judgedShape) and the one before the last, which
//     decides whether a matmul's operands fit. Its answer depends on the
//     inputs' reach tiles and the for-loop, shared by every configuration
//     that cuts the inputs alike.
//
// Both answers are shared by every worker.

// maxReach bounds the tiles a closure holds; past it, the search is not
// pruned. Closures that find nothing are mostly small (on qknorm_gqa,
// seven tiles on average), and a large one can cost more than the search
// it might save.
const maxReach = 96

// inputSets is a set of sets of a kernel's inputs: bit m stands for the
// set that holds input i when bit i of m is set (MaxKernelInputs bits).
type inputSets uint16

// join returns the unions of a set of x and a set of y.
func (x inputSets) join(y inputSets) inputSets {
	var z inputSets
	for a := x; a != 0; a &= a - 1 {
		ma := bits.TrailingZeros16(uint16(a))
		for b := y; b != 0; b &= b - 1 {
			z |= 1 << (ma | bits.TrailingZeros16(uint16(b)))
		}
	}
	return z
}

// reachEdge is an op of a closure: tile to is op(tile x, tile y), or
// op(tile x) when y is -1.
type reachEdge struct{ to, x, y int32 }

// closure is a closure's tiles by index: the edges of the ops found, the
// tiles of the inputs, and the tiles that may be outputs.
type closure struct {
	tiles   int
	edges   []reachEdge
	inputs  []int32 // per input, its tile
	outputs []int32
	from    []inputSets // coversInputs's
}

func (c *closure) reset() {
	c.tiles = 0
	c.edges, c.inputs, c.outputs = c.edges[:0], c.inputs[:0], c.outputs[:0]
}

// grow runs the rounds of a closure of c.tiles tiles, at most ops, until
// no tile is new: semi-naively, each round calls unary on each new tile
// and binary on each pair (a ≤ b) of which b is new. The callbacks add
// tiles and edges; they report false to stop, and so does grow.
func (c *closure) grow(ops int, unary func(b int32) bool, binary func(a, b int32) bool) bool {
	old := 0
	for range ops {
		n := c.tiles
		for b := int32(old); b < int32(n); b++ {
			if !unary(b) {
				return false
			}
			for a := range b + 1 {
				if !binary(a, b) {
					return false
				}
			}
		}
		if c.tiles == n {
			break // closed
		}
		old = n
	}
	return true
}

// coversInputs reports whether outputs tiles may be computed by the ops
// of c, in DAGs of at most ops ops, from all the inputs: one from all of
// them, or, for more outputs wanted, each input consumed by one of them.
func (c *closure) coversInputs(ops, wanted int) bool {
	if len(c.outputs) == 0 {
		return false
	}
	c.from = slices.Grow(c.from[:0], c.tiles)[:c.tiles]
	clear(c.from)
	for i, t := range c.inputs {
		c.from[t] |= 1 << (1 << i)
	}
	for range ops {
		changed := false
		for _, e := range c.edges {
			from := c.from[e.x]
			if e.y >= 0 {
				from = from.join(c.from[e.y])
			}
			if gained := from &^ c.from[e.to]; gained != 0 {
				c.from[e.to] |= gained
				changed = true
			}
		}
		if !changed {
			break
		}
	}
	all := 1<<len(c.inputs) - 1
	var union int
	for _, o := range c.outputs {
		from := c.from[o]
		if wanted == 1 && from&(1<<all) != 0 {
			return true
		}
		for m := from; m != 0; m &= m - 1 {
			union |= bits.TrailingZeros16(uint16(m))
		}
	}
	return wanted > 1 && union == all
}

// unsizedKey is what unsizedReaches depends on: the inputs' unsized
// expressions, the ops left and the outputs wanted.
type unsizedKey struct {
	n, ops, outputs int32
	in              [MaxKernelInputs]uint64
}

// unsizedReaches reports whether a last kernel on in.ins may, under some
// configuration, compute outputs that may equal the program's from all its
// inputs, judged on unsized expressions.
func (k *kernelState) unsizedReaches(in openInputs) bool {
	s := k.s
	if !s.closable {
		return true
	}
	n := len(in.ins)
	ops := s.cfg.MaxBlockOps - n
	key := unsizedKey{n: int32(n), ops: int32(ops), outputs: int32(len(in.want))}
	var ins [MaxKernelInputs]*absexpr.Expr
	for i, t := range in.ins {
		e := k.tensors[t].expr
		if e == nil {
			return true // an input that could be anything
		}
		ins[i] = k.memo.unsized(e)
		key.in[i] = ins[i].ID()
	}
	if ok, hit := s.unsizedReach.load(key); hit {
		return ok
	}
	ok := k.unsizedClosure(ins[:n], ops, len(in.want))
	s.unsizedReach.store(key, ok)
	return ok
}

// unsizedClosure is unsizedReaches's closure on the unsized input
// expressions ins. Without sizes there are no shapes, phases or for-loop:
// every op choice applies to every tile.
func (k *kernelState) unsizedClosure(ins []*absexpr.Expr, ops, wanted int) bool {
	s, oracle := k.s, k.s.exprs.unsized
	c := &k.reach.closure
	c.reset()
	index := map[*absexpr.Expr]int32{}
	var tiles []*absexpr.Expr
	tile := func(e *absexpr.Expr) (int32, bool) { // false: too many
		t, ok := index[e]
		if !ok {
			if len(tiles) == maxReach {
				return 0, false
			}
			t = int32(len(tiles))
			index[e] = t
			tiles = append(tiles, e)
			c.tiles++
		}
		return t, true
	}
	for _, e := range ins {
		t, _ := tile(e)
		c.inputs = append(c.inputs, t)
	}
	// Any shape will do: an unsized expression sums over one element.
	one := ugraph.MustShape(1, 1, 1, 1)
	shapes := []ugraph.Shape{one, one}
	loop := absexpr.Loop{Range: 1, ReductionDimx: 1}
	apply := func(list []int, x, y int32) bool {
		args := []*absexpr.Expr{tiles[x]}
		if y >= 0 {
			args = append(args, tiles[y])
		}
		for _, i := range list {
			choice := s.cfg.BlockOps[i]
			e, err := absexpr.ForOp(choice.Kind, block.OpAttr(choice.Kind, choice.Attr, one), args, shapes[:len(args)], loop)
			switch {
			case errors.Is(err, absexpr.ErrNoExpr):
				return false // could be anything
			case err != nil:
				continue
			}
			if ok, err := oracle.IsSubexpr(e); err == nil && !ok {
				continue
			}
			to, ok := tile(e)
			if !ok {
				return false
			}
			c.edges = append(c.edges, reachEdge{to: to, x: x, y: y})
		}
		return true
	}
	if !c.grow(ops,
		func(b int32) bool { return apply(s.blockUnary, b, -1) },
		func(a, b int32) bool {
			return apply(s.blockBinary, a, b) && (a == b || apply(s.blockNoncommutative, b, a))
		}) {
		return true
	}
	for i, e := range tiles {
		if oracle.MayEqualTarget(e) {
			c.outputs = append(c.outputs, int32(i))
		}
	}
	return c.coversInputs(ops, wanted)
}

// reachTile is a tile of reaches's closure: an operand of the judgements
// (expression and judged shape), its reach shape, and its phase.
type reachTile struct {
	operand
	shape        ugraph.Shape // reach shape
	post, varies bool
	shapeIndex   int32 // of shape among the closure's (reachScratch.shapes)
}

// reachTileKey is what tells reaches's tiles apart.
type reachTileKey struct {
	id           uint32
	shape        [ugraph.MaxRank]int32
	post, varies bool
}

func (t *reachTile) key() reachTileKey {
	return reachTileKey{t.id, t.shape.Extents(), t.post, t.varies}
}

// reachScratch is a worker's memory for closures, reused.
type reachScratch struct {
	closure
	index map[reachTileKey]int32
	tiles []reachTile
	// shapes numbers the closure's reach shapes; fits holds, per pair of
	// them below maxFitShapes, the binary ops whose shape rules accept
	// the pair (computed in closure number gen). Most pairs of tiles fit
	// few ops or none, and an op that does not fit needs no judgement.
	shapes map[ugraph.Shape]int32
	fits   [maxFitShapes * maxFitShapes]pairFit
	gen    uint32
	sub    []int // apply's list of the ops that fit
}

// maxFitShapes bounds the reach shapes of a closure whose pairs
// reachScratch.fits holds; the pairs of others are judged for every op.
const maxFitShapes = 32

// pairFit is the binary op choices whose shape rules accept the reach
// shapes (x, y), as bits of their positions: fwd in searcher.blockBinary
// on (x, y), rev in searcher.blockNoncommutative on (y, x); allOps when
// all of them do.
type pairFit struct {
	gen      uint32
	fwd, rev uint32
}

// allOps is the fit of every op of a list.
const allOps = ^uint32(0)

// maxFitOps bounds the lists whose ops fitting tells apart: the memo's
// name of a part of a list (apply) must stay an int32.
const maxFitOps = 28

// fitting returns the ops of list (allOps for more than maxFitOps) whose
// shape rules accept operands of shapes x and y, as keep applies them.
func (s *searcher) fitting(list []int, x, y ugraph.Shape) uint32 {
	if len(list) > maxFitOps {
		return allOps
	}
	var m uint32
	in := [2]ugraph.Shape{x, y}
	for j, i := range list {
		ch := s.cfg.BlockOps[i]
		ch.Attr = block.OpAttr(ch.Kind, ch.Attr, x)
		if _, err := ugraph.InferShape(ch.Kind, ch.Attr, in[:], s.cfg.ReductionDimx); err == nil {
			m |= 1 << j
		}
	}
	if m == 1<<len(list)-1 {
		return allOps
	}
	return m
}

// fit returns the pairFit of tiles a and b, from the closure's table or
// else the memo's.
func (sc *reachScratch) fit(s *searcher, m *judgeMemo, a, b *reachTile) pairFit {
	if a.shapeIndex >= maxFitShapes || b.shapeIndex >= maxFitShapes {
		return m.fit(s, a.shape, b.shape)
	}
	f := &sc.fits[a.shapeIndex*maxFitShapes+b.shapeIndex]
	if f.gen != sc.gen {
		*f = m.fit(s, a.shape, b.shape)
		f.gen = sc.gen
	}
	return *f
}

// fit returns the pairFit of reach shapes x and y, memoised: shape rules
// are slow to refuse (their errors are formatted).
func (m *judgeMemo) fit(s *searcher, x, y ugraph.Shape) pairFit {
	key := [2]ugraph.Shape{x, y}
	f, ok := m.fits[key]
	if !ok {
		if m.fits == nil || len(m.fits) >= m.max {
			m.fits = map[[2]ugraph.Shape]pairFit{}
		}
		f = pairFit{fwd: s.fitting(s.blockBinary, x, y), rev: s.fitting(s.blockNoncommutative, y, x)}
		m.fits[key] = f
	}
	return f
}

// reachKey is what reaches depends on: the input tiles (expression and
// reach shape, and whether the for-loop walks them), the for-loop, the
// ops left and the outputs wanted.
type reachKey struct {
	n, ops, outputs int32
	loop            [2]int32
	in              [MaxKernelInputs]operandKey
	varies          [MaxKernelInputs]bool
}

// reachShapes sets out[i] to the reach shape of tiles[i]: the tile with
// the dims set to 1 that neither the expressions (judgedShape) nor
// matmul's shape rule (the one before the last) see, and the extents of
// that one renamed (to placeholderExtent and up) where no dim that the
// expressions see has them. The shape rules compare those extents only
// for equality, with each other and with the extents the expressions see
// (from which every tile's last dim is drawn), and the dims set to 1 are
// the same ones in every tile of a rank: so on reach shapes the rules
// accept every op they accept on the real ones, and give the reach shape
// of the real result. Tilings that differ only in the renamed extents
// share a closure.
func (s *searcher) reachShapes(tiles, out []ugraph.Shape) {
	seen := func(x ugraph.Shape, d int) bool { return d == x.Rank()-1 || s.sizeDims&(1<<d) != 0 }
	kept := append(make([]int, 0, 2+MaxKernelInputs*ugraph.MaxRank), 1, s.cfg.ReductionDimx)
	for _, x := range tiles {
		for d := range x.Rank() {
			if seen(x, d) {
				kept = append(kept, x.Dim(d))
			}
		}
	}
	var from, to [MaxKernelInputs]int // renamed extents
	renamed, next := 0, placeholderExtent
	for i, x := range tiles {
		for d := range x.Rank() - 1 {
			switch n := x.Dim(d); {
			case seen(x, d):
			case d < x.Rank()-2:
				x = x.WithDim(d, 1)
			case !slices.Contains(kept, n):
				j := slices.Index(from[:renamed], n)
				if j < 0 {
					for slices.Contains(kept, next) {
						next++
					}
					j, from[renamed], to[renamed] = renamed, n, next
					renamed++
					next++
				}
				x = x.WithDim(d, to[j])
			}
		}
		out[i] = x
	}
}

// placeholderExtent is where reachShapes's names of extents start: more
// than the extents of tiles that fit shared memory.
const placeholderExtent = 1 << 20

// reaches reports whether a last kernel on in.ins with configuration
// conf, whose input tiles are tiles, may compute outputs that may equal
// the program's from all its inputs.
func (k *kernelState) reaches(in openInputs, conf blockConfig, tiles []ugraph.Shape) bool {
	s := k.s
	if !s.closable {
		return true
	}
	n := len(in.ins)
	ops := s.cfg.MaxBlockOps - n
	key := reachKey{n: int32(n), ops: int32(ops), outputs: int32(len(in.want)),
		loop: [2]int32{int32(conf.forloop), int32(s.cfg.ReductionDimx)}}
	var shapes [MaxKernelInputs]ugraph.Shape
	s.reachShapes(tiles, shapes[:n])
	for i, t := range in.ins {
		e := k.tensors[t].expr
		if e == nil {
			return true // an input that could be anything
		}
		key.in[i] = operandKey{e.ID(), shapes[i].Extents()}
		key.varies[i] = block.InputVaries(conf.forloop, conf.fmaps[i])
	}
	if ok, hit := s.reach.load(key); hit {
		return ok
	}
	var ins [MaxKernelInputs]reachTile
	for i, t := range in.ins {
		e, judged := k.tensors[t].expr, s.judgedShape(tiles[i])
		ins[i] = reachTile{operand: operand{id: k.memo.closures.id(e, judged), expr: e, shape: judged}, shape: shapes[i], varies: key.varies[i]}
	}
	ok := k.closureReaches(ins[:n], ops, len(in.want), absexpr.Loop{Range: conf.forloop, ReductionDimx: s.cfg.ReductionDimx})
	s.reach.store(key, ok)
	return ok
}

// closureReaches is reaches's closure on the input tiles ins, in a block
// graph with the for-loop loop.
func (k *kernelState) closureReaches(ins []reachTile, ops, wanted int, loop absexpr.Loop) bool {
	s, memo := k.s, k.memo.closures
	sc := &k.reach
	c := &sc.closure
	c.reset()
	if sc.index == nil {
		sc.index, sc.shapes = map[reachTileKey]int32{}, map[ugraph.Shape]int32{}
	}
	clear(sc.index)
	clear(sc.shapes)
	sc.tiles = sc.tiles[:0]
	if sc.gen++; sc.gen == 0 { // wrapped: entries of gen 0 would pass as this closure's
		sc.fits = [len(sc.fits)]pairFit{}
		sc.gen = 1
	}
	tile := func(t reachTile) (int32, bool) { // false: too many
		key := t.key()
		r, ok := sc.index[key]
		if !ok {
			if len(sc.tiles) == maxReach {
				return 0, false
			}
			si, ok := sc.shapes[t.shape]
			if !ok {
				si = int32(len(sc.shapes))
				sc.shapes[t.shape] = si
			}
			t.shapeIndex = si
			r = int32(len(sc.tiles))
			sc.index[key] = r
			sc.tiles = append(sc.tiles, t)
			c.tiles++
		}
		return r, true
	}
	for _, t := range ins {
		r, _ := tile(t)
		c.inputs = append(c.inputs, r)
	}
	// keep adds the result of op choice ch on the tiles x and y (-1 for a
	// unary op), of judgement j, if the shape rules accept it.
	keep := func(ch OpChoice, j judgement, x, y int32) bool {
		if !j.ok {
			return true
		}
		args := [2]reachTile{sc.tiles[x]}
		n := 1
		if y >= 0 {
			args[1], n = sc.tiles[y], 2
		}
		t := reachTile{post: args[0].post}
		var shapes [2]ugraph.Shape
		for i, a := range args[:n] {
			t.varies = t.varies || a.varies
			shapes[i] = a.shape
		}
		t.varies = block.OpVaries(ch.Kind, t.varies)
		if ch.Kind == ugraph.OpForloopAccum {
			t.post = true
		}
		shape, err := ugraph.InferShape(ch.Kind, ch.Attr, shapes[:n], loop.ReductionDimx)
		if err != nil {
			return true
		}
		judged := s.judgedShape(shape)
		t.operand = operand{id: memo.id(j.e, judged), expr: j.e, shape: judged}
		t.shape = shape
		to, ok := tile(t)
		if ok {
			c.edges = append(c.edges, reachEdge{to: to, x: x, y: y})
		}
		return ok
	}
	var args [2]operand
	// apply applies the ops of list that fit (a mask of their positions,
	// or allOps) on tiles x and y; name names the list for the memo.
	apply := func(list []int, name int32, fit uint32, x, y int32) bool {
		if fit == 0 {
			return true
		}
		if fit != allOps {
			sc.sub = sc.sub[:0]
			for j, i := range list {
				if fit&(1<<j) != 0 {
					sc.sub = append(sc.sub, i)
				}
			}
			// The memo names a part of a list by the list's name and
			// the part's mask: name is -1 to -3, so name - 4·fit is
			// one of theirs only for that list and that mask.
			list, name = sc.sub, name-4*int32(fit)
		}
		n := 1
		args[0] = sc.tiles[x].operand
		if y >= 0 {
			args[1], n = sc.tiles[y].operand, 2
		}
		first := sc.tiles[x]
		loop := loop
		loop.Invariant = n == 1 && !first.varies
		js := s.exprs.judgeOps(s, memo, name, list, args[:n], loop)
		for j, i := range list {
			ch := s.cfg.BlockOps[i]
			if refusedAccum(ch, first.post, loop.Range, first.varies) {
				continue // as judgeCands
			}
			ch.Attr = block.OpAttr(ch.Kind, ch.Attr, first.shape)
			if !keep(ch, js[j], x, y) {
				return false
			}
		}
		return true
	}
	if !c.grow(ops,
		func(b int32) bool { return apply(s.blockUnary, blockUnaryList, allOps, b, -1) },
		func(a, b int32) bool {
			ta, tb := &sc.tiles[a], &sc.tiles[b]
			if ta.post != tb.post {
				return true // one phase per op
			}
			f := sc.fit(s, memo, ta, tb)
			return apply(s.blockBinary, blockBinaryList, f.fwd, a, b) && (a == b || apply(s.blockNoncommutative, blockNoncommutativeList, f.rev, b, a))
		}) {
		return true
	}
	for i, t := range sc.tiles {
		if t.post && (t.expr == nil || s.exprs.oracle.MayEqualTarget(t.expr)) {
			c.outputs = append(c.outputs, int32(i))
		}
	}
	return c.coversInputs(ops, wanted)
}
