package interp_test

import (
	"math"
	"slices"
	"testing"

	"github.com/mirage-go/mirage/interp"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

func TestCompare(t *testing.T) {
	inf := math.Inf(1)
	for _, c := range []struct {
		name      string
		want, got *interp.Tensor
		err       float64
		index     []int
	}{
		{"equal", ten(dims(2), 1, -2), ten(dims(2), 1, -2), 0, nil},
		{"relative to the larger", ten(dims(2), 1, 2), ten(dims(2), 1, 2.5), 0.5 / 2.5, []int{1}},
		{"worst of several", ten(dims(2, 2), 1, 1, 1, 1), ten(dims(2, 2), 1.1, 1, 1, 2), 0.5, []int{1, 1}},
		{"first of equal errors", ten(dims(3), 1, 1, 1), ten(dims(3), 1, 2, 2), 0.5, []int{1}},
		// 1e-9 off 1e-9 is 50% off itself, but tiny next to the tensor's
		// largest entry: the floor 1e-6·1000 = 1e-3 is the denominator.
		{"floor", ten(dims(2), 1000, 1e-9), ten(dims(2), 1000, 2e-9), 1e-9 / 1e-3, []int{1}},
		{"zero tensor", ten(dims(2), 0, 0), ten(dims(2), 0, 1e-300), 1, []int{1}},
		{"NaN on both sides", ten(dims(2), nan, 1), ten(dims(2), nan, 1), 0, nil},
		{"NaN in want only", ten(dims(2), nan, 1), ten(dims(2), 0, 1), inf, []int{0}},
		{"NaN in got only", ten(dims(2), 1, 1), ten(dims(2), 1, nan), inf, []int{1}},
		{"same infinity", ten(dims(2), inf, 1), ten(dims(2), inf, 1), 0, nil},
		{"opposite infinities", ten(dims(2), inf, 1), ten(dims(2), -inf, 1), inf, []int{0}},
		{"infinity and finite", ten(dims(2), 1, 1), ten(dims(2), 1, inf), inf, []int{1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := interp.Compare(c.want, c.got)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(d.MaxRelErr-c.err) > 1e-12*c.err && d.MaxRelErr != c.err {
				t.Errorf("MaxRelErr = %g, want %g", d.MaxRelErr, c.err)
			}
			if !slices.Equal(d.Index, c.index) {
				t.Errorf("Index = %v, want %v", d.Index, c.index)
			}
			if c.index != nil {
				if w, g := c.want.At(c.index...), c.got.At(c.index...); !same(d.Want, w) || !same(d.Got, g) {
					t.Errorf("Want, Got = %g, %g; want %g, %g", d.Want, d.Got, w, g)
				}
			}
		})
	}
}

// Compared counts the positions where want is finite: where it is none,
// a comparison checks nothing.
func TestCompareCountsTheFinitePositions(t *testing.T) {
	inf := math.Inf(1)
	for _, c := range []struct {
		want, got *interp.Tensor
		compared  int
	}{
		{ten(dims(3), 1, 2, 3), ten(dims(3), 1, 2, 3), 3},
		{ten(dims(3), nan, 2, inf), ten(dims(3), nan, 2, inf), 1},
		{ten(dims(2), nan, -inf), ten(dims(2), nan, -inf), 0},
		{ten(dims(2), 1, 2), ten(dims(2), nan, 2), 2},
	} {
		d, err := interp.Compare(c.want, c.got)
		if err != nil {
			t.Fatal(err)
		}
		if d.Compared != c.compared {
			t.Errorf("Compare(%v, %v).Compared = %d, want %d", c.want.Data, c.got.Data, d.Compared, c.compared)
		}
	}
}

func TestCompareErrors(t *testing.T) {
	if _, err := interp.Compare(ten(dims(2, 3), seq(6)...), ten(dims(3, 2), seq(6)...)); err == nil {
		t.Error("shapes [2, 3] and [3, 2]: no error")
	}
	if _, err := interp.Compare(ten(dims(2), 1, 2), &interp.Tensor{Shape: ugraph.MustShape(3), Data: []float64{1}}); err == nil {
		t.Error("Data shorter than its shape: no error")
	}
	if _, err := interp.CompareAll([]*interp.Tensor{ten(dims(1), 1)}, nil); err == nil {
		t.Error("CompareAll with 1 and 0 outputs: no error")
	}
}

func TestCompareAll(t *testing.T) {
	want := []*interp.Tensor{ten(dims(1), 1), ten(dims(2), 1, 2), ten(dims(1), 4)}
	got := []*interp.Tensor{ten(dims(1), 1.1), ten(dims(2), 1, 4), ten(dims(1), 4)}
	d, err := interp.CompareAll(want, got)
	if err != nil {
		t.Fatal(err)
	}
	if d.Output != 1 || d.MaxRelErr != 0.5 || !slices.Equal(d.Index, []int{1}) {
		t.Errorf("CompareAll = %+v, want output 1 at [1] with error 0.5", d)
	}
}

func TestRandomInputs(t *testing.T) {
	g := kernel.New()
	must(g.AddInput(ugraph.MustShape(3, 5), dt))
	must(g.AddInput(ugraph.MustShape(7), dt))
	a, b := interp.RandomInputs(g, 1), interp.RandomInputs(g, 1)
	if len(a) != 2 || a[0].Shape != ugraph.MustShape(3, 5) || a[1].Shape != ugraph.MustShape(7) {
		t.Fatalf("RandomInputs = %v, want tensors of shapes [3, 5] and [7]", a)
	}
	for k := range a {
		if !slices.Equal(a[k].Data, b[k].Data) {
			t.Errorf("input %d differs between two draws with seed 1", k)
		}
		for _, v := range a[k].Data {
			if v < -1 || v >= 1 {
				t.Errorf("input %d: %g is outside [-1, 1)", k, v)
			}
		}
	}
	if c := interp.RandomInputs(g, 2); slices.Equal(a[0].Data, c[0].Data) {
		t.Error("seeds 1 and 2 draw the same tensor")
	}
	for _, x := range interp.RandomInputsIn(g, 1, 0.5, 2)[0].Data {
		if x < 0.5 || x >= 2 {
			t.Errorf("RandomInputsIn(0.5, 2): %g is outside [0.5, 2)", x)
		}
	}
}

func TestRunErrors(t *testing.T) {
	newGraph := func() *kernel.Graph {
		g := kernel.New()
		x := must(g.AddInput(ugraph.MustShape(2, 4), dt))
		b := must(block.New(block.Dim3{2, 1, 1}, block.Dim3{128, 1, 1}, 2, 1))
		tx := must(b.AddInput(ugraph.MustShape(2, 4), dt, block.Map{0, -1, -1}, 1))
		check(b.AddOutput(must(b.Add(ugraph.OpForloopAccum, ugraph.Attr{}, tx)), block.Map{0, -1, -1}))
		check(g.MarkOutput(must(g.Customized([]kernel.TensorID{x}, b))[0]))
		return g
	}
	good := []*interp.Tensor{ten(dims(2, 4), seq(8)...)}
	if _, err := interp.Run(newGraph(), good); err != nil {
		t.Fatalf("the unaltered graph: %v", err)
	}
	for _, c := range []struct {
		name   string
		alter  func(g *kernel.Graph)
		inputs []*interp.Tensor
	}{
		{"no inputs", nil, nil},
		{"input of another shape", nil, []*interp.Tensor{ten(dims(4, 2), seq(8)...)}},
		{"nil input", nil, []*interp.Tensor{nil}},
		{"input Data too short", nil, []*interp.Tensor{{Shape: ugraph.MustShape(2, 4), Data: seq(7)}}},
		{"kernel tensor shape", func(g *kernel.Graph) { g.Tensors[1].Shape = ugraph.MustShape(2, 4) }, good},
		{"tile shape", func(g *kernel.Graph) { g.Ops[1].Block.Tensors[0].Shape = ugraph.MustShape(2, 2) }, good},
		{"PostLoop mark", func(g *kernel.Graph) { g.Ops[1].Block.Tensors[0].PostLoop = true }, good},
		{"input map", func(g *kernel.Graph) { g.Ops[1].Block.Ops[0].Input.IMap = block.Map{1, -1, -1} }, good},
		{"grid", func(g *kernel.Graph) { g.Ops[1].Block.Grid = block.Dim3{4, 1, 1} }, good},
		{"no block graph", func(g *kernel.Graph) { g.Ops[1].Block = nil }, good},
		{"output out of range", func(g *kernel.Graph) { g.Outputs[0] = 7 }, good},
		{"customized at block level", func(g *kernel.Graph) { g.Ops[1].Block.Ops[1].Kind = ugraph.OpCustomized }, good},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := newGraph()
			if c.alter != nil {
				c.alter(g)
			}
			if _, err := interp.Run(g, c.inputs); err == nil {
				t.Error("no error")
			} else {
				t.Log(err)
			}
		})
	}
}

// Run neither changes its inputs nor returns them: an input marked as an
// output comes back as a copy.
func TestRunLeavesInputsAlone(t *testing.T) {
	g := kernel.New()
	x := must(g.AddInput(ugraph.MustShape(2), dt))
	check(g.MarkOutput(x))
	check(g.MarkOutput(must(g.Add(ugraph.OpExp, ugraph.Attr{}, x))))
	in := ten(dims(2), 0, 1)
	outs := run(t, g, []*interp.Tensor{in})
	outs[0].Data[0] = 42
	if in.Data[0] != 0 || in.Data[1] != 1 {
		t.Errorf("input changed to %v", in)
	}
	expectClose(t, ten(dims(2), 1, math.E), outs[1], 1e-15)
}

// same reports whether x and y are equal or both NaN.
func same(x, y float64) bool { return x == y || math.IsNaN(x) && math.IsNaN(y) }
