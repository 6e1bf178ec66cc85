package ugraph

import (
	"fmt"
	"math/bits"
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
// the same rank, the same extents and the same dynamic dims, so it may be
// used with == and as a map key, and copying a graph never copies shape
// storage.
//
// A dim may be dynamic (DESIGN §9): it is the symbol m, the number of rows
// (tokens) a call brings, and its extent is an example size (the program's,
// or a bucket's). A program has one symbol; the shape rules carry it from
// the inputs through every op that keeps rows apart, and refuse the ops that
// would mix rows (ShapeRule errors). Bind gives the static shape at a size.
type Shape struct {
	rank uint8
	dyn  uint8 // bit i: dim i is the symbol m
	dims [MaxRank]int32
}

// MaxDim bounds a single extent.
const MaxDim = 1 << 30

// MaxElements bounds the number of elements of one tensor: 2^48, 512 TiB
// of fp16, more than any device holds. Four extents of up to MaxDim could
// multiply to 2^120; the bound keeps every size that code derives from a
// shape exact in an int64, with room to spare: element counts, strides,
// offsets (each index times its stride is below the element count), and
// bytes at up to 8 bytes an element (2^51, which a float64 also holds
// exactly). Every valid Shape obeys it; the shape rules reject results
// that would not.
const MaxElements = 1 << 48

// NewShape returns the shape with the given extents. It fails unless
// 1 <= len(dims) <= MaxRank, every extent is in [1, MaxDim], and the
// shape has at most MaxElements elements.
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
	if _, ok := s.elements(); !ok {
		return Shape{}, s.tooLarge()
	}
	return s, nil
}

// tooLarge is the error for a shape with more than MaxElements elements.
func (s Shape) tooLarge() error {
	return fmt.Errorf("shape %v has more than 2^48 elements, the limit of one tensor", s)
}

// elements returns the product of the extents, and false when it exceeds
// MaxElements (checked at every step, so it never wraps).
func (s Shape) elements() (int, bool) {
	n := uint64(1)
	for i := 0; i < int(s.rank); i++ {
		hi, lo := bits.Mul64(n, uint64(s.dims[i]))
		if hi != 0 || lo > MaxElements {
			return 0, false
		}
		n = lo
	}
	return int(n), true
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
	if s.dyn != 0 {
		// Static shapes hash as they did before shapes had symbols.
		mix(uint32(s.dyn) | 0xd100)
	}
	return h, nil
}

// StructHash is Hash without its error, which is always nil.
func (s Shape) StructHash() uint64 {
	h, _ := s.Hash()
	return h
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

// Extents returns the extents in an array, zero past the rank: a form of
// s without the padding after its rank, which maps hash as plain memory
// (a search keys its memos by it). Equal shapes have equal extents, and
// the rank is the number of nonzero ones.
func (s Shape) Extents() [MaxRank]int32 { return s.dims }

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

// WithDim returns s with dimension i set to v, a static extent. v must be
// in [1, MaxDim]. The result may have more than MaxElements elements, and
// then is not Valid: the shape rules that grow a shape check their result.
func (s Shape) WithDim(i, v int) Shape {
	_ = s.Dim(i)
	if v < 1 || v > MaxDim {
		panic(fmt.Sprintf("ugraph: extent %d out of range", v))
	}
	s.dims[i] = int32(v)
	s.dyn &^= 1 << i
	return s
}

// WithDynamic returns s with dim i made the symbol m, its extent kept as
// the example size.
func (s Shape) WithDynamic(i int) Shape {
	_ = s.Dim(i)
	s.dyn |= 1 << i
	return s
}

// Dynamic reports whether dim i is the symbol m.
func (s Shape) Dynamic(i int) bool { return i >= 0 && i < int(s.rank) && s.dyn&(1<<i) != 0 }

// IsDynamic reports whether any dim is the symbol m.
func (s Shape) IsDynamic() bool { return s.dyn != 0 }

// DynamicDim is the first dim that is the symbol m, or -1.
func (s Shape) DynamicDim() int {
	if s.dyn == 0 {
		return -1
	}
	return bits.TrailingZeros8(s.dyn)
}

// CheckRowDim checks that dim d can be cut at row m in memory: it is not
// the last dim, and every dim before it has extent 1, so that the rows below
// m are a prefix of the tensor (the emitted code's guards, DESIGN §9).
func (s Shape) CheckRowDim(d int) error {
	if d < 0 || d >= int(s.rank) {
		return fmt.Errorf("%v has no dim %d", s, d)
	}
	if d == int(s.rank)-1 {
		return fmt.Errorf("%v: the dynamic dim m is the last dim; it must be a row dim (an outer one)", s)
	}
	for i := range d {
		if s.dims[i] != 1 {
			return fmt.Errorf("%v: dim %d (%d) is outside the dynamic dim m; m must be the outermost dim of extent above 1", s, i, s.dims[i])
		}
	}
	return nil
}

// Bind returns the static shape s has when m rows come: its dynamic dims
// set to m (in [1, MaxDim]). The result may have more than MaxElements
// elements, and then is not Valid.
func (s Shape) Bind(m int) Shape {
	for i := 0; i < int(s.rank); i++ {
		if s.dyn&(1<<i) != 0 {
			s = s.WithDim(i, m)
		}
	}
	return s
}

// BroadcastsTo reports whether s broadcasts against t without growing it:
// equal ranks, and each dim of s t's or 1 (a bias or a residual against
// the tensor it is added to).
func (s Shape) BroadcastsTo(t Shape) bool {
	if s.rank != t.rank {
		return false
	}
	for i := range s.Rank() {
		if d := s.Dim(i); d != 1 && d != t.Dim(i) {
			return false
		}
	}
	return true
}

// NumElements is the product of the extents, at most MaxElements for a
// valid shape. It panics on a shape with more (which is not valid), rather
// than return a product that has wrapped around.
func (s Shape) NumElements() int {
	n, ok := s.elements()
	if !ok {
		panic("ugraph: NumElements of " + s.tooLarge().Error())
	}
	return n
}

// Bytes is the size of a tensor of shape s whose elements take elemSize
// bytes, saturating as MulSize does.
func (s Shape) Bytes(elemSize int) int64 {
	return MulSize(int64(s.NumElements()), int64(elemSize))
}

// Coords returns the coordinates of the element at row-major offset off
// (0 <= off < NumElements).
func (s Shape) Coords(off int) []int {
	idx := make([]int, s.rank)
	for i := int(s.rank) - 1; i >= 0; i-- {
		d := int(s.dims[i])
		idx[i] = off % d
		off /= d
	}
	return idx
}

// Strides returns the row-major strides, in elements. Each is at most
// NumElements, so none overflows.
func (s Shape) Strides() []int {
	st := make([]int, s.rank)
	acc := 1
	for i := int(s.rank) - 1; i >= 0; i-- {
		st[i] = acc
		acc *= int(s.dims[i])
	}
	return st
}

// Valid reports whether s has a rank in [1, MaxRank], positive extents and
// at most MaxElements elements.
func (s Shape) Valid() bool {
	if s.rank < 1 || s.rank > MaxRank {
		return false
	}
	for i := 0; i < int(s.rank); i++ {
		if s.dims[i] < 1 {
			return false
		}
	}
	_, ok := s.elements()
	return ok
}

// String formats s as "[16, 4096]", a dynamic dim as "m" ("[m, 4096]").
func (s Shape) String() string {
	var b strings.Builder
	b.WriteByte('[')
	for i := 0; i < int(s.rank); i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		if s.Dynamic(i) {
			b.WriteByte('m')
			continue
		}
		b.WriteString(strconv.Itoa(int(s.dims[i])))
	}
	b.WriteByte(']')
	return b.String()
}

// MulDim returns s with dimension i multiplied by f, failing when the
// extent would exceed MaxDim or the shape MaxElements (a grid that makes a
// device tensor too large).
func (s Shape) MulDim(i, f int) (Shape, error) {
	// f is checked alone first: a product with a huge f could wrap.
	if f < 1 || f > MaxDim || s.Dim(i)*f > MaxDim {
		return s, fmt.Errorf("dim %d of %v times %d is out of range", i, s, f)
	}
	m := s.WithDim(i, s.Dim(i)*f)
	if !m.Valid() {
		return s, fmt.Errorf("dim %d of %v times %d: %v", i, s, f, m.tooLarge())
	}
	return m, nil
}

// DivDim returns s with dimension i divided by f, failing unless f divides it.
func (s Shape) DivDim(i, f int) (Shape, error) {
	d := s.Dim(i)
	if f < 1 || d%f != 0 {
		return s, fmt.Errorf("dim %d of %v (%d) is not divisible by %d", i, s, d, f)
	}
	return s.WithDim(i, d/f), nil
}
