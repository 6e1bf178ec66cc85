package interp

import (
	"fmt"
	"strings"

	"github.com/mirage-go/mirage/ugraph"
)

// Tensor is a dense row-major tensor of float64 values: a device tensor of a
// kernel graph or a tile of a block graph. Its invariant is
// len(Data) == Shape.NumElements(); every function of this package keeps it
// and may assume it.
type Tensor struct {
	Shape ugraph.Shape
	Data  []float64
}

// NewTensor returns a zero tensor of shape s.
func NewTensor(s ugraph.Shape) *Tensor {
	return &Tensor{Shape: s, Data: make([]float64, s.NumElements())}
}

// FromSlice returns a tensor of shape s holding data (not a copy), row-major.
func FromSlice(s ugraph.Shape, data []float64) (*Tensor, error) {
	t := &Tensor{Shape: s, Data: data}
	return t, t.check()
}

// check reports a tensor that breaks the invariant.
func (t *Tensor) check() error {
	switch {
	case t == nil:
		return fmt.Errorf("nil tensor")
	case !t.Shape.Valid():
		return fmt.Errorf("invalid shape %v", t.Shape)
	case len(t.Data) != t.Shape.NumElements():
		return fmt.Errorf("shape %v holds %d elements, but Data has %d", t.Shape, t.Shape.NumElements(), len(t.Data))
	}
	return nil
}

// At returns the element at the given index (one entry per dim). It panics
// on an index out of range, like a slice.
func (t *Tensor) At(idx ...int) float64 { return t.Data[t.offset(idx)] }

func (t *Tensor) offset(idx []int) int {
	if len(idx) != t.Shape.Rank() {
		panic(fmt.Sprintf("interp: index %v into a rank-%d tensor", idx, t.Shape.Rank()))
	}
	off := 0
	for i, x := range idx {
		d := t.Shape.Dim(i)
		if x < 0 || x >= d {
			panic(fmt.Sprintf("interp: index %v out of range for shape %v", idx, t.Shape))
		}
		off = off*d + x
	}
	return off
}

// index is the inverse of offset: the multi-index of flat position off.
func (t *Tensor) index(off int) []int {
	idx := make([]int, t.Shape.Rank())
	for i := len(idx) - 1; i >= 0; i-- {
		d := t.Shape.Dim(i)
		idx[i] = off % d
		off /= d
	}
	return idx
}

// Clone returns a copy of t that shares no storage with it.
func (t *Tensor) Clone() *Tensor {
	return &Tensor{Shape: t.Shape, Data: append([]float64(nil), t.Data...)}
}

// String formats t as its shape and its first elements, row-major.
func (t *Tensor) String() string {
	const show = 16
	if len(t.Data) <= show {
		return fmt.Sprintf("%v%v", t.Shape, t.Data)
	}
	return fmt.Sprintf("%v%v ...]", t.Shape, strings.TrimSuffix(fmt.Sprint(t.Data[:show]), "]"))
}

// The loops of this package view every tensor as rank 4, its extents
// left-padded with 1s, so that one loop nest serves all ranks.
type dims4 [ugraph.MaxRank]int

func pad(s ugraph.Shape) dims4 {
	d := dims4{1, 1, 1, 1}
	r := s.Rank()
	for i := range r {
		d[ugraph.MaxRank-r+i] = s.Dim(i)
	}
	return d
}

// padIndex left-pads a per-dim index or offset of a rank-r tensor with 0s.
func padIndex(x []int) dims4 {
	var d dims4
	copy(d[ugraph.MaxRank-len(x):], x)
	return d
}

func (d dims4) strides() dims4 {
	var s dims4
	acc := 1
	for i := ugraph.MaxRank - 1; i >= 0; i-- {
		s[i] = acc
		acc *= d[i]
	}
	return s
}

// split views s as [outer, n, inner] around dim: n is the extent of dim,
// outer and inner the products of the extents before and after it.
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
// dstOff of dst (all in padded coordinates). Loading a tile, storing one and
// concat are all this one copy.
func copyBox(dst *Tensor, dstOff dims4, src *Tensor, srcOff dims4, box dims4) {
	ds, ss := pad(dst.Shape).strides(), pad(src.Shape).strides()
	row := box[3]
	for a := range box[0] {
		for b := range box[1] {
			for c := range box[2] {
				d := (dstOff[0]+a)*ds[0] + (dstOff[1]+b)*ds[1] + (dstOff[2]+c)*ds[2] + dstOff[3]
				s := (srcOff[0]+a)*ss[0] + (srcOff[1]+b)*ss[1] + (srcOff[2]+c)*ss[2] + srcOff[3]
				copy(dst.Data[d:d+row], src.Data[s:s+row])
			}
		}
	}
}
