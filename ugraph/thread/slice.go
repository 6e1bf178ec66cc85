package thread

// sliceK gives the warps that a block's matmuls leave idle slices of
// their K. A matmul of a few rows has one m-tile, so its warps split only
// its n-tiles, and a block of more warps than n-tiles (8 rows of a
// 32-column tile: 4 n-tiles, 16 warps) runs the rest idle while the busy
// ones walk every k-step. The balance pass puts the loop's other matmuls
// on idle warps; where the matmuls together leave idle at least as many
// warps as they keep busy, each that can takes s slices, s the most that
// the block's warps allow them all (warps / the busy warps of all) and
// that divides its k-steps. It can where the warp's whole tile is summed
// in registers across the loop (Graph.SummedInRegisters), of at most
// maxSlicedTiles tiles, and its products are of one batch and not folded
// (the slice is then a column range of A and a row range of B): its grid
// keeps only its busy rows (G warps), and WarpsK groups of G take a slice
// of each iteration's k-steps. Their sums meet after the loop
// (MMA.WarpsK).
func (d *deriver) sliceK() error {
	out := d.out
	warps := out.Warps()
	busy := 0 // the warps the loop's matmuls keep busy, unsliced
	var sliceable []*MMA
	for gi := range out.Groups {
		gr := &out.Groups[gi]
		p := out.Ops[gr.Head].MMA
		if p == nil || !out.InLoop(gr.Head) {
			continue
		}
		busy += p.BusyWarps()
		if p.Batch == 1 && p.Scaled == nil && p.MPer*p.NPer <= maxSlicedTiles && out.SummedInRegisters(gr) {
			sliceable = append(sliceable, p)
		}
	}
	most := warps / max(1, busy)
	for _, p := range sliceable {
		steps := ceilDiv(p.K, p.Instr.K)
		slices := 1
		for s := 2; s <= most; s++ {
			if steps%s == 0 {
				slices = s
			}
		}
		if slices > 1 {
			d.sliced = append(d.sliced, unslice{p, p.WarpsM})
			p.WarpsM, p.WarpsK = min(p.WarpsM, ceilDiv(p.MTiles, p.MPer)), slices
		}
	}
	return nil
}

// unslice is a sliced matmul's plan and its grid's rows before slicing.
type unslice struct {
	p      *MMA
	warpsM int
}

// unsliceK takes back the slices sliceK gave, when their scratch does not
// fit the shared memory the tiles leave: a pipeline stage or the plan
// itself is worth more than the slices. It reports whether there were any.
func (d *deriver) unsliceK() bool {
	for _, u := range d.sliced {
		u.p.WarpsM, u.p.WarpsK, u.p.Scratch = u.warpsM, 0, 0
	}
	undone := len(d.sliced) > 0
	d.sliced = nil
	return undone
}

// maxSlicedTiles is the most mma tiles a warp of a sliced matmul holds:
// its chain of k-steps is what the block waits on, and its sums, which
// the slices past the first pass through shared memory, are few.
const maxSlicedTiles = 2
