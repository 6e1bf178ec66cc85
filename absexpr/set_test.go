package absexpr

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSets checks the interned sets against maps: their elements, union,
// inclusion, and that equal sets are one *set however they were built.
func TestSets(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	var tab setTable
	type pair struct {
		s *set
		m map[uint32]bool
	}
	elements := func(s *set) []uint32 {
		var es []uint32
		s.each(func(k uint32) { es = append(es, k) })
		return es
	}
	check := func(what string, p pair) {
		t.Helper()
		want := slices.Sorted(maps.Keys(p.m))
		if got := elements(p.s); !slices.Equal(got, want) {
			t.Fatalf("%s: elements %v, want %v", what, got, want)
		}
	}
	// Elements from a small range, so that sets overlap; and some far
	// apart, so that tries branch at high bits.
	elem := func() uint32 {
		if r.IntN(8) == 0 {
			return r.Uint32()
		}
		return uint32(r.IntN(64))
	}
	pool := []pair{{nil, map[uint32]bool{}}}
	for range 2000 {
		a, b := pool[r.IntN(len(pool))], pool[r.IntN(len(pool))]
		var c pair
		if r.IntN(2) == 0 {
			k := elem()
			c = pair{tab.insert(a.s, k), maps.Clone(a.m)}
			c.m[k] = true
			check("insert", c)
		} else {
			c = pair{tab.union(a.s, b.s), maps.Clone(a.m)}
			maps.Copy(c.m, b.m)
			check("union", c)
		}
		for _, k := range []uint32{elem(), elem()} {
			if c.s.has(k) != c.m[k] {
				t.Fatalf("has(%d) = %v in %v", k, c.s.has(k), elements(c.s))
			}
		}
		for _, d := range pool[max(0, len(pool)-20):] {
			if got, want := subset(d.s, c.s), isSubset(d.m, c.m); got != want {
				t.Fatalf("subset(%v, %v) = %v, want %v", elements(d.s), elements(c.s), got, want)
			}
			if got, want := d.s == c.s, maps.Equal(d.m, c.m); got != want {
				t.Fatalf("%v and %v: same set %v, want %v", elements(d.s), elements(c.s), got, want)
			}
		}
		pool = append(pool, c)
	}
}

func isSubset(a, b map[uint32]bool) bool {
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}
