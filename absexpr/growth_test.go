package absexpr

import (
	"path/filepath"
	"runtime"
	"testing"

	"github.com/mirage-go/mirage/frontend"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// elementwiseChain is a program of n element-wise ops over inputs X and Y,
// cycling through exp, add, mul, silu and div; each binary op combines the
// newest value with the one before it, so every value is an operand of the
// next two ops and, written out as a tree, its expression doubles in size
// every few ops.
func elementwiseChain(n int) *kernel.Graph {
	g := kernel.New()
	s := ugraph.MustShape(8, 64)
	prev := must(g.AddInput(s, ugraph.Float16))
	cur := must(g.AddInput(s, ugraph.Float16))
	kinds := []ugraph.OpKind{ugraph.OpExp, ugraph.OpAdd, ugraph.OpMul, ugraph.OpSilu, ugraph.OpDiv}
	for i := range n {
		k := kinds[i%len(kinds)]
		var next kernel.TensorID
		if k.Info().Arity == 1 {
			next = must(g.Add(k, ugraph.Attr{}, cur))
		} else {
			next = must(g.Add(k, ugraph.Attr{}, cur, prev))
		}
		prev, cur = cur, next
	}
	try(g.MarkOutput(cur))
	return g
}

// stackedMLP is n gated MLP layers, x' = (silu(x·W1) * (x·W2))·W3: each
// layer reads its input twice.
func stackedMLP(n int) *kernel.Graph {
	g := kernel.New()
	s := ugraph.MustShape(64, 64)
	x := must(g.AddInput(ugraph.MustShape(8, 64), ugraph.Float16))
	for range n {
		w1 := must(g.AddInput(s, ugraph.Float16))
		w2 := must(g.AddInput(s, ugraph.Float16))
		w3 := must(g.AddInput(s, ugraph.Float16))
		h1 := must(g.Add(ugraph.OpSilu, ugraph.Attr{}, must(g.Add(ugraph.OpMatmul, ugraph.Attr{}, x, w1))))
		h2 := must(g.Add(ugraph.OpMatmul, ugraph.Attr{}, x, w2))
		x = must(g.Add(ugraph.OpMatmul, ugraph.Attr{}, must(g.Add(ugraph.OpMul, ugraph.Attr{}, h1, h2)), w3))
	}
	try(g.MarkOutput(x))
	return g
}

// cost is the memory a piece of work allocated.
type cost struct{ bytes, allocs uint64 }

// judgeProgram does the Go side of what the search does with a program
// before it starts, and a few of its queries: derive the expressions, index
// the targets (structure, normal forms, signatures), and decide queries
// that are and are not subexpressions (by normal forms, or by signatures
// where those leave them to Z3). It reports the allocations.
func judgeProgram(t *testing.T, g *kernel.Graph) cost {
	t.Helper()
	runtime.GC() // so that expressions built for earlier programs are gone
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)

	exprs := must(ForKernel(g))
	targets := must(Targets(g))
	ix := newTargetIndex(targets)
	out, mid := targets[0], exprs[len(exprs)/2]
	in0, in1 := Var(InputName(0)), Var(InputName(1))
	for i, tt := range []struct {
		q    *Expr
		want bool
	}{
		{out, true},
		{mid, true},
		{Exp(out), false},
		{Add(out, in0), false},
		{Silu(Mul(mid, in1)), false},
		{Div(in0, Sum(8, in1)), false},
	} {
		if got, decided := ix.decide(tt.q); decided && got != tt.want {
			t.Errorf("query %d: decide = %v, want %v", i, got, tt.want)
		}
	}

	runtime.ReadMemStats(&after)
	return cost{after.TotalAlloc - before.TotalAlloc, after.Mallocs - before.Mallocs}
}

// TestCostGrowsLinearly checks that deriving and judging expressions costs
// memory in proportion to a program's size, not to its expressions written
// out as trees, which double with every op that reads a value twice. Sizes
// grow step by step, and the test stops at the first step that costs more
// than twice as much as linear growth would, before the sizes that would
// exhaust memory if the cost were exponential.
func TestCostGrowsLinearly(t *testing.T) {
	for _, tt := range []struct {
		name  string
		build func(n int) *kernel.Graph
		sizes []int
		base  int // the size that the last is compared with
	}{
		{"elementwise chain", elementwiseChain, []int{10, 20, 50, 100, 200, 400, 600}, 50},
		{"stacked MLP", stackedMLP, []int{2, 4, 8, 16, 24}, 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			costs := map[int]cost{}
			for i, n := range tt.sizes {
				costs[n] = judgeProgram(t, tt.build(n))
				t.Logf("n = %d: %d bytes in %d allocations", n, costs[n].bytes, costs[n].allocs)
				if i == 0 {
					continue
				}
				prev := tt.sizes[i-1]
				limit := 2 * float64(n) / float64(prev)
				if r := ratio(costs[n], costs[prev]); r > limit {
					t.Fatalf("n = %d costs %.1f times as much as n = %d, want at most %.1f", n, r, prev, limit)
				}
			}
			n := tt.sizes[len(tt.sizes)-1]
			limit := 1.6 * float64(n) / float64(tt.base)
			if r := ratio(costs[n], costs[tt.base]); r > limit {
				t.Errorf("n = %d costs %.1f times as much as n = %d, want at most %.1f", n, r, tt.base, limit)
			}
		})
	}
}

// ratio is the larger of a's bytes and allocations over b's.
func ratio(a, b cost) float64 {
	return max(float64(a.bytes)/float64(b.bytes), float64(a.allocs)/float64(b.allocs))
}

// TestOracleForLongChain makes an oracle, Z3 prover included, for a
// program whose output written out as a tree would not fit in memory.
func TestOracleForLongChain(t *testing.T) {
	requireZ3(t)
	g := elementwiseChain(600)
	o := must(NewOracle(must(Targets(g)), Options{}))
	defer o.Close()
	exprs := must(ForKernel(g))
	for _, tt := range []struct {
		q    *Expr
		want bool
	}{
		{exprs[len(exprs)/2], true},
		{Silu(Add(exprs[len(exprs)/2], Var(InputName(1)))), false},
	} {
		if got, err := o.IsSubexpr(tt.q); err != nil || got != tt.want {
			t.Errorf("IsSubexpr(%s) = %v, %v; want %v", tt.q.abbrev(), got, err, tt.want)
		}
	}
}

// TestLongPrograms derives the expressions of the programs in testdata
// that one measures superopt's start on (see their comments), and checks
// that they are the programs the tests above build.
func TestLongPrograms(t *testing.T) {
	for _, tt := range []struct {
		file string
		g    *kernel.Graph
	}{
		{"chain50.py", elementwiseChain(50)},
		{"chain600.py", elementwiseChain(600)},
		{"mlp24.py", stackedMLP(24)},
	} {
		prog, err := frontend.LoadFile(filepath.Join("testdata", tt.file), frontend.Options{})
		if err != nil {
			t.Fatal(err)
		}
		got, want := must(Targets(prog.Graph)), must(Targets(tt.g))
		if len(got) != 1 || got[0] != want[0] {
			t.Errorf("%s: its target is not the one the tests build", tt.file)
		}
	}
}
