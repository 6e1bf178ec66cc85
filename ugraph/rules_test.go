package ugraph

import (
	"math"
	"strings"
	"testing"
)

func s(dims ...int) Shape { return MustShape(dims...) }

// TestInferShape covers every operator with a shape rule: the shape it
// derives, and for each rule a case that breaks it, with the words the
// error must contain.
func TestInferShape(t *testing.T) {
	tests := []struct {
		op   OpKind
		attr Attr
		in   []Shape
		dimx int
		want Shape  // when err is ""
		err  string // substring of the error
	}{
		// Element-wise unary: shape unchanged.
		{op: OpExp, in: []Shape{s(16, 64)}, want: s(16, 64)},
		{op: OpSquare, in: []Shape{s(3)}, want: s(3)},
		{op: OpSqrt, in: []Shape{s(2, 3, 4, 5)}, want: s(2, 3, 4, 5)},
		{op: OpSilu, in: []Shape{s(8, 4096)}, want: s(8, 4096)},
		{op: OpGelu, in: []Shape{s(8, 1)}, want: s(8, 1)},
		{op: OpRelu, in: []Shape{s(1)}, want: s(1)},
		{op: OpClamp, attr: Attr{Scalars: [2]float64{-1, 1}}, in: []Shape{s(4, 4)}, want: s(4, 4)},
		{op: OpMulScalar, attr: Attr{Scalars: [2]float64{0.5}}, in: []Shape{s(4, 4)}, want: s(4, 4)},
		{op: OpLog, in: []Shape{s(7)}, want: s(7)},
		{op: OpClamp, attr: Attr{Scalars: [2]float64{1, -1}}, in: []Shape{s(4)}, err: "min_val 1 is greater than max_val -1"},
		{op: OpMulScalar, attr: Attr{Scalars: [2]float64{math.NaN()}}, in: []Shape{s(4)}, err: "scalar 0 is NaN"},
		{op: OpClamp, attr: Attr{Scalars: [2]float64{0, math.Inf(1)}}, in: []Shape{s(4)}, err: "scalar 1 is +Inf"},
		{op: OpExp, in: []Shape{s(2), s(2)}, err: "takes 1 operands, got 2"},

		// Element-wise binary: equal ranks, broadcasting through size-1 dims.
		{op: OpAdd, in: []Shape{s(16, 64), s(16, 64)}, want: s(16, 64)},
		{op: OpSub, in: []Shape{s(16, 1), s(1, 64)}, want: s(16, 64)},
		{op: OpMul, in: []Shape{s(2, 256, 64), s(2, 256, 1)}, want: s(2, 256, 64)},
		{op: OpDiv, in: []Shape{s(16, 64), s(16, 1)}, want: s(16, 64)},
		{op: OpPow, in: []Shape{s(1, 1), s(3, 5)}, want: s(3, 5)},
		{op: OpDiv, in: []Shape{s(16, 64), s(64)}, err: "ranks differ (2 vs 1)"},
		{op: OpAdd, in: []Shape{s(16, 64), s(16, 32)}, err: "dim 1 differs (64 vs 32) and neither is 1"},
		{op: OpMul, in: []Shape{s(16, 64)}, err: "takes 2 operands, got 1"},

		// Matmul: batched over equal leading dims.
		{op: OpMatmul, in: []Shape{s(16, 4096), s(4096, 6144)}, want: s(16, 6144)},
		{op: OpMatmul, in: []Shape{s(2, 256, 64), s(2, 64, 4096)}, want: s(2, 256, 4096)},
		{op: OpMatmul, in: []Shape{s(2, 3, 4, 5), s(2, 3, 5, 6)}, want: s(2, 3, 4, 6)},
		{op: OpMatmul, in: []Shape{s(16, 4096), s(4095, 6144)}, err: "inner dims differ (4096 vs 4095)"},
		{op: OpMatmul, in: []Shape{s(2, 4, 5), s(3, 5, 6)}, err: "batch dim 0 differs (2 vs 3)"},
		{op: OpMatmul, in: []Shape{s(4, 5), s(1, 5, 6)}, err: "ranks differ (2 vs 3)"},
		{op: OpMatmul, in: []Shape{s(5), s(5)}, err: "rank >= 2"},

		// Reductions.
		{op: OpReduction, attr: Attr{Dim: 2}, in: []Shape{s(2, 256, 4096)}, want: s(2, 256, 1)},
		{op: OpReduction, attr: Attr{Dim: 0}, in: []Shape{s(8)}, want: s(1)},
		{op: OpReduction, attr: Attr{Dim: 2}, in: []Shape{s(8, 8)}, err: "dim 2 out of range for rank 2"},
		{op: OpReduction, attr: Attr{Dim: -1}, in: []Shape{s(8, 8)}, err: "dim -1 out of range"},
		{op: OpReductionToDimx, attr: Attr{Dim: 1}, in: []Shape{s(64, 1024)}, dimx: 64, want: s(64, 64)},
		{op: OpReductionToDimx, attr: Attr{Dim: 1}, in: []Shape{s(64, 64)}, dimx: 64, want: s(64, 64)},
		{op: OpReductionToDimx, attr: Attr{Dim: 1}, in: []Shape{s(64, 100)}, dimx: 64, err: "not a multiple of reduction_dimx 64"},
		{op: OpReductionToDimx, attr: Attr{Dim: 0}, in: []Shape{s(64)}, dimx: 0, err: "reduction_dimx is 0"},

		// rms_norm keeps the shape; Dim is the first normalized dim.
		{op: OpRMSNorm, attr: Attr{Dim: 1}, in: []Shape{s(16, 4096)}, want: s(16, 4096)},
		{op: OpRMSNorm, attr: Attr{Dim: 2}, in: []Shape{s(16, 4096)}, err: "dim 2 out of range"},

		// Concat.
		{op: OpConcat, attr: Attr{Dim: 1}, in: []Shape{s(16, 64), s(16, 32)}, want: s(16, 96)},
		{op: OpConcat, attr: Attr{Dim: 0}, in: []Shape{s(16, 64), s(16, 32)}, err: "dim 1 differs (64 vs 32); only the concat dim 0 may"},
		{op: OpConcat, attr: Attr{Dim: 0}, in: []Shape{s(16, 64), s(16)}, err: "ranks differ"},

		// Accumulators.
		{op: OpForloopAccum, attr: Attr{Accum: AccumNone}, in: []Shape{s(16, 64)}, want: s(16, 64)},
		{op: OpForloopAccum, attr: Attr{Accum: AccumSum}, in: []Shape{s(1, 256, 64)}, want: s(1, 256, 1)},
		{op: OpForloopAccum, attr: Attr{Accum: AccumMean}, in: []Shape{s(16, 64)}, want: s(16, 1)},
		{op: OpForloopAccum, attr: Attr{Accum: AccumRMS}, in: []Shape{s(16, 64)}, want: s(16, 1)},
		{op: OpForloopAccum, attr: Attr{Accum: AccumSumToDimx}, in: []Shape{s(1, 64, 1024)}, dimx: 64, want: s(1, 64, 64)},
		{op: OpForloopAccum, attr: Attr{Accum: AccumSumToDimx}, in: []Shape{s(1, 64, 96)}, dimx: 64, err: "dim 2 (96) is not a multiple of reduction_dimx 64"},
		{op: OpForloopAccum, attr: Attr{Accum: numAccums}, in: []Shape{s(4)}, err: "unknown accumulator"},

		// Results past the element limit, from operands within it.
		{op: OpAdd, in: []Shape{s(1<<30, 1), s(1, 1<<30)}, err: "add([1073741824, 1], [1, 1073741824]): shape [1073741824, 1073741824] has more than 2^48 elements"},
		{op: OpMatmul, in: []Shape{s(1<<30, 4), s(4, 1<<30)}, err: "more than 2^48 elements"},
		{op: OpConcat, attr: Attr{Dim: 0}, in: []Shape{s(3<<27, 1<<19), s(3<<27, 1<<19)}, err: "more than 2^48 elements"},
		{op: OpMatmul, in: []Shape{s(1<<17, 4), s(4, 1<<30)}, want: s(1<<17, 1<<30)},

		// Operators without a rule of their own.
		{op: OpInput, in: nil, err: "no shape rule"},
		{op: OpCustomized, in: []Shape{s(4)}, err: "no shape rule"},
		{op: OpExp, in: []Shape{{}}, err: "operand 0 has invalid shape"},
	}
	for _, tt := range tests {
		got, err := InferShape(tt.op, tt.attr, tt.in, tt.dimx)
		name := (&OpError{Op: tt.op, Inputs: tt.in}).Error()
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%s: unexpected error %v", name, err)
		case tt.err == "" && got != tt.want:
			t.Errorf("%s: shape %v, want %v", name, got, tt.want)
		case tt.err != "" && err == nil:
			t.Errorf("%s: shape %v, want error containing %q", name, got, tt.err)
		case tt.err != "" && !strings.Contains(err.Error(), tt.err):
			t.Errorf("%s: error %q, want it to contain %q", name, err, tt.err)
		}
	}
}

// Every operator with a shape rule must appear in TestInferShape's table;
// this catches a new operator added without a test of its rule.
func TestEveryRuleIsTested(t *testing.T) {
	for k := OpInvalid + 1; k < numOpKinds; k++ {
		switch k.Info().Class {
		case ClassIO, ClassCustomized:
			continue
		}
		var in []Shape
		for range k.Info().Arity {
			in = append(in, s(64, 64))
		}
		if _, err := InferShape(k, Attr{Dim: 1}, in, 64); err != nil {
			t.Errorf("%v on square operands: %v", k, err)
		}
	}
}

func TestOpErrorNamesOpShapesAndRule(t *testing.T) {
	_, err := InferShape(OpMatmul, Attr{}, []Shape{s(16, 4096), s(4095, 6144)}, 0)
	want := "matmul([16, 4096], [4095, 6144]): inner dims differ (4096 vs 4095)"
	if err == nil || err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
}

func TestSameDType(t *testing.T) {
	if dt, err := SameDType(OpAdd, []DType{BFloat16, BFloat16}); err != nil || dt != BFloat16 {
		t.Errorf("SameDType(bf16, bf16) = %v, %v", dt, err)
	}
	if _, err := SameDType(OpAdd, []DType{Float16, Float32}); err == nil || !strings.Contains(err.Error(), "float16 vs float32") {
		t.Errorf("SameDType(fp16, fp32) error = %v", err)
	}
}

func TestNormDim(t *testing.T) {
	tests := []struct {
		x    Shape
		norm []int
		want int
		err  bool
	}{
		{s(16, 4096), []int{4096}, 1, false},
		{s(2, 16, 64), []int{16, 64}, 1, false},
		{s(2, 16, 64), []int{2, 16, 64}, 0, false},
		{s(16, 4096), []int{16}, 0, true},
		{s(16, 4096), nil, 0, true},
		{s(16), []int{1, 16}, 0, true},
	}
	for _, tt := range tests {
		got, err := NormDim(tt.x, tt.norm)
		if (err != nil) != tt.err || (err == nil && got != tt.want) {
			t.Errorf("NormDim(%v, %v) = %d, %v; want %d, error %v", tt.x, tt.norm, got, err, tt.want, tt.err)
		}
	}
}

func TestCanonicalClearsUnusedFields(t *testing.T) {
	noisy := Attr{Dim: 3, Scalars: [2]float64{1, 2}, Accum: AccumRMS}
	tests := []struct {
		op   OpKind
		want Attr
	}{
		{OpExp, Attr{}},
		{OpMulScalar, Attr{Scalars: [2]float64{1}}},
		{OpClamp, Attr{Scalars: [2]float64{1, 2}}},
		{OpReduction, Attr{Dim: 3}},
		{OpConcat, Attr{Dim: 3}},
		{OpForloopAccum, Attr{Accum: AccumRMS}},
		{OpMatmul, Attr{}},
	}
	for _, tt := range tests {
		if got := Canonical(tt.op, noisy); got != tt.want {
			t.Errorf("Canonical(%v) = %+v, want %+v", tt.op, got, tt.want)
		}
	}
}

// TestDynamicRows covers the symbol m through every class of rule: the
// ops that keep rows apart carry it to their result, the ones that would
// mix rows are refused with the reason.
func TestDynamicRows(t *testing.T) {
	m := func(dim int, dims ...int) Shape { return s(dims...).WithDynamic(dim) }
	tests := []struct {
		name string
		op   OpKind
		attr Attr
		in   []Shape
		want Shape
		err  string
	}{
		{"unary keeps m", OpSilu, Attr{}, []Shape{m(0, 8, 4096)}, m(0, 8, 4096), ""},
		{"m + m", OpAdd, Attr{}, []Shape{m(0, 8, 64), m(0, 8, 64)}, m(0, 8, 64), ""},
		{"m + a row broadcast along m", OpMul, Attr{}, []Shape{m(0, 8, 64), s(1, 64)}, m(0, 8, 64), ""},
		{"a row broadcast along m, m second", OpAdd, Attr{}, []Shape{s(1, 64), m(0, 8, 64)}, m(0, 8, 64), ""},
		{"m written as 1 + a row", OpAdd, Attr{}, []Shape{m(0, 1, 64), s(1, 64)}, m(0, 1, 64), ""},
		{"m in two dims", OpAdd, Attr{}, []Shape{m(0, 16, 1, 64), m(1, 1, 16, 64)}, Shape{}, "has m in two dims"},
		{"m against a static extent", OpAdd, Attr{}, []Shape{m(0, 8, 64), s(8, 64)}, Shape{}, "dim 0 is m in one operand and a static 8"},
		{"m written as 1 broadcast to static rows", OpAdd, Attr{}, []Shape{m(0, 1, 64), s(16, 64)}, Shape{}, "a static 16"},
		{"matmul keeps the left rows", OpMatmul, Attr{}, []Shape{m(0, 16, 4096), s(4096, 6144)}, m(0, 16, 6144), ""},
		{"batched matmul rows", OpMatmul, Attr{}, []Shape{m(1, 2, 16, 64), s(2, 64, 32)}, m(1, 2, 16, 32), ""},
		{"matmul contracts m", OpMatmul, Attr{}, []Shape{m(1, 16, 64), s(64, 32)}, Shape{}, "contracts the dynamic dim m"},
		{"a dynamic weight", OpMatmul, Attr{}, []Shape{s(16, 64), m(1, 64, 32)}, Shape{}, "the right operand (the weight) has m"},
		{"a dynamic batch dim", OpMatmul, Attr{}, []Shape{m(0, 2, 16, 64), s(2, 64, 32)}, Shape{}, "batch dim 0 is m"},
		{"sum over the hidden dim", OpReduction, Attr{Dim: 1}, []Shape{m(0, 8, 64)}, m(0, 8, 1), ""},
		{"sum over m", OpReduction, Attr{Dim: 0}, []Shape{m(0, 8, 64)}, Shape{}, "reduces the dynamic dim m"},
		{"rms_norm over the hidden dim", OpRMSNorm, Attr{Dim: 1}, []Shape{m(0, 8, 4096)}, m(0, 8, 4096), ""},
		{"rms_norm over m", OpRMSNorm, Attr{Dim: 0}, []Shape{m(0, 8, 4096)}, Shape{}, "normalizes across the dynamic dim m"},
		{"concat beside m", OpConcat, Attr{Dim: 1}, []Shape{m(0, 8, 64), m(0, 8, 32)}, m(0, 8, 96), ""},
		{"concat along m", OpConcat, Attr{Dim: 0}, []Shape{m(0, 8, 64), m(0, 8, 64)}, Shape{}, "concatenates along the dynamic dim m"},
		{"concat of m and static rows", OpConcat, Attr{Dim: 1}, []Shape{m(0, 8, 64), s(8, 32)}, Shape{}, "dim 0 is m in one operand only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := InferShape(tt.op, tt.attr, tt.in, 1)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "rows of the dynamic dim m must stay apart, but") {
					t.Fatalf("%v%v = %v, %v; want an error with %q", tt.op, tt.in, got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("%v%v = %v (dynamic dim %d), %v; want %v (dynamic dim %d)", tt.op, tt.in, got, got.DynamicDim(), err, tt.want, tt.want.DynamicDim())
			}
		})
	}
}

func TestShapeSymbol(t *testing.T) {
	x := s(16, 4096).WithDynamic(0)
	if x.String() != "[m, 4096]" || !x.IsDynamic() || x.DynamicDim() != 0 || x.Dynamic(1) {
		t.Fatalf("%v: dynamic %v, dim %d", x, x.IsDynamic(), x.DynamicDim())
	}
	if b := x.Bind(3); b != s(3, 4096) || b.IsDynamic() {
		t.Fatalf("Bind(3) = %v, want the static [3, 4096]", b)
	}
	if x == s(16, 4096) || x.StructHash() == s(16, 4096).StructHash() {
		t.Fatal("a dynamic shape equals (or hashes as) the static one of its example size")
	}
	if got := x.WithDim(0, 5); got.IsDynamic() {
		t.Fatalf("WithDim sets a static extent, got %v", got)
	}
	if s(16, 4096).DynamicDim() != -1 {
		t.Fatal("a static shape has a dynamic dim")
	}
}
