package thread

import (
	"slices"

	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
)

// store decides where every tile lives and which accumulators stay in
// registers across the for-loop: mma tiles first, then lane partials.
func (d *deriver) store() error {
	g, out := d.g, d.out
	budget := d.opts.RegFloats
	for gi := range out.Groups {
		gr := &out.Groups[gi]
		p := out.Ops[gr.Head].MMA
		if p == nil || gr.Accum < 0 || gr.Accum == gr.Head {
			continue
		}
		if f := p.Floats(); f <= budget {
			budget -= f
			p.Persistent = true
			out.RegFloats += f
			if gr.Chain[0] == gr.Accum { // mma accumulates straight into the registers
				p.ChunkM, p.ChunkN = p.MPer, p.NPer
			}
		}
	}
	// Row sums fed by several iterations keep lane partials in what
	// registers remain, MaxLanePartials at most.
	partials := min(MaxLanePartials, budget)
	for gi := range out.Groups {
		gr := &out.Groups[gi]
		if gr.Accum != gr.Head || g.ForloopRange == 1 {
			continue
		}
		switch g.Ops[gr.Head].Attr.Accum {
		case ugraph.AccumSum, ugraph.AccumMean, ugraph.AccumRMS:
		default:
			continue
		}
		x := g.Tensors[g.Ops[gr.Head].In[0]].Shape
		if rows := ceilDiv(x.NumElements()/x.Last(), out.Warps()); rows <= partials {
			gr.LaneRows = rows
			partials -= rows
			budget -= rows
			out.RegFloats += rows
		}
	}
	copies := g.ForloopRange == 1 && d.copiesAnInput()
	for i := range g.Ops {
		op := &g.Ops[i]
		if !d.live[i] || op.Out < 0 {
			continue
		}
		t := &out.Tiles[op.Out]
		t.DType = g.Tensors[op.Out].DType
		if op.Kind == ugraph.OpForloopAccum {
			t.DType = ugraph.Float32 // sums are kept in fp32, in registers or in shared memory
		}
		if op.Kind == ugraph.OpInput {
			t.Storage = Shared
			if g.ForloopRange == 1 && d.readOnce(op.Out) && !copies {
				t.Storage = Device
			}
			continue
		}
		gr := &out.Groups[out.Ops[i].Group]
		persistent := out.Ops[gr.Head].MMA != nil && out.Ops[gr.Head].MMA.Persistent
		switch {
		case op.Kind == ugraph.OpForloopAccum && gr.Through:
			t.Storage = Registers // the one iteration's values, passed on
		case op.Kind == ugraph.OpForloopAccum && !(persistent && i != gr.Head):
			t.Storage, t.Accum = Shared, true
		case op.Out != gr.Result:
			t.Storage = Registers
		case d.readByNonStore(op.Out):
			t.Storage = Shared
		default:
			t.Storage = Registers
		}
	}
	return nil
}

// splitRows sets the warps that share each row of a group whose head
// works a row at a time (Group.RowWarps): with fewer rows than warps, a
// warp per row would leave the other warps idle while it walks the row
// alone (one row of 4096 elements: 128 strides, twice for an rms_norm).
func (d *deriver) splitRows() error {
	g, out := d.g, d.out
	for gi := range out.Groups {
		gr := &out.Groups[gi]
		head := &g.Ops[gr.Head]
		if !RowHead(g, gr) {
			continue
		}
		x := g.Tensors[head.In[0]].Shape
		gr.RowWarps = rowWarps(x.NumElements()/x.Last(), x.Last(), out.Warps())
	}
	return nil
}

// rowVectors sets the elements a lane of each group's row loops reads at
// once (Group.RowVector). A 16-byte load brings 8 fp16 elements where a
// scalar one brings 1, and a loop that waits on each load in turn runs an
// eighth as many round trips; so every row loop reads vectors where its
// operand allows, and elements where a vector would leave lanes idle.
func (d *deriver) rowVectors() error {
	g, out := d.g, d.out
	for gi := range out.Groups {
		gr := &out.Groups[gi]
		gr.RowVector = 1
		if !RowLoop(g, gr) {
			continue
		}
		x := g.Ops[gr.Head].In[0]
		if !d.alignedRows(x) {
			continue
		}
		gr.RowVector = RowVector(g.Tensors[x].Shape.Last(), max(1, gr.RowWarps), out.Tiles[x].DType)
		gr.StoreVector = 1
		if d.storesRowVectors(gr) {
			gr.StoreVector = gr.RowVector
		}
	}
	return nil
}

// storesRowVectors reports whether group gr's rms_norm, scaling its rows
// a vector at a time, can store its results a vector at a time
// (Group.StoreVector): it stores them from its row loop (a loop of one
// iteration passing its accumulator through, or a head after the loop),
// into device memory alone, as elements of the size it reads, whose rows
// in every output are whole vectors at aligned addresses.
func (d *deriver) storesRowVectors(gr *Group) bool {
	g, out := d.g, d.out
	head := &g.Ops[gr.Head]
	if head.Kind != ugraph.OpRMSNorm || gr.RowVector <= 1 || len(gr.Stores) == 0 || !gr.Through && out.InLoop(gr.Head) ||
		out.Tiles[gr.Result].Storage == Shared {
		return false
	}
	res := g.Tensors[gr.Result]
	es := res.DType.Size()
	if es*gr.RowVector != 16 || es != out.Tiles[head.In[0]].DType.Size() {
		return false
	}
	for _, s := range gr.Stores {
		if CopyVector(res.Shape, g.Ops[s].Output.DShape, es) != 16 {
			return false
		}
	}
	return true
}

// RowVector is the elements a lane reads at once from rows of n elements
// of type dt that rw warps share, where the rows start 16-byte aligned: a
// 16-byte vector's worth when n is whole vectors and each lane gets one
// or more, else 1.
func RowVector(n, rw int, dt ugraph.DType) int {
	v := 16 / dt.Size()
	if v <= 1 || n%v != 0 || n < target.WarpSize*rw*v {
		return 1
	}
	return v
}

// alignedRows reports whether every row of tile t starts at a 16-byte
// aligned address wherever the code reads it: in shared memory, rows of a
// pitch of whole vectors in aligned buffers; in device memory, a tensor
// whose rows, and the tile's, are whole vectors (as a 16-byte cp.async
// needs).
func (d *deriver) alignedRows(t block.TensorID) bool {
	tl := &d.out.Tiles[t]
	es := tl.DType.Size()
	switch tl.Storage {
	case Shared:
		return tl.Pitch*es%16 == 0 && tl.Offset%16 == 0 && tl.StageBytes%16 == 0
	case Device:
		op := &d.g.Ops[d.prod[t]]
		return op.Kind == ugraph.OpInput && CopyVector(d.g.Tensors[t].Shape, op.Input.DShape, es) == 16
	}
	return false
}

// RowLoop reports whether group gr's head reads its operand in row
// loops: it works a row at a time (RowHead), or keeps lane partials.
func RowLoop(g *block.Graph, gr *Group) bool { return RowHead(g, gr) || gr.LaneRows > 0 }

// RowHead reports whether group gr's head works a row at a time, a warp
// (or RowWarps warps) per row: an rms_norm or a reduction of the last dim
// (ByRow), or a sum, mean or rms accumulator that reduces each
// iteration's rows (no lane partials).
func RowHead(g *block.Graph, gr *Group) bool {
	head := &g.Ops[gr.Head]
	if gr.Accum == gr.Head {
		switch head.Attr.Accum {
		case ugraph.AccumSum, ugraph.AccumMean, ugraph.AccumRMS:
			return gr.LaneRows == 0
		}
		return false
	}
	return ByRow(g, head)
}

// rowWarps is the warps that share each of rows rows of n elements in a
// block of warps: the largest power of two that fits every row's share
// in the block and leaves each warp a whole 32-element stride.
func rowWarps(rows, n, warps int) int {
	w := 1
	for 2*w*rows <= warps && 2*w*target.WarpSize <= n {
		w *= 2
	}
	return w
}

// placeScratch puts after the tiles the scratch of every group whose
// split rows meet in shared memory (Group.Scratch): a float per warp,
// live for the whole kernel, so that no two parts share one; and of
// every mma whose slices of K meet there (MMA.Scratch).
func placeScratch(out *Graph) {
	for gi := range out.Groups {
		gr := &out.Groups[gi]
		gr.Scratch = -1
		if gr.RowWarps > 1 && gr.Accum != gr.Head {
			gr.Scratch = roundUp(out.SmemBytes, SmemAlign)
			out.SmemBytes = gr.Scratch + out.Warps()*4
		}
		if p := out.Ops[gr.Head].MMA; p != nil && p.Slices() > 1 {
			p.Scratch = roundUp(out.SmemBytes, SmemAlign)
			out.SmemBytes = p.Scratch + p.ScratchBytes()
		}
	}
}

// readInPlace leaves in device memory input tiles copied into shared
// memory though no mma reads them, when the plan does not fit otherwise:
// with once, the tiles read once (copied only beside the others, see
// copiesAnInput), which then cost nothing more than their round trip;
// without, the rest, which the kernel then requests more than once, but
// runs. It reports whether there were any.
func (d *deriver) readInPlace(once bool) bool {
	if d.g.ForloopRange != 1 {
		return false
	}
	moved := false
	for i := range d.g.Ops {
		op := &d.g.Ops[i]
		if !d.live[i] || op.Kind != ugraph.OpInput || d.out.Tiles[op.Out].Storage != Shared || d.readByMMA(op.Out) {
			continue
		}
		if once && !d.readOnce(op.Out) {
			continue
		}
		t := &d.out.Tiles[op.Out]
		*t = Tile{DType: t.DType, Storage: Device}
		moved = true
	}
	return moved
}

func (d *deriver) readByMMA(t block.TensorID) bool {
	for _, c := range d.uses[t] {
		if d.out.Ops[c].MMA != nil {
			return true
		}
	}
	return false
}

// copiesAnInput reports whether the kernel copies some input tile into
// shared memory whatever the others' storage: it then waits for that copy
// before its first part, and a tile read once is better copied beside it
// (its round trip overlaps the other's) than read in place later, where
// each element's load waits for device memory after the kernel's barriers
// and row sums (ntrans's alpha, read after rms_norm(H)).
func (d *deriver) copiesAnInput() bool {
	for i := range d.g.Ops {
		op := &d.g.Ops[i]
		if d.live[i] && op.Kind == ugraph.OpInput && !d.readOnce(op.Out) {
			return true
		}
	}
	return false
}

// readOnce reports whether the live ops read each element of tile t once
// in all: then it can stay in device memory, read in place, for what the
// kernel requests of it is the tile, as the cost model charges it. A
// matmul (on tensor cores or not) reads an element once per row or column
// of the other operand, rms_norm once for the rms and once to scale, a
// broadcast operand once per copy, and each further reader (in another
// part of the kernel, or in the same chain) once more; such tiles are
// copied into shared memory. So is a tile read in an mma's epilogue:
// there a lane reads 4 bytes of a row and a warp 16 bytes of each of 8
// rows, half a sector, and each sector again for its other half (lora's
// weights: 4x their size requested at 25% coalescing), where the copy
// reads them whole.
func (d *deriver) readOnce(t block.TensorID) bool {
	if len(d.uses[t]) != 1 {
		return false
	}
	use := d.uses[t][0]
	op := &d.g.Ops[use]
	switch op.Kind {
	case ugraph.OpMatmul, ugraph.OpRMSNorm:
		return false
	}
	if gi := d.out.Ops[use].Group; gi >= 0 && d.out.Ops[d.out.Groups[gi].Head].MMA != nil {
		return false
	}
	return op.Kind.Info().Class != ugraph.ClassBinary || d.g.Tensors[t].Shape == d.g.Tensors[op.Out].Shape
}

func (d *deriver) readByNonStore(t block.TensorID) bool {
	for _, c := range d.uses[t] {
		if d.g.Ops[c].Kind != ugraph.OpOutput {
			return true
		}
	}
	return false
}

// schedule orders the groups' parts and computes the live interval of every
// shared tile.
func (d *deriver) schedule() error {
	g, out := d.g, d.out
	type part struct{ group, pos int }
	var loop, post []part
	for gi := range out.Groups {
		gr := &out.Groups[gi]
		if out.InLoop(gr.Head) {
			pos := gr.Head
			if gr.InLoop > 0 {
				pos = gr.Chain[gr.InLoop-1]
			}
			loop = append(loop, part{gi, pos})
		}
		if pos, ok := d.postPosition(gr); ok {
			post = append(post, part{gi, pos})
		}
	}
	byPos := func(a, b part) int { return a.pos - b.pos }
	slices.SortFunc(loop, byPos)
	slices.SortFunc(post, byPos)
	for k, p := range loop {
		out.Groups[p.group].Loop = k
		out.Loop = append(out.Loop, p.group)
	}
	for k, p := range post {
		out.Groups[p.group].Post = k
		out.Post = append(out.Post, p.group)
	}

	// step returns the step at which op i runs (an accumulator: its
	// for-loop part, where it reads its operand).
	step := func(i int) int {
		gr := &out.Groups[out.Ops[i].Group]
		if out.RunsInLoop(i) {
			return out.LoopStep(gr.Loop)
		}
		return out.PostStep(gr.Post)
	}
	for i := range g.Ops {
		op := &g.Ops[i]
		if !d.live[i] || op.Out < 0 || out.Tiles[op.Out].Storage != Shared {
			continue
		}
		t := &out.Tiles[op.Out]
		switch {
		case op.Kind == ugraph.OpInput:
			t.Live = Interval{0, out.LoopEnd()}
		case t.Accum:
			t.Live = Interval{0, out.LoopEnd()}
			if gr := &out.Groups[out.Ops[i].Group]; gr.Post >= 0 {
				t.Live.Last = out.PostStep(gr.Post)
			}
		case op.Kind == ugraph.OpForloopAccum: // written out from registers after the loop
			t.Live = Interval{out.PostStep(out.Groups[out.Ops[i].Group].Post), 0}
		default:
			t.Live = Interval{step(i), 0}
		}
		for _, c := range d.uses[op.Out] {
			t.Live.Last = max(t.Live.Last, step(c))
		}
		t.Live.Last = max(t.Live.Last, t.Live.First)
	}
	return nil
}

// postPosition says whether a group has a post-loop part, and its position.
// A group has one when ops of it run after the loop (its chain past the
// accumulator, its stores, a post-loop head), when its head is a mean or
// rms accumulator (whose value is finished in place), or when its result
// is an mma accumulator held in registers that an op reads from shared
// memory. The part runs at the position of its last op other than a store:
// stores read only the group's own values, and an op that reads the result
// (after the last member, before the stores) must see it finished.
func (d *deriver) postPosition(gr *Group) (int, bool) {
	out := d.out
	if gr.Through {
		return -1, false // stores in the for-loop part
	}
	pos, needed := -1, len(gr.Stores) > 0
	if !out.InLoop(gr.Head) {
		pos, needed = gr.Head, true
	}
	if gr.Accum >= 0 {
		pos = max(pos, gr.Accum)
		res := &out.Tiles[gr.Result]
		switch a := d.g.Ops[gr.Accum].Attr.Accum; {
		case gr.Accum == gr.Head && (a == ugraph.AccumMean || a == ugraph.AccumRMS):
			needed = true
		case gr.Accum != gr.Head && res.Storage == Shared && !res.Accum:
			needed = true
		}
	}
	for _, c := range gr.Chain[gr.InLoop:] {
		pos, needed = max(pos, c), true
	}
	return pos, needed
}

// allocate lays out the shared tiles and places them, taking back the
// slices of K, then lowering the pipeline depth, until the plan fits the
// arch's shared memory per block.
func (d *deriver) allocate() error {
	stages := d.opts.Stages // Depth's
	for {
		d.layout(stages)
		place(d.out)
		placeScratch(d.out)
		limit := d.arch.MaxSmemPerBlock
		if limit <= 0 || d.out.SmemBytes <= limit {
			return nil
		}
		if d.unsliceK() {
			continue
		}
		if stages == 1 {
			if d.readInPlace(true) || d.readInPlace(false) {
				continue
			}
			return &SmemError{Bytes: d.out.SmemBytes, Limit: limit}
		}
		stages--
	}
}

// layout sets the rows, pitch, stages and bytes of every shared tile.
func (d *deriver) layout(stages int) {
	g, out := d.g, d.out
	out.Stages = 1
	pad := make([]int, len(g.Tensors)) // extra rows for mma A operands
	for i := range g.Ops {
		if p := out.Ops[i].MMA; p != nil {
			a := g.Ops[i].In[0]
			pad[a] = max(pad[a], roundUp(p.M, p.Instr.M)-p.M)
		}
	}
	for i := range g.Ops {
		op := &g.Ops[i]
		if !d.live[i] || op.Out < 0 || out.Tiles[op.Out].Storage != Shared {
			continue
		}
		t := &out.Tiles[op.Out]
		shape := g.Tensors[op.Out].Shape
		t.Rows = shape.NumElements()/shape.Last() + pad[op.Out]
		t.Pitch = Pitch(shape.Last(), t.DType)
		t.Stages = 1
		if op.Kind == ugraph.OpInput {
			t.Vector = CopyVector(shape, op.Input.DShape, t.DType.Size())
			if op.Input.FMap >= 0 && stages > 1 {
				t.Stages = stages
				out.Stages = stages
			}
		}
		t.StageBytes = roundUp(t.Rows*t.Pitch*t.DType.Size(), SmemAlign)
		t.Bytes = t.StageBytes * t.Stages
	}
}

// ByRow reports whether a head op computes its tile a row at a time, a
// warp per row: rms_norm, and a reduction of the last dim at least a warp
// wide. The code generator writes such a head as a row loop, and the cost
// model counts its steps as one.
func ByRow(g *block.Graph, op *block.Op) bool {
	switch op.Kind {
	case ugraph.OpRMSNorm:
		return true
	case ugraph.OpReduction:
		x := g.Tensors[op.In[0]].Shape
		return op.Attr.Dim == x.Rank()-1 && x.Last() >= target.WarpSize
	}
	return false
}

// CopyVector is the widest cp.async (16, 8 or 4 bytes) that every row of
// a tile of the given shape, cut from a device tensor of shape dshape with
// elements of esize bytes, splits into with aligned addresses in both
// memories, or 0 when rows are only 2-byte aligned (the copy is then
// synchronous).
func CopyVector(tile, dshape ugraph.Shape, esize int) int {
	for _, v := range []int{16, 8, 4} {
		if tile.Last()*esize%v == 0 && dshape.Last()*esize%v == 0 {
			return v
		}
	}
	return 0
}

// Pitch is the row pitch, in elements, of a shared tile whose rows hold n
// elements of type dt: a row of a multiple of 16 bytes is padded to an odd
// multiple of 16 bytes, so that eight consecutive rows start in eight
// different 16-byte bank groups (ldmatrix and cp.async of 16-byte chunks
// are then free of bank conflicts); other rows are not padded.
func Pitch(n int, dt ugraph.DType) int {
	b := n * dt.Size()
	if b%16 != 0 {
		return n
	}
	if (b/16)%2 == 0 {
		b += 16
	}
	return b / dt.Size()
}

// place assigns offsets first-fit: tiles in order of first step (then
// larger first, then by id), each at the lowest aligned offset where it
// overlaps no placed tile that is live at the same time.
func place(out *Graph) {
	var ids []int
	for i := range out.Tiles {
		if out.Tiles[i].Storage == Shared {
			ids = append(ids, i)
		}
	}
	slices.SortFunc(ids, func(a, b int) int {
		ta, tb := &out.Tiles[a], &out.Tiles[b]
		if ta.Live.First != tb.Live.First {
			return ta.Live.First - tb.Live.First
		}
		if ta.Bytes != tb.Bytes {
			return tb.Bytes - ta.Bytes
		}
		return a - b
	})
	out.SmemBytes = 0
	var placed []int
	for _, id := range ids {
		t := &out.Tiles[id]
		t.Offset = 0
		for moved := true; moved; {
			moved = false
			for _, o := range placed {
				u := &out.Tiles[o]
				if u.Live.Overlaps(t.Live) && t.Offset < u.Offset+u.Bytes && u.Offset < t.Offset+t.Bytes {
					t.Offset = roundUp(u.Offset+u.Bytes, SmemAlign)
					moved = true
				}
			}
		}
		placed = append(placed, id)
		out.SmemBytes = max(out.SmemBytes, t.Offset+t.Bytes)
	}
}
