package thread

// balance sets each mma's Base. The parts of a phase between two barriers
// run side by side, each warp through its own share of each; a matmul
// whose tiles leave warps idle (a few rows, fewer n-tiles than warps: a
// grouped-query layer's k and v beside its q, an adapter's X·A beside
// X·W) begins on the warps the parts before it loaded least, so that
// the matmuls of a part run on different warps rather than all from warp
// 0. The first mma of a phase, and one that keeps every warp busy,
// begins on warp 0. The cost model counts the busiest warp the same way.
func (d *deriver) balance() error {
	out := d.out
	warps := out.Warps()
	placed := make([]bool, len(out.Groups))
	for _, post := range []bool{false, true} {
		groups := out.Loop
		if post {
			groups = out.Post
		}
		wait := out.PartBarriers(post)
		load := make([]int, warps)
		for k, gi := range groups {
			gr := &out.Groups[gi]
			if wait[k] || out.SyncsWithin(gr, post) {
				clear(load)
			}
			p, busy := out.PartWarps(gr, post)
			if p == nil {
				continue // every warp alike
			}
			if !placed[gi] {
				placed[gi] = true
				p.Base = leastLoaded(load, busy)
			}
			work := out.partWork(gr, p, post)
			for r := range busy {
				load[(p.Base+r)%warps] += work
			}
		}
	}
	return nil
}

// PartWarps is the mma plan that divides gr's part (the loop's, or the
// post-loop one when post) among the warps and how many warps, from its
// Base on (MMA.Rank), run it; nil when every warp runs the part alike
// (no mma, or the element-wise post-loop part of an accumulator in
// shared memory). The post-loop part of a register accumulator runs on
// the warps of its first slice of K. The cost model counts the busiest
// warp by it.
func (g *Graph) PartWarps(gr *Group, post bool) (p *MMA, busy int) {
	p = g.Ops[gr.Head].MMA
	switch {
	case p == nil:
		return nil, 0
	case post && g.InLoop(gr.Head) && !p.Persistent:
		return nil, 0
	case post && g.InLoop(gr.Head):
		return p, p.BusyWarps() / p.Slices()
	}
	return p, p.BusyWarps()
}

// partWork is the work of each busy warp in gr's part, in warpGrid's
// units: per k-step two per mma and one per ldmatrix, and one per
// fragment value of the epilogue.
func (g *Graph) partWork(gr *Group, p *MMA, post bool) int {
	if post && g.InLoop(gr.Head) {
		return p.EpilogueValues()
	}
	whole := !post && g.SummedInRegisters(gr)
	work := p.KSteps() * (2*p.MPer*p.NPer + p.LdMatrix(whole))
	if !whole {
		work += p.EpilogueValues()
	}
	return work
}

// SyncsWithin reports whether gr's part (the loop's, or the post-loop one
// when post) waits at a barrier of its own: the part of a head that works
// by rows with each row shared among warps, which meet in its scratch
// (Group.Scratch) after the barrier. The parts before it, on whichever
// warps, end there, as at a barrier between parts (PartBarriers).
func (g *Graph) SyncsWithin(gr *Group, post bool) bool {
	return gr.Scratch >= 0 && g.InLoop(gr.Head) != post
}

// leastLoaded is the first warp of the busy consecutive warps (mod the
// block's) whose most loaded is least loaded; the lowest such warp.
func leastLoaded(load []int, busy int) int {
	best, base := -1, 0
	for b := range load {
		most := 0
		for r := range busy {
			most = max(most, load[(b+r)%len(load)])
		}
		if best < 0 || most < best {
			best, base = most, b
		}
	}
	return base
}
