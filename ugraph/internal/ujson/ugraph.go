package ujson

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/mirage-go/mirage/ugraph"
)

// Shape reads the named member as a tensor shape.
func (o *Object) Shape(name string) (ugraph.Shape, error) {
	dims, err := o.Ints(name)
	if err != nil {
		return ugraph.Shape{}, err
	}
	s, err := ugraph.NewShape(dims...)
	if err != nil {
		return s, fmt.Errorf("field %q: %w", name, err)
	}
	return s, nil
}

// DType reads the named member as an element type.
func (o *Object) DType(name string) (ugraph.DType, error) {
	s, err := o.String(name)
	if err != nil {
		return 0, err
	}
	dt, err := ugraph.ParseDType(s)
	if err != nil {
		return 0, fmt.Errorf("field %q: %w", name, err)
	}
	return dt, nil
}

// Derived is an optional member holding a shape that the decoder derives
// itself: written for readers, and checked when present.
type Derived struct {
	name string
	dims []int // nil when absent
}

// Derived reads the optional named member as a derived shape.
func (o *Object) Derived(name string) (Derived, error) {
	d := Derived{name: name}
	if !o.Has(name) {
		return d, nil
	}
	dims, err := o.Ints(name)
	if err != nil {
		return d, err
	}
	if dims == nil {
		dims = []int{} // present but empty: never equal to a valid shape
	}
	d.dims = dims
	return d, nil
}

// Check reports an error unless the member is absent or equals got.
func (d Derived) Check(got ugraph.Shape) error {
	if d.dims == nil || EqualDims(got, d.dims) {
		return nil
	}
	return fmt.Errorf("field %q: the file says %s, the shape rules give %v", d.name, FormatDims(d.dims), got)
}

// FormatDims formats extents the way ugraph.Shape does: "[16, 4096]".
func FormatDims(dims []int) string {
	parts := make([]string, len(dims))
	for i, d := range dims {
		parts[i] = strconv.Itoa(d)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// EqualDims reports whether s has exactly the extents dims.
func EqualDims(s ugraph.Shape, dims []int) bool {
	if s.Rank() != len(dims) {
		return false
	}
	for i, d := range dims {
		if s.Dim(i) != d {
			return false
		}
	}
	return true
}

// AtOp prefixes err with the place of op i (of kind k, when known) in its
// graph's op list.
func AtOp(i int, k ugraph.OpKind, err error) error {
	if k.Valid() {
		return fmt.Errorf("op %d (%v): %w", i, k, err)
	}
	return fmt.Errorf("op %d: %w", i, err)
}

// LookupOp reads the op's "op" member and returns its kind, which must be
// allowed at level l (named lname in errors).
func LookupOp(o *Object, l ugraph.Level, lname string) (ugraph.OpKind, error) {
	name, err := o.String("op")
	if err != nil {
		return ugraph.OpInvalid, err
	}
	k, ok := ugraph.LookupOp(name)
	if !ok {
		return ugraph.OpInvalid, fmt.Errorf("unknown op %q", name)
	}
	if !k.AllowedAt(l) {
		return ugraph.OpInvalid, fmt.Errorf("op %q is not allowed in a %s graph", name, lname)
	}
	return k, nil
}
