package absexpr

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// must unwraps a builder result in test set-up, where an error is a bug in
// the test.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// try is must for builder calls that return only an error.
func try(err error) {
	if err != nil {
		panic(err)
	}
}

func shapes(dims ...[]int) []ugraph.Shape {
	s := make([]ugraph.Shape, len(dims))
	for i, d := range dims {
		s[i] = ugraph.MustShape(d...)
	}
	return s
}

func TestForOp(t *testing.T) {
	x, y := Var("x"), Var("y")
	loop := Loop{Range: 8, ReductionDimx: 16}
	tests := []struct {
		kind   ugraph.OpKind
		attr   ugraph.Attr
		args   []*Expr
		shapes []ugraph.Shape
		want   string
		// invariant: the operand is the same tile in every iteration
		invariant bool
	}{
		{ugraph.OpExp, ugraph.Attr{}, []*Expr{x}, shapes([]int{4, 64}), "exp(x)", false},
		{ugraph.OpSquare, ugraph.Attr{}, []*Expr{x}, shapes([]int{4, 64}), "square(x)", false},
		{ugraph.OpSqrt, ugraph.Attr{}, []*Expr{x}, shapes([]int{4, 64}), "sqrt(x)", false},
		{ugraph.OpSilu, ugraph.Attr{}, []*Expr{x}, shapes([]int{4, 64}), "silu(x)", false},
		{ugraph.OpGelu, ugraph.Attr{}, []*Expr{x}, shapes([]int{4, 64}), "gelu(x)", false},
		{ugraph.OpRelu, ugraph.Attr{}, []*Expr{x}, shapes([]int{4, 64}), "relu(x)", false},
		{ugraph.OpLog, ugraph.Attr{}, []*Expr{x}, shapes([]int{4, 64}), "log(x)", false},
		{ugraph.OpClamp, ugraph.Attr{Scalars: [2]float64{0, 6}}, []*Expr{x}, shapes([]int{4, 64}), "clamp(0, 6, x)", false},
		{ugraph.OpMulScalar, ugraph.Attr{Scalars: [2]float64{0.125}}, []*Expr{x}, shapes([]int{4, 64}), "mul(scalar, x)", false},
		{ugraph.OpAdd, ugraph.Attr{}, []*Expr{y, x}, shapes([]int{4, 64}, []int{4, 1}), "add(x, y)", false},
		{ugraph.OpSub, ugraph.Attr{}, []*Expr{x, y}, shapes([]int{4, 64}, []int{4, 64}), "add(mul(scalar, y), x)", false},
		{ugraph.OpMul, ugraph.Attr{}, []*Expr{x, y}, shapes([]int{4, 64}, []int{4, 64}), "mul(x, y)", false},
		{ugraph.OpMul, ugraph.Attr{}, []*Expr{x, x}, shapes([]int{4, 64}, []int{4, 64}), "square(x)", false},
		{ugraph.OpDiv, ugraph.Attr{}, []*Expr{x, y}, shapes([]int{4, 64}, []int{4, 1}), "div(x, y)", false},
		{ugraph.OpPow, ugraph.Attr{}, []*Expr{x, y}, shapes([]int{4, 64}, []int{4, 64}), "pow(x, y)", false},
		{ugraph.OpMatmul, ugraph.Attr{}, []*Expr{x, y}, shapes([]int{2, 16, 64}, []int{2, 64, 32}), "sum(64, mul(x, y))", false},
		{ugraph.OpReduction, ugraph.Attr{Dim: 1}, []*Expr{x}, shapes([]int{4, 64}), "sum(64, x)", false},
		{ugraph.OpReduction, ugraph.Attr{Dim: 0}, []*Expr{x}, shapes([]int{1, 64}), "x", false},
		{ugraph.OpReductionToDimx, ugraph.Attr{Dim: 1}, []*Expr{x}, shapes([]int{4, 64}), "sum(4, x)", false},
		{ugraph.OpReductionToDimx, ugraph.Attr{Dim: 1}, []*Expr{x}, shapes([]int{4, 16}), "x", false},
		{ugraph.OpRMSNorm, ugraph.Attr{Dim: 1}, []*Expr{x}, shapes([]int{4, 64}), "div(x, sqrt(mul(scalar, sum(64, square(x)))))", false},
		{ugraph.OpRMSNorm, ugraph.Attr{Dim: 1}, []*Expr{x}, shapes([]int{2, 4, 64}), "div(x, sqrt(mul(scalar, sum(256, square(x)))))", false},
		{ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumNone}, []*Expr{x}, shapes([]int{4, 64}), "sum(8, x)", false},
		{ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumSum}, []*Expr{x}, shapes([]int{4, 64}), "sum(512, x)", false},
		{ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumMean}, []*Expr{x}, shapes([]int{4, 64}), "mul(scalar, sum(512, x))", false},
		{ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumRMS}, []*Expr{x}, shapes([]int{4, 64}), "sqrt(mul(scalar, sum(512, square(x))))", false},
		{ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumSumToDimx}, []*Expr{x}, shapes([]int{4, 64}), "sum(32, x)", false},
		{ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumMean}, []*Expr{x}, shapes([]int{4, 1}), "mul(scalar, sum(8, x))", false},
		// Eight equal terms: F is a factor, not a sum's size.
		{ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumNone}, []*Expr{x}, shapes([]int{4, 64}), "mul(scalar, x)", true},
		{ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumSum}, []*Expr{x}, shapes([]int{4, 64}), "mul(scalar, sum(64, x))", true},
		{ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumMean}, []*Expr{x}, shapes([]int{4, 64}), "mul(scalar, sum(64, x))", true},
		{ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumMean}, []*Expr{x}, shapes([]int{4, 1}), "x", true},
		{ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumRMS}, []*Expr{x}, shapes([]int{4, 64}), "sqrt(mul(scalar, sum(64, square(x))))", true},
		{ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumSumToDimx}, []*Expr{x}, shapes([]int{4, 64}), "mul(scalar, sum(4, x))", true},
		{ugraph.OpExp, ugraph.Attr{}, []*Expr{x}, shapes([]int{4, 64}), "exp(x)", true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%v/%s/invariant=%v", tt.kind, tt.want, tt.invariant), func(t *testing.T) {
			loop := loop
			loop.Invariant = tt.invariant
			got, err := ForOp(tt.kind, tt.attr, tt.args, tt.shapes, loop)
			if err != nil {
				t.Fatal(err)
			}
			if got.Key() != tt.want {
				t.Errorf("ForOp = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestForOpCoversEveryComputeOp keeps ForOp in step with the IR's op table.
func TestForOpCoversEveryComputeOp(t *testing.T) {
	x := Var("x")
	s := ugraph.MustShape(4, 64)
	for _, k := range append(ugraph.OpKinds(ugraph.LevelKernel), ugraph.OpKinds(ugraph.LevelBlock)...) {
		info := k.Info()
		if info.Class == ugraph.ClassIO || info.Class == ugraph.ClassCustomized {
			continue
		}
		args, ss := []*Expr{x, x}[:info.Arity], []ugraph.Shape{s, s}[:info.Arity]
		_, err := ForOp(k, ugraph.Attr{Dim: 1, Scalars: [2]float64{0, 1}}, args, ss, Loop{Range: 4, ReductionDimx: 16})
		if err != nil && !(k == ugraph.OpConcat && errors.Is(err, ErrNoExpr)) {
			t.Errorf("%v: %v", k, err)
		}
	}
}

func TestForOpErrors(t *testing.T) {
	x := Var("x")
	s := ugraph.MustShape(4, 64)
	for _, tt := range []struct {
		name   string
		kind   ugraph.OpKind
		attr   ugraph.Attr
		args   []*Expr
		shapes []ugraph.Shape
		want   string
	}{
		{"input", ugraph.OpInput, ugraph.Attr{}, nil, nil, "not a compute op"},
		{"customized", ugraph.OpCustomized, ugraph.Attr{}, nil, nil, "not a compute op"},
		{"arity", ugraph.OpAdd, ugraph.Attr{}, []*Expr{x}, []ugraph.Shape{s}, "takes 2 operands"},
		{"concat", ugraph.OpConcat, ugraph.Attr{Dim: 1}, []*Expr{x, x}, []ugraph.Shape{s, s}, "no abstract expression"},
		{"operand without expression", ugraph.OpExp, ugraph.Attr{}, []*Expr{nil}, []ugraph.Shape{s}, "no abstract expression"},
		{"accumulator outside a loop", ugraph.OpForloopAccum, ugraph.Attr{}, []*Expr{x}, []ugraph.Shape{s}, "forloop_range 0"},
		{"reduction dim", ugraph.OpReduction, ugraph.Attr{Dim: 5}, []*Expr{x}, []ugraph.Shape{s}, "over dim 5"},
		{"reversed clamp", ugraph.OpClamp, ugraph.Attr{Scalars: [2]float64{6, 0}}, []*Expr{x}, []ugraph.Shape{s}, "min_val 6 is greater than max_val 0"},
	} {
		_, err := ForOp(tt.kind, tt.attr, tt.args, tt.shapes, Loop{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want it to mention %q", tt.name, err, tt.want)
		}
	}
}

// program is a kernel graph of an example program with an expert μGraph for
// it, both built with the IR's builders (see examples/*.py).
type program struct {
	name   string
	source func() *kernel.Graph
	expert func() *kernel.Graph
	target string // the expression Targets derives for source
	output string // the expression ForKernel derives for expert's output
}

// rmsnormExpert is the expert μGraph of examples/rmsnorm_matmul_mugraph.py.
func rmsnormExpert() *kernel.Graph {
	g := kernel.New()
	x := must(g.AddInput(ugraph.MustShape(16, 4096), ugraph.Float16))
	w := must(g.AddInput(ugraph.MustShape(4096, 6144), ugraph.Float16))
	b := must(block.New(block.Dim3{96, 1, 1}, block.Dim3{128, 1, 1}, 64, 64))
	tx := must(b.AddInput(g.Tensors[x].Shape, ugraph.Float16, block.Replicate, 1))
	tw := must(b.AddInput(g.Tensors[w].Shape, ugraph.Float16, block.Map{1, -1, -1}, 0))
	acc := must(b.Add(ugraph.OpForloopAccum, ugraph.Attr{}, must(b.Add(ugraph.OpMatmul, ugraph.Attr{}, tx, tw))))
	rms := must(b.Add(ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumRMS}, tx))
	try(b.AddOutput(must(b.Add(ugraph.OpDiv, ugraph.Attr{}, acc, rms)), block.Map{1, -1, -1}))
	try(g.MarkOutput(must(g.Customized([]kernel.TensorID{x, w}, b))[0]))
	return g
}

var programs = []program{
	{
		name: "rmsnorm_matmul",
		source: func() *kernel.Graph {
			g := kernel.New()
			x := must(g.AddInput(ugraph.MustShape(16, 4096), ugraph.Float16))
			w := must(g.AddInput(ugraph.MustShape(4096, 6144), ugraph.Float16))
			n := must(g.Add(ugraph.OpRMSNorm, ugraph.Attr{Dim: 1}, x))
			try(g.MarkOutput(must(g.Add(ugraph.OpMatmul, ugraph.Attr{}, n, w))))
			return g
		},
		expert: rmsnormExpert,
		target: "sum(4096, mul(in1, div(in0, sqrt(mul(scalar, sum(4096, square(in0)))))))",
		output: "div(sum(4096, mul(in0, in1)), sqrt(mul(scalar, sum(4096, square(in0)))))",
	},
	{
		// RMSNorm written out with x·x for the square: the same target,
		// so the same expert survives.
		name: "rmsnorm_written_out",
		source: func() *kernel.Graph {
			g := kernel.New()
			x := must(g.AddInput(ugraph.MustShape(16, 4096), ugraph.Float16))
			w := must(g.AddInput(ugraph.MustShape(4096, 6144), ugraph.Float16))
			ss := must(g.Add(ugraph.OpReduction, ugraph.Attr{Dim: 1}, must(g.Add(ugraph.OpMul, ugraph.Attr{}, x, x))))
			ms := must(g.Add(ugraph.OpMulScalar, ugraph.Attr{Scalars: [2]float64{1.0 / 4096}}, ss))
			n := must(g.Add(ugraph.OpDiv, ugraph.Attr{}, x, must(g.Add(ugraph.OpSqrt, ugraph.Attr{}, ms))))
			try(g.MarkOutput(must(g.Add(ugraph.OpMatmul, ugraph.Attr{}, n, w))))
			return g
		},
		expert: rmsnormExpert,
		target: "sum(4096, mul(in1, div(in0, sqrt(mul(scalar, sum(4096, square(in0)))))))",
		output: "div(sum(4096, mul(in0, in1)), sqrt(mul(scalar, sum(4096, square(in0)))))",
	},
	{
		name: "gated_mlp",
		source: func() *kernel.Graph {
			g := kernel.New()
			x := must(g.AddInput(ugraph.MustShape(8, 4096), ugraph.Float16))
			w1 := must(g.AddInput(ugraph.MustShape(4096, 4096), ugraph.Float16))
			w2 := must(g.AddInput(ugraph.MustShape(4096, 4096), ugraph.Float16))
			o1 := must(g.Add(ugraph.OpMatmul, ugraph.Attr{}, x, w1))
			o2 := must(g.Add(ugraph.OpMatmul, ugraph.Attr{}, x, w2))
			o := must(g.Add(ugraph.OpMul, ugraph.Attr{}, must(g.Add(ugraph.OpSilu, ugraph.Attr{}, o1)), o2))
			try(g.MarkOutput(o))
			return g
		},
		expert: func() *kernel.Graph {
			g := kernel.New()
			x := must(g.AddInput(ugraph.MustShape(8, 4096), ugraph.Float16))
			w1 := must(g.AddInput(ugraph.MustShape(4096, 4096), ugraph.Float16))
			w2 := must(g.AddInput(ugraph.MustShape(4096, 4096), ugraph.Float16))
			b := must(block.New(block.Dim3{64, 1, 1}, block.Dim3{128, 1, 1}, 64, 64))
			tx := must(b.AddInput(g.Tensors[x].Shape, ugraph.Float16, block.Replicate, 1))
			tw1 := must(b.AddInput(g.Tensors[w1].Shape, ugraph.Float16, block.Map{1, -1, -1}, 0))
			tw2 := must(b.AddInput(g.Tensors[w2].Shape, ugraph.Float16, block.Map{1, -1, -1}, 0))
			a1 := must(b.Add(ugraph.OpForloopAccum, ugraph.Attr{}, must(b.Add(ugraph.OpMatmul, ugraph.Attr{}, tx, tw1))))
			a2 := must(b.Add(ugraph.OpForloopAccum, ugraph.Attr{}, must(b.Add(ugraph.OpMatmul, ugraph.Attr{}, tx, tw2))))
			o := must(b.Add(ugraph.OpMul, ugraph.Attr{}, must(b.Add(ugraph.OpSilu, ugraph.Attr{}, a1)), a2))
			try(b.AddOutput(o, block.Map{1, -1, -1}))
			try(g.MarkOutput(must(g.Customized([]kernel.TensorID{x, w1, w2}, b))[0]))
			return g
		},
		target: "mul(silu(sum(4096, mul(in0, in1))), sum(4096, mul(in0, in2)))",
		output: "mul(silu(sum(4096, mul(in0, in1))), sum(4096, mul(in0, in2)))",
	},
	{
		// A per-row scale (a quantized model's per-token scale) read by a
		// block input the loop does not walk: the mean of its F equal
		// tiles over a last dim of 1 is the scale itself.
		name: "scaled_matmul",
		source: func() *kernel.Graph {
			g := kernel.New()
			x := must(g.AddInput(ugraph.MustShape(8, 64), ugraph.Float16))
			w := must(g.AddInput(ugraph.MustShape(64, 128), ugraph.Float16))
			s := must(g.AddInput(ugraph.MustShape(8, 1), ugraph.Float16))
			try(g.MarkOutput(must(g.Add(ugraph.OpMul, ugraph.Attr{}, must(g.Add(ugraph.OpMatmul, ugraph.Attr{}, x, w)), s))))
			return g
		},
		expert: func() *kernel.Graph {
			g := kernel.New()
			x := must(g.AddInput(ugraph.MustShape(8, 64), ugraph.Float16))
			w := must(g.AddInput(ugraph.MustShape(64, 128), ugraph.Float16))
			s := must(g.AddInput(ugraph.MustShape(8, 1), ugraph.Float16))
			b := must(block.New(block.Dim3{2, 1, 1}, block.Dim3{128, 1, 1}, 4, 64))
			tx := must(b.AddInput(g.Tensors[x].Shape, ugraph.Float16, block.Replicate, 1))
			tw := must(b.AddInput(g.Tensors[w].Shape, ugraph.Float16, block.Map{1, -1, -1}, 0))
			ts := must(b.AddInput(g.Tensors[s].Shape, ugraph.Float16, block.Replicate, -1))
			acc := must(b.Add(ugraph.OpForloopAccum, ugraph.Attr{}, must(b.Add(ugraph.OpMatmul, ugraph.Attr{}, tx, tw))))
			scale := must(b.Add(ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumMean}, ts))
			try(b.AddOutput(must(b.Add(ugraph.OpMul, ugraph.Attr{}, acc, scale)), block.Map{1, -1, -1}))
			try(g.MarkOutput(must(g.Customized([]kernel.TensorID{x, w, s}, b))[0]))
			return g
		},
		target: "mul(in2, sum(64, mul(in0, in1)))",
		output: "mul(in2, sum(64, mul(in0, in1)))",
	},
	{
		name: "gqa",
		source: func() *kernel.Graph {
			g := kernel.New()
			q := must(g.AddInput(ugraph.MustShape(2, 256, 64), ugraph.Float16))
			k := must(g.AddInput(ugraph.MustShape(2, 64, 4096), ugraph.Float16))
			v := must(g.AddInput(ugraph.MustShape(2, 4096, 64), ugraph.Float16))
			e := must(g.Add(ugraph.OpExp, ugraph.Attr{}, must(g.Add(ugraph.OpMatmul, ugraph.Attr{}, q, k))))
			s := must(g.Add(ugraph.OpReduction, ugraph.Attr{Dim: 2}, e))
			d := must(g.Add(ugraph.OpDiv, ugraph.Attr{}, e, s))
			try(g.MarkOutput(must(g.Add(ugraph.OpMatmul, ugraph.Attr{}, d, v))))
			return g
		},
		// Flash-decoding: kernel 1 makes partial numerators and
		// denominators per 256-key slice, kernel 2 folds and divides.
		expert: func() *kernel.Graph {
			g := kernel.New()
			q := must(g.AddInput(ugraph.MustShape(2, 256, 64), ugraph.Float16))
			k := must(g.AddInput(ugraph.MustShape(2, 64, 4096), ugraph.Float16))
			v := must(g.AddInput(ugraph.MustShape(2, 4096, 64), ugraph.Float16))
			b1 := must(block.New(block.Dim3{2, 16, 1}, block.Dim3{128, 1, 1}, 4, 64))
			tq := must(b1.AddInput(g.Tensors[q].Shape, ugraph.Float16, block.Map{0, -1, -1}, -1))
			tk := must(b1.AddInput(g.Tensors[k].Shape, ugraph.Float16, block.Map{0, 2, -1}, 2))
			tv := must(b1.AddInput(g.Tensors[v].Shape, ugraph.Float16, block.Map{0, 1, -1}, 1))
			te := must(b1.Add(ugraph.OpExp, ugraph.Attr{}, must(b1.Add(ugraph.OpMatmul, ugraph.Attr{}, tq, tk))))
			ts := must(b1.Add(ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumSum}, te))
			to := must(b1.Add(ugraph.OpForloopAccum, ugraph.Attr{}, must(b1.Add(ugraph.OpMatmul, ugraph.Attr{}, te, tv))))
			try(b1.AddOutput(to, block.Map{0, 2, -1}))
			try(b1.AddOutput(ts, block.Map{0, 2, -1}))
			parts := must(g.Customized([]kernel.TensorID{q, k, v}, b1))

			b2 := must(block.New(block.Dim3{2, 4, 1}, block.Dim3{128, 1, 1}, 1, 64))
			top := must(b2.AddInput(g.Tensors[parts[0]].Shape, ugraph.Float16, block.Map{0, 1, -1}, -1))
			tsp := must(b2.AddInput(g.Tensors[parts[1]].Shape, ugraph.Float16, block.Map{0, 1, -1}, -1))
			tos := must(b2.Add(ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumSumToDimx}, top))
			tss := must(b2.Add(ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumSum}, tsp))
			try(b2.AddOutput(must(b2.Add(ugraph.OpDiv, ugraph.Attr{}, tos, tss)), block.Map{0, 1, -1}))
			try(g.MarkOutput(must(g.Customized([]kernel.TensorID{parts[0], parts[1]}, b2))[0]))
			return g
		},
		target: "sum(4096, mul(in2, div(exp(sum(64, mul(in0, in1))), sum(4096, exp(sum(64, mul(in0, in1)))))))",
		output: "div(sum(4096, mul(in2, exp(sum(64, mul(in0, in1))))), sum(4096, exp(sum(64, mul(in0, in1)))))",
	},
}

func TestDerivation(t *testing.T) {
	for _, p := range programs {
		t.Run(p.name, func(t *testing.T) {
			targets, err := Targets(p.source())
			if err != nil {
				t.Fatal(err)
			}
			if len(targets) != 1 || targets[0].Key() != MustParse(p.target).Key() {
				t.Errorf("Targets = %v, want [%s]", targets, p.target)
			}
			g := p.expert()
			exprs, err := ForKernel(g)
			if err != nil {
				t.Fatal(err)
			}
			if got := exprs[g.Outputs[0]]; got.Key() != MustParse(p.output).Key() {
				t.Errorf("the expert μGraph's output is %s, want %s", got, p.output)
			}
		})
	}
}

// TestExpertGraphsSurvivePruning is the property pruning must keep: every
// tensor and tile of a correct μGraph is a subexpression of the program's
// outputs, so the search never prunes its way past the expert's solution.
func TestExpertGraphsSurvivePruning(t *testing.T) {
	requireZ3(t)
	for _, p := range programs {
		t.Run(p.name, func(t *testing.T) {
			targets := must(Targets(p.source()))
			o := must(NewOracle(targets, Options{}))
			defer o.Close()
			g := p.expert()
			check := func(where string, e *Expr) {
				if e == nil {
					t.Errorf("%s has no expression", where)
					return
				}
				if ok, err := o.IsSubexpr(e); err != nil || !ok {
					t.Errorf("%s = %s: IsSubexpr = %v, %v; want true", where, e, ok, err)
				}
			}
			exprs := must(ForKernel(g))
			for i, e := range exprs {
				check(fmt.Sprintf("tensor %d", i), e)
			}
			for k, op := range g.Ops {
				if op.Kind != ugraph.OpCustomized {
					continue
				}
				ins := make([]*Expr, len(op.In))
				for j, id := range op.In {
					ins[j] = exprs[id]
				}
				tiles, _, err := ForBlock(op.Block, ins)
				if err != nil {
					t.Fatal(err)
				}
				for i, e := range tiles {
					check(fmt.Sprintf("tile %d of kernel op %d", i, k), e)
				}
			}
			t.Logf("%+v", o.Stats())
		})
	}
}

// TestWrongGraphsArePruned builds μGraphs that compute something else and
// checks that the oracle rejects the tile where they go wrong.
func TestWrongGraphsArePruned(t *testing.T) {
	requireZ3(t)
	mlp := programs[1]
	o := must(NewOracle(must(Targets(mlp.source())), Options{}))
	defer o.Close()
	g := kernel.New()
	x := must(g.AddInput(ugraph.MustShape(8, 4096), ugraph.Float16))
	w1 := must(g.AddInput(ugraph.MustShape(4096, 4096), ugraph.Float16))
	w2 := must(g.AddInput(ugraph.MustShape(4096, 4096), ugraph.Float16))
	b := must(block.New(block.Dim3{64, 1, 1}, block.Dim3{128, 1, 1}, 64, 64))
	tx := must(b.AddInput(g.Tensors[x].Shape, ugraph.Float16, block.Replicate, 1))
	tw1 := must(b.AddInput(g.Tensors[w1].Shape, ugraph.Float16, block.Map{1, -1, -1}, 0))
	tw2 := must(b.AddInput(g.Tensors[w2].Shape, ugraph.Float16, block.Map{1, -1, -1}, 0))
	inputs := []*Expr{Var(InputName(0)), Var(InputName(1)), Var(InputName(2))}
	// silu inside the loop, on each partial product, before the sum.
	early := must(b.Add(ugraph.OpSilu, ugraph.Attr{}, must(b.Add(ugraph.OpMatmul, ugraph.Attr{}, tx, tw1))))
	tiles, _, err := ForBlock(b, inputs)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := o.IsSubexpr(tiles[early]); err != nil || ok {
		t.Errorf("silu of a per-iteration tile %s: IsSubexpr = %v, %v; want false", tiles[early], ok, err)
	}
	// Multiplying the two weights is nothing the program does.
	wrong := must(b.Add(ugraph.OpMul, ugraph.Attr{}, tw1, tw2))
	tiles, _, err = ForBlock(b, inputs)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := o.IsSubexpr(tiles[wrong]); err != nil || ok {
		t.Errorf("%s: IsSubexpr = %v, %v; want false", tiles[wrong], ok, err)
	}
}

func TestConcatHasNoExpression(t *testing.T) {
	g := kernel.New()
	x := must(g.AddInput(ugraph.MustShape(16, 64), ugraph.Float16))
	b := must(block.New(block.Dim3{1, 1, 1}, block.Dim3{128, 1, 1}, 1, 64))
	tx := must(b.AddInput(g.Tensors[x].Shape, ugraph.Float16, block.Replicate, -1))
	c := must(b.Add(ugraph.OpConcat, ugraph.Attr{Dim: 1}, tx, tx))
	e := must(b.Add(ugraph.OpExp, ugraph.Attr{}, c))
	try(b.AddOutput(must(b.Add(ugraph.OpForloopAccum, ugraph.Attr{}, e)), block.Replicate))
	out := must(g.Customized([]kernel.TensorID{x}, b))[0]
	try(g.MarkOutput(out))
	exprs, err := ForKernel(g)
	if err != nil {
		t.Fatal(err)
	}
	if exprs[x] == nil || exprs[out] != nil {
		t.Errorf("ForKernel = %v: want the input's expression and none for the concat's descendants", exprs)
	}
	if _, err := Targets(g); !errors.Is(err, ErrNoExpr) {
		t.Errorf("Targets of a graph whose output has no expression: %v, want ErrNoExpr", err)
	}
}

// TestEveryElementwiseOpHasAnExpression ranges over the op table: every
// element-wise op has an abstract expression, by its form.
func TestEveryElementwiseOpHasAnExpression(t *testing.T) {
	x, y := Var("x"), Var("y")
	s := ugraph.MustShape(4, 8)
	for _, k := range ugraph.OpKinds(ugraph.LevelKernel | ugraph.LevelBlock) {
		if !k.IsElementwise() {
			continue
		}
		info := k.Info()
		args, shapes := []*Expr{x, y}[:info.Arity], []ugraph.Shape{s, s}[:info.Arity]
		e, err := ForOp(k, ugraph.Attr{Scalars: [2]float64{-1, 1}}, args, shapes, Loop{})
		if err != nil {
			t.Errorf("%v: %v", k, err)
			continue
		}
		var want Op
		switch info.Elem.Expr {
		case ugraph.ExprScaled:
			want = OpMul
		case ugraph.ExprAdd, ugraph.ExprSub:
			want = OpAdd
		case ugraph.ExprMul:
			want = OpMul
		case ugraph.ExprDiv:
			want = OpDiv
		case ugraph.ExprOpaque:
			want = firstOpaque + Op(k)
			if e.Op().String() != k.String() {
				t.Errorf("%v: the opaque op is named %q", k, e.Op())
			}
		}
		if e.Op() != want {
			t.Errorf("%v: %s, want an op %v", k, e, want)
		}
	}
}
