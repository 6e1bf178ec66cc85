package thread

import (
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
)

// PartBarriers reports, for each group of a phase (Loop's parts, or Post's
// when post), whether its part waits at a barrier (__syncthreads) first:
// when it reads shared bytes that another part wrote since the last
// barrier, or writes bytes that one read or wrote (the allocator places
// a tile over a dead one's bytes). A phase begins after a barrier: the
// loop's wait, or the one after the loop. The code generator's barriers
// and the cost model's both follow it.
func (g *Graph) PartBarriers(post bool) []bool {
	groups := g.Loop
	if post {
		groups = g.Post
	}
	var h hazards
	wait := make([]bool, len(groups))
	for k, gi := range groups {
		r, w := g.access(gi, post)
		if h.conflict(r, w) {
			wait[k] = true
			h = hazards{}
		}
		h.reads = append(h.reads, r...)
		h.writes = append(h.writes, w...)
	}
	return wait
}

// hazards are the shared bytes read and written since the last barrier.
type hazards struct{ reads, writes [][2]int }

func overlapsAny(a [][2]int, b [2]int) bool {
	for _, x := range a {
		if x[0] < b[1] && b[0] < x[1] {
			return true
		}
	}
	return false
}

// conflict reports whether a part reading r and writing w must wait.
func (h *hazards) conflict(r, w [][2]int) bool {
	for _, x := range r {
		if overlapsAny(h.writes, x) {
			return true
		}
	}
	for _, x := range w {
		if overlapsAny(h.writes, x) || overlapsAny(h.reads, x) {
			return true
		}
	}
	return false
}

// access lists the shared bytes the for-loop part (or the post-loop part)
// of group gi reads and writes.
func (g *Graph) access(gi int, post bool) (reads, writes [][2]int) {
	bg := g.Block
	gr := &g.Groups[gi]
	span := func(t block.TensorID) ([2]int, bool) {
		pt := &g.Tiles[t]
		return [2]int{pt.Offset, pt.Offset + pt.Bytes}, pt.Storage == Shared
	}
	read := func(t block.TensorID) {
		if s, ok := span(t); ok {
			reads = append(reads, s)
		}
	}
	write := func(t block.TensorID) {
		if s, ok := span(t); ok {
			writes = append(writes, s)
		}
	}
	var ops []int
	if post {
		if !g.InLoop(gr.Head) {
			ops = append(ops, gr.Head)
		} else if gr.Accum >= 0 {
			read(bg.Ops[gr.Accum].Out) // the accumulator is the source
			if a := bg.Ops[gr.Accum].Attr.Accum; gr.Accum == gr.Head && len(gr.Chain) == 0 && (a == ugraph.AccumMean || a == ugraph.AccumRMS) {
				write(bg.Ops[gr.Accum].Out) // finished in place
			}
		}
		ops = append(ops, gr.Chain[gr.InLoop:]...)
	} else {
		ops = append([]int{gr.Head}, gr.Chain[:gr.InLoop]...)
	}
	for _, i := range ops {
		op := &bg.Ops[i]
		for _, x := range g.Reads(i) {
			read(x)
		}
		if post && g.Tiles[op.Out].Storage == Shared || !post && g.LoopWritesShared(gr, i) {
			write(op.Out)
		}
	}
	if post && g.Tiles[gr.Result].Storage == Shared {
		write(gr.Result)
	}
	return reads, writes
}
