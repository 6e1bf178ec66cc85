package cost

import (
	"math"
	"testing"

	"github.com/mirage-go/mirage/frontend"
	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

const fp16 = ugraph.Float16

func sh(dims ...int) ugraph.Shape { return ugraph.MustShape(dims...) }

func mustArch(t *testing.T, name string) target.Arch {
	t.Helper()
	a, err := target.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func loadExample(t *testing.T, file string) *kernel.Graph {
	t.Helper()
	p, err := frontend.LoadFile("../examples/"+file, frontend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p.Graph
}

// loadSource loads a program written in the test.
func loadSource(t *testing.T, name, src string) *kernel.Graph {
	t.Helper()
	p, err := frontend.Load(name, []byte(src), frontend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p.Graph
}

func estimate(t *testing.T, g *kernel.Graph, arch target.Arch) Estimate {
	t.Helper()
	e, err := EstimateGraph(g, arch)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// check fails the test on a builder error: the graphs here are valid.
func check[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// within reports whether got is within frac of want.
func within(got, want, frac float64) bool { return math.Abs(got-want) <= frac*math.Abs(want) }

// hbmMicros is the time to move bytes at the achievable HBM bandwidth.
func hbmMicros(arch target.Arch, bytes int64) float64 {
	return float64(bytes) / (arch.MemBandwidth * memEfficiency) * 1e6
}

// tensorMicros is the time of flops at the achievable tensor-core rate.
func tensorMicros(arch target.Arch, flops int64) float64 {
	return float64(flops) / (arch.TensorFLOPS * tensorEfficiency) * 1e6
}

// matmulKernel is the kernel graph of one m×k by k×n fp16 matmul: a
// pre-defined op when tile is zero, else a customized op whose blocks each
// compute a tile[0]×tile[1] output tile, walking k in steps of 64.
func matmulKernel(t *testing.T, m, n, k int, tile [2]int) *kernel.Graph {
	t.Helper()
	g := kernel.New()
	a := check[kernel.TensorID](t)(g.AddInput(sh(m, k), fp16))
	b := check[kernel.TensorID](t)(g.AddInput(sh(k, n), fp16))
	var out kernel.TensorID
	if tile == [2]int{} {
		out = check[kernel.TensorID](t)(g.Add(ugraph.OpMatmul, ugraph.Attr{}, a, b))
	} else {
		bm, bn := tile[0], tile[1]
		tb := check[*block.Graph](t)(block.New(block.Dim3{n / bn, m / bm, 1}, block.Dim3{256, 1, 1}, k/64, 64))
		ta := check[block.TensorID](t)(tb.AddInput(sh(m, k), fp16, block.Map{-1, 0, -1}, 1))
		tB := check[block.TensorID](t)(tb.AddInput(sh(k, n), fp16, block.Map{1, -1, -1}, 0))
		mm := check[block.TensorID](t)(tb.Add(ugraph.OpMatmul, ugraph.Attr{}, ta, tB))
		acc := check[block.TensorID](t)(tb.Add(ugraph.OpForloopAccum, ugraph.Attr{}, mm))
		if err := tb.AddOutput(acc, block.Map{1, 0, -1}); err != nil {
			t.Fatal(err)
		}
		out = check[[]kernel.TensorID](t)(g.Customized([]kernel.TensorID{a, b}, tb))[0]
	}
	if err := g.MarkOutput(out); err != nil {
		t.Fatal(err)
	}
	return g
}
