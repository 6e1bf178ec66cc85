package seed

import (
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// maxRowTile bounds the elements of one block's tile in the rows rule:
// the cost model drops tilings that do not fit shared memory, and this
// keeps the rule from offering many that cannot.
const maxRowTile = 1 << 16

// rowsRule fuses a program of element-wise ops, sums over the last dim
// and rms_norms over it into one graph-defined kernel whose blocks own
// whole rows: the grid's x axis cuts dim 0 into blocks of 1, 2, 4, ...
// rows, its y axis (rank 3 and more) gives each entry of dim 1 its own
// blocks, and each block computes the program on its tile in one
// iteration. A rank-3 program whose sums are over dim 1 instead (a norm
// of each key of attention's K, laid out batch × dim × keys) gets blocks
// that own whole columns: grid x cuts dim 0 as before, y cuts the last
// dim into tiles of 32, 64, ... columns, and dim 1 is whole. Its premise:
// every tensor has the same rank (at least 2), the sums share their dim,
// every dim but the summed one of every tensor is the program's extent
// there or 1 (it broadcasts), and every output has the program's extents.
func rowsRule(p *program, opts Options) []*kernel.Graph {
	g := p.g
	rank := g.Tensors[g.Outputs[0]].Shape.Rank()
	if rank < 2 {
		return nil
	}
	last := rank - 1
	summed := -1 // the dim the reductions sum over
	for _, op := range g.Ops {
		switch op.Kind.Info().Class {
		case ugraph.ClassIO, ugraph.ClassUnary, ugraph.ClassBinary:
		case ugraph.ClassReduction, ugraph.ClassNorm:
			d := op.Attr.Dim
			if op.Kind.Info().Class == ugraph.ClassNorm && d != last || summed >= 0 && d != summed {
				return nil // a norm over the last dim only (the block's rms_norm)
			}
			summed = d
		default:
			return nil
		}
	}
	if summed < 0 {
		summed = last
	}
	if summed != last && (rank != 3 || summed != 1) {
		return nil
	}
	extent := make([]int, rank)
	for _, t := range g.Tensors {
		if t.Shape.Rank() != rank {
			return nil
		}
		for d := range rank {
			if d != summed {
				extent[d] = max(extent[d], t.Shape.Dim(d))
			}
		}
	}
	for _, t := range g.Tensors {
		for d := range rank {
			if n := t.Shape.Dim(d); d != summed && n != 1 && n != extent[d] {
				return nil
			}
		}
	}
	for _, t := range g.Outputs {
		for d := range rank {
			if d != summed && g.Tensors[t].Shape.Dim(d) != extent[d] {
				return nil
			}
		}
	}
	// A block's tile: rows of dim 0, and either one entry of dim 1 (rank 3
	// and more), the dims between whole and the widest last dim; or (sums
	// over dim 1) the widest dim 1 and columns of the last.
	perRow := 0
	for _, t := range g.Tensors {
		perRow = max(perRow, t.Shape.Dim(summed))
	}
	var graphs []*kernel.Graph
	tiling := func(grid block.Dim3, dy int) { // grid y along dim dy
		if grid[0] > block.MaxGridAxis || grid[1] > block.MaxGridAxis {
			return
		}
		for _, threads := range opts.Threads {
			if kg, ok := rowsKernel(p, grid, threads, dy, opts.ReductionDimx); ok {
				graphs = append(graphs, kg)
			}
		}
	}
	if summed != last {
		for _, rows := range tileSizes(extent[0], 1, max(1, maxRowTile/(perRow*32))) {
			for _, cols := range tileSizes(extent[last], 32, max(32, maxRowTile/(rows*perRow))) {
				tiling(block.Dim3{extent[0] / rows, extent[last] / cols, 1}, last)
			}
		}
		return graphs
	}
	gy, dy := 1, -1
	if rank >= 3 {
		gy, dy = extent[1], 1
		for d := 2; d < last; d++ {
			perRow *= extent[d]
		}
	}
	for _, rows := range tileSizes(extent[0], 1, max(1, maxRowTile/max(perRow, 1))) {
		tiling(block.Dim3{extent[0] / rows, gy, 1}, dy)
	}
	return graphs
}

// rowsKernel builds the rows rule's kernel on one grid: every input loaded
// whole along the last dim (no for-loop), every op on the tiles, every
// output accumulated over the one iteration and stored.
func rowsKernel(p *program, grid, threads block.Dim3, dy, reductionDimx int) (*kernel.Graph, bool) {
	k, ok := newKernelBuilder(p, grid, threads, 1, reductionDimx)
	if !ok {
		return nil, false
	}
	for i, op := range p.g.Ops {
		if op.Kind == ugraph.OpInput {
			t := op.Out[0]
			if len(p.consumers[t]) == 0 {
				continue // read by no op: no tile
			}
			tile, ok := k.load(t, axisMap(p.shape(t), grid, 0, dy), -1)
			if !ok {
				return nil, false
			}
			k.tiles[t] = tile
			continue
		}
		if !k.compute(i) {
			return nil, false
		}
	}
	for _, t := range p.g.Outputs {
		acc, ok := k.add(ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumNone}, k.tiles[t])
		if !ok || !k.store(t, acc, axisMap(p.shape(t), grid, 0, dy)) {
			return nil, false
		}
	}
	return k.graph()
}
