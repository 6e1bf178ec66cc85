package ffverify

import (
	"slices"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// plan is a validated kernel graph with the trial-independent facts that
// both evaluators need: who produces each tensor, which ops are live, and
// the schedule of every graph-defined kernel.
type plan struct {
	g        *kernel.Graph
	inputPos []int        // per tensor: its position in g.Inputs(), or -1
	producer []int        // per tensor: the op that produces it
	result   []int        // per tensor: its position among that op's results
	live     []bool       // per op: whether an output depends on it
	lastUse  []int        // per tensor: the last live op that reads it (len(Ops) for outputs)
	blocks   []*blockPlan // per op: the block graph's plan, for customized ops
	// memo says that a full check of the plan, as a candidate, may use
	// the Verifier's products memo: both fit in Options.MaxBytes.
	memo bool
}

// blockPlan is plan for one graph-defined kernel.
type blockPlan struct {
	g        *block.Graph
	base     int   // memo node id of tile 0: tiles are numbered after the kernel tensors
	producer []int // per tile: the op that produces it
	operand  []int // per op: for input ops, which operand of the customized op it reads
	outputs  []int // the output ops, in order
	// The live ops (those an output op depends on), split by phase.
	// Accumulators are in both: they add in the loop and finish after it.
	loop, post []int
	// invariant says, per tile, that the loop computes it alike on every
	// iteration: loaded without a for-loop map, or computed from such
	// tiles only. An accumulator sums such a tile once and multiplies it
	// by the number of iterations, as the model's constants take it (a
	// seed sums a tile the loop loads whole and scales it by 1/F).
	invariant []bool
	// varies says, per tile, along which grid axes (bit a: axis a, of
	// extent above 1) its values differ from block to block: the axes
	// whose input maps partition a dim of a tile it is computed from.
	// An accumulator that does not vary along some axis sums alike in
	// every block along it (sharedAccums).
	varies []uint8
}

// newPlan validates g and plans its evaluation.
func newPlan(g *kernel.Graph) (*plan, error) {
	if err := validate(g); err != nil {
		return nil, err
	}
	n := len(g.Tensors)
	p := &plan{
		g:        g,
		inputPos: slices.Repeat([]int{-1}, n),
		producer: make([]int, n),
		result:   make([]int, n),
		live:     make([]bool, len(g.Ops)),
		lastUse:  make([]int, n),
		blocks:   make([]*blockPlan, len(g.Ops)),
	}
	for k, id := range g.Inputs() {
		p.inputPos[id] = k
	}
	for i, op := range g.Ops {
		for r, t := range op.Out {
			p.producer[t], p.result[t] = i, r
		}
	}
	needed := make([]bool, n)
	for _, t := range g.Outputs {
		needed[t] = true
		p.lastUse[t] = len(g.Ops)
	}
	for i := len(g.Ops) - 1; i >= 0; i-- {
		op := &g.Ops[i]
		if !slices.ContainsFunc(op.Out, func(t kernel.TensorID) bool { return needed[t] }) {
			continue
		}
		p.live[i] = true
		for _, t := range op.In {
			needed[t] = true
			p.lastUse[t] = max(p.lastUse[t], i)
		}
	}
	node := n // memo node ids: kernel tensors, then the tiles of each block graph
	for i := range g.Ops {
		if op := &g.Ops[i]; op.Kind == ugraph.OpCustomized {
			p.blocks[i] = newBlockPlan(op.Block, node)
			node += len(op.Block.Tensors)
		}
	}
	return p, nil
}

func newBlockPlan(g *block.Graph, base int) *blockPlan {
	bp := &blockPlan{g: g, base: base, producer: make([]int, len(g.Tensors)), operand: make([]int, len(g.Ops))}
	live := make([]bool, len(g.Tensors))
	need := make([]bool, len(g.Ops))
	k := 0
	for i := range g.Ops {
		op := &g.Ops[i]
		switch op.Kind {
		case ugraph.OpInput:
			bp.operand[i] = k
			k++
		case ugraph.OpOutput:
			bp.outputs = append(bp.outputs, i)
		}
		if op.Out != block.NoTensor {
			bp.producer[op.Out] = i
		}
	}
	for i := len(g.Ops) - 1; i >= 0; i-- {
		op := &g.Ops[i]
		if op.Kind != ugraph.OpOutput && !live[op.Out] {
			continue
		}
		need[i] = true
		for _, t := range op.Operands() {
			live[t] = true
		}
	}
	for i := range g.Ops {
		if !need[i] {
			continue
		}
		op := &g.Ops[i]
		accum := op.Kind == ugraph.OpForloopAccum
		output := op.Kind == ugraph.OpOutput
		if accum || (!output && !g.Tensors[op.Out].PostLoop) {
			bp.loop = append(bp.loop, i)
		}
		if accum || output || g.Tensors[op.Out].PostLoop {
			bp.post = append(bp.post, i)
		}
	}
	bp.invariant = make([]bool, len(g.Tensors))
	for i := range g.Ops {
		op := &g.Ops[i]
		switch {
		case op.Out == block.NoTensor || g.Tensors[op.Out].PostLoop || op.Kind == ugraph.OpForloopAccum:
		case op.Kind == ugraph.OpInput:
			bp.invariant[op.Out] = op.Input.FMap < 0
		default:
			bp.invariant[op.Out] = !slices.ContainsFunc(op.Operands(), func(t block.TensorID) bool { return !bp.invariant[t] })
		}
	}
	bp.varies = make([]uint8, len(g.Tensors))
	for i := range g.Ops {
		op := &g.Ops[i]
		switch {
		case op.Out == block.NoTensor:
		case op.Kind == ugraph.OpInput:
			for a, d := range op.Input.IMap {
				if d >= 0 && g.Grid[a] > 1 {
					bp.varies[op.Out] |= 1 << a
				}
			}
		default:
			for _, t := range op.Operands() {
				bp.varies[op.Out] |= bp.varies[t]
			}
		}
	}
	return bp
}

// denseSize is the number of values a dense evaluation computes: every
// element of every live kernel result, and of every tile of every block (per
// iteration, for tiles in the for-loop). It saturates (ugraph.AddSize).
func (p *plan) denseSize() int64 {
	var n int64
	for i, op := range p.g.Ops {
		if !p.live[i] || op.Kind == ugraph.OpInput {
			continue
		}
		if bp := p.blocks[i]; bp != nil {
			n = ugraph.AddSize(n, ugraph.MulSize(int64(bp.g.Grid.Count()), bp.tileValues()))
			continue
		}
		n = ugraph.AddSize(n, int64(p.g.Tensors[op.Out[0]].Shape.NumElements()))
	}
	return n
}

// denseWork is what a dense evaluation does, in the units the fast path's
// budget counts (lazy.spend): every value denseSize counts, every
// multiply-add of a product and every term of a sum over a reduced dim,
// and every input element drawn. It saturates.
func (p *plan) denseWork() int64 {
	var n int64
	for i, op := range p.g.Ops {
		if !p.live[i] {
			continue
		}
		out := p.g.Tensors[op.Out[0]].Shape
		switch {
		case op.Kind == ugraph.OpInput:
			n = ugraph.AddSize(n, int64(out.NumElements()))
		case p.blocks[i] != nil:
			bp := p.blocks[i]
			n = ugraph.AddSize(n, ugraph.MulSize(int64(bp.g.Grid.Count()), ugraph.AddSize(bp.tileValues(), bp.tileTerms())))
		default:
			n = ugraph.AddSize(n, ugraph.AddSize(int64(out.NumElements()), terms(op.Kind, p.g.Tensors[op.In[0]].Shape, out)))
		}
	}
	return n
}

// terms is the number of terms the sums of an op of kind k from an
// operand of shape in to a result of shape out add: a product's
// multiply-adds, a reduction's or a norm's reads of its operand; 0 for
// an op that sums nothing.
func terms(k ugraph.OpKind, in, out ugraph.Shape) int64 {
	switch k.Info().Class {
	case ugraph.ClassMatmul:
		return ugraph.MulSize(int64(out.NumElements()), int64(in.Last()))
	case ugraph.ClassReduction, ugraph.ClassNorm:
		return int64(in.NumElements())
	}
	return 0
}

// tileTerms is terms over the tiles one block computes.
func (bp *blockPlan) tileTerms() int64 {
	var n int64
	for _, i := range bp.loop {
		op := &bp.g.Ops[i]
		var t int64
		switch op.Kind {
		case ugraph.OpInput, ugraph.OpOutput:
			continue
		case ugraph.OpForloopAccum:
			t = int64(bp.g.Tensors[op.In[0]].Shape.NumElements()) // an iteration's tile added
		default:
			t = terms(op.Kind, bp.g.Tensors[op.In[0]].Shape, bp.g.Tensors[op.Out].Shape)
		}
		n = ugraph.AddSize(n, ugraph.MulSize(int64(bp.g.ForloopRange), t))
	}
	for _, i := range bp.post {
		if op := &bp.g.Ops[i]; op.Kind != ugraph.OpOutput && op.Kind != ugraph.OpInput {
			n = ugraph.AddSize(n, terms(op.Kind, bp.g.Tensors[op.In[0]].Shape, bp.g.Tensors[op.Out].Shape))
		}
	}
	return n
}

// tileValues is the number of tile elements one block computes.
func (bp *blockPlan) tileValues() int64 {
	var n int64
	for _, i := range bp.loop {
		if op := &bp.g.Ops[i]; op.Kind != ugraph.OpForloopAccum {
			n = ugraph.AddSize(n, ugraph.MulSize(int64(bp.g.ForloopRange), int64(bp.g.Tensors[op.Out].Shape.NumElements())))
		}
	}
	for _, i := range bp.post {
		if op := &bp.g.Ops[i]; op.Kind != ugraph.OpOutput {
			n = ugraph.AddSize(n, int64(bp.g.Tensors[op.Out].Shape.NumElements()))
		}
	}
	return n
}
