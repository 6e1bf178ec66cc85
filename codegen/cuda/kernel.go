package cuda

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/thread"
)

// blockKernel emits the __global__ function of one graph-defined kernel: the
// block graph bg, planned by tg, reading the device tensors ins and writing
// outs (kernel tensor names, one per input op and output op in order).
type blockKernel struct {
	name string
	tg   *thread.Graph
	bg   *block.Graph
	ins  []string // per input op, the kernel parameter
	outs []string // per output op
	// rowStride, per input op and per output op (inputs first), is the
	// stride of the dynamic dim m of its device tensor, or 0 when the
	// tensor has none: the kernel then takes m and guards rows past it.
	rowStride []int
	// minBlocks is __launch_bounds__'s second argument: the blocks an SM
	// holds at once as the launch plan counts them (MinBlocksPerSM).
	minBlocks int
	// dependent makes the kernel a programmatic dependent launch's
	// (Options.DependentLaunch): it waits for the grid before it, then
	// lets the one after it launch.
	dependent bool
	w         *writer
	cur       []string // per tile: the C pointer naming its current buffer
	outIndex  map[int]int
	inIndex   map[int]int
	barriers  int      // __syncthreads() the hazard tracking emitted
	trace     []string // what the kernel does, in order, for Kernel.Schedule
	phase     string   // "loop" or "post", for the trace
}

func newBlockKernel(name string, tg *thread.Graph, minBlocks int, ins, outs []string, rowStride []int) *blockKernel {
	if rowStride == nil {
		rowStride = make([]int, len(ins)+len(outs))
	}
	// A kernel may read one tensor through two input ops (a residual that
	// is also a norm's operand, loaded walked and whole): each input op
	// gets a parameter of its own, the launch passing the pointer twice.
	ins = slices.Clone(ins)
	taken := map[string]bool{}
	for _, n := range append(slices.Clone(ins), outs...) {
		taken[n] = true
	}
	seen := map[string]bool{}
	for i, n := range ins {
		if seen[n] {
			for j := 2; taken[n]; j++ {
				n = fmt.Sprintf("%s_%d", ins[i], j)
			}
			ins[i] = n
			taken[n] = true
		}
		seen[n] = true
	}
	k := &blockKernel{name: name, tg: tg, bg: tg.Block, ins: ins, outs: outs, rowStride: rowStride, minBlocks: minBlocks, w: &writer{},
		cur: make([]string, len(tg.Tiles)), outIndex: map[int]int{}, inIndex: map[int]int{}}
	for i := range k.bg.Ops {
		switch k.bg.Ops[i].Kind {
		case ugraph.OpInput:
			k.inIndex[i] = len(k.inIndex)
		case ugraph.OpOutput:
			k.outIndex[i] = len(k.outIndex)
		}
	}
	for t := range tg.Tiles {
		k.cur[t] = fmt.Sprintf("s%d", t)
	}
	return k
}

func tileName(t block.TensorID) string { return fmt.Sprintf("s%d", t) }

// tile is the view of tile t as the current code reads it.
func (k *blockKernel) tile(t block.TensorID) view {
	pt := &k.tg.Tiles[t]
	s := k.bg.Tensors[t].Shape
	if pt.Storage == thread.Device {
		i := k.producer(t)
		in := &k.bg.Ops[i].Input
		v := view{ptr: k.cur[t], ctype: ctype(pt.DType), shape: s, strides: in.DShape.Strides(), global: true}
		if k.rowStride[k.inIndex[i]] > 0 {
			v.avail = "avail_" + tileName(t)
		}
		return v
	}
	return sharedView(k.cur[t], s, pt)
}

func (k *blockKernel) producer(t block.TensorID) int {
	for i := range k.bg.Ops {
		if k.bg.Ops[i].Out == t {
			return i
		}
	}
	panic(fmt.Sprintf("tile s%d has no producer", t))
}

// dynamic reports whether the kernel takes m: a device tensor it reads or
// writes has the dynamic dim.
func (k *blockKernel) dynamic() bool {
	for _, st := range k.rowStride {
		if st > 0 {
			return true
		}
	}
	return false
}

// emit writes the kernel.
func (k *blockKernel) emit() (string, error) {
	w := k.w
	bg, tg := k.bg, k.tg
	k.header()
	var params []string
	for i, in := range bg.InputOps() {
		params = append(params, fmt.Sprintf("const %s* __restrict__ %s", ctype(bg.Tensors[in.Out].DType), k.ins[i]))
	}
	for i, out := range bg.OutputOps() {
		params = append(params, fmt.Sprintf("%s* __restrict__ %s", ctype(bg.Tensors[out.In[0]].DType), k.outs[i]))
	}
	if k.dynamic() {
		params = append(params, "const long long m")
	}
	// Past 128 threads, the blocks an SM holds as the launch plan counts
	// them: given the threads alone, ptxas 11.8 held 512-thread kernels
	// to 64 registers and spilled. At 128 it gave each kernel what it
	// needed (168 registers to the measured gqa attention, CUDA 13, no
	// spill), and that is the code cost/testdata's times are of.
	if tg.Threads > 128 {
		w.line("__global__ void __launch_bounds__(%d, %d)", tg.Threads, k.minBlocks)
	} else {
		w.line("__global__ void __launch_bounds__(%d)", tg.Threads)
	}
	w.open("%s(%s)", k.name, strings.Join(params, ", "))
	// Declare only the block coordinates the body uses.
	coords := []decl{
		{"tid", vr("threadIdx.x", tg.Threads)}, {"warp", div(vr("tid", tg.Threads), target.WarpSize)},
		{"lane", mod(vr("tid", tg.Threads), target.WarpSize)},
		{"bx", vr("blockIdx.x", bg.Grid[0])}, {"by", vr("blockIdx.y", bg.Grid[1])}, {"bz", vr("blockIdx.z", bg.Grid[2])},
	}
	if err := k.scoped(coords, k.body); err != nil {
		return "", err
	}
	w.close()
	return w.String(), nil
}

// usesIdent reports whether the C text mentions the identifier name
// outside comments: as a whole word (not inside a longer identifier)
// and not after a // on its line. Codegen asks it once per declaration
// of every scope, so it scans rather than compiling a pattern.
func usesIdent(text, name string) bool {
	for from := 0; ; {
		i := strings.Index(text[from:], name)
		if i < 0 || name == "" {
			return false
		}
		i += from
		end := i + len(name)
		whole := (i == 0 || !isWordByte(text[i-1])) && (end == len(text) || !isWordByte(text[end]))
		line := text[strings.LastIndexByte(text[:i], '\n')+1 : i]
		if whole && !strings.Contains(line, "//") {
			return true
		}
		from = i + 1
	}
}

// isWordByte reports whether b may be part of a C identifier.
func isWordByte(b byte) bool {
	return b == '_' || '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
}

// header writes the comment above the kernel: the launch and the plan.
func (k *blockKernel) header() {
	bg, tg := k.bg, k.tg
	w := k.w
	w.comment(fmt.Sprintf("%s: grid %v, %d threads, forloop_range %d, %d bytes of shared memory%s.",
		k.name, bg.Grid, tg.Threads, bg.ForloopRange, tg.SmemBytes, stagesNote(tg.Stages)))
	for _, line := range strings.Split(strings.TrimRight(tg.String(), "\n"), "\n")[1:] {
		w.comment(strings.TrimSpace(line))
	}
}

func stagesNote(s int) string {
	if s > 1 {
		return fmt.Sprintf(", %d-stage cp.async pipeline", s)
	}
	return ""
}

// body writes everything inside the kernel's braces.
func (k *blockKernel) body() error {
	w := k.w
	bg, tg := k.bg, k.tg
	if k.dependent {
		w.line("mirage::wait_for_prior_grid();  // launched dependent: the kernel before has finished, its writes visible")
		w.line("mirage::let_dependents_launch();  // the kernel after may start its blocks while these run")
	}
	if tg.SmemBytes > 0 {
		w.line("MIRAGE_DYNAMIC_SMEM(smem);")
	}
	// Shared tiles, device tiles read in place, and output tiles.
	for i := range bg.Ops {
		op := &bg.Ops[i]
		if op.Out < 0 || tg.Ops[i].Role == thread.RoleDead {
			continue
		}
		t := &tg.Tiles[op.Out]
		switch t.Storage {
		case thread.Shared:
			what := fmt.Sprintf("%v %v", describeOp(bg, i), bg.Tensors[op.Out].Shape)
			if t.Stages > 1 {
				what += fmt.Sprintf(", %d buffers", t.Stages)
			}
			w.line("%s* const %s = reinterpret_cast<%s*>(smem + %d);  // %s", ctype(t.DType), tileName(op.Out), ctype(t.DType), t.Offset, what)
		case thread.Device:
			in := &op.Input
			origin := blockOrigin(bg.Grid, in.IMap, in.FMap, bg.ForloopRange, bg.Tensors[op.Out].Shape, in.DShape)
			w.line("const %s* const %s = %s + %s;  // %s, read in place", ctype(t.DType), tileName(op.Out), k.ins[k.inIndex[i]], origin, describeOp(bg, i))
			if st := k.rowStride[k.inIndex[i]]; st > 0 {
				w.line("const long long avail_%s = m * %d - (%s);  // its elements in rows below m", tileName(op.Out), st, origin)
			}
		}
	}
	for i := range bg.Ops {
		op := &bg.Ops[i]
		if op.Kind != ugraph.OpOutput {
			continue
		}
		tile := bg.Tensors[op.In[0]].Shape
		origin := blockOrigin(bg.Grid, op.Output.OMap, -1, 1, tile, op.Output.DShape)
		j := k.outIndex[i]
		w.line("%s* const o%d = %s + %s;  // this block's %v tile of output %d", ctype(bg.Tensors[op.In[0]].DType), j, k.outs[j], origin, tile, j)
		if st := k.rowStride[len(k.ins)+j]; st > 0 {
			w.line("const long long avail_o%d = m * %d - (%s);  // its elements in rows below m", j, st, origin)
		}
	}
	// Register accumulators held across the loop.
	for gi := range tg.Groups {
		gr := &tg.Groups[gi]
		if p := tg.Ops[gr.Head].MMA; p != nil && p.Persistent {
			w.line("float %s[%d][%d][4] = {};  // %s: this warp's %dx%d mma tiles, summed over the for-loop",
				accName(gr), p.MPer, p.NPer, describeOp(bg, gr.Accum), p.MPer, p.NPer)
		}
		if gr.LaneRows > 0 {
			w.line("float %s[%d] = {};  // %s: this lane's partial sums of the warp's rows, over the for-loop",
				partialsName(gr), gr.LaneRows, describeOp(bg, gr.Head))
		}
	}
	loads, err := k.loadLambdas()
	if err != nil {
		return err
	}
	w.line("")
	k.prologue(loads)
	if err := k.loop(loads); err != nil {
		return err
	}
	if len(tg.Post) > 0 {
		w.line("")
		w.comment("After the loop.")
		k.phase = "post"
		wait := tg.PartBarriers(true)
		for j, gi := range tg.Post {
			if err := k.part(gi, true, wait[j]); err != nil {
				return err
			}
		}
	}
	return nil
}

func accName(gr *thread.Group) string { return fmt.Sprintf("acc%d", gr.Head) }

// describeOp names block op i the way show prints it: "s3 = matmul(s1, s2)".
func describeOp(bg *block.Graph, i int) string {
	op := &bg.Ops[i]
	var args []string
	for _, x := range op.Operands() {
		args = append(args, tileName(x))
	}
	call := op.Kind.String()
	switch op.Kind {
	case ugraph.OpForloopAccum:
		args = append(args, op.Attr.Accum.String())
	case ugraph.OpReduction, ugraph.OpReductionToDimx, ugraph.OpConcat:
		args = append(args, fmt.Sprintf("dim=%d", op.Attr.Dim))
	case ugraph.OpInput:
		args = append(args, "...")
	}
	s := fmt.Sprintf("%s(%s)", call, strings.Join(args, ", "))
	if op.Out >= 0 {
		s = tileName(op.Out) + " = " + s
	}
	return s
}

// --- loads -----------------------------------------------------------------

// loadLambdas writes a lambda per input tile copied to shared memory,
// load_sN(it, dst), that starts the copy of iteration it's tile into dst.
// It returns the input ops whose tiles the for-loop walks and the others.
type inputLoads struct{ walked, once []int }

func (k *blockKernel) loadLambdas() (inputLoads, error) {
	var l inputLoads
	bg, tg := k.bg, k.tg
	for i := range bg.Ops {
		op := &bg.Ops[i]
		if op.Kind != ugraph.OpInput || tg.Ops[i].Role == thread.RoleDead || tg.Tiles[op.Out].Storage != thread.Shared {
			continue
		}
		if tg.CopiedEachIteration(i) {
			l.walked = append(l.walked, i)
		} else {
			l.once = append(l.once, i)
		}
		k.loadLambda(i)
	}
	return l, nil
}

func (k *blockKernel) loadLambda(i int) {
	w := k.w
	bg, tg := k.bg, k.tg
	op := &bg.Ops[i]
	in := &op.Input
	t := &tg.Tiles[op.Out]
	tile := bg.Tensors[op.Out].Shape
	ct := ctype(t.DType)
	esize := t.DType.Size()
	origin := blockOrigin(bg.Grid, in.IMap, in.FMap, bg.ForloopRange, tile, in.DShape)
	rows := rowsOf(tile)
	dst := in.DShape.Strides()
	// The device offset of tile row r: the leading dims of r, by the device strides.
	r := vr("r", rows)
	lead := tile.WithDim(tile.Rank()-1, 1)
	rowIdx := indexOf(r, lead)
	rowOff := cst(0)
	for d := 0; d+1 < tile.Rank(); d++ {
		rowOff = add(rowOff, mul(rowIdx[d], dst[d]))
	}
	vec := t.Vector
	w.line("")
	w.comment(fmt.Sprintf("%s: tile %v of %s %v; %s.", describeOp(bg, i), tile, k.ins[k.inIndex[i]], in.DShape, copyNote(vec)))
	w.open("auto load_%s = [&](int it, %s* dst)", tileName(op.Out), ct)
	w.line("const %s* src = %s + %s;", ct, k.ins[k.inIndex[i]], origin)
	st := k.rowStride[k.inIndex[i]]
	if st > 0 {
		// Rows past m are zero-filled: the tensor ends at row m.
		w.line("const long long avail = m * %d - (%s);  // the elements of src in rows below m", st, origin)
	}
	if !usesIdent(origin.String(), "it") {
		w.line("(void)it;")
	}
	if vec == 0 {
		n := tile.NumElements()
		c := vr("c", n)
		rr, col := div(c, tile.Last()), mod(c, tile.Last())
		w.open("for (int c = tid; c < %d; c += %d)", n, tg.Threads)
		w.line("const int r = %s, j = %s;", rr, col)
		from := add(rowOff, vr("j", tile.Last()))
		if st > 0 {
			w.line("MIRAGE_STS(dst[%s]) = %s < avail ? MIRAGE_LDG(src[%s]) : mirage::from_f32<%s>(0.0f);", add(mul(r, t.Pitch), vr("j", tile.Last())), from, from, ct)
		} else {
			w.line("MIRAGE_STS(dst[%s]) = MIRAGE_LDG(src[%s]);", add(mul(r, t.Pitch), vr("j", tile.Last())), from)
		}
		w.close()
	} else {
		per := tile.Last() * esize / vec // chunks per row
		n := rows * per
		elems := vec / esize
		c := vr("c", n)
		w.open("for (int c = tid; c < %d; c += %d)", n, tg.Threads)
		w.line("const int r = %s, v = %s;", div(c, per), mod(c, per))
		v := vr("v", per)
		to, from := add(mul(r, t.Pitch), mul(v, elems)), add(rowOff, mul(v, elems))
		if st > 0 {
			// A chunk lies in one row (m is never the last dim).
			w.line("const bool ok = %s < avail;", from)
			w.line("mirage::cp_async_zfill<%d>(dst + %s, ok ? src + %s : %s, ok);", vec, to, from, k.ins[k.inIndex[i]])
		} else {
			w.line("mirage::cp_async<%d>(dst + %s, src + %s);", vec, to, from)
		}
		w.close()
	}
	w.close(";")
}

func copyNote(vec int) string {
	if vec == 0 {
		return "rows are not 4-byte aligned: copied element by element"
	}
	return fmt.Sprintf("%d-byte cp.async", vec)
}

// prologue zeroes the shared accumulators and starts the first loads.
func (k *blockKernel) prologue(l inputLoads) {
	w := k.w
	bg, tg := k.bg, k.tg
	for i, id := range tg.Zeroed() {
		if i == 0 {
			w.comment("Zero the accumulators in shared memory.")
		}
		t := &tg.Tiles[id]
		w.line("for (int e = tid; e < %d; e += %d) MIRAGE_STS(%s[e]) = 0.0f;", t.Rows*t.Pitch, tg.Threads, tileName(id))
	}
	if len(l.walked)+len(l.once) == 0 {
		return
	}
	s := tg.Stages
	if s > 1 {
		w.comment(fmt.Sprintf("Start the loads of the first %s (one cp.async group each; the tiles loaded once go with the first).", plural(s-1, "iteration")))
	} else {
		w.comment("Start the loads of the first iteration.")
	}
	for _, i := range l.once {
		t := bg.Ops[i].Out
		w.line("load_%s(0, %s);", tileName(t), tileName(t))
	}
	if s > 1 {
		w.open("for (int p = 0; p < %d; ++p)", s-1)
		if len(l.walked) > 0 {
			w.open("if (p < %d)", bg.ForloopRange)
			for _, i := range l.walked {
				t := bg.Ops[i].Out
				w.line("load_%s(p, %s + p * %d);", tileName(t), tileName(t), tg.Tiles[t].StageBytes/tg.Tiles[t].DType.Size())
			}
			w.close()
		}
		w.line("mirage::cp_async_commit();")
		w.close()
	} else {
		for _, i := range l.walked {
			t := bg.Ops[i].Out
			w.line("load_%s(0, %s);", tileName(t), tileName(t))
		}
		w.line("mirage::cp_async_commit();")
	}
}

// loop writes the for-loop.
func (k *blockKernel) loop(l inputLoads) error {
	w := k.w
	bg, tg := k.bg, k.tg
	s := tg.Stages
	loads := len(l.walked)+len(l.once) > 0
	w.line("")
	w.open("for (int it = 0; it < %d; ++it)", bg.ForloopRange)
	if loads {
		if s > 1 {
			w.line("mirage::cp_async_wait<%d>();  // this thread's copies for iteration it have landed", s-2)
		} else {
			w.line("mirage::cp_async_wait<0>();  // this thread's copies for iteration it have landed")
		}
	}
	w.line("__syncthreads();  // everyone's copies are visible; everyone is done with iteration it-1")
	if s > 1 && len(l.walked) > 0 {
		w.comment(fmt.Sprintf("Refill the buffers iteration it-1 used with iteration it+%d's tiles.", s-1))
		w.open("if (it + %d < %d)", s-1, bg.ForloopRange)
		for _, i := range l.walked {
			t := bg.Ops[i].Out
			w.line("load_%s(it + %d, %s + (it + %d) %% %d * %d);", tileName(t), s-1, tileName(t), s-1, s, tg.Tiles[t].StageBytes/tg.Tiles[t].DType.Size())
		}
		w.close()
		w.line("mirage::cp_async_commit();  // every thread commits a group, empty or not")
	}
	for _, i := range l.walked {
		t := bg.Ops[i].Out
		if tg.Tiles[t].Stages > 1 {
			pt := &tg.Tiles[t]
			k.cur[t] = tileName(t) + "_it"
			w.line("const %s* const %s = %s + it %% %d * %d;  // the buffer holding iteration it's tile", ctype(pt.DType), k.cur[t], tileName(t), s, pt.StageBytes/pt.DType.Size())
		}
	}
	k.phase = "loop"
	wait := tg.PartBarriers(false)
	for j, gi := range tg.Loop {
		if err := k.part(gi, false, wait[j]); err != nil {
			return err
		}
	}
	if s == 1 && len(l.walked) > 0 {
		w.open("if (it + 1 < %d)", bg.ForloopRange)
		w.line("__syncthreads();  // everyone is done with iteration it's tiles")
		for _, i := range l.walked {
			t := bg.Ops[i].Out
			w.line("load_%s(it + 1, %s);", tileName(t), tileName(t))
		}
		w.line("mirage::cp_async_commit();")
		w.close()
	}
	w.close()
	for t := range k.cur {
		k.cur[t] = fmt.Sprintf("s%d", t)
	}
	if loads {
		w.line("mirage::cp_async_wait<0>();  // (only empty groups remain)")
	}
	for _, gi := range tg.Loop {
		if gr := &tg.Groups[gi]; gr.LaneRows > 0 {
			if err := k.flushPartials(gr); err != nil {
				return err
			}
		}
	}
	for _, gi := range tg.Loop {
		if gr := &tg.Groups[gi]; tg.Ops[gr.Head].MMA != nil && tg.Ops[gr.Head].MMA.Slices() > 1 {
			k.slicesOut(gr, tg.Ops[gr.Head].MMA)
		}
	}
	if len(tg.Post) > 0 {
		w.line("__syncthreads();  // the loop's results are visible; its buffers may be reused")
	}
	return nil
}

// part writes the for-loop part or the post-loop part of group gi, after a
// barrier where it needs one (thread.Graph.PartBarriers).
func (k *blockKernel) part(gi int, post, wait bool) error {
	if wait {
		k.w.line("__syncthreads();")
		k.barriers++
		k.trace = append(k.trace, k.phase+": __syncthreads()")
	}
	k.w.line("")
	gr := &k.tg.Groups[gi]
	if post {
		return k.postPart(gr)
	}
	return k.loopPart(gr)
}

// --- parts -------------------------------------------------------------------

func (k *blockKernel) loopPart(gr *thread.Group) error {
	if gr.Accum == gr.Head {
		return k.accumulate(gr)
	}
	if gr.Through { // the whole chain, its accumulator passing values on, and the stores
		return k.runHead(gr, gr.Chain, -1, true)
	}
	chain := gr.Chain[:gr.InLoop]
	acc := -1
	if len(chain) > 0 && chain[len(chain)-1] == gr.Accum {
		chain, acc = chain[:len(chain)-1], gr.Accum
	}
	return k.runHead(gr, chain, acc, false)
}

func (k *blockKernel) postPart(gr *thread.Group) error {
	if !k.tg.InLoop(gr.Head) {
		return k.runHead(gr, gr.Chain, -1, true)
	}
	chain := gr.Chain[gr.InLoop:]
	if p := k.tg.Ops[gr.Head].MMA; p != nil && p.Persistent {
		return k.mmaPost(gr, chain)
	}
	return k.fromAccumulator(gr, chain)
}

// runHead computes the head's values and runs chain on them; the values
// then go into the accumulator acc (when >= 0) or to the group's sinks.
func (k *blockKernel) runHead(gr *thread.Group, chain []int, acc int, post bool) error {
	op := &k.bg.Ops[gr.Head]
	switch {
	case k.tg.Ops[gr.Head].MMA != nil:
		return k.mmaRun(gr, chain, acc, post)
	case thread.ByRow(k.bg, op):
		return k.rowRun(gr, chain, acc, post)
	}
	return k.simtRun(gr, chain, acc, post)
}

// elem is one element (or, in an mma epilogue, two consecutive elements
// along the last dim) flowing through a group's chain.
type elem struct {
	vals []string // the variables holding the values
	idx  []*expr  // the index of vals[0] in the current tile
	regs []string // for a register accumulator: the lvalues vals add into
	// vector, where a row loop stores vectors (thread.Group.StoreVector),
	// is the index of vals[0] in the vectors stored (vectorName) after it.
	vector string
}

func (e elem) at(n int) []*expr {
	if n == 0 {
		return e.idx
	}
	return withLast(e.idx, add(e.idx[len(e.idx)-1], cst(n)))
}

// flow writes the chain ops on e, whose values are those of tile in, then
// its sinks: adding into acc, or writing the group's result to shared
// memory (unless it is src, the shared tile the values were read from) and,
// after the loop, to the outputs.
func (k *blockKernel) flow(gr *thread.Group, chain []int, acc int, post bool, e elem, in, src block.TensorID) error {
	w := k.w
	bg, tg := k.bg, k.tg
	cur := in
	for _, i := range chain {
		op := &bg.Ops[i]
		if i == gr.Accum && gr.Through { // the one iteration's values are the sums
			cur = op.Out
			continue
		}
		w.comment(describeOp(bg, i))
		for n, v := range e.vals {
			call, err := k.elementwise(op, cur, v, e.at(n))
			if err != nil {
				return err
			}
			w.line("%s = %s;", v, call)
		}
		cur = op.Out
	}
	if acc >= 0 {
		a := bg.Ops[acc].Out
		if e.regs != nil {
			for n, v := range e.vals {
				w.line("%s += %s;", e.regs[n], v)
			}
			return nil
		}
		vw := sharedView(tileName(a), bg.Tensors[a].Shape, &tg.Tiles[a])
		if len(e.vals) == 2 {
			w.line("mirage::add2(%s + %s, %s, %s);  // %s", vw.ptr, vw.offset(e.idx), e.vals[0], e.vals[1], describeOp(bg, acc))
		} else {
			w.line("%s += %s;  // %s", vw.update(e.idx), e.vals[0], describeOp(bg, acc))
		}
		return nil
	}
	if t := &tg.Tiles[cur]; t.Storage == thread.Shared && cur != src {
		k.store(sharedView(tileName(cur), bg.Tensors[cur].Shape, t), e, "")
	}
	if post {
		for _, s := range gr.Stores {
			v := k.outputView(s, cur)
			if e.vector != "" { // into the vector stored after the row loop's vector of elements
				w.line("%s.e[%s] = %s;", vectorName(k.outIndex[s]), e.vector, v.fromFloat(e.vals[0]))
				continue
			}
			k.store(v, e, fmt.Sprintf("output %d", k.outIndex[s]))
		}
	}
	return nil
}

// outputView is output op s's tile in device memory, holding tile t's
// values: guarded by the rows present (avail_oJ) where m is dynamic.
func (k *blockKernel) outputView(s int, t block.TensorID) view {
	j := k.outIndex[s]
	v := view{ptr: fmt.Sprintf("o%d", j), ctype: ctype(k.bg.Tensors[t].DType), shape: k.bg.Tensors[t].Shape,
		strides: k.bg.Ops[s].Output.DShape.Strides(), global: true}
	if k.rowStride[len(k.ins)+j] > 0 {
		v.avail = fmt.Sprintf("avail_o%d", j)
	}
	return v
}

// vectorName is the variable holding output j's vector of elements that a
// row loop stores at once (thread.Group.StoreVector).
func vectorName(j int) string { return fmt.Sprintf("ov%d", j) }

// store writes e's values into v at e's index.
func (k *blockKernel) store(v view, e elem, note string) {
	w := k.w
	if note != "" {
		note = "  // " + note
	}
	// The two elements of store2 are in one row: m is never the last dim.
	if len(e.vals) == 2 {
		w.line("%smirage::store2(%s + %s, %s, %s);%s", v.guard(e.idx), v.ptr, v.offset(e.idx), e.vals[0], e.vals[1], note)
		return
	}
	w.line("%s%s = %s;%s", v.guard(e.idx), v.store(e.idx), v.fromFloat(e.vals[0]), note)
}

// elementwise is the C expression of element-wise op applied to the value
// v of tile cur at index idx (the other operand of a binary op is read).
func (k *blockKernel) elementwise(op *block.Op, cur block.TensorID, v string, idx []*expr) (string, error) {
	x, y := v, ""
	if op.Kind.Info().Class == ugraph.ClassBinary {
		if op.In[0] == cur {
			y = k.tile(op.In[1]).load(idx)
		} else {
			x, y = k.tile(op.In[0]).load(idx), v
		}
	}
	return elementCall(op.Kind, op.Attr, x, y)
}
