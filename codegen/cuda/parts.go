package cuda

import (
	"fmt"

	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/thread"
)

// decl is a local constant that emitted code may use.
type decl struct {
	name string
	def  *expr
}

// scoped writes what body writes, preceded by the declarations it uses
// (directly or through a later declaration). Declarations come in order;
// each may use the earlier ones.
func (k *blockKernel) scoped(decls []decl, body func() error) error {
	outer := k.w
	k.w = &writer{indent: outer.indent}
	err := body()
	text := k.w.String()
	k.w = outer
	if err != nil {
		return err
	}
	need := make([]bool, len(decls))
	for i := len(decls) - 1; i >= 0; i-- {
		need[i] = usesIdent(text, decls[i].name)
		for j := i + 1; j < len(decls) && !need[i]; j++ {
			need[i] = need[j] && decls[j].def.uses(decls[i].name)
		}
	}
	for i, d := range decls {
		if need[i] {
			k.w.line("const int %s = %s;", d.name, d.def)
		}
	}
	k.w.raw(text)
	return nil
}

// indexDecls declares i0, i1, ... as the multi-index in shape s of the flat
// element e, and returns them.
func indexDecls(e *expr, s ugraph.Shape) ([]decl, []*expr) {
	defs := indexOf(e, s)
	vars := idxVars(s)
	ds := make([]decl, len(defs))
	for d := range defs {
		ds[d] = decl{vars[d].name, defs[d]}
	}
	return ds, vars
}

// elementLoop writes a loop in which each thread takes elements tid,
// tid + threads, ... of shape s, with i0, i1, ... its index, and body
// writes what to do with it.
func (k *blockKernel) elementLoop(s ugraph.Shape, body func(idx []*expr) error) error {
	n := s.NumElements()
	decls, idx := indexDecls(vr("e", n), s)
	k.w.open("for (int e = tid; e < %d; e += %d)", n, k.tg.Threads)
	if err := k.scoped(decls, func() error { return body(idx) }); err != nil {
		return err
	}
	k.w.close()
	return nil
}

// rowLoop writes a loop in which each warp takes rows warp, warp + warps,
// ... of shape s (a row: all dims but the last), with i0, i1, ... the index
// of the row's first element.
func (k *blockKernel) rowLoop(s ugraph.Shape, body func(idx []*expr) error) error {
	rows := rowsOf(s)
	lead := s.WithDim(s.Rank()-1, 1)
	decls, idx := indexDecls(vr("row", rows), lead)
	k.w.open("for (int row = warp; row < %d; row += %d)", rows, k.tg.Warps())
	if err := k.scoped(decls, func() error { return body(idx) }); err != nil {
		return err
	}
	k.w.close()
	return nil
}

// partComment opens the braces of a part with a line saying what it does.
func (k *blockKernel) partComment(gr *thread.Group, what string) {
	line := fmt.Sprintf("%s: %s", groupName(k.tg, gr), what)
	k.trace = append(k.trace, k.phase+": "+line)
	k.w.comment(line)
	k.w.open("")
}

func groupName(tg *thread.Graph, gr *thread.Group) string {
	for gi := range tg.Groups {
		if &tg.Groups[gi] == gr {
			return fmt.Sprintf("g%d", gi)
		}
	}
	return "g?"
}

// --- accumulators in shared memory ------------------------------------------

// accumulate writes the for-loop part of a group headed by an accumulator:
// it adds this iteration's operand into the accumulator in shared memory.
func (k *blockKernel) accumulate(gr *thread.Group) error {
	bg := k.bg
	op := &bg.Ops[gr.Head]
	x := k.tile(op.In[0])
	xs := bg.Tensors[op.In[0]].Shape
	a := sharedView(tileName(op.Out), bg.Tensors[op.Out].Shape, &k.tg.Tiles[op.Out])
	n := xs.Last()
	switch acc := op.Attr.Accum; acc {
	case ugraph.AccumNone:
		k.partComment(gr, describeOp(bg, gr.Head)+": add the tile into the accumulator")
		if err := k.elementLoop(xs, func(idx []*expr) error {
			k.w.line("%s += %s;", a.update(idx), x.load(idx))
			return nil
		}); err != nil {
			return err
		}
	case ugraph.AccumSum, ugraph.AccumMean, ugraph.AccumRMS:
		what := "sum"
		if acc == ugraph.AccumRMS {
			what = "sum of squares"
		}
		if gr.LaneRows > 0 {
			k.partComment(gr, fmt.Sprintf("%s: each lane adds its elements' %s into its partial sums of the warp's rows", describeOp(bg, gr.Head), what))
			if err := k.laneRows(gr, xs, func(r string, idx []*expr) error {
				return k.rowElems(x, idx, rowStrides(1, gr.RowVector, n), n, gr.RowVector, false, func(val string, _ []*expr) error {
					if acc == ugraph.AccumRMS {
						k.w.line("const float x = %s;", val)
						k.w.line("%s[%s] += x * x;", partialsName(gr), r)
					} else {
						k.w.line("%s[%s] += %s;", partialsName(gr), r, val)
					}
					return nil
				})
			}); err != nil {
				return err
			}
			break
		}
		if gr.RowWarps > 1 {
			// RowWarps warps per row, each adding its strides' sum with
			// atomicAdd: no barrier, in an order that may vary from run
			// to run (fp32 rounding).
			rows, rw := rowsOf(xs), gr.RowWarps
			k.partComment(gr, fmt.Sprintf("%s: %d warps per row add their strides' %s into the accumulator", describeOp(bg, gr.Head), rw, what))
			decls, idx := indexDecls(vr("row", rows), xs.WithDim(xs.Rank()-1, 1))
			decls = append([]decl{{"row", div(vr("warp", k.tg.Warps()), rw)}}, decls...)
			if err := k.scoped(decls, func() error {
				if rows*rw < k.tg.Warps() {
					k.w.open("if (row < %d)", rows)
					defer k.w.close()
				}
				k.w.line("float s = 0.0f;")
				k.sumRow(x, idx, rowStrides(rw, gr.RowVector, n), n, gr.RowVector, acc == ugraph.AccumRMS)
				k.w.line("s = mirage::warp_sum(s);")
				k.w.line("if (lane == 0) atomicAdd(&%s, s);", a.update(idx))
				return nil
			}); err != nil {
				return err
			}
			break
		}
		k.partComment(gr, fmt.Sprintf("%s: a warp per row adds the row's %s into the accumulator", describeOp(bg, gr.Head), what))
		if err := k.rowLoop(xs, func(idx []*expr) error {
			k.w.line("float s = 0.0f;")
			k.sumRow(x, idx, rowStrides(1, gr.RowVector, n), n, gr.RowVector, acc == ugraph.AccumRMS)
			k.w.line("s = mirage::warp_sum(s);")
			k.w.line("if (lane == 0) %s += s;", a.update(idx))
			return nil
		}); err != nil {
			return err
		}
	case ugraph.AccumSumToDimx:
		d := bg.Tensors[op.Out].Shape.Last()
		k.partComment(gr, fmt.Sprintf("%s: element j of a row sums elements j, j+%d, ... of the tile's row", describeOp(bg, gr.Head), d))
		if err := k.elementLoop(bg.Tensors[op.Out].Shape, func(idx []*expr) error {
			if n == d {
				k.w.line("%s += %s;", a.update(idx), x.load(idx))
				return nil
			}
			last := idx[len(idx)-1]
			t := vr("t", n/d)
			k.w.line("float s = 0.0f;")
			k.w.line("for (int t = 0; t < %d; ++t) s += %s;", n/d, x.load(withLast(idx, add(mul(t, d), last))))
			k.w.line("%s += s;", a.update(idx))
			return nil
		}); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown accumulator %v", acc)
	}
	k.w.close()
	return nil
}

// partialsName is the register array of a group's lane partials.
func partialsName(gr *thread.Group) string { return fmt.Sprintf("part%d", gr.Head) }

// laneRows writes a loop over the gr.LaneRows rows of shape s that this
// warp owns (rows warp, warp + warps, ...), unrolled so that r, the row's
// place among them, indexes the lane partials as a constant; idx is the
// index of the row's first element. A warp whose last row would lie past
// s's stops before it. (A break, not a guarded body: ptxas spilled the
// guarded form's partials under __launch_bounds__.)
func (k *blockKernel) laneRows(gr *thread.Group, s ugraph.Shape, body func(r string, idx []*expr) error) error {
	rows, warps := rowsOf(s), k.tg.Warps()
	lead := s.WithDim(s.Rank()-1, 1)
	decls, idx := indexDecls(vr("row", rows), lead)
	k.w.line("#pragma unroll")
	k.w.open("for (int r = 0; r < %d; ++r)", gr.LaneRows)
	k.w.line("const int row = warp + r * %d;", warps)
	if rows%warps != 0 {
		k.w.line("if (row >= %d) break;  // this warp's rows end here", rows)
	}
	if err := k.scoped(decls, func() error { return body("r", idx) }); err != nil {
		return err
	}
	k.w.close()
	return nil
}

// flushPartials writes, after the for-loop, the warp sums of a group's
// lane partials into its accumulator: one sum per row the warp owns, all
// lanes taking part in each.
func (k *blockKernel) flushPartials(gr *thread.Group) error {
	bg := k.bg
	op := &bg.Ops[gr.Head]
	xs := bg.Tensors[op.In[0]].Shape
	rows, warps := rowsOf(xs), k.tg.Warps()
	a := sharedView(tileName(op.Out), bg.Tensors[op.Out].Shape, &k.tg.Tiles[op.Out])
	lead := xs.WithDim(xs.Rank()-1, 1)
	decls, idx := indexDecls(vr("row", rows), lead)
	what := fmt.Sprintf("%s: the warp sums its lanes' partials, a row at a time", describeOp(bg, gr.Head))
	k.trace = append(k.trace, "loop end: "+what)
	k.w.comment(what)
	k.w.line("#pragma unroll")
	k.w.open("for (int r = 0; r < %d; ++r)", gr.LaneRows)
	k.w.line("const int row = warp + r * %d;", warps)
	k.w.line("const float s = mirage::warp_sum(%s[r]);", partialsName(gr))
	guard := "lane == 0"
	if rows%warps != 0 {
		guard += fmt.Sprintf(" && row < %d", rows)
	}
	if err := k.scoped(decls, func() error {
		k.w.line("if (%s) %s += s;", guard, a.update(idx))
		return nil
	}); err != nil {
		return err
	}
	k.w.close()
	return nil
}

// fromAccumulator writes the post-loop part of a group whose accumulator
// is in shared memory: each element's final value (mean and rms finish
// here) runs through the rest of the chain to the group's sinks.
func (k *blockKernel) fromAccumulator(gr *thread.Group, chain []int) error {
	bg, tg := k.bg, k.tg
	aop := &bg.Ops[gr.Accum]
	at := aop.Out
	a := sharedView(tileName(at), bg.Tensors[at].Shape, &tg.Tiles[at])
	count := bg.ForloopRange * bg.Tensors[aop.In[0]].Shape.Last()
	finish := ""
	switch aop.Attr.Accum {
	case ugraph.AccumMean:
		finish = fmt.Sprintf("v /= %d.0f;  // mean: over %d iterations of %d elements", count, bg.ForloopRange, count/bg.ForloopRange)
	case ugraph.AccumRMS:
		finish = fmt.Sprintf("v = sqrtf(v / %d.0f);  // rms: over %d iterations of %d elements", count, bg.ForloopRange, count/bg.ForloopRange)
	}
	inPlace := finish != "" && len(chain) == 0 && k.readByOps(at)
	what := "the accumulated values"
	if len(chain) > 0 {
		what += " through the fused ops"
	}
	k.partComment(gr, what+sinkNote(tg, gr, inPlace))
	if err := k.elementLoop(bg.Tensors[at].Shape, func(idx []*expr) error {
		k.w.line("float v = %s;", a.load(idx))
		if finish != "" {
			k.w.line("%s", finish)
		}
		if inPlace {
			k.w.line("%s = v;", a.store(idx))
		}
		return k.flow(gr, chain, -1, true, elem{vals: []string{"v"}, idx: idx}, at, at)
	}); err != nil {
		return err
	}
	k.w.close()
	return nil
}

func sinkNote(tg *thread.Graph, gr *thread.Group, inPlace bool) string {
	var to []string
	if inPlace {
		to = append(to, "shared memory (in place)")
	} else if tg.Tiles[gr.Result].Storage == thread.Shared && gr.Accum >= 0 && tg.Block.Ops[gr.Accum].Out != gr.Result {
		to = append(to, "shared memory")
	}
	if n := len(gr.Stores); n > 0 {
		to = append(to, plural(n, "output"))
	}
	if len(to) == 0 {
		return ""
	}
	s := " to " + to[0]
	if len(to) > 1 {
		s += " and " + to[1]
	}
	return s
}

// readByOps reports whether a live op other than an output op reads t.
func (k *blockKernel) readByOps(t block.TensorID) bool {
	for i := range k.bg.Ops {
		op := &k.bg.Ops[i]
		if k.tg.Ops[i].Role == thread.RoleDead || op.Kind == ugraph.OpOutput {
			continue
		}
		for _, x := range k.tg.Reads(i) {
			if x == t {
				return true
			}
		}
	}
	return false
}

// --- SIMT heads -----------------------------------------------------------------

// simtRun writes a part whose head computes each element of its tile on
// its own: element-wise ops, SIMT matmuls, reductions, concat.
func (k *blockKernel) simtRun(gr *thread.Group, chain []int, acc int, post bool) error {
	bg := k.bg
	op := &bg.Ops[gr.Head]
	k.partComment(gr, describeChain(bg, gr.Head, chain, acc)+", an element per thread")
	if err := k.elementLoop(bg.Tensors[op.Out].Shape, func(idx []*expr) error {
		if err := k.headValue(op, idx); err != nil {
			return err
		}
		return k.flow(gr, chain, acc, post, elem{vals: []string{"v"}, idx: idx}, op.Out, -1)
	}); err != nil {
		return err
	}
	k.w.close()
	return nil
}

// describeChain names the head and the ops fused into it.
func describeChain(bg *block.Graph, head int, chain []int, acc int) string {
	s := describeOp(bg, head)
	for _, i := range chain {
		s += ", " + describeOp(bg, i)
	}
	if acc >= 0 {
		s += ", " + describeOp(bg, acc)
	}
	return s
}

// headValue writes `float v = ...;`, the head's value at idx.
func (k *blockKernel) headValue(op *block.Op, idx []*expr) error {
	w := k.w
	bg := k.bg
	out := bg.Tensors[op.Out].Shape
	r := out.Rank()
	switch op.Kind.Info().Class {
	case ugraph.ClassUnary:
		w.line("float v = %s;", k.tile(op.In[0]).load(idx))
		call, err := k.elementwise(op, op.In[0], "v", idx)
		if err != nil {
			return err
		}
		w.line("v = %s;", call)
	case ugraph.ClassBinary:
		w.line("float v = mirage::op_%s(%s, %s);", op.Kind, k.tile(op.In[0]).load(idx), k.tile(op.In[1]).load(idx))
	case ugraph.ClassMatmul:
		kd := bg.Tensors[op.In[0]].Shape.Last()
		kk := vr("kk", kd)
		a := withLast(idx, kk)
		b := append(append([]*expr(nil), idx[:r-2]...), kk, idx[r-1])
		w.line("float v = 0.0f;")
		w.line("for (int kk = 0; kk < %d; ++kk) v += %s * %s;", kd, k.tile(op.In[0]).load(a), k.tile(op.In[1]).load(b))
	case ugraph.ClassReduction:
		d := op.Attr.Dim
		n := bg.Tensors[op.In[0]].Shape.Dim(d)
		o := out.Dim(d)
		t := vr("t", n/o)
		at := append([]*expr(nil), idx...)
		at[d] = add(mul(t, o), idx[d])
		w.line("float v = 0.0f;")
		w.line("for (int t = 0; t < %d; ++t) v += %s;", n/o, k.tile(op.In[0]).load(at))
	case ugraph.ClassConcat:
		d := op.Attr.Dim
		n := bg.Tensors[op.In[0]].Shape.Dim(d)
		second := append([]*expr(nil), idx...)
		second[d] = subc(idx[d], n)
		w.line("float v = %s < %d ? %s : %s;", idx[d], n, k.tile(op.In[0]).load(idx), k.tile(op.In[1]).load(second))
	default:
		return fmt.Errorf("no SIMT lowering of %v", op.Kind)
	}
	return nil
}

// rowRun writes a part whose head works a row at a time, a warp per row:
// rms_norm, and a reduction of the last dim.
func (k *blockKernel) rowRun(gr *thread.Group, chain []int, acc int, post bool) error {
	if gr.RowWarps > 1 {
		return k.splitRowRun(gr, chain, acc, post)
	}
	bg := k.bg
	op := &bg.Ops[gr.Head]
	x := k.tile(op.In[0])
	xs := bg.Tensors[op.In[0]].Shape
	n := xs.Last()
	k.partComment(gr, describeChain(bg, gr.Head, chain, acc)+", a warp per row")
	if err := k.rowLoop(xs, func(idx []*expr) error {
		w := k.w
		j := rowStrides(1, gr.RowVector, n)
		w.line("float s = 0.0f;")
		k.sumRow(x, idx, j, n, gr.RowVector, op.Kind == ugraph.OpRMSNorm)
		if op.Kind == ugraph.OpRMSNorm {
			w.line("const float scale = 1.0f / sqrtf(mirage::warp_sum(s) / %d.0f);  // 1 / rms of the row (no epsilon)", n)
			return k.scaleRow(gr, chain, acc, post, x, idx, j, n)
		}
		w.line("s = mirage::warp_sum(s);")
		w.open("if (lane == 0)")
		w.line("float v = s;")
		if err := k.flow(gr, chain, acc, post, elem{vals: []string{"v"}, idx: withLast(idx, cst(0))}, op.Out, -1); err != nil {
			return err
		}
		w.close()
		return nil
	}); err != nil {
		return err
	}
	k.w.close()
	return nil
}

// rowStrides is the header of the loop over the elements of a row that a
// lane reads, vec at a time (thread.Group.RowVector), when rw warps share
// the row: every 32nd access from the lane's (rw 1), or every rw·32nd from
// the warp's stride; j is the access's first element.
func rowStrides(rw, vec, n int) string {
	switch {
	case rw == 1 && vec == 1:
		return fmt.Sprintf("int j = lane; j < %d; j += 32", n)
	case rw == 1:
		return fmt.Sprintf("int j = lane * %d; j < %d; j += %d", vec, n, 32*vec)
	case vec == 1:
		return fmt.Sprintf("int j = warp %% %d * 32 + lane; j < %d; j += %d", rw, n, rw*32)
	}
	return fmt.Sprintf("int j = (warp %% %d * 32 + lane) * %d; j < %d; j += %d", rw, vec, n, rw*32*vec)
}

// sumRow writes the loop (header for, over int j) that adds into s the
// elements of x's row at idx (their squares when squares), n to a row,
// vec at a time.
func (k *blockKernel) sumRow(x view, idx []*expr, header string, n, vec int, squares bool) {
	if vec == 1 && !squares {
		k.w.line("for (%s) s += %s;", header, x.load(withLast(idx, vr("j", n))))
		return
	}
	_ = k.rowElems(x, idx, header, n, vec, false, func(val string, _ []*expr) error { // writes no error
		if squares {
			k.w.line("const float x = %s;", val)
			k.w.line("s += x * x;")
		} else {
			k.w.line("s += %s;", val)
		}
		return nil
	})
}

// rowElems writes the loop (header for, over int j) through the elements
// of x's row at idx that a lane reads, vec at a time (one 16-byte load
// each, when vec > 1): body writes what is done with each element, given
// its value (a float expression) and, when indexed, its index.
func (k *blockKernel) rowElems(x view, idx []*expr, header string, n, vec int, indexed bool, body func(val string, at []*expr) error) error {
	return k.rowElemsAround(x, idx, header, n, vec, indexed, nil, body)
}

// rowElemsAround is rowElems with, where vec > 1, around(inner) writing
// each vector's code: inner writes the loop through its elements.
func (k *blockKernel) rowElemsAround(x view, idx []*expr, header string, n, vec int, indexed bool, around func(inner func() error) error, body func(val string, at []*expr) error) error {
	w := k.w
	w.open("for (%s)", header)
	defer w.close()
	if vec == 1 {
		at := withLast(idx, vr("j", n))
		return body(x.load(at), at)
	}
	w.line("const mirage::Vec16<%s> xv = %s;", x.ctype, x.load16(withLast(idx, vr("j", n))))
	inner := func() error {
		w.line("#pragma unroll")
		w.open("for (int vi = 0; vi < %d; ++vi)", vec)
		defer w.close()
		var at []*expr
		if indexed {
			w.line("const int jj = j + vi;")
			at = withLast(idx, vr("jj", n))
		}
		return body("mirage::to_f32(xv.e[vi])", at)
	}
	if around == nil {
		return inner()
	}
	return around(inner)
}

// scaleRow writes an rms_norm's scaling pass over x's row at idx (header
// j, n to a row; scale in a float): each element times scale, then gr's
// chain on it and its sinks. Where the group stores vectors
// (thread.Group.StoreVector), each output's elements of a read vector go
// into one vector, stored once after them.
func (k *blockKernel) scaleRow(gr *thread.Group, chain []int, acc int, post bool, x view, idx []*expr, j string, n int) error {
	w := k.w
	head := k.bg.Ops[gr.Head].Out
	var around func(func() error) error
	vector := ""
	if gr.StoreVector > 1 {
		vector = "vi"
		around = func(inner func() error) error {
			for _, s := range gr.Stores {
				w.line("mirage::Vec16<%s> %s;  // output %d's elements of the vector", ctype(k.bg.Tensors[gr.Result].DType), vectorName(k.outIndex[s]), k.outIndex[s])
			}
			if err := inner(); err != nil {
				return err
			}
			at := withLast(idx, vr("j", n))
			for _, s := range gr.Stores {
				w.line("%s  // output %d", k.outputView(s, gr.Result).store16(at, vectorName(k.outIndex[s])), k.outIndex[s])
			}
			return nil
		}
	}
	return k.rowElemsAround(x, idx, j, n, gr.RowVector, gr.StoreVector <= 1, around, func(val string, at []*expr) error {
		if at == nil { // vectors stored: the element's index, written where an op reads at it
			at = withLast(idx, add(vr("j", n), vr("vi", gr.RowVector)))
		}
		w.line("float v = %s * scale;", val)
		return k.flow(gr, chain, acc, post, elem{vals: []string{"v"}, idx: at, vector: vector}, head, -1)
	})
}

// splitRowRun is rowRun for rows that several warps share (RowWarps > 1):
// each warp sums its strides and the warps meet in the group's scratch
// (splitRow); then an rms_norm's warps scale their own strides, and a
// reduction's first warp runs the chain on the row's sum.
func (k *blockKernel) splitRowRun(gr *thread.Group, chain []int, acc int, post bool) error {
	bg := k.bg
	op := &bg.Ops[gr.Head]
	x := k.tile(op.In[0])
	n := bg.Tensors[op.In[0]].Shape.Last()
	k.partComment(gr, fmt.Sprintf("%s, %d warps per row", describeChain(bg, gr.Head, chain, acc), gr.RowWarps))
	defer k.w.close()
	if op.Kind == ugraph.OpRMSNorm {
		return k.splitRow(gr, true, false, func(idx []*expr, j string) error {
			k.w.line("const float scale = 1.0f / sqrtf(t / %d.0f);  // 1 / rms of the row (no epsilon)", n)
			return k.scaleRow(gr, chain, acc, post, x, idx, j, n)
		})
	}
	return k.splitRow(gr, false, true, func(idx []*expr, _ string) error {
		k.w.line("float v = t;")
		return k.flow(gr, chain, acc, post, elem{vals: []string{"v"}, idx: withLast(idx, cst(0))}, op.Out, -1)
	})
}

// splitRow writes how the gr.RowWarps warps that share each row of the
// head's operand (thread.Group.RowWarps) sum it: warp w takes row w /
// RowWarps and every RowWarps-th stride (32 lanes' reads of
// gr.RowVector elements each) from stride w % RowWarps, summing its elements (squares when squares); lane 0 puts the
// warp's sum in the group's scratch, and after a barrier that every
// thread reaches, each warp of the row (or only its first, when first)
// adds the row's RowWarps sums in order into t, and then writes what
// then writes: idx is the row's first element, j the header of a loop
// over the warp's elements (int j). The order of the sums is fixed, so
// results do not vary from run to run. A warp with no row (rows ·
// RowWarps < warps) sums nothing and skips then.
func (k *blockKernel) splitRow(gr *thread.Group, squares, first bool, then func(idx []*expr, j string) error) error {
	bg := k.bg
	op := &bg.Ops[gr.Head]
	x := k.tile(op.In[0])
	xs := bg.Tensors[op.In[0]].Shape
	rows, n, rw := rowsOf(xs), xs.Last(), gr.RowWarps
	w := k.w
	decls, idx := indexDecls(vr("row", rows), xs.WithDim(xs.Rank()-1, 1))
	guarded := func(cond string, body func() error) error { // in braces, under cond unless ""
		if cond == "" {
			w.open("")
		} else {
			w.open("if (%s)", cond)
		}
		defer w.close()
		return k.scoped(decls, body)
	}
	has := ""
	if rows*rw < k.tg.Warps() {
		has = fmt.Sprintf("row < %d", rows)
	}
	j := rowStrides(rw, gr.RowVector, n)
	w.line("float* const scratch = reinterpret_cast<float*>(smem + %d);  // a partial sum per warp", gr.Scratch)
	w.line("const int row = warp / %d;  // the row this warp shares with %d others", rw, rw-1)
	w.line("float s = 0.0f;")
	if err := guarded(has, func() error {
		k.sumRow(x, idx, j, n, gr.RowVector, squares)
		return nil
	}); err != nil {
		return err
	}
	w.line("s = mirage::warp_sum(s);")
	w.line("if (lane == 0) MIRAGE_STS(scratch[warp]) = s;")
	w.line("__syncthreads();  // every warp's partial sum is in scratch")
	k.barriers++
	k.trace = append(k.trace, k.phase+": __syncthreads() (rows shared by warps)")
	c := has
	if first {
		c = fmt.Sprintf("warp %% %d == 0 && lane == 0", rw)
		if has != "" {
			c = has + " && " + c
		}
	}
	return guarded(c, func() error {
		k.w.line("float t = 0.0f;")
		k.w.line("for (int q = 0; q < %d; ++q) t += MIRAGE_LDS(scratch[row * %d + q]);  // the row's sum", rw, rw)
		return then(idx, j)
	})
}

// --- tensor cores -----------------------------------------------------------------

// mmaCall is the mma_tiles call computing a cm x cn chunk into frag.
func (k *blockKernel) mmaCall(op *block.Op, p *thread.MMA, frag string, cm, cn int, mt, nt string) string {
	a, b := op.In[0], op.In[1]
	if p.Scaled != nil {
		b = p.Scaled.X
	}
	return fmt.Sprintf("mirage::mma_tiles<%s, %d, %d, %d, %d, %d, %d, %d, %d>(%s, %s, %s, %s, %s, lane);",
		ctype(k.bg.Tensors[a].DType), cm, cn, p.M, p.K, k.tg.Tiles[a].Pitch, k.tg.Tiles[b].Pitch,
		p.MTilesPerBatch(), p.MTiles, frag, k.cur[a], k.cur[b], mt, nt)
}

// sliceCall is the mma_tiles call of a warp's slice of K: K columns of A
// and rows of B from kofs on (a matmul of one batch, not folded).
func (k *blockKernel) sliceCall(op *block.Op, p *thread.MMA, frag string) string {
	a, b := op.In[0], op.In[1]
	ldb := k.tg.Tiles[b].Pitch
	return fmt.Sprintf("mirage::mma_tiles<%s, %d, %d, %d, %d, %d, %d, %d, %d>(%s, %s + kofs, %s + kofs * %d, mt0, nt0, lane);",
		ctype(k.bg.Tensors[a].DType), p.MPer, p.NPer, p.M, p.KSteps()*p.Instr.K, k.tg.Tiles[a].Pitch, ldb,
		p.MTilesPerBatch(), p.MTiles, frag, k.cur[a], k.cur[b], ldb)
}

// slicesOut writes, past the loop, the sums of the warps of a sliced
// matmul's later slices into its scratch: slice s's warp of rank r in
// its slice at floats ((s-1)·G + r)·F·32 + f·32 + lane (G warps a slice,
// F floats a lane).
func (k *blockKernel) slicesOut(gr *thread.Group, p *thread.MMA) {
	w, group, f := k.w, p.WarpsM*p.WarpsN, p.Floats()
	w.comment(fmt.Sprintf("%s: the sums of the warps of slices past the first of K's %d, for the first's", describeOp(k.bg, gr.Head), p.Slices()))
	w.open("")
	w.line("const int rank = %s;", warpRank(p, k.tg.Warps()))
	w.open("if (rank >= %d && rank < %d)", group, group*p.Slices())
	w.line("float* const part = reinterpret_cast<float*>(smem + %d) + ((rank / %d - 1) * %d + rank %% %d) * %d + lane;", p.Scratch, group, group, group, f*target.WarpSize)
	k.fragFloats(p, accName(gr), func(acc, at string) { w.line("MIRAGE_STS(part[%s]) = %s;", at, acc) })
	w.close()
	w.close()
}

// slicesIn adds, in slice 0's warps, the later slices' sums to the
// warp's register accumulator (after the barrier that ends the loop).
func (k *blockKernel) slicesIn(gr *thread.Group, p *thread.MMA) {
	w, group, f := k.w, p.WarpsM*p.WarpsN, p.Floats()
	w.comment(fmt.Sprintf("the sums of the later of K's %d slices, added to the first's", p.Slices()))
	w.open("")
	w.line("const int rank = %s;", warpRank(p, k.tg.Warps()))
	w.open("if (rank < %d)", group)
	w.line("#pragma unroll")
	w.open("for (int s = 1; s < %d; ++s)", p.Slices())
	w.line("const float* const part = reinterpret_cast<const float*>(smem + %d) + ((s - 1) * %d + rank) * %d + lane;", p.Scratch, group, f*target.WarpSize)
	k.fragFloats(p, accName(gr), func(acc, at string) { w.line("%s += MIRAGE_LDS(part[%s]);", acc, at) })
	w.close()
	w.close()
	w.close()
}

// fragFloats writes loops over a warp's register accumulator acc, handing
// each float's name and its offset (f·32, f its index) to body.
func (k *blockKernel) fragFloats(p *thread.MMA, acc string, body func(acc, at string)) {
	w := k.w
	w.line("#pragma unroll")
	w.open("for (int i = 0; i < %d; ++i)", p.MPer)
	w.line("#pragma unroll")
	w.open("for (int j = 0; j < %d; ++j)", p.NPer)
	w.line("#pragma unroll")
	w.open("for (int e = 0; e < 4; ++e)")
	body(acc+"[i][j][e]", fmt.Sprintf("((i * %d + j) * 4 + e) * %d", p.NPer, target.WarpSize))
	w.close()
	w.close()
	w.close()
}

// foldNote says, for a part comment, how an mma with a folded operand
// (thread.Scaled) reads it; "" for any other.
func foldNote(bg *block.Graph, p *thread.MMA) string {
	f := p.Scaled
	if f == nil {
		return ""
	}
	return fmt.Sprintf("; %s is not made: the mma reads s%d, the %d batches' rows stacked, and scales each row by s%d",
		describeOp(bg, f.Mul), f.X, p.M/f.Rows, f.By)
}

// warpRank is the warp's rank in the plan (thread.MMA.Base).
func warpRank(p *thread.MMA, warps int) *expr {
	rank := vr("warp", warps)
	if p.Base != 0 {
		rank = mod(add(rank, cst(warps-p.Base)), warps)
	}
	return rank
}

// warpTiles declares mt0 and nt0, the warp's first m-tile and n-tile, by
// its rank in the plan; past the warps of its first slice of K (or past
// WarpsM·WarpsN) a warp's m-tiles lie past the last.
func warpTiles(p *thread.MMA, warps int) []decl {
	rank := warpRank(p, warps)
	return []decl{{"mt0", mul(div(rank, p.WarpsN), p.MPer)}, {"nt0", mul(mod(rank, p.WarpsN), p.NPer)}}
}

// sliceTiles declares, for the loop of a matmul whose warps take slices
// of K (thread.MMA.WarpsK), mt0 and nt0 by the warp's rank within its
// slice (past the slices: m-tiles past the last), and kofs, the first
// column of A and row of B of its slice.
func sliceTiles(p *thread.MMA, warps int) []decl {
	rank := warpRank(p, warps)
	group := p.WarpsM * p.WarpsN
	inSlice := mod(rank, group)
	idle := mul(div(rank, group*p.WarpsK), p.MTiles) // 0 in the slices, MTiles past them
	return []decl{
		{"mt0", add(mul(div(inSlice, p.WarpsN), p.MPer), idle)},
		{"nt0", mul(mod(inSlice, p.WarpsN), p.NPer)},
		{"kofs", mul(mod(div(rank, group), p.WarpsK), p.KSteps()*p.Instr.K)},
	}
}

// mmaRun writes a part headed by a tensor-core matmul.
func (k *blockKernel) mmaRun(gr *thread.Group, chain []int, acc int, post bool) error {
	bg, tg := k.bg, k.tg
	op := &bg.Ops[gr.Head]
	p := tg.Ops[gr.Head].MMA
	w := k.w
	if !post && k.tg.SummedInRegisters(gr) {
		if p.Slices() > 1 {
			k.partComment(gr, fmt.Sprintf("%s on tensor cores, summed in registers (%s), each warp over its slice of K: %d slices of %d", describeOp(bg, gr.Head), describeOp(bg, acc), p.Slices(), p.KSteps()*p.Instr.K))
			err := k.scoped(sliceTiles(p, k.tg.Warps()), func() error {
				k.w.line("%s", k.sliceCall(op, p, accName(gr)))
				return nil
			})
			w.close()
			return err
		}
		k.partComment(gr, fmt.Sprintf("%s on tensor cores, summed in registers (%s)%s", describeOp(bg, gr.Head), describeOp(bg, acc), foldNote(bg, p)))
		err := k.scoped(warpTiles(p, k.tg.Warps()), func() error {
			k.w.line("%s", k.mmaCall(op, p, accName(gr), p.MPer, p.NPer, "mt0", "nt0"))
			return nil
		})
		w.close()
		return err
	}
	k.partComment(gr, fmt.Sprintf("%s on tensor cores, %dx%d tiles at a time%s", describeChain(bg, gr.Head, chain, acc), p.ChunkM, p.ChunkN, foldNote(bg, p)))
	err := k.scoped(warpTiles(p, k.tg.Warps()), func() error {
		w := k.w
		unroll := "#pragma unroll 1"
		if acc >= 0 && p.Persistent {
			unroll = "#pragma unroll" // the register accumulator needs constant indices
		}
		w.line("%s", unroll)
		w.open("for (int cm = 0; cm < %d; cm += %d)", p.MPer, p.ChunkM)
		w.line("%s", unroll)
		w.open("for (int cn = 0; cn < %d; cn += %d)", p.NPer, p.ChunkN)
		w.line("float frag[%d][%d][4] = {};", p.ChunkM, p.ChunkN)
		w.line("%s", k.mmaCall(op, p, "frag", p.ChunkM, p.ChunkN, "mt0 + cm", "nt0 + cn"))
		regs := ""
		if acc >= 0 && p.Persistent {
			regs = accName(gr) + "[cm + i][cn + j]"
		}
		if err := k.fragLoop(p, bg.Tensors[op.Out].Shape, "frag", "cm", "cn", p.ChunkM, p.ChunkN, true, func(e elem) error {
			if regs != "" {
				e.regs = []string{regs + "[2 * h]", regs + "[2 * h + 1]"}
			}
			return k.flow(gr, chain, acc, post, e, op.Out, -1)
		}); err != nil {
			return err
		}
		w.close()
		w.close()
		return nil
	})
	w.close()
	return err
}

// mmaPost writes the post-loop part of a group whose mma accumulator is in
// registers.
func (k *blockKernel) mmaPost(gr *thread.Group, chain []int) error {
	p := k.tg.Ops[gr.Head].MMA
	k.partComment(gr, "the register accumulator"+map[bool]string{true: " through the fused ops", false: ""}[len(chain) > 0]+sinkNote(k.tg, gr, false))
	// An mma that summed into the registers itself (the accumulator its
	// chain's first op) left its folded scale to here; one with ops
	// before the accumulator scaled each iteration's products.
	scale := gr.Chain[0] == gr.Accum
	if p.Slices() > 1 {
		k.slicesIn(gr, p)
	}
	err := k.scoped(warpTiles(p, k.tg.Warps()), func() error {
		return k.fragLoop(p, k.bg.Tensors[k.bg.Ops[gr.Head].Out].Shape, accName(gr), "", "", p.MPer, p.NPer, scale, func(e elem) error {
			return k.flow(gr, chain, -1, true, e, k.bg.Ops[gr.Accum].Out, -1)
		})
	})
	k.w.close()
	return err
}

// fragLoop writes loops over the fragments frag[cm][cn] of the warp's
// m-tiles mt0+cm+i and n-tiles nt0+cn+j (chunk offsets cm and cn may be ""),
// handing each pair of consecutive elements (row, col) and (row, col+1),
// with their index in the matmul's output tile, to body; first, when
// scale, multiplied by the folded operand's scale (thread.Scaled).
func (k *blockKernel) fragLoop(p *thread.MMA, out ugraph.Shape, frag, cm, cn string, CM, CN int, scale bool, body func(elem) error) error {
	w := k.w
	w.line("#pragma unroll")
	w.open("for (int i = 0; i < %d; ++i)", CM)
	mt := vr("mt", p.MTiles)
	first := vr("mt0", 0)
	if cm != "" {
		first = add(first, vr(cm, 0))
	}
	decls := []decl{{"mt", add(first, vr("i", CM))}}
	var batch *expr
	if p.Batch > 1 {
		batch = vr("b", p.Batch)
		decls = append(decls, decl{"b", div(mt, p.MTilesPerBatch())})
	}
	decls = append(decls, decl{"row0", add(mul(mod(mt, p.MTilesPerBatch()), p.Instr.M), vr("lane / 4", 0))})
	err := k.scoped(decls, func() error {
		if p.MPer*p.WarpsM > p.MTiles || p.WarpsM*p.WarpsN < k.tg.Warps() {
			k.w.line("if (mt >= %d) break;  // past the last m-tile", p.MTiles)
		}
		return k.fragInner(p, out, frag, cn, CN, batch, scale, body)
	})
	w.close()
	return err
}

// fragInner writes the loops over a fragment row's n-tiles and halves.
func (k *blockKernel) fragInner(p *thread.MMA, out ugraph.Shape, frag, cn string, CN int, batch *expr, scale bool, body func(elem) error) error {
	w := k.w
	nt := vr("nt0", 0)
	if cn != "" {
		nt = add(nt, vr(cn, 0))
	}
	col := decl{"col", add(mul(add(nt, vr("j", CN)), p.Instr.N), vr("lane % 4 * 2", 0))}
	row := decl{"row", add(vr("row0", 0), mul(vr("h", 2), 8))}
	// The output tile's index: the batch dims, then row and col. A
	// folded operand's mma stacks the batches' rows (Scaled.Rows each).
	at := vr("row", p.M)
	if p.Scaled != nil {
		batch, at = div(at, p.Scaled.Rows), mod(at, p.Scaled.Rows)
	}
	var idx []*expr
	if r := out.Rank(); r > 2 {
		if batch == nil {
			batch = cst(0)
		}
		idx = indexOf(batch, ugraph.MustShape(out.Dims()[:r-2]...))
	}
	idx = append(idx, at, vr("col", p.N))
	w.line("#pragma unroll")
	w.open("for (int j = 0; j < %d; ++j)", CN)
	err := k.scoped([]decl{col}, func() error {
		k.w.line("#pragma unroll")
		k.w.open("for (int h = 0; h < 2; ++h)")
		err := k.scoped([]decl{row}, func() error {
			guarded := p.M%p.Instr.M != 0
			if guarded {
				k.w.open("if (row < %d)", p.M)
			}
			k.w.line("float v0 = %s[i][j][2 * h], v1 = %s[i][j][2 * h + 1];", frag, frag)
			if scale && p.Scaled != nil {
				k.w.line("{ const float s = %s; v0 *= s; v1 *= s; }  // the folded scale, s%d", k.tile(p.Scaled.By).load(idx), p.Scaled.By)
			}
			if err := body(elem{vals: []string{"v0", "v1"}, idx: idx}); err != nil {
				return err
			}
			if guarded {
				k.w.close()
			}
			return nil
		})
		k.w.close()
		return err
	})
	w.close()
	return err
}
