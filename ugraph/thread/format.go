package thread

import (
	"fmt"
	"strings"

	"github.com/mirage-go/mirage/ugraph"
)

// String describes the plan for a human: the launch, every live tile with
// its storage, every group with its ops and steps, and the schedule.
//
//	grid (96, 1, 1), 128 threads (4 warps), forloop_range 64, stages 4, smem 46208 B, 8 register floats
//	s0  input              shared     float16  16x72 x4  @0 (18432 B)  steps 0-3
//	g0  matmul(s0, s1) [mma ...] + forloop_accum + div -> store t0   loop 1, post 4
func (g *Graph) String() string {
	var b strings.Builder
	bg := g.Block
	fmt.Fprintf(&b, "grid %v, %d threads (%d warps), forloop_range %d, stages %d, smem %d B, %d register floats\n",
		bg.Grid, g.Threads, g.Warps(), bg.ForloopRange, g.Stages, g.SmemBytes, g.RegFloats)
	for i := range bg.Ops {
		op := &bg.Ops[i]
		if op.Out < 0 || g.Ops[i].Role == RoleDead {
			continue
		}
		t := &g.Tiles[op.Out]
		fmt.Fprintf(&b, "  s%-3d %-18s %-9s %-8v %v", op.Out, op.Kind.String()+accumSuffix(op.Attr, op.Kind), t.Storage, t.DType, bg.Tensors[op.Out].Shape)
		if t.Storage == Shared {
			fmt.Fprintf(&b, "  %dx%d", t.Rows, t.Pitch)
			if t.Stages > 1 {
				fmt.Fprintf(&b, " x%d", t.Stages)
			}
			fmt.Fprintf(&b, " @%d (%d B) steps %d-%d", t.Offset, t.Bytes, t.Live.First, t.Live.Last)
			if t.Accum {
				b.WriteString(" accumulator")
			}
		}
		b.WriteByte('\n')
	}
	for gi := range g.Groups {
		b.WriteString("  " + g.GroupString(gi) + "\n")
	}
	return b.String()
}

// GroupString describes group gi on one line: its ops, how the head runs,
// its stores and its steps.
func (g *Graph) GroupString(gi int) string {
	gr := &g.Groups[gi]
	bg := g.Block
	var b strings.Builder
	fmt.Fprintf(&b, "g%d  ", gi)
	for k, i := range gr.Ops() {
		op := &bg.Ops[i]
		if k > 0 {
			b.WriteString(" + ")
		}
		fmt.Fprintf(&b, "s%d=%s%s", op.Out, op.Kind, accumSuffix(op.Attr, op.Kind))
		if k == 0 {
			if p := g.Ops[i].MMA; p != nil {
				fmt.Fprintf(&b, " [mma %dx%d warps, %dx%d tiles/warp", p.WarpsM, p.WarpsN, p.MPer, p.NPer)
				if p.Persistent {
					b.WriteString(", persistent")
				} else {
					fmt.Fprintf(&b, ", chunks %dx%d", p.ChunkM, p.ChunkN)
				}
				if f := p.Scaled; f != nil {
					fmt.Fprintf(&b, ", B s%d scaled by s%d per %d rows", f.X, f.By, f.Rows)
				}
				if p.Base != 0 {
					fmt.Fprintf(&b, ", from warp %d", p.Base)
				}
				if p.Slices() > 1 {
					fmt.Fprintf(&b, ", K in %d slices, scratch @%d", p.Slices(), p.Scratch)
				}
				b.WriteString("]")
			} else {
				b.WriteString(" [simt")
				switch {
				case gr.LaneRows > 0:
					fmt.Fprintf(&b, ", lane partials x%d", gr.LaneRows)
				case gr.RowWarps > 1 && gr.Scratch >= 0:
					fmt.Fprintf(&b, ", %d warps a row, scratch @%d", gr.RowWarps, gr.Scratch)
				case gr.RowWarps > 1:
					fmt.Fprintf(&b, ", %d warps a row, atomicAdd", gr.RowWarps)
				}
				if gr.RowVector > 1 {
					fmt.Fprintf(&b, ", rows read %d at a time", gr.RowVector)
				}
				if gr.StoreVector > 1 {
					fmt.Fprintf(&b, ", stored %d at a time", gr.StoreVector)
				}
				b.WriteString("]")
			}
		}
	}
	for _, s := range gr.Stores {
		fmt.Fprintf(&b, " -> store output %d", outputIndex(g, s))
	}
	if gr.Loop >= 0 {
		fmt.Fprintf(&b, "  loop step %d", g.LoopStep(gr.Loop))
	}
	if gr.Through {
		b.WriteString(" (one iteration: stores in the loop)")
	}
	if gr.Post >= 0 {
		fmt.Fprintf(&b, "  post step %d", g.PostStep(gr.Post))
	}
	return b.String()
}

func accumSuffix(a ugraph.Attr, k ugraph.OpKind) string {
	if k == ugraph.OpForloopAccum {
		return "(" + a.Accum.String() + ")"
	}
	return ""
}

// outputIndex is the position of output op i among the block's output ops.
func outputIndex(g *Graph, i int) int {
	n := 0
	for j := range i {
		if g.Block.Ops[j].Kind == ugraph.OpOutput {
			n++
		}
	}
	return n
}
