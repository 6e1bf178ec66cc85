package ffverify

import (
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/layout"
)

// tensor is a dense row-major tensor of field elements: a device tensor or
// a tile. len(v) == shape.NumElements().
type tensor struct {
	shape ugraph.Shape
	v     []elem
}

func newTensor(s ugraph.Shape) *tensor { return &tensor{shape: s, v: make([]elem, s.NumElements())} }

// copyBox is layout.CopyBox on tensors.
func copyBox(dst *tensor, dstOff layout.Dims, src *tensor, srcOff, box layout.Dims) {
	layout.CopyBox(dst.v, dst.shape, dstOff, src.v, src.shape, srcOff, box)
}
