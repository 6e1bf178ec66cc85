package cuda

import (
	"fmt"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/thread"
)

// view is how the emitted code addresses the elements of a tile: a C
// pointer and a stride per dim, in elements, into global memory (a device
// tensor) or shared memory.
type view struct {
	ptr     string
	ctype   string
	shape   ugraph.Shape
	strides []int
	global  bool
	// avail, when set, names the elements of a device tensor with the
	// dynamic dim m that lie below row m, counted from ptr: an element at
	// an offset at or past it is a padding row, read as zero and never
	// written (DESIGN §9).
	avail string
}

// offset is the offset of element idx, where idx has one entry per dim of
// a shape of the same rank that the view broadcasts to: dims of extent 1
// in the view read index 0.
func (v view) offset(idx []*expr) *expr {
	o := cst(0)
	for d := range v.shape.Rank() {
		if v.shape.Dim(d) != 1 {
			o = add(o, mul(idx[d], v.strides[d]))
		}
	}
	return o
}

// at is the C lvalue of element idx.
func (v view) at(idx []*expr) string { return fmt.Sprintf("%s[%s]", v.ptr, v.offset(idx)) }

// access is element idx through the runtime's access point for what the
// code does with it (LD, ST or RMW, see mirage_runtime.cuh), in the view's
// memory: MIRAGE_LDG(p[i]), MIRAGE_STS(p[i]), ...
func (v view) access(what string, idx []*expr) string {
	space := "S"
	if v.global {
		space = "G"
	}
	return fmt.Sprintf("MIRAGE_%s%s(%s)", what, space, v.at(idx))
}

// load is the element's value as a float.
func (v view) load(idx []*expr) string {
	x := v.access("LD", idx)
	if v.ctype != "float" {
		x = "mirage::to_f32(" + x + ")"
	}
	if v.avail != "" {
		return fmt.Sprintf("(%s < %s ? %s : 0.0f)", v.offset(idx), v.avail, x)
	}
	return x
}

// load16 is the 16-byte vector of elements from idx on, a
// mirage::Vec16 of the view's type (rows read a vector at a time,
// thread.Group.RowVector); zeros in a padding row past avail.
func (v view) load16(idx []*expr) string {
	o := v.offset(idx)
	p := fmt.Sprintf("%s + %s", v.ptr, o)
	if o.isConst() && o.k == 0 {
		p = v.ptr
	}
	if v.avail != "" {
		return fmt.Sprintf("mirage::load16_or_zero(%s < %s, %s)", o, v.avail, p)
	}
	return fmt.Sprintf("mirage::load16(%s)", p)
}

// fromFloat is float expression val as an element of the view's type.
func (v view) fromFloat(val string) string {
	if v.ctype == "float" {
		return val
	}
	return fmt.Sprintf("mirage::from_f32<%s>(%s)", v.ctype, val)
}

// store16 is the statement storing vector val (a mirage::Vec16 of the
// view's type) at idx and the elements after it, under the view's guard.
func (v view) store16(idx []*expr, val string) string {
	return fmt.Sprintf("%smirage::store16(%s + %s, %s);", v.guard(idx), v.ptr, v.offset(idx), val)
}

// guard is the condition under which element idx may be written: "" when
// every element may.
func (v view) guard(idx []*expr) string {
	if v.avail == "" {
		return ""
	}
	return fmt.Sprintf("if (%s < %s) ", v.offset(idx), v.avail)
}

// store is the element as an lvalue to assign to.
func (v view) store(idx []*expr) string { return v.access("ST", idx) }

// update is the element as an lvalue to add to (+=).
func (v view) update(idx []*expr) string { return v.access("RMW", idx) }

// sharedStrides are the strides of a tile stored in shared memory: rows of
// pitch elements, the leading dims packed.
func sharedStrides(s ugraph.Shape, pitch int) []int {
	r := s.Rank()
	st := make([]int, r)
	st[r-1] = 1
	if r >= 2 {
		st[r-2] = pitch
	}
	for d := r - 3; d >= 0; d-- {
		st[d] = st[d+1] * s.Dim(d+1)
	}
	return st
}

// indexOf returns the multi-index of the flat element e (a row-major
// position in s): one expr per dim, simplified with e < s.NumElements().
func indexOf(e *expr, s ugraph.Shape) []*expr {
	idx := make([]*expr, s.Rank())
	st := s.Strides()
	for d := range idx {
		idx[d] = mod(div(e, st[d]), s.Dim(d))
	}
	return idx
}

// idxVars returns variables i0, i1, ... bounded by the dims of s.
func idxVars(s ugraph.Shape) []*expr {
	idx := make([]*expr, s.Rank())
	for d := range idx {
		idx[d] = vr(fmt.Sprintf("i%d", d), s.Dim(d))
	}
	return idx
}

// withLast returns idx with its last entry replaced.
func withLast(idx []*expr, last *expr) []*expr {
	out := append([]*expr(nil), idx...)
	out[len(out)-1] = last
	return out
}

// blockOrigin is the offset, in a device tensor of shape dshape, of the
// tile that block (bx, by, bz) reads (imap, fmap) or writes (omap, fmap
// -1) at iteration it: along a dim that grid axis a partitions, the block's
// chunk starts at b_a · (tile extent · F if the for-loop also walks the dim,
// else tile extent); along the walked dim, iteration it adds it · tile
// extent (DESIGN §3, as interp.load and interp.store compute it).
func blockOrigin(grid block.Dim3, m block.Map, fmap, f int, tile, dshape ugraph.Shape) *expr {
	blockVars := [3]string{"bx", "by", "bz"}
	dst := dshape.Strides()
	o := cst(0)
	for a, d := range m {
		if d < 0 || grid[a] == 1 {
			continue
		}
		chunk := tile.Dim(d)
		if d == fmap {
			chunk *= f
		}
		o = add(o, mul(vr(blockVars[a], grid[a]), chunk*dst[d]))
	}
	if fmap >= 0 && f > 1 {
		o = add(o, mul(vr("it", f), tile.Dim(fmap)*dst[fmap]))
	}
	return o
}

// rowsOf is the number of rows of a tile (all dims but the last).
func rowsOf(s ugraph.Shape) int { return s.NumElements() / s.Last() }

// sharedView is the view of a shared tile through pointer ptr.
func sharedView(ptr string, s ugraph.Shape, t *thread.Tile) view {
	return view{ptr: ptr, ctype: ctype(t.DType), shape: s, strides: sharedStrides(s, t.Pitch)}
}
