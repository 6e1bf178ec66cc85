package cost

import (
	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/thread"
)

// blockPlan is what the model needs of how a block graph runs on a block's
// threads, as ugraph/thread plans it.
type blockPlan struct {
	instr     target.MMA    // the arch's tensor-core instruction
	smem      int           // shared memory per block, bytes
	dead      []bool        // per op: not run, since no output depends on it
	mma       []*thread.MMA // per op: a matmul's tensor-core plan; nil: SIMT, fp32
	freeAccum []bool        // per op: a None accumulator that the mma does in its registers
}

// planOf reads what the model needs of a graph-defined kernel's thread
// plan: the plan the launch package made, which the code generator emits.
func planOf(tg *thread.Graph, arch target.Arch) blockPlan {
	b := tg.Block
	n := len(b.Ops)
	p := blockPlan{instr: arch.MMA, smem: tg.SmemBytes, dead: make([]bool, n), mma: make([]*thread.MMA, n), freeAccum: make([]bool, n)}
	for i, op := range tg.Ops {
		p.dead[i] = op.Role == thread.RoleDead
		p.mma[i] = op.MMA
		if b.Ops[i].Kind != ugraph.OpForloopAccum || b.Ops[i].Attr.Accum != ugraph.AccumNone || op.Role != thread.RoleFused {
			continue
		}
		// mma.sync adds into its accumulator registers: when the
		// accumulator directly follows the matmul and stays in registers
		// across the loop, accumulating costs nothing more.
		gr := &tg.Groups[op.Group]
		head := tg.Ops[gr.Head].MMA
		p.freeAccum[i] = head != nil && head.Persistent && gr.Chain[0] == i
	}
	return p
}
