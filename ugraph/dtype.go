package ugraph

import "fmt"

// DType is the element type of a tensor.
type DType uint8

const (
	Float16 DType = iota + 1
	BFloat16
	Float32
)

var dtypeNames = [...]string{Float16: "float16", BFloat16: "bfloat16", Float32: "float32"}
var dtypeSizes = [...]int{Float16: 2, BFloat16: 2, Float32: 4}

// String returns the name Mirage's Python API uses (mi.float16, ...).
func (t DType) String() string {
	if t.Valid() {
		return dtypeNames[t]
	}
	return fmt.Sprintf("DType(%d)", uint8(t))
}

// Size is the number of bytes one element occupies in device memory.
func (t DType) Size() int {
	if t.Valid() {
		return dtypeSizes[t]
	}
	return 0
}

// Valid reports whether t is one of the defined element types.
func (t DType) Valid() bool { return t >= Float16 && t <= Float32 }

// ParseDType returns the element type with the given name.
func ParseDType(name string) (DType, error) {
	for t := Float16; t <= Float32; t++ {
		if dtypeNames[t] == name {
			return t, nil
		}
	}
	return 0, fmt.Errorf("unknown dtype %q (want float16, bfloat16 or float32)", name)
}
