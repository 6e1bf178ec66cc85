// Package structhash computes the hashes that
// hashstructure.Hash(v, hashstructure.FormatV2, nil) gives, for callers
// that walk their values field by field instead of by reflection.
//
// hashstructure defines the canonical hashes of μGraphs (kernel.Hash,
// block.Hash): results, caches, profiles and recorded fixtures are keyed by
// them. Its reflective walk encodes every number through binary.Write and
// hashes every field name again, which made hashing a complete candidate
// cost more than finding it. The functions here give the same values from
// the same values: each caller's tests compare the two on its types.
//
// The rules, as hashstructure applies them: a number (int and uint widened
// to 64 bits, bool as one byte) or a string is hashed alone with FNV-1,
// little-endian; arrays and slices fold their elements in order
// (Ordered), from 0; a struct starts from its type's name and, for each
// exported field, mixes in Ordered(name, value) and rehashes (Struct.Field);
// a nil pointer hashes as the int 0; a type with a Hash method
// (hashstructure.Hashable) is its method's value.
package structhash

import "math"

const (
	offset64 = 14695981039346656037
	prime64  = 1099511628211
)

// String is the hash of a string (and of a struct's type or field name).
func String(s string) uint64 {
	h := uint64(offset64)
	for i := range len(s) {
		h *= prime64
		h ^= uint64(s[i])
	}
	return h
}

// word hashes the n low bytes of v, least significant first.
func word(h uint64, v uint64, n int) uint64 {
	for range n {
		h *= prime64
		h ^= v & 0xff
		v >>= 8
	}
	return h
}

// Int is the hash of an int, or of any type of kind int.
func Int(v int) uint64 { return word(offset64, uint64(v), 8) }

// Int32 is the hash of an int32, or of any type of kind int32.
func Int32(v int32) uint64 { return word(offset64, uint64(uint32(v)), 4) }

// Uint8 is the hash of a uint8, or of any type of kind uint8.
func Uint8(v uint8) uint64 { return word(offset64, uint64(v), 1) }

// Bool is the hash of a bool.
func Bool(b bool) uint64 {
	if b {
		return Uint8(1)
	}
	return Uint8(0)
}

// Float64 is the hash of a float64 (its IEEE bits).
func Float64(f float64) uint64 { return word(offset64, math.Float64bits(f), 8) }

// Nil is the hash of a nil pointer.
var Nil = Int(0)

// Ordered folds b into a: the step of arrays, slices and struct fields.
func Ordered(a, b uint64) uint64 { return word(word(offset64, a, 8), b, 8) }

// finish rehashes an unordered fold.
func finish(a uint64) uint64 { return word(offset64, a, 8) }

// Struct is the hash of a struct being folded: start it with NewStruct,
// then add its exported fields in declaration order.
type Struct uint64

// NewStruct starts a struct whose type's name hashes to name (String).
func NewStruct(name uint64) Struct { return Struct(name) }

// Field adds the field whose name hashes to name (String) and whose value
// hashes to v.
func (s *Struct) Field(name, v uint64) { *s = Struct(finish(uint64(*s) ^ Ordered(name, v))) }

// Sum is the struct's hash.
func (s Struct) Sum() uint64 { return uint64(s) }

// Slice folds the element hashes that elem gives for 0 <= i < n.
func Slice(n int, elem func(i int) uint64) uint64 {
	var h uint64
	for i := range n {
		h = Ordered(h, elem(i))
	}
	return h
}

// Seq folds vs in order, as Slice does: a list of hashes (a sorted one
// for a multiset) becomes one.
func Seq(vs ...uint64) uint64 { return Slice(len(vs), func(i int) uint64 { return vs[i] }) }
