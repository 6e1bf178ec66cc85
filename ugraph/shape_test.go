package ugraph

import (
	"math"
	"strings"
	"testing"
)

func TestNewShape(t *testing.T) {
	tests := []struct {
		dims []int
		ok   bool
	}{
		{[]int{16, 4096}, true},
		{[]int{1}, true},
		{[]int{2, 3, 4, 5}, true},
		{nil, false},
		{[]int{1, 2, 3, 4, 5}, false},
		{[]int{16, 0}, false},
		{[]int{-1}, false},
		{[]int{MaxDim + 1}, false},
		// Element counts: 2^48 is the limit; products past it, including
		// those that wrap an int64 to 0 (2^120) or below it (2^62·4), fail.
		{[]int{1 << 24, 1 << 24}, true},
		{[]int{1 << 24, 1 << 24, 2}, false},
		{[]int{1 << 30, 1 << 30, 4}, false},
		{[]int{1 << 30, 1 << 30, 1 << 30, 1 << 30}, false},
		{[]int{MaxDim, MaxDim, MaxDim, MaxDim}, false},
	}
	for _, tt := range tests {
		s, err := NewShape(tt.dims...)
		if (err == nil) != tt.ok {
			t.Errorf("NewShape(%v): err = %v, want ok=%v", tt.dims, err, tt.ok)
			continue
		}
		if tt.ok && (s.Rank() != len(tt.dims) || !s.Valid()) {
			t.Errorf("NewShape(%v) = %v", tt.dims, s)
		}
	}
}

func TestShapeOps(t *testing.T) {
	x := MustShape(2, 256, 4096)
	if x.NumElements() != 2*256*4096 || x.Last() != 4096 || x.String() != "[2, 256, 4096]" {
		t.Errorf("shape %v: elements %d, last %d", x, x.NumElements(), x.Last())
	}
	if st := x.Strides(); st[0] != 256*4096 || st[1] != 4096 || st[2] != 1 {
		t.Errorf("strides %v", st)
	}
	if d, err := x.DivDim(2, 16); err != nil || d != MustShape(2, 256, 256) {
		t.Errorf("DivDim(2, 16) = %v, %v", d, err)
	}
	if _, err := x.DivDim(1, 3); err == nil {
		t.Error("DivDim(1, 3) of 256 should fail")
	}
	if m, err := x.MulDim(0, 3); err != nil || m != MustShape(6, 256, 4096) {
		t.Errorf("MulDim(0, 3) = %v, %v", m, err)
	}
	if _, err := x.MulDim(2, MaxDim); err == nil {
		t.Error("MulDim overflow should fail")
	}
	if m, err := x.MulDim(0, 1<<62+1); err == nil { // 2·(2^62+1) wraps to 2
		t.Errorf("MulDim by 2^62+1 = %v", m)
	}
	if MustShape(4, 4) == MustShape(4, 4, 1) {
		t.Error("shapes of different rank compare equal")
	}
	if (Shape{}).Valid() {
		t.Error("zero Shape is valid")
	}
	if b := x.Bytes(2); b != 2*2*256*4096 {
		t.Errorf("Bytes(2) = %d", b)
	}
}

// TestSizeLimit: a shape at the element limit has exact sizes; a grid that
// would take it past the limit is refused.
func TestSizeLimit(t *testing.T) {
	x := MustShape(1<<18, 1<<30)
	if n := x.NumElements(); n != MaxElements {
		t.Errorf("NumElements = %d, want %d", n, MaxElements)
	}
	if st := x.Strides(); st[0] != 1<<30 {
		t.Errorf("Strides = %v", st)
	}
	if b := x.Bytes(8); b != 8*MaxElements {
		t.Errorf("Bytes(8) = %d", b)
	}
	if _, err := x.MulDim(0, 2); err == nil || !strings.Contains(err.Error(), "more than 2^48 elements") {
		t.Errorf("MulDim past the limit: err = %v", err)
	}
}

func TestNumElementsPanicsPastTheLimit(t *testing.T) {
	big := MustShape(1<<18, 1<<30).WithDim(0, 1<<30) // 2^60 elements
	if big.Valid() {
		t.Fatalf("%v is valid", big)
	}
	defer func() {
		if recover() == nil {
			t.Error("NumElements of a shape past the limit did not panic")
		}
	}()
	_ = big.NumElements()
}

func TestSizeArithmetic(t *testing.T) {
	const max = math.MaxInt64
	tests := []struct {
		a, b     int64
		add, mul int64
	}{
		{0, 0, 0, 0},
		{3, 4, 7, 12},
		{1 << 51, 1 << 12, 1<<51 + 1<<12, max}, // 2^63 saturates
		{max, 1, max, max},
		{max, max, max, max},
		{1 << 62, 1 << 62, max, max},
		{1 << 31, 1 << 31, 1 << 32, 1 << 62},
	}
	for _, tt := range tests {
		if got := AddSize(tt.a, tt.b); got != tt.add {
			t.Errorf("AddSize(%d, %d) = %d, want %d", tt.a, tt.b, got, tt.add)
		}
		if got := MulSize(tt.a, tt.b); got != tt.mul {
			t.Errorf("MulSize(%d, %d) = %d, want %d", tt.a, tt.b, got, tt.mul)
		}
	}
}

func TestDTypes(t *testing.T) {
	for _, dt := range []DType{Float16, BFloat16, Float32} {
		got, err := ParseDType(dt.String())
		if err != nil || got != dt {
			t.Errorf("ParseDType(%q) = %v, %v", dt.String(), got, err)
		}
	}
	if Float16.Size() != 2 || BFloat16.Size() != 2 || Float32.Size() != 4 {
		t.Error("dtype sizes")
	}
	if _, err := ParseDType("int8"); err == nil {
		t.Error("ParseDType(int8) should fail")
	}
}

func TestOpTable(t *testing.T) {
	for k := OpInvalid + 1; k < numOpKinds; k++ {
		info := k.Info()
		if info.Name == "" || info.Class == 0 || info.Levels == 0 {
			t.Errorf("op %d has an incomplete table entry %+v", k, info)
		}
		if got, ok := LookupOp(info.Name); !ok || got != k {
			t.Errorf("LookupOp(%q) = %v, %v", info.Name, got, ok)
		}
		// Every element-wise op says what it computes, for every backend;
		// no other op does.
		e := info.Elem
		switch {
		case k.IsElementwise() && (e.Real == nil || e.Runtime == "" || e.Flops <= 0):
			t.Errorf("%v: incomplete element-wise meaning %+v", k, e)
		case !k.IsElementwise() && (e.Real != nil || e.Runtime != "" || e.Flops != 0 || e.Opaque || e.Expr != ExprOpaque):
			t.Errorf("%v is not element-wise but has an element-wise meaning %+v", k, e)
		case k.IsElementwise() && info.Arity != map[Class]int{ClassUnary: 1, ClassBinary: 2}[info.Class]:
			t.Errorf("%v: arity %d for class %v", k, info.Arity, info.Class)
		}
	}
	// A few values of the meanings, against their definitions.
	for _, tt := range []struct {
		k    OpKind
		x, y float64
		s    [2]float64
		want float64
	}{
		{OpExp, 1, 0, [2]float64{}, math.E},
		{OpSquare, -3, 0, [2]float64{}, 9},
		{OpSilu, 2, 0, [2]float64{}, 2 / (1 + math.Exp(-2))},
		{OpGelu, 1, 0, [2]float64{}, 0.8413447460685429},
		{OpRelu, -2, 0, [2]float64{}, 0},
		{OpClamp, 5, 0, [2]float64{-1, 2}, 2},
		{OpClamp, -5, 0, [2]float64{-1, 2}, -1},
		{OpMulScalar, 3, 0, [2]float64{0.5}, 1.5},
		{OpSub, 3, 5, [2]float64{}, -2},
		{OpDiv, 3, 4, [2]float64{}, 0.75},
		{OpPow, 2, 10, [2]float64{}, 1024},
	} {
		if got := tt.k.Info().Elem.Real(tt.x, tt.y, tt.s); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("%v(%v, %v, %v) = %v, want %v", tt.k, tt.x, tt.y, tt.s, got, tt.want)
		}
	}
	for _, k := range OpKinds(LevelKernel | LevelBlock) {
		if f := k.Info().Elem.Real; f != nil && !math.IsNaN(f(math.NaN(), math.NaN(), [2]float64{-1, 1})) {
			t.Errorf("%v does not propagate NaN", k)
		}
	}
	if OpConcat.AllowedAt(LevelKernel) || !OpConcat.AllowedAt(LevelBlock) {
		t.Error("concat is a threadblock-only op")
	}
	if !OpSub.AllowedAt(LevelKernel) || !OpSub.AllowedAt(LevelBlock) {
		t.Error("sub is an op of both levels (a hand-written LayerNorm subtracts the mean)")
	}
	if OpCustomized.AllowedAt(LevelBlock) {
		t.Error("customized is kernel-only")
	}
	for a := AccumNone; a < numAccums; a++ {
		if got, err := ParseAccum(a.String()); err != nil || got != a {
			t.Errorf("ParseAccum(%q) = %v, %v", a.String(), got, err)
		}
	}
}

// TestExtents: a shape's extents determine it (rank included), and are
// zero past the rank, however the shape was made.
func TestExtents(t *testing.T) {
	shapes := []Shape{MustShape(16), MustShape(16, 1), MustShape(1, 16), MustShape(16, 1, 1),
		MustShape(2, 3, 4, 5), MustShape(2, 3, 4, 5).WithDim(3, 1), MustShape(4, 4).WithDim(0, 16)}
	for i, a := range shapes {
		e := a.Extents()
		for d := range MaxRank {
			if d < a.Rank() && int(e[d]) != a.Dim(d) || d >= a.Rank() && e[d] != 0 {
				t.Errorf("%v: extents %v", a, e)
			}
		}
		for _, b := range shapes[i+1:] {
			if (a == b) != (a.Extents() == b.Extents()) {
				t.Errorf("%v and %v: equal %v, equal extents %v", a, b, a == b, a.Extents() == b.Extents())
			}
		}
	}
}

// ValueHash leaves operands unordered exactly for the commutative ops,
// and tells kinds and attributes apart.
func TestValueHash(t *testing.T) {
	for _, k := range OpKinds(LevelKernel | LevelBlock) {
		if k.Info().Arity != 2 {
			continue
		}
		swapped := k.ValueHash(Attr{}, []uint64{1, 2}) == k.ValueHash(Attr{}, []uint64{2, 1})
		if swapped != k.Info().Commutative {
			t.Errorf("%v: swapped operands hash alike %v, commutative %v", k, swapped, k.Info().Commutative)
		}
	}
	if OpExp.ValueHash(Attr{}, []uint64{1}) == OpSilu.ValueHash(Attr{}, []uint64{1}) {
		t.Error("exp and silu of one operand hash alike")
	}
	if OpMulScalar.ValueHash(Attr{Scalars: [2]float64{2}}, []uint64{1}) == OpMulScalar.ValueHash(Attr{Scalars: [2]float64{3}}, []uint64{1}) {
		t.Error("mul_scalar by 2 and by 3 hash alike")
	}
}

func TestBroadcastsTo(t *testing.T) {
	to := MustShape(2, 4, 64)
	for _, tc := range []struct {
		s    Shape
		want bool
	}{
		{MustShape(2, 4, 64), true},
		{MustShape(1, 4, 64), true},  // a residual of one batch
		{MustShape(1, 1, 64), true},  // a bias
		{MustShape(1, 1, 1), true},   // a scalar
		{MustShape(2, 8, 64), false}, // grows dim 1
		{MustShape(4, 64), false},    // another rank
		{MustShape(1, 3, 64), false}, // neither 1 nor the extent
	} {
		if got := tc.s.BroadcastsTo(to); got != tc.want {
			t.Errorf("%v.BroadcastsTo(%v) = %v, want %v", tc.s, to, got, tc.want)
		}
	}
}
