package absexpr

import (
	"math"
	"runtime"
	"sync"
	"testing"
)

func TestEqualExpressionsAreOne(t *testing.T) {
	a := Add(Exp(Var("X")), Sum(64, Mul(Var("X"), Var("W"))))
	b := MustParse("add(sum(64, mul(W, X)), exp(X))")
	if a != b || a.Handle() != b.Handle() {
		t.Errorf("%s built twice is two expressions", a)
	}
	if c := Clamp(math.Copysign(0, -1), 6, Var("X")); c == Clamp(0, 6, Var("X")) {
		t.Errorf("%s and clamp(0, 6, X) are one expression; their keys differ", c)
	}
}

// TestInternedAreCollected checks that the table does not keep
// expressions alive: an expression built again after the first was
// collected is a new one.
func TestInternedAreCollected(t *testing.T) {
	build := func() uint64 { return Sqrt(Var("only_in_TestInternedAreCollected")).id }
	first := build()
	runtime.GC()
	if build() == first {
		t.Error("the expression outlived its last reference")
	}
}

// TestConcurrentInterning builds the same expressions, and decides them
// against one index, from several goroutines: each is built once, and the
// decisions agree with one goroutine's.
func TestConcurrentInterning(t *testing.T) {
	const goroutines = 8
	ix := newTargetIndex([]*Expr{rmsNormMatMul, gatedMLP, attention})
	var want []bool
	for _, q := range stressQueries(1, 200) {
		got, _ := ix.decide(q)
		want = append(want, got)
	}
	ix = newTargetIndex([]*Expr{rmsNormMatMul, gatedMLP, attention})
	built := make([][]*Expr, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			built[g] = stressQueries(1, 200)
			for i, q := range built[g] {
				if got, _ := ix.decide(q); got != want[i] {
					t.Errorf("%s: %v, but %v from one goroutine", q, got, want[i])
				}
			}
		})
	}
	wg.Wait()
	for g := range built[1:] {
		for i, q := range built[g+1] {
			if q != built[0][i] {
				t.Fatalf("%s was built twice", q)
			}
		}
	}
}
