package search

import (
	"math/bits"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// A customized op's threadblock searches under many configurations are
// mostly one search: the op DAGs the generator builds depend on the
// expressions of the tiles, which depend on the tile shapes only through
// the extents that ops reduce (the last dim of every tile: matmul's k,
// the accumulators' rows; and the dims a reduction names), and on the
// for-loop range. The other extents (those the grids and the walked dim
// cut differently) decide only which ops the shape rules accept.
//
// So the configurations of one op on the same inputs are grouped by what
// the expressions see (enumKey), and each group is enumerated once: a
// block state carries one block graph per configuration of its group, and
// the set of those still alive (blockState.alive). An op whose expression
// the oracle accepts is added to every alive graph whose shapes accept it;
// it is tried when at least one does. Each configuration still finishes
// its own graphs (output maps, shared memory, shapes wanted), so it finds
// exactly the graphs its own search would, in the same order.
//
// Expressions are derived, and judgements memoised, on tile shapes with
// the unseen extents set to 1 (judgedShape): the same for every
// configuration of a group. The shape rules are checked on each graph's
// real shapes (blockState.validIn, judgeMemo.shapeOK).

// shapePattern is the tile shapes of a block graph's inputs up to the
// names of their extents: each extent numbered by its first appearance
// (input by input, dim by dim), 1 and reduction_dimx kept as themselves.
// The shape rules compare extents for equality, with 1 (broadcast) and
// with reduction_dimx (divisibility, checked only on extents the group
// key holds as they are), and make new extents only from old ones, 1 and
// reduction_dimx: so two configurations of a group with the same pattern
// accept the same ops, and one graph can try them for both.
type shapePattern [MaxKernelInputs][ugraph.MaxRank]int32

func (s *searcher) shapePattern(g *block.Graph, ins int) shapePattern {
	var p shapePattern
	names := map[int]int32{1: -1, s.cfg.ReductionDimx: -2}
	for i := range ins {
		x := g.Tensors[i].Shape
		for d := range x.Rank() {
			n, ok := names[x.Dim(d)]
			if !ok {
				n = int32(len(names) - 1)
				names[x.Dim(d)] = n
			}
			p[i][d] = n
		}
	}
	return p
}

// maxGroup bounds a group's configurations (blockState.alive is a mask).
const maxGroup = 64

// enumKey is what a customized op's enumeration depends on, of its
// configuration, besides its inputs (inputSig): the for-loop range, which
// inputs are walked, and the tile shapes as the expressions see them.
type enumKey struct {
	solo    uint32 // a configuration enumerated alone (its confKey id), or 0
	forloop int
	varies  [MaxKernelInputs]bool
	tiles   [MaxKernelInputs]ugraph.Shape // judgedShape of each input tile
}

// sizeDims returns the dims, besides the last, whose extents enter the
// expressions of ops (those a reduction choice names), and whether the
// ops' shapes allow grouping at all: concat makes new extents from old
// ones, whose equalities the unseen extents would decide.
func sizeDims(ops []OpChoice) (dims uint32, groupable bool) {
	for _, c := range ops {
		switch c.Kind.Info().Class {
		case ugraph.ClassConcat:
			return 0, false
		case ugraph.ClassReduction:
			dims |= 1 << c.Attr.Dim
		}
	}
	return dims, true
}

// judgedShape is x as the expressions see it: extents that no op reduces
// (below the last dim, outside searcher.sizeDims) set to 1.
func (s *searcher) judgedShape(x ugraph.Shape) ugraph.Shape {
	for d := range x.Rank() - 1 {
		if s.sizeDims&(1<<d) == 0 && x.Dim(d) != 1 {
			x = x.WithDim(d, 1)
		}
	}
	return x
}

// enumGroups partitions confs (configurations of a customized op on ins)
// into groups that share an enumeration, in the order of their first
// configurations, each in the order of confs. Configurations that do not
// divide ins (tileShapes) are left out.
func (k *kernelState) enumGroups(ins []kernel.TensorID, confs []blockConfig) [][]blockConfig {
	s := k.s
	index := map[enumKey]int{}
	var groups [][]blockConfig
	for _, c := range confs {
		tiles, ok := k.tileShapes(ins, c)
		if !ok {
			s.prunedShape.Add(1)
			continue
		}
		key := enumKey{forloop: c.forloop}
		if !s.groupable {
			key.solo = c.id
		}
		for i, tile := range tiles[:len(ins)] {
			if tile.Rank() != tiles[0].Rank() {
				key.solo = c.id // positions would not line up
			}
			key.tiles[i] = s.judgedShape(tile)
			key.varies[i] = block.InputVaries(c.forloop, c.fmaps[i])
		}
		j, ok := index[key]
		if !ok || len(groups[j]) == maxGroup {
			j = len(groups)
			index[key] = j
			groups = append(groups, nil)
		}
		groups[j] = append(groups[j], c)
	}
	return groups
}

// validIn returns the alive configurations of b whose graphs' shapes
// accept op c.
func (b *blockState) validIn(c *blockCand) uint64 {
	choice := b.k.s.cfg.BlockOps[c.choice]
	in := c.operands()
	var valid uint64
	for m := b.alive; m != 0; m &= m - 1 {
		j := bits.TrailingZeros64(m)
		g := b.graphs[j]
		key := shapeKey{choice: c.choice}
		var shapes [2]ugraph.Shape
		for i, t := range in {
			shapes[i] = g.Tensors[t].Shape
			key.in[i] = shapes[i].Extents()
		}
		if b.k.memo.shapeOK(key, shapes[:len(in)], choice, g.ReductionDimx) {
			valid |= 1 << j
		}
	}
	return valid
}

// shapeKey is an op choice on operands of some shapes (their extents: a
// key without padding, which maps hash as plain memory); in[1] is zero
// for a unary op.
type shapeKey struct {
	choice int32
	in     [2][ugraph.MaxRank]int32
}

// shapeOK reports whether the shape rules accept choice c (key.choice) on
// operands of shapes in (key's), memoised.
func (m *judgeMemo) shapeOK(key shapeKey, in []ugraph.Shape, c OpChoice, dimx int) bool {
	if ok, hit := m.shapes[key]; hit {
		return ok
	}
	attr := block.OpAttr(c.Kind, c.Attr, in[0])
	_, err := ugraph.InferShape(c.Kind, attr, in, dimx)
	if len(m.shapes) >= m.max {
		clear(m.shapes)
	}
	m.shapes[key] = err == nil
	return err == nil
}
