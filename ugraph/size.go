package ugraph

import (
	"math"
	"math/bits"
)

// Sizes derived from one shape are exact (see MaxElements); totals over
// many tensors, blocks or draws are not bounded by it. AddSize and MulSize
// compute such totals of element counts or bytes: they saturate at
// math.MaxInt64, so a total that has overflowed still exceeds every bound
// it is compared with, where a wrapped one would slip under it.

// AddSize returns a+b for sizes a, b >= 0, or math.MaxInt64 if that
// overflows.
func AddSize(a, b int64) int64 {
	s, carry := bits.Add64(uint64(a), uint64(b), 0)
	if carry != 0 || s > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(s)
}

// MulSize returns a·b for sizes a, b >= 0, or math.MaxInt64 if that
// overflows.
func MulSize(a, b int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(lo)
}
