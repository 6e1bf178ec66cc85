package ugraph

import (
	"fmt"
	"math"
	"math/bits"
	"strings"
)

// OpError reports an operator that cannot apply to its operands: which
// operator, the shapes it was given, and the rule they break.
type OpError struct {
	Op     OpKind
	Inputs []Shape
	Rule   string
}

func (e *OpError) Error() string {
	var b strings.Builder
	b.WriteString(e.Op.String())
	b.WriteByte('(')
	for i, s := range e.Inputs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(s.String())
	}
	b.WriteString("): ")
	b.WriteString(e.Rule)
	return b.String()
}

func opErr(k OpKind, in []Shape, format string, args ...any) error {
	return &OpError{Op: k, Inputs: append([]Shape(nil), in...), Rule: fmt.Sprintf(format, args...)}
}

// InferShape returns the shape of the result of operator k with attributes a
// applied to operands of the given shapes, or an *OpError naming the rule
// they break. dimx is the threadblock graph's reduction_dimx; it matters only
// to reduction_to_dimx and the sum_todimx accumulator.
//
// Input, output and customized operators have no shape rule of their own
// (the levels derive them from maps and block graphs), and InferShape
// rejects them.
//
// An operand with a dynamic dim (the symbol m, Shape.Dynamic) gives a
// result with the symbol where rows stay apart, and an *OpError where the
// op would mix rows: a reduction, contraction or normalization across m, a
// broadcast of m against a static extent, a weight (a matmul's right
// operand) with m, a concat along m.
func InferShape(k OpKind, a Attr, in []Shape, dimx int) (Shape, error) {
	out, err := inferShape(k, a, in, dimx)
	if err == nil && !out.Valid() {
		// Broadcast, matmul and concat can make a result larger than
		// either operand.
		return Shape{}, opErr(k, in, "%v", out.tooLarge())
	}
	if err == nil {
		for _, s := range in {
			if s.IsDynamic() {
				return dynamicShape(k, a, in, out)
			}
		}
	}
	return out, err
}

// oneSymbol refuses a result with m in two dims: rows of one operand
// against rows of the other, an outer product across rows.
func oneSymbol(k OpKind, in []Shape, out Shape) (Shape, error) {
	if bits.OnesCount8(out.dyn) > 1 {
		return Shape{}, opErr(k, in, "rows of the dynamic dim m must stay apart, but the result %v has m in two dims", out)
	}
	return out, nil
}

// dynamicShape marks the dims of out, the static result of op k on in,
// that are the symbol m, or refuses an op that mixes rows (DESIGN §9).
func dynamicShape(k OpKind, a Attr, in []Shape, out Shape) (Shape, error) {
	mixes := func(format string, args ...any) (Shape, error) {
		return Shape{}, opErr(k, in, "rows of the dynamic dim m must stay apart, but %s", fmt.Sprintf(format, args...))
	}
	x := in[0]
	switch k.Info().Class {
	case ClassUnary:
		return out, nil
	case ClassBinary:
		y := in[1]
		for i := range out.Rank() {
			// m meets m, or a static 1 that broadcasts along it.
			switch dx, dy := x.Dynamic(i), y.Dynamic(i); {
			case dx && dy, dx && y.Dim(i) == 1, dy && x.Dim(i) == 1:
				out = out.WithDynamic(i)
			case dx:
				return mixes("dim %d is m in one operand and a static %d in the other", i, y.Dim(i))
			case dy:
				return mixes("dim %d is m in one operand and a static %d in the other", i, x.Dim(i))
			}
		}
		return oneSymbol(k, in, out)
	case ClassMatmul:
		r := x.Rank()
		if in[1].IsDynamic() {
			return mixes("the right operand (the weight) has m; only the left operand's rows may be dynamic")
		}
		if x.Dynamic(r - 1) {
			return mixes("it contracts the dynamic dim m (the left operand's last dim)")
		}
		if d := x.DynamicDim(); d < r-2 {
			return mixes("batch dim %d is m in the left operand but static in the right", d)
		}
		return out.WithDynamic(r - 2), nil
	case ClassReduction:
		if x.Dynamic(a.Dim) {
			return mixes("it reduces the dynamic dim m (dim %d)", a.Dim)
		}
	case ClassNorm:
		for i := a.Dim; i < x.Rank(); i++ {
			if x.Dynamic(i) {
				return mixes("it normalizes across the dynamic dim m (dim %d)", i)
			}
		}
	case ClassConcat:
		for i := range out.Rank() {
			if x.Dynamic(i) != in[1].Dynamic(i) {
				return mixes("dim %d is m in one operand only", i)
			}
		}
		if x.Dynamic(a.Dim) {
			return mixes("it concatenates along the dynamic dim m")
		}
	case ClassAccum:
		if x.Dynamic(x.Rank() - 1) {
			return mixes("it accumulates along the dynamic dim m")
		}
	default:
		return mixes("%v has no rule for them", k)
	}
	// The rest keep the operand's other dims.
	for i := range out.Rank() {
		if x.Dynamic(i) {
			out = out.WithDynamic(i)
		}
	}
	return out, nil
}

// CheckScalars checks the scalars of op k (Attr.Scalars): finite, and for
// clamp, min_val <= max_val. InferShape checks them too; in names the
// operands' shapes for the error.
func CheckScalars(k OpKind, a Attr, in []Shape) error {
	for i := range k.Info().Scalars {
		if v := a.Scalars[i]; math.IsNaN(v) || math.IsInf(v, 0) {
			return opErr(k, in, "scalar %d is %v; scalars must be finite", i, v)
		}
	}
	if k == OpClamp && a.Scalars[0] > a.Scalars[1] {
		return opErr(k, in, "min_val %v is greater than max_val %v", a.Scalars[0], a.Scalars[1])
	}
	return nil
}

func inferShape(k OpKind, a Attr, in []Shape, dimx int) (Shape, error) {
	info := k.Info()
	if info.Arity >= 0 && len(in) != info.Arity {
		return Shape{}, opErr(k, in, "takes %d operands, got %d", info.Arity, len(in))
	}
	for i, s := range in {
		if !s.Valid() {
			return Shape{}, opErr(k, in, "operand %d has invalid shape", i)
		}
	}
	if err := CheckScalars(k, a, in); err != nil {
		return Shape{}, err
	}
	switch info.Class {
	case ClassUnary:
		return in[0], nil
	case ClassBinary:
		return broadcast(k, in)
	case ClassMatmul:
		return matmulShape(k, in)
	case ClassReduction:
		x := in[0]
		if err := checkDim(k, in, a.Dim); err != nil {
			return Shape{}, err
		}
		if k == OpReduction {
			return x.WithDim(a.Dim, 1), nil
		}
		return toDimx(k, in, a.Dim, dimx)
	case ClassNorm:
		if err := checkDim(k, in, a.Dim); err != nil {
			return Shape{}, err
		}
		return in[0], nil
	case ClassConcat:
		return concatShape(k, in, a.Dim)
	case ClassAccum:
		x := in[0]
		last := x.Rank() - 1
		switch a.Accum {
		case AccumNone:
			return x, nil
		case AccumSum, AccumMean, AccumRMS:
			return x.WithDim(last, 1), nil
		case AccumSumToDimx:
			return toDimx(k, in, last, dimx)
		}
		return Shape{}, opErr(k, in, "unknown accumulator %v", a.Accum)
	}
	return Shape{}, opErr(k, in, "has no shape rule of its own")
}

func checkDim(k OpKind, in []Shape, dim int) error {
	if dim < 0 || dim >= in[0].Rank() {
		return opErr(k, in, "dim %d out of range for rank %d", dim, in[0].Rank())
	}
	return nil
}

// toDimx reduces dim to dimx extents in strided groups: element j of the
// result sums the elements t·dimx + j.
func toDimx(k OpKind, in []Shape, dim, dimx int) (Shape, error) {
	x := in[0]
	if dimx < 1 {
		return Shape{}, opErr(k, in, "reduction_dimx is %d, want >= 1", dimx)
	}
	if x.Dim(dim)%dimx != 0 {
		return Shape{}, opErr(k, in, "dim %d (%d) is not a multiple of reduction_dimx %d", dim, x.Dim(dim), dimx)
	}
	return x.WithDim(dim, dimx), nil
}

// broadcast applies the element-wise rule: equal ranks, and in each dim
// equal extents or one of them 1.
func broadcast(k OpKind, in []Shape) (Shape, error) {
	a, b := in[0], in[1]
	if a.Rank() != b.Rank() {
		return Shape{}, opErr(k, in, "operand ranks differ (%d vs %d); broadcasting needs equal ranks", a.Rank(), b.Rank())
	}
	out := a
	for i := 0; i < a.Rank(); i++ {
		da, db := a.Dim(i), b.Dim(i)
		switch {
		case da == db:
		case da == 1:
			out = out.WithDim(i, db)
		case db == 1:
		default:
			return Shape{}, opErr(k, in, "dim %d differs (%d vs %d) and neither is 1", i, da, db)
		}
	}
	return out, nil
}

func matmulShape(k OpKind, in []Shape) (Shape, error) {
	a, b := in[0], in[1]
	r := a.Rank()
	if r < 2 || b.Rank() < 2 {
		return Shape{}, opErr(k, in, "operands need rank >= 2")
	}
	if r != b.Rank() {
		return Shape{}, opErr(k, in, "operand ranks differ (%d vs %d)", r, b.Rank())
	}
	for i := 0; i < r-2; i++ {
		if a.Dim(i) != b.Dim(i) {
			return Shape{}, opErr(k, in, "batch dim %d differs (%d vs %d)", i, a.Dim(i), b.Dim(i))
		}
	}
	if a.Dim(r-1) != b.Dim(r-2) {
		return Shape{}, opErr(k, in, "inner dims differ (%d vs %d)", a.Dim(r-1), b.Dim(r-2))
	}
	return a.WithDim(r-1, b.Dim(r-1)), nil
}

func concatShape(k OpKind, in []Shape, dim int) (Shape, error) {
	a, b := in[0], in[1]
	if a.Rank() != b.Rank() {
		return Shape{}, opErr(k, in, "operand ranks differ (%d vs %d)", a.Rank(), b.Rank())
	}
	if err := checkDim(k, in, dim); err != nil {
		return Shape{}, err
	}
	for i := 0; i < a.Rank(); i++ {
		if i != dim && a.Dim(i) != b.Dim(i) {
			return Shape{}, opErr(k, in, "dim %d differs (%d vs %d); only the concat dim %d may", i, a.Dim(i), b.Dim(i), dim)
		}
	}
	if a.Dim(dim)+b.Dim(dim) > MaxDim {
		return Shape{}, opErr(k, in, "concatenated dim %d is too large", dim)
	}
	return a.WithDim(dim, a.Dim(dim)+b.Dim(dim)), nil
}

// SameDType returns the common element type of an operator's operands, or an
// error when they differ (we never convert implicitly).
func SameDType(k OpKind, in []DType) (DType, error) {
	for i := 1; i < len(in); i++ {
		if in[i] != in[0] {
			return 0, fmt.Errorf("%v: operand dtypes differ (%v vs %v)", k, in[0], in[i])
		}
	}
	if len(in) == 0 {
		return 0, fmt.Errorf("%v: no operands", k)
	}
	return in[0], nil
}

// NormDim converts rms_norm's normalized_shape (Mirage's argument) into the
// first normalized dim of x: normalized_shape must equal x's trailing dims.
func NormDim(x Shape, normalized []int) (int, error) {
	r, n := x.Rank(), len(normalized)
	if n == 0 || n > r {
		return 0, opErr(OpRMSNorm, []Shape{x}, "normalized_shape %v must name 1 to %d trailing dims", normalized, r)
	}
	for i, d := range normalized {
		if x.Dim(r-n+i) != d {
			return 0, opErr(OpRMSNorm, []Shape{x}, "normalized_shape %v is not the trailing dims of the input", normalized)
		}
	}
	return r - n, nil
}
