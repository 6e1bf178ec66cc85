// Package layout is the index arithmetic of dense row-major tensors, written
// once for every package that walks them (the interpreter, the finite-field
// verifier, the code generator).
//
// Every shape is viewed as rank ugraph.MaxRank, its extents left-padded with
// 1s (an index or offset with 0s), so that one loop nest or one formula
// serves all ranks.
package layout

import "github.com/mirage-go/mirage/ugraph"

// Dims is a padded shape, multi-index, offset or set of strides.
type Dims [ugraph.MaxRank]int

// Pad returns s's extents left-padded with 1s.
func Pad(s ugraph.Shape) Dims {
	d := Dims{1, 1, 1, 1}
	r := s.Rank()
	for i := range r {
		d[PadDim(i, r)] = s.Dim(i)
	}
	return d
}

// PadIndex left-pads the per-dim index or offset x of a rank-len(x) tensor
// with 0s.
func PadIndex(x []int) Dims {
	var d Dims
	copy(d[ugraph.MaxRank-len(x):], x)
	return d
}

// UnpadIndex returns the multi-index of a rank-r tensor from a padded one.
func UnpadIndex(x Dims, r int) []int { return append([]int(nil), x[ugraph.MaxRank-r:]...) }

// PadDim is the padded position of dim i of a rank-r shape.
func PadDim(i, r int) int { return ugraph.MaxRank - r + i }

// Strides are the row-major strides of the padded shape d.
func (d Dims) Strides() Dims {
	var s Dims
	acc := 1
	for i := ugraph.MaxRank - 1; i >= 0; i-- {
		s[i] = acc
		acc *= d[i]
	}
	return s
}

// Index returns the padded multi-index of flat position off in shape d.
func (d Dims) Index(off int) Dims {
	var x Dims
	for i := ugraph.MaxRank - 1; i >= 0; i-- {
		x[i] = off % d[i]
		off /= d[i]
	}
	return x
}

// Offset returns the flat position of the padded multi-index x in shape d.
func (d Dims) Offset(x Dims) int {
	return ((x[0]*d[1]+x[1])*d[2]+x[2])*d[3] + x[3]
}

// BroadcastStrides returns s's padded strides with 0 wherever s has extent 1
// and the result (padded extents out) does not: every index along such a
// dim reads the same element.
func BroadcastStrides(s ugraph.Shape, out Dims) Dims {
	d := Pad(s)
	st := d.Strides()
	for i := range st {
		if d[i] == 1 && out[i] != 1 {
			st[i] = 0
		}
	}
	return st
}

// Split views s as [outer, n, inner] around dim: n is the extent of dim,
// outer and inner the products of the extents before and after it.
func Split(s ugraph.Shape, dim int) (outer, n, inner int) {
	outer, inner = 1, 1
	for i := range dim {
		outer *= s.Dim(i)
	}
	for i := dim + 1; i < s.Rank(); i++ {
		inner *= s.Dim(i)
	}
	return outer, s.Dim(dim), inner
}

// CopyBox copies the box of padded extents box at padded offset srcOff of
// src (shape srcShape) to offset dstOff of dst (shape dstShape). Loading a
// tile, storing one and concat are all this one copy.
func CopyBox[T any](dst []T, dstShape ugraph.Shape, dstOff Dims, src []T, srcShape ugraph.Shape, srcOff, box Dims) {
	ds, ss := Pad(dstShape).Strides(), Pad(srcShape).Strides()
	row := box[3]
	for a := range box[0] {
		for b := range box[1] {
			for c := range box[2] {
				d := (dstOff[0]+a)*ds[0] + (dstOff[1]+b)*ds[1] + (dstOff[2]+c)*ds[2] + dstOff[3]
				s := (srcOff[0]+a)*ss[0] + (srcOff[1]+b)*ss[1] + (srcOff[2]+c)*ss[2] + srcOff[3]
				copy(dst[d:d+row], src[s:s+row])
			}
		}
	}
}

// Binary sets dst[i] = f(x[i'], y[i”]) for every position of dst (shape
// dstShape), where x (shape xShape) and y (shape yShape) are broadcast
// through their size-1 dims: such a dim has stride 0, so every index along
// the result's dim reads the same element.
func Binary[T any](dst []T, dstShape ugraph.Shape, x []T, xShape ugraph.Shape, y []T, yShape ugraph.Shape, f func(a, b T) T) {
	if xShape == yShape {
		out, yd := dst[:len(x)], y[:len(x)]
		for i, v := range x {
			out[i] = f(v, yd[i])
		}
		return
	}
	od := Pad(dstShape)
	xs, ys := BroadcastStrides(xShape, od), BroadcastStrides(yShape, od)
	i := 0
	for a := range od[0] {
		for b := range od[1] {
			for c := range od[2] {
				xo := a*xs[0] + b*xs[1] + c*xs[2]
				yo := a*ys[0] + b*ys[1] + c*ys[2]
				for d := range od[3] {
					dst[i] = f(x[xo+d*xs[3]], y[yo+d*ys[3]])
					i++
				}
			}
		}
	}
}
