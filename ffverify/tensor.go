package ffverify

import "github.com/mirage-go/mirage/ugraph"

// tensor is a dense row-major tensor of field elements: a device tensor or
// a tile. len(v) == shape.NumElements().
type tensor struct {
	shape ugraph.Shape
	v     []elem
}

func newTensor(s ugraph.Shape) *tensor { return &tensor{shape: s, v: make([]elem, s.NumElements())} }

// Index arithmetic views every shape as rank 4, left-padded with 1s, so that
// one loop nest or one formula serves all ranks.
type dims4 [ugraph.MaxRank]int

func pad(s ugraph.Shape) dims4 {
	d := dims4{1, 1, 1, 1}
	r := s.Rank()
	for i := range r {
		d[ugraph.MaxRank-r+i] = s.Dim(i)
	}
	return d
}

// padDim is the padded position of dim i of a rank-r shape.
func padDim(i, r int) int { return ugraph.MaxRank - r + i }

func (d dims4) strides() dims4 {
	var s dims4
	acc := 1
	for i := ugraph.MaxRank - 1; i >= 0; i-- {
		s[i] = acc
		acc *= d[i]
	}
	return s
}

// index returns the padded multi-index of flat position off.
func (d dims4) index(off int) dims4 {
	var x dims4
	for i := ugraph.MaxRank - 1; i >= 0; i-- {
		x[i] = off % d[i]
		off /= d[i]
	}
	return x
}

// offset returns the flat position of a padded multi-index.
func (d dims4) offset(x dims4) int {
	return ((x[0]*d[1]+x[1])*d[2]+x[2])*d[3] + x[3]
}

// unpadIndex returns the multi-index of a rank-r shape from a padded one.
func unpadIndex(x dims4, r int) []int { return append([]int(nil), x[ugraph.MaxRank-r:]...) }

// broadcastStrides returns s's padded strides with 0 wherever s has extent 1
// and the result (extents out) does not: every index along such a dim reads
// the same element.
func broadcastStrides(s ugraph.Shape, out dims4) dims4 {
	d := pad(s)
	st := d.strides()
	for i := range st {
		if d[i] == 1 && out[i] != 1 {
			st[i] = 0
		}
	}
	return st
}

// split views s as [outer, n, inner] around dim.
func split(s ugraph.Shape, dim int) (outer, n, inner int) {
	outer, inner = 1, 1
	for i := range dim {
		outer *= s.Dim(i)
	}
	for i := dim + 1; i < s.Rank(); i++ {
		inner *= s.Dim(i)
	}
	return outer, s.Dim(dim), inner
}

// copyBox copies the box of extents box at offset srcOff of src to offset
// dstOff of dst (padded coordinates). Tile loads and stores are this copy.
func copyBox(dst *tensor, dstOff dims4, src *tensor, srcOff dims4, box dims4) {
	ds, ss := pad(dst.shape).strides(), pad(src.shape).strides()
	row := box[3]
	for a := range box[0] {
		for b := range box[1] {
			for c := range box[2] {
				d := (dstOff[0]+a)*ds[0] + (dstOff[1]+b)*ds[1] + (dstOff[2]+c)*ds[2] + dstOff[3]
				s := (srcOff[0]+a)*ss[0] + (srcOff[1]+b)*ss[1] + (srcOff[2]+c)*ss[2] + srcOff[3]
				copy(dst.v[d:d+row], src.v[s:s+row])
			}
		}
	}
}
