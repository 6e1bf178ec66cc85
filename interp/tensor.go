package interp

import (
	"fmt"
	"strings"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/layout"
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

// copyBox is layout.CopyBox on tensors.
func copyBox(dst *Tensor, dstOff layout.Dims, src *Tensor, srcOff, box layout.Dims) {
	layout.CopyBox(dst.Data, dst.Shape, dstOff, src.Data, src.Shape, srcOff, box)
}
