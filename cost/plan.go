package cost

import (
	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/thread"
)

// blockPlan is what the model needs of how a block graph runs on a block's
// threads, as ugraph/thread plans it.
type blockPlan struct {
	instr     target.MMA    // the arch's tensor-core instruction
	smem      int           // shared memory per block, bytes
	dead      []bool        // per op: not run, since no output depends on it
	mma       []*thread.MMA // per op: a matmul's tensor-core plan; nil: SIMT, fp32
	freeAccum []bool        // per op: a None accumulator that adds nothing: the mma does it in its registers, or a loop of one iteration passes it through
	// inPlace, per input op whose tile the plan leaves in device memory,
	// is how many times over the code reads the tile (0: a tile copied).
	inPlace []float64
}

// planOf reads what the model needs of a graph-defined kernel's thread
// plan: the plan the launch package made, which the code generator emits.
func planOf(tg *thread.Graph, arch target.Arch) blockPlan {
	b := tg.Block
	n := len(b.Ops)
	p := blockPlan{instr: arch.MMA, smem: tg.SmemBytes, dead: make([]bool, n), mma: make([]*thread.MMA, n), freeAccum: make([]bool, n),
		inPlace: make([]float64, n)}
	for i := range b.Ops {
		if op := &b.Ops[i]; op.Kind == ugraph.OpInput && tg.Ops[i].Role != thread.RoleDead && tg.Tiles[op.Out].Storage == thread.Device {
			p.inPlace[i] = readsInPlace(tg, op.Out)
		}
	}
	for i, op := range tg.Ops {
		p.dead[i] = op.Role == thread.RoleDead
		p.mma[i] = op.MMA
		if b.Ops[i].Kind != ugraph.OpForloopAccum || b.Ops[i].Attr.Accum != ugraph.AccumNone || op.Role != thread.RoleFused {
			continue
		}
		// mma.sync adds into its accumulator registers: when the
		// accumulator directly follows the matmul and stays in registers
		// across the loop, accumulating costs nothing more. One that a
		// loop of one iteration passes through adds nothing at all.
		gr := &tg.Groups[op.Group]
		head := tg.Ops[gr.Head].MMA
		p.freeAccum[i] = gr.Through || head != nil && head.Persistent && gr.Chain[0] == i
	}
	return p
}

// readsInPlace is how many times over the code reads tile t, left in
// device memory, as its readers run (codegen/cuda: an element per thread,
// or a row per warp): an element-wise op reads one element of it for each
// element it computes (a broadcast tile, many times each), a SIMT matmul K
// for each, rms_norm each element twice (the sum of squares, then the
// scaling), any other op each once.
func readsInPlace(tg *thread.Graph, t block.TensorID) float64 {
	b := tg.Block
	size := float64(b.Tensors[t].Shape.NumElements())
	reads := 0.0
	for c := range b.Ops {
		if tg.Ops[c].Role == thread.RoleDead {
			continue
		}
		op := &b.Ops[c]
		for _, in := range tg.Reads(c) {
			if in != t {
				continue
			}
			switch op.Kind.Info().Class {
			case ugraph.ClassUnary, ugraph.ClassBinary:
				reads += float64(b.Tensors[op.Out].Shape.NumElements())
			case ugraph.ClassMatmul:
				reads += float64(b.Tensors[op.Out].Shape.NumElements() * b.Tensors[op.In[0]].Shape.Last())
			case ugraph.ClassNorm:
				reads += 2 * size
			default:
				reads += size
			}
		}
	}
	return reads / size
}
