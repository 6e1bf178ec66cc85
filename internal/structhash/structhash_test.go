package structhash

import (
	"testing"

	"github.com/mitchellh/hashstructure/v2"
)

type inner struct {
	Name string
	Flag bool
}

// hashed hashes itself, as ugraph.Shape does.
type hashed struct{ v uint64 }

func (h hashed) Hash() (uint64, error) { return h.v, nil }

type sample struct {
	N       int
	I32     int32
	U8      uint8
	F       float64
	B       bool
	S       string
	A       [3]int
	L       []int32
	P       *inner
	Nested  inner
	Self    hashed
	private int // skipped: hashstructure sees exported fields only
}

// fold is sample's hash as a caller of this package writes it.
func fold(v sample) uint64 {
	s := NewStruct(String("sample"))
	s.Field(String("N"), Int(v.N))
	s.Field(String("I32"), Int32(v.I32))
	s.Field(String("U8"), Uint8(v.U8))
	s.Field(String("F"), Float64(v.F))
	s.Field(String("B"), Bool(v.B))
	s.Field(String("S"), String(v.S))
	s.Field(String("A"), Slice(len(v.A), func(i int) uint64 { return Int(v.A[i]) }))
	s.Field(String("L"), Slice(len(v.L), func(i int) uint64 { return Int32(v.L[i]) }))
	p := Nil
	if v.P != nil {
		p = foldInner(*v.P)
	}
	s.Field(String("P"), p)
	s.Field(String("Nested"), foldInner(v.Nested))
	s.Field(String("Self"), v.Self.v)
	return s.Sum()
}

func foldInner(v inner) uint64 {
	s := NewStruct(String("inner"))
	s.Field(String("Name"), String(v.Name))
	s.Field(String("Flag"), Bool(v.Flag))
	return s.Sum()
}

func TestSameAsHashstructure(t *testing.T) {
	for _, v := range []sample{
		{},
		{N: -1, I32: -7, U8: 255, F: -0.5, B: true, S: "x", A: [3]int{1, -1, 1 << 40}, L: []int32{3, -4},
			P: &inner{"p", true}, Nested: inner{Name: "n"}, Self: hashed{42}, private: 9},
		{L: []int32{}, F: 1e300, S: "a longer string, with ünïcode"},
	} {
		want, err := hashstructure.Hash(v, hashstructure.FormatV2, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := fold(v); got != want {
			t.Errorf("%+v: fold = %x, hashstructure %x", v, got, want)
		}
	}
}
