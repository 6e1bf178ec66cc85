package search

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/mirage-go/mirage/ugraph"
)

func TestOpKeyOrder(t *testing.T) {
	k := func(kind ugraph.OpKind, in ...int32) opKey { return keyOf(kind, ugraph.Attr{}, in, 0) }
	// Each key must sort strictly before the next.
	ordered := []opKey{
		k(ugraph.OpInput),
		k(ugraph.OpExp, 0),
		k(ugraph.OpMatmul, 0, 1),
		k(ugraph.OpExp, 1),
		k(ugraph.OpMatmul, 1, 0),
		k(ugraph.OpMatmul, 1, 1),
		k(ugraph.OpDiv, 0, 2), // newest operand first: after every op on 0 and 1 only
		k(ugraph.OpMatmul, 0, 2),
		k(ugraph.OpExp, 2),
		keyOf(ugraph.OpReduction, ugraph.Attr{Dim: 0}, []int32{2}, 0),
		keyOf(ugraph.OpReduction, ugraph.Attr{Dim: 1}, []int32{2}, 0),
		keyOf(ugraph.OpCustomized, ugraph.Attr{}, []int32{2}, 7),
		keyOf(ugraph.OpCustomized, ugraph.Attr{}, []int32{2}, 9),
	}
	for i := 1; i < len(ordered); i++ {
		if ordered[i-1].compare(ordered[i]) >= 0 || ordered[i].compare(ordered[i-1]) <= 0 {
			t.Errorf("key %d %+v does not sort before key %d %+v", i-1, ordered[i-1], i, ordered[i])
		}
	}
	if a := k(ugraph.OpAdd, 0, 1); a.compare(a) != 0 {
		t.Error("a key does not equal itself")
	}
}

// TestCanonicalOrderIsComplete checks the claim of opKey on a graph Mirage's
// lexicographic order misses: div(x, exp(y)) with x before y. Of the two
// topological orders of {e = exp(y), d = div(x, e)} exactly one has
// increasing keys.
func TestCanonicalOrderIsComplete(t *testing.T) {
	in := k0(ugraph.OpInput)
	exp := keyOf(ugraph.OpExp, ugraph.Attr{}, []int32{1}, 0)    // e = tensor 2
	div := keyOf(ugraph.OpDiv, ugraph.Attr{}, []int32{0, 2}, 0) // d reads x and e
	if !(in.compare(exp) < 0 && exp.compare(div) < 0) {
		t.Fatal("exp then div is not in canonical order")
	}
	// Mirage's lexicographic comparison of operand lists alone would put
	// div (0, 2) before exp (1): the only topological order is rejected.
	if !lexLess([]int32{0, 2}, []int32{1}) {
		t.Fatal("test premise: (0, 2) < (1) lexicographically")
	}
}

func k0(kind ugraph.OpKind) opKey { return keyOf(kind, ugraph.Attr{}, nil, 0) }

func lexLess(a, b []int32) bool {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return len(a) < len(b)
}

// TestStatesAreReachedOnce: the enumeration, cut into tasks that two
// workers run, reaches no list of ops twice, below customized ops as
// above them. descend relies on it: it keeps no set of the states seen.
func TestStatesAreReachedOnce(t *testing.T) {
	p := load(t, "gated_mlp.py")
	cfg := writtenConfig(t, p)
	cfg.Complete(p.Graph)
	s, err := newSearcherFor(t.Context(), p.Graph, cfg, Options{Workers: 2, Estimate: testEstimate}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	var mu sync.Mutex
	reached := map[string]int{}
	fused := 0
	s.visit = func(keys []opKey) {
		print := fmt.Sprint(keys)
		mu.Lock()
		defer mu.Unlock()
		reached[print]++
		if slices.ContainsFunc(keys, func(k opKey) bool { return k.kind == ugraph.OpCustomized }) {
			fused++
		}
	}
	s.enumerate()
	twice := 0
	for print, n := range reached {
		if n > 1 {
			if twice++; twice <= 3 {
				t.Errorf("reached %d times: %s", n, print)
			}
		}
	}
	if twice > 0 {
		t.Errorf("%d of %d states reached more than once", twice, len(reached))
	}
	if fused < 100 {
		t.Errorf("%d of %d states hold a customized op: the case does not test the tasks", fused, len(reached))
	}
}
