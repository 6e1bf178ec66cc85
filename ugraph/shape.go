package ugraph

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// MaxRank is the largest number of dimensions a tensor may have.
const MaxRank = 4

// Shape is the extent of a tensor in each of its 1 to MaxRank dimensions,
// outermost first (row-major). The zero Shape has rank 0 and is not a valid
// tensor shape.
//
// Shape is a comparable value: two shapes are equal exactly when they have
// the same rank and the same extents, so it may be used with == and as a map
// key, and copying a graph never copies shape storage.
type Shape struct {
	rank uint8
	dims [MaxRank]int32
}

// MaxDim bounds a single extent so that element counts of a rank-4 tensor
// stay far from overflowing an int.
const MaxDim = 1 << 30

// NewShape returns the shape with the given extents. It fails unless
// 1 <= len(dims) <= MaxRank and every extent is in [1, MaxDim].
func NewShape(dims ...int) (Shape, error) {
	var s Shape
	if len(dims) == 0 || len(dims) > MaxRank {
		return s, fmt.Errorf("shape %v: rank %d, want 1 to %d dims", dims, len(dims), MaxRank)
	}
	for i, d := range dims {
		if d < 1 || d > MaxDim {
			return s, fmt.Errorf("shape %v: dim %d is %d, want 1 to %d", dims, i, d, MaxDim)
		}
		s.dims[i] = int32(d)
	}
	s.rank = uint8(len(dims))
	return s, nil
}

// MustShape is NewShape for shapes known to be valid (tests, constants).
func MustShape(dims ...int) Shape {
	s, err := NewShape(dims...)
	if err != nil {
		panic(err)
	}
	return s
}

// Hash returns a hash of the rank and every extent. Shape's fields are
// unexported, and hashstructure (which kernel.Hash and block.Hash use) skips
// unexported fields: without this method every shape would hash alike, and
// the result cache would serve one program's answer to the same program at
// other shapes. hashstructure calls it through its Hashable interface.
func (s Shape) Hash() (uint64, error) {
	// FNV-1a over the rank and the four extents (zero past the rank, as
	// every Shape keeps them).
	h := uint64(14695981039346656037)
	mix := func(v uint32) {
		for i := 0; i < 4; i++ {
			h ^= uint64(byte(v >> (8 * i)))
			h *= 1099511628211
		}
	}
	mix(uint32(s.rank))
	for _, d := range s.dims {
		mix(uint32(d))
	}
	return h, nil
}

// Rank is the number of dimensions.
func (s Shape) Rank() int { return int(s.rank) }

// Dim is the extent of dimension i; i must be in [0, Rank()).
func (s Shape) Dim(i int) int {
	if i < 0 || i >= int(s.rank) {
		panic(fmt.Sprintf("ugraph: dim %d of rank-%d shape", i, s.rank))
	}
	return int(s.dims[i])
}

// Last is the extent of the innermost dimension.
func (s Shape) Last() int { return s.Dim(int(s.rank) - 1) }

// Dims returns the extents as a new slice.
func (s Shape) Dims() []int {
	d := make([]int, s.rank)
	for i := range d {
		d[i] = int(s.dims[i])
	}
	return d
}

// WithDim returns s with dimension i set to v. v must be in [1, MaxDim].
func (s Shape) WithDim(i, v int) Shape {
	_ = s.Dim(i)
	if v < 1 || v > MaxDim {
		panic(fmt.Sprintf("ugraph: extent %d out of range", v))
	}
	s.dims[i] = int32(v)
	return s
}

// NumElements is the product of the extents.
func (s Shape) NumElements() int {
	n := 1
	for i := 0; i < int(s.rank); i++ {
		n *= int(s.dims[i])
	}
	return n
}

// Strides returns the row-major strides, in elements.
func (s Shape) Strides() []int {
	st := make([]int, s.rank)
	acc := 1
	for i := int(s.rank) - 1; i >= 0; i-- {
		st[i] = acc
		acc *= int(s.dims[i])
	}
	return st
}

// Valid reports whether s has a rank in [1, MaxRank] and positive extents.
func (s Shape) Valid() bool {
	if s.rank < 1 || s.rank > MaxRank {
		return false
	}
	for i := 0; i < int(s.rank); i++ {
		if s.dims[i] < 1 {
			return false
		}
	}
	return true
}

// String formats s as "[16, 4096]".
func (s Shape) String() string {
	var b strings.Builder
	b.WriteByte('[')
	for i := 0; i < int(s.rank); i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(int(s.dims[i])))
	}
	b.WriteByte(']')
	return b.String()
}

// MulDim returns s with dimension i multiplied by f, failing on overflow of
// MaxDim (a grid that makes a device tensor too large).
func (s Shape) MulDim(i, f int) (Shape, error) {
	v := int64(s.Dim(i)) * int64(f)
	if f < 1 || v > MaxDim || v > math.MaxInt32 {
		return s, fmt.Errorf("dim %d of %v times %d is out of range", i, s, f)
	}
	return s.WithDim(i, int(v)), nil
}

// DivDim returns s with dimension i divided by f, failing unless f divides it.
func (s Shape) DivDim(i, f int) (Shape, error) {
	d := s.Dim(i)
	if f < 1 || d%f != 0 {
		return s, fmt.Errorf("dim %d of %v (%d) is not divisible by %d", i, s, d, f)
	}
	return s.WithDim(i, d/f), nil
}
