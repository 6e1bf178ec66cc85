package interp_test

import (
	"testing"

	"github.com/mirage-go/mirage/interp"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// must unwraps a builder result in test set-up, where an error is a bug in
// the test itself.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func check(err error) {
	if err != nil {
		panic(err)
	}
}

// ten returns a tensor of the given dims holding data.
func ten(dims []int, data ...float64) *interp.Tensor {
	return must(interp.FromSlice(ugraph.MustShape(dims...), data))
}

// dims is shorthand for a dims list in tables.
func dims(d ...int) []int { return d }

const dt = ugraph.Float32

// addInputs adds one kernel input per tensor, of its shape.
func addInputs(g *kernel.Graph, ts []*interp.Tensor) []kernel.TensorID {
	ids := make([]kernel.TensorID, len(ts))
	for i, t := range ts {
		ids[i] = must(g.AddInput(t.Shape, dt))
	}
	return ids
}

// run evaluates g on ins and fails the test on an error.
func run(t *testing.T, g *kernel.Graph, ins []*interp.Tensor) []*interp.Tensor {
	t.Helper()
	outs, err := interp.Run(g, ins)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return outs
}

// expectClose fails unless got equals want within tol (NaN matching NaN).
func expectClose(t *testing.T, want, got *interp.Tensor, tol float64) {
	t.Helper()
	d, err := interp.Compare(want, got)
	if err != nil {
		t.Fatal(err)
	}
	if d.MaxRelErr > tol {
		t.Errorf("got %v, want %v: %v", got, want, d)
	}
}

// blockKernel wraps a block graph b whose input ops read tensors of the
// shapes of ins into a kernel graph with one output per output op of b.
func blockKernel(b *block.Graph, ins []*interp.Tensor) *kernel.Graph {
	g := kernel.New()
	for _, o := range must(g.Customized(addInputs(g, ins), b)) {
		check(g.MarkOutput(o))
	}
	return g
}
