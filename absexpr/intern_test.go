package absexpr

import (
	"math"
	"runtime"
	"sync"
	"testing"
	"time"
)

func TestEqualExpressionsAreOne(t *testing.T) {
	a := Add(Exp(Var("X")), Sum(64, Mul(Var("X"), Var("W"))))
	b := MustParse("add(sum(64, mul(W, X)), exp(X))")
	if a != b || a.ID() != b.ID() {
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

// TestBuildingAgainAllocatesNothing checks that a constructor finds an
// expression built before without allocating: the search builds each of
// millions of expressions many times, and garbage was a fifth of its time.
func TestBuildingAgainAllocatesNothing(t *testing.T) {
	x, w := Var("X"), Var("W")
	keep := []*Expr{Div(Exp(x), Sum(64, Exp(x))), Mul(x, w), Clamp(0, 6, x), Rms(64, x), Pow(x, w)}
	for name, build := range map[string]func() *Expr{
		"div":   func() *Expr { return Div(Exp(x), Sum(64, Exp(x))) },
		"clamp": func() *Expr { return Clamp(0, 6, x) },
		"rms":   func() *Expr { return Rms(64, x) },
		"pow":   func() *Expr { return Pow(x, w) },
	} {
		if n := testing.AllocsPerRun(100, func() { _ = build() }); n != 0 {
			t.Errorf("%s built again: %v allocations", name, n)
		}
	}
	runtime.KeepAlive(keep)
}

// TestCollectedTableShrinks checks that the table gives back its room
// once the expressions of a large search are collected: a map keeps the
// room of its most entries, and a search builds millions.
func TestCollectedTableShrinks(t *testing.T) {
	const n = 300_000 // about 4,700 per shard, past minShrink
	x := Var("only_in_TestCollectedTableShrinks")
	built := make([]*Expr, 0, n)
	for i := range n {
		built = append(built, Sum(i+2, x))
	}
	peaked := largeShards()
	if peaked == 0 {
		t.Fatalf("no shard reached %d entries with %d expressions", minShrink, n)
	}
	runtime.KeepAlive(built)
	built = nil
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
		large := largeShards()
		if large == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d shards still keep the room of %d entries or more", large, peaked, minShrink)
		}
	}
}

// largeShards counts the shards whose maps keep the room of minShrink
// entries or more.
func largeShards() int {
	n := 0
	for i := range interned {
		sh := &interned[i]
		sh.RLock()
		if sh.peak >= minShrink {
			n++
		}
		sh.RUnlock()
	}
	return n
}
