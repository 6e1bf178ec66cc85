package cost

import (
	"github.com/mirage-go/mirage/launch"
	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/layout"
	"github.com/mirage-go/mirage/ugraph/thread"
)

// steps counts what the busiest warp of a block executes, in the units
// the latency table prices: the emitted code's loops, by the pattern each
// part of a thread plan (or each runtime kernel) is written in. Copies,
// element loops and stores are counted per thread (each thread of a warp
// does the same count), row loops and tensor-core work per warp.
type steps struct {
	Barriers   float64 // __syncthreads()
	Copies     float64 // cp.async a thread issues (any width)
	SyncCopies float64 // elements a thread copies synchronously (rows not 4-byte aligned)
	Global     float64 // elements a thread reads from device memory and waits for
	Elements   float64 // iterations of element loops a thread runs (index math, shared loads and stores)
	Flops      float64 // element-wise work, in the op table's flops per element (Elementwise.Flops)
	Rows       float64 // rows a warp reduces with warp_sum, and its lane 0's update
	RowElems   float64 // elements a lane reads in row loops
	LdMatrix   float64 // ldmatrix a warp issues for mma fragments
	MMAs       float64 // mma.sync a warp issues
	FMAs       float64 // multiply-adds of a SIMT matmul a thread runs (two shared loads each)
	Stores     float64 // elements a thread stores to device memory
}

func (s *steps) add(t steps, n float64) {
	s.Barriers += n * t.Barriers
	s.Copies += n * t.Copies
	s.SyncCopies += n * t.SyncCopies
	s.Global += n * t.Global
	s.Elements += n * t.Elements
	s.Flops += n * t.Flops
	s.Rows += n * t.Rows
	s.RowElems += n * t.RowElems
	s.LdMatrix += n * t.LdMatrix
	s.MMAs += n * t.MMAs
	s.FMAs += n * t.FMAs
	s.Stores += n * t.Stores
}

// cycles is what the steps take, in SM cycles, for one warp alone on its
// scheduler: the latency of the emitted code's dependent chains (a load,
// then what uses it), not its issue rate.
func (s steps) cycles(c *latencyTable) float64 {
	return s.Barriers*c.Barrier + s.Copies*c.Copy + s.SyncCopies*c.SyncCopy + s.Global*c.Global +
		s.Elements*c.Element + s.Flops*c.Flop + s.Rows*c.Row + s.RowElems*c.RowElem +
		s.LdMatrix*c.LdMatrix + s.MMAs*c.MMA + s.FMAs*c.FMA + s.Stores*c.Store
}

// blockSteps is what one block of a kernel does: the steps of its
// prologue and epilogue (Once), of each for-loop iteration (Iter, Iters
// times), and what each iteration copies from device memory into shared
// memory through a Stages-deep cp.async pipeline (FetchOnce before the
// loop). Stages 1 means no overlap: an iteration waits for its tiles.
type blockSteps struct {
	Once, Iter steps
	// Refill runs after every iteration but the last: a one-stage
	// pipeline's barrier before it copies the next iteration's tiles.
	Refill               steps
	Iters                int
	Stages               int
	FetchIter, FetchOnce fetch
	Warps                int
}

// fetch is what a block copies from device memory: bytes, and the 128-byte
// lines its rows touch. The SM's memory pipeline handles a line at a time:
// a tile whose rows are short (a few columns of a weight matrix) costs a
// line per row however few bytes it holds.
type fetch struct{ Bytes, Lines float64 }

func (f *fetch) add(g fetch, n float64) { f.Bytes += n * g.Bytes; f.Lines += n * g.Lines }

// tileFetch is the fetch of a rows x rowBytes tile.
func tileFetch(rows, rowBytes int) fetch {
	return fetch{Bytes: float64(rows * rowBytes), Lines: float64(rows) * ceilf(rowBytes, lineBytes)}
}

// inputFetch is the fetch of a tile of an input of shape dshape: runs of
// contiguous bytes, each a line per 128 bytes. A run is a row of the
// tile, or several rows where the tile holds the input's whole rows (an
// adapter's 16 columns, 32 bytes a row: a warp's 16-byte copies of
// consecutive rows are consecutive addresses, four lines a request, not
// one a row).
func inputFetch(tile, dshape ugraph.Shape, elem int) fetch {
	run := elem
	for d := tile.Rank() - 1; d >= 0; d-- {
		run *= tile.Dim(d)
		if tile.Dim(d) != dshape.Dim(d) {
			break
		}
	}
	bytes := tile.NumElements() * elem
	return fetch{Bytes: float64(bytes), Lines: float64(bytes/run) * ceilf(run, lineBytes)}
}

// lineBytes is an L1 cache line: what one wavefront of the SM's memory
// pipeline serves.
const lineBytes = 128

func ceilf(a, b int) float64 { return float64((a + b - 1) / b) }

// graphSteps counts a graph-defined kernel's steps from its thread plan,
// by the code generator's patterns (codegen/cuda: loads, parts, flow).
func graphSteps(tg *thread.Graph) blockSteps {
	bg := tg.Block
	threads, warps := tg.Threads, tg.Warps()
	bs := blockSteps{Iters: bg.ForloopRange, Stages: max(1, tg.Stages), Warps: warps}
	// Input tiles: copied (cp.async or element by element), or read in
	// place by the ops that use them.
	for i := range bg.Ops {
		op := &bg.Ops[i]
		if op.Kind != ugraph.OpInput || tg.Ops[i].Role == thread.RoleDead {
			continue
		}
		t := &tg.Tiles[op.Out]
		if t.Storage != thread.Shared {
			continue
		}
		shape := bg.Tensors[op.Out].Shape
		var s steps
		f := inputFetch(shape, op.Input.DShape, t.DType.Size())
		if t.Vector > 0 {
			s.Copies = ceilf(shape.NumElements()*t.DType.Size()/t.Vector, threads)
		} else {
			s.SyncCopies = ceilf(shape.NumElements(), threads)
		}
		if tg.CopiedEachIteration(i) {
			bs.Iter.add(s, 1)
			bs.FetchIter.add(f, 1)
		} else {
			bs.Once.add(s, 1)
			bs.FetchOnce.add(f, 1)
		}
	}
	for _, id := range tg.Zeroed() { // before the loop
		t := &tg.Tiles[id]
		bs.Once.Elements += ceilf(t.Rows*t.Pitch, threads)
	}
	bs.Iter.Barriers++ // the pipeline's wait and barrier
	if bs.Stages == 1 && bs.FetchIter.Bytes > 0 {
		bs.Refill.Barriers++ // the barrier before refilling the single buffer
	}
	// Parts in order, each after a barrier where the code places one.
	// Between two barriers the warps run the parts side by side, a warp
	// skipping the mma parts whose plan leaves it idle (thread.MMA.Base):
	// the busiest warp's steps count.
	phase := func(groups []int, post bool, into *steps) {
		wait := tg.PartBarriers(post)
		perWarp := make([]steps, warps)
		flush := func() {
			into.add(busiest(perWarp), 1)
			clear(perWarp)
		}
		for k, gi := range groups {
			gr := &tg.Groups[gi]
			switch {
			case wait[k]:
				flush()
				into.Barriers++
			case tg.SyncsWithin(gr, post):
				flush() // its own barrier (counted in its steps) ends the parts before it
			}
			s := partSteps(tg, gr, post)
			p, busy := tg.PartWarps(gr, post)
			for w := range perWarp {
				if p == nil || p.Rank(w, warps) < busy {
					perWarp[w].add(s, 1)
				}
			}
		}
		flush()
	}
	phase(tg.Loop, false, &bs.Iter)
	for _, gi := range tg.Loop {
		bs.Once.Rows += float64(tg.Groups[gi].LaneRows) // the warp sums of lane partials, after the loop
	}
	if len(tg.Post) > 0 {
		bs.Once.Barriers++
	}
	// The slices of K meet: past the loop each warp of a later slice puts
	// its sums in shared memory, and after the barrier each of the first
	// slice's adds the others' to its own.
	for gi := range tg.Groups {
		if p := tg.Ops[tg.Groups[gi].Head].MMA; p != nil && p.Slices() > 1 {
			bs.Once.Elements += float64(p.Slices() * p.Floats())
		}
	}
	phase(tg.Post, true, &bs.Once)
	return bs
}

// busiest is the steps of the warp whose steps take the longest at the
// fitted latencies (the table's, whichever table then prices them: a
// refit with -fit compares warps at the table it starts from); the first
// such.
func busiest(perWarp []steps) steps {
	var most steps
	longest := -1.0
	for _, s := range perWarp {
		if c := s.cycles(&fitted); c > longest {
			most, longest = s, c
		}
	}
	return most
}

// partSteps counts one part (the for-loop part, or the post-loop part) of
// group gr, as codegen/cuda's loopPart and postPart write it.
func partSteps(tg *thread.Graph, gr *thread.Group, post bool) steps {
	bg := tg.Block
	threads, warps := tg.Threads, tg.Warps()
	var s steps
	// chain counts the fused ops run on each of n elements a thread
	// handles, and their reads of tiles in device memory.
	chain := func(ops []int, n float64) {
		for _, i := range ops {
			op := &bg.Ops[i]
			if f := op.Kind.Info().Elem.Flops; f > 0 {
				s.Flops += n * float64(f)
			}
			for _, in := range tg.Reads(i) {
				if tg.Tiles[in].Storage == thread.Device {
					s.Global += n
				}
			}
		}
	}
	// sinks counts the stores of n elements per thread after the loop.
	sinks := func(n float64) {
		if post || gr.Through {
			s.Stores += n * float64(len(gr.Stores))
		}
	}
	reads := func(n float64) { // reads of device tiles by the head
		for _, in := range tg.Reads(gr.Head) {
			if tg.Tiles[in].Storage == thread.Device {
				s.Global += n
			}
		}
	}
	head := &bg.Ops[gr.Head]
	inLoop := tg.InLoop(gr.Head)
	if post && inLoop { // the post-loop part of a group whose head ran in the loop
		rest := gr.Chain[gr.InLoop:]
		if p := tg.Ops[gr.Head].MMA; p != nil && p.Persistent {
			n := float64(p.EpilogueValues()) // fragment values per lane
			s.Elements += n / 2
			if p.Scaled != nil && gr.Chain[0] == gr.Accum { // the folded scale, left to here
				s.Flops += n
			}
			chain(rest, n)
			sinks(n)
			return s
		}
		a := bg.Ops[gr.Accum].Out
		n := ceilf(bg.Tensors[a].Shape.NumElements(), threads)
		s.Elements += n
		chain(rest, n)
		sinks(n)
		return s
	}
	ops := gr.Chain
	if !post {
		ops = gr.Chain[:gr.InLoop]
	}
	if gr.Accum == gr.Head && !post { // an accumulator heads the group
		xs := bg.Tensors[head.In[0]].Shape
		switch head.Attr.Accum {
		case ugraph.AccumNone:
			n := ceilf(xs.NumElements(), threads)
			s.Elements += n
			reads(n)
		case ugraph.AccumSumToDimx:
			out := bg.Tensors[head.Out].Shape
			n := ceilf(out.NumElements(), threads)
			s.Elements += n * float64(xs.Last()/out.Last())
			reads(n * float64(xs.Last()/out.Last()))
		default: // sum, mean, rms: a warp (or RowWarps) per row, reduced now or after the loop (lane partials)
			rw, vec := max(1, gr.RowWarps), max(1, gr.RowVector)
			rows := ceilf(xs.NumElements()/xs.Last()*rw, warps)
			if gr.LaneRows == 0 {
				s.Rows += rows
			}
			loads := rows * ceilf(xs.Last(), target.WarpSize*rw*vec)
			s.RowElems += loads
			s.Elements += loads * float64(vec-1) // a vector's other elements, from registers
			reads(loads)
		}
		return s
	}
	out := bg.Tensors[head.Out].Shape
	switch p := tg.Ops[gr.Head].MMA; {
	case p != nil:
		k := float64(p.KSteps()) // the warp's slice of K
		whole := !post && tg.SummedInRegisters(gr)
		s.LdMatrix += k * float64(p.LdMatrix(whole))
		s.MMAs += k * float64(p.MPer*p.NPer)
		if !whole {
			n := float64(p.EpilogueValues())
			s.Elements += n / 2 // the epilogue handles element pairs
			if p.Scaled != nil {
				s.Flops += n // the folded scale
			}
			chain(ops, n)
			sinks(n)
		}
	case thread.ByRow(bg, head):
		// A warp per row, or RowWarps warps per row that meet in shared
		// memory across a barrier (each reads the RowWarps partial sums).
		xs := bg.Tensors[head.In[0]].Shape
		rw, vec := max(1, gr.RowWarps), max(1, gr.RowVector)
		rows := ceilf(xs.NumElements()/xs.Last()*rw, warps)
		per := ceilf(xs.Last(), target.WarpSize*rw*vec) // a lane's loads of a row
		if rw > 1 {
			s.Barriers++
			s.Elements += float64(rw)
		}
		passes := 1.0
		if head.Kind == ugraph.OpRMSNorm {
			passes = 2 // the sum of squares, then the scaling
			chain(ops, rows*per*float64(vec))
			sinks(rows * per * float64(vec/max(1, gr.StoreVector))) // an element, or a vector of them, a store
		} else {
			chain(ops, rows)
			sinks(rows)
		}
		s.Rows += rows
		s.RowElems += rows * per * passes
		s.Elements += rows * per * passes * float64(vec-1) // a vector's other elements, from registers
		reads(rows * per * passes)
	default: // an element per thread
		n := ceilf(out.NumElements(), threads)
		s.Elements += n
		switch head.Kind.Info().Class {
		case ugraph.ClassMatmul:
			s.FMAs += n * float64(bg.Tensors[head.In[0]].Shape.Last())
			reads(n * float64(bg.Tensors[head.In[0]].Shape.Last()))
		case ugraph.ClassReduction:
			d := head.Attr.Dim
			terms := float64(bg.Tensors[head.In[0]].Shape.Dim(d) / out.Dim(d))
			s.Elements += n * (terms - 1)
			reads(n * terms)
		default:
			if f := head.Kind.Info().Elem.Flops; f > 0 {
				s.Flops += n * float64(f)
			}
			reads(n)
		}
		chain(ops, n)
		sinks(n)
	}
	return s
}

// librarySteps counts a runtime library kernel's steps per block, by the
// code of templates/mirage_runtime.cuh.
func librarySteps(lk *launch.Kernel, in []ugraph.Shape, out ugraph.Shape, dt ugraph.DType, attr ugraph.Attr, kind ugraph.OpKind) blockSteps {
	blocks := lk.Blocks()
	warps := lk.Threads / target.WarpSize
	bs := blockSteps{Iters: 1, Stages: 1, Warps: warps}
	x := in[0]
	// vec is the elements one access of the kernel moves: a 16-byte
	// vector's, or one.
	vec := 1
	if lk.Vector == launch.VectorBytes {
		vec = launch.VectorBytes / dt.Size()
	}
	switch lk.Code {
	case launch.Unary, launch.Binary:
		// Grid-stride steps per thread, a vector (or an element) each: an
		// access per operand, the op on each element, a store.
		per := ceilf((out.NumElements()+vec-1)/vec, blocks*lk.Threads)
		bs.Once.Elements = per * float64(vec)
		bs.Once.Global = per * float64(len(in))
		bs.Once.Stores = per
		bs.Once.Flops = per * float64(vec*max(1, kind.Info().Elem.Flops))
	case launch.ReduceRows:
		// A warp per row: each lane's accesses (vectors or elements), each
		// element added.
		outer, n, _ := layout.Split(x, attr.Dim)
		rows := ceilf(outer, blocks*warps)
		bs.Once.Rows = rows
		bs.Once.RowElems = rows * ceilf(n, target.WarpSize*vec)
		bs.Once.Global = bs.Once.RowElems
		bs.Once.Elements = bs.Once.RowElems * float64(vec-1)
		bs.Once.Stores = rows
	case launch.ReduceRowsBlock:
		// A block per row: each thread's accesses, each element added; a
		// warp sum, a barrier, lane 0 adding the eight warps' sums and
		// storing, a barrier.
		outer, n, _ := layout.Split(x, attr.Dim)
		rows := ceilf(outer, blocks)
		bs.Once.Rows = rows
		bs.Once.RowElems = rows * ceilf(n, lk.Threads*vec)
		bs.Once.Global = bs.Once.RowElems
		bs.Once.Elements = bs.Once.RowElems*float64(vec-1) + rows*float64(warps)
		bs.Once.Barriers = 2 * rows
		bs.Once.Stores = rows
	case launch.ReduceRowsSplit:
		// Split blocks a row: each thread's accesses of its block's
		// chunk, each element added; a warp sum, a barrier, lane 0 of
		// warp 0 adding the eight warps' sums, storing its partial and
		// counting itself (an atomic, whose answer it waits for); in the
		// row's last block warp 0 reads the row's partials, a warp sum,
		// a store.
		per := ceilf(lk.Chunk, lk.Threads)
		bs.Once.Rows = 2
		bs.Once.RowElems = per
		bs.Once.Global = per + 1 + ceilf(lk.Split, target.WarpSize)
		bs.Once.Elements = per*float64(vec-1) + float64(warps) + ceilf(lk.Split, target.WarpSize)
		bs.Once.Barriers = 1
		bs.Once.Stores = 2
	case launch.RMSNormWarp:
		// A warp per row held in registers: each lane's vectors loaded,
		// squared and summed, one warp sum, scaled and stored; no barrier.
		rows, n, inner := layout.Split(x, attr.Dim)
		n *= inner
		per := ceilf(rows, blocks*warps)
		vecs := per * ceilf(n, target.WarpSize*vec)
		bs.Once.Rows = per
		bs.Once.Global = vecs
		bs.Once.Elements = 2 * vecs * float64(vec)
		bs.Once.Stores = vecs
	case launch.ReduceMid:
		outer, n, inner := layout.Split(x, attr.Dim)
		per := ceilf(outer*inner, blocks*lk.Threads)
		bs.Once.Elements = per * float64(n)
		bs.Once.Global = per * float64(n)
		bs.Once.Stores = per
	case launch.ReduceMidSplit:
		// A block per 32 outputs, as many times as the grid strides: each
		// warp's lanes read every eighth element of their outputs' sums
		// and store the partial; a barrier; warp 0 adds the eight and
		// stores; a barrier.
		outer, n, inner := layout.Split(x, attr.Dim)
		per := ceilf((outer*inner+target.WarpSize-1)/target.WarpSize, blocks)
		bs.Once.Global = per * ceilf(n, warps)
		bs.Once.Elements = bs.Once.Global + per*float64(1+warps)
		bs.Once.Barriers = 2 * per
		bs.Once.Stores = per
	case launch.RMSNorm:
		rows, n, inner := layout.Split(x, attr.Dim)
		n *= inner
		per := ceilf(rows, blocks) // rows per block
		elems := per * ceilf(n, lk.Threads)
		bs.Once.Global = elems
		bs.Once.Elements = elems
		bs.Once.Rows = per
		bs.Once.Barriers = 2 * per
		bs.Once.Stores = elems
	case launch.GEMM:
		t := lk.Tile
		r := x.Rank()
		k := x.Dim(r - 1)
		mper, nper := t.BM/16/t.WM, t.BN/8/t.WN
		bs.Iters = (k + 31) / 32
		bs.Stages = lk.Stages
		bs.Iter.Barriers = 1
		bs.Iter.Copies = ceilf(t.BM*32/8+32*t.BN/8, lk.Threads)
		bs.Iter.LdMatrix = 2 * float64(mper+(nper+1)/2)
		bs.Iter.MMAs = 2 * float64(mper*nper)
		bs.FetchIter = tileFetch(t.BM, 32*2)
		bs.FetchIter.add(tileFetch(32, t.BN*2), 1)
		bs.Once.Stores = float64(mper * nper * 4)
	case launch.GEMMSIMT:
		r := x.Rank()
		k := x.Dim(r - 1)
		bs.Iters = (k + 15) / 16
		bs.Iter.Barriers = 2
		bs.Iter.SyncCopies = 2
		bs.Iter.Global = 2
		bs.Iter.FMAs = 16
		bs.Once.Stores = 1
	}
	return bs
}

// scale scales the work that scales with the rows a bucket runs (Rows):
// element loops, copies and stores; the loop's trip count does not change.
func (bs *blockSteps) scale(f float64) {
	if f == 1 {
		return
	}
	var zero steps
	once, iter := zero, zero
	once.add(bs.Once, f)
	iter.add(bs.Iter, f)
	once.Barriers, iter.Barriers = bs.Once.Barriers, bs.Iter.Barriers
	bs.Once, bs.Iter = once, iter
	bs.FetchIter = fetch{bs.FetchIter.Bytes * f, bs.FetchIter.Lines * f}
	bs.FetchOnce = fetch{bs.FetchOnce.Bytes * f, bs.FetchOnce.Lines * f}
}

// latencyTable prices the steps: SM cycles per step for one warp alone on
// its scheduler, and the warps per scheduler at which their issue, not
// their latency, bounds them.
type latencyTable struct {
	Barrier, Copy, SyncCopy, Global, Element, Flop, Row, RowElem, LdMatrix, MMA, FMA, Store float64
	Saturation                                                                              float64
	// Line is the SM cycles its memory pipeline spends on each 128-byte
	// line that copies into shared memory touch.
	Line float64
}

// fitted is the latency table fitted to the H100 and H200 measurements
// (every run under testdata, TestCalibrated; -fit refits it).
var fitted = latencyTable{
	Barrier:    284.5,
	Copy:       20,
	SyncCopy:   58,
	Global:     99.38,
	Element:    18.12,
	Flop:       3.772,
	Row:        214.4,
	RowElem:    19.76,
	LdMatrix:   21.64,
	MMA:        14.46,
	FMA:        20.61,
	Store:      19.26,
	Saturation: 2.458,
	Line:       4.097,
}
