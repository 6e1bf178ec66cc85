package ugraph

import (
	"fmt"
	"math"
	"slices"

	"github.com/mirage-go/mirage/internal/structhash"
)

// OpKind names an operator. Every level of a μGraph draws its operators
// from this one list; OpKind.Info tells which levels allow each.
type OpKind uint8

const (
	OpInvalid OpKind = iota

	// Graph boundary.
	OpInput  // a device tensor (kernel) or a tile loaded from one (block)
	OpOutput // block level: a tile stored to a device tensor

	// Element-wise unary.
	OpExp
	OpSquare
	OpSqrt
	OpSilu
	OpGelu
	OpRelu
	OpClamp     // Attr.Scalars = {min, max}
	OpMulScalar // Attr.Scalars[0] is the factor
	OpLog

	// Element-wise binary, broadcasting through size-1 dims.
	OpAdd
	OpSub
	OpMul
	OpDiv
	OpPow

	OpMatmul          // batched over equal leading dims: A[..,m,k] x B[..,k,n]
	OpReduction       // sum over Attr.Dim, which becomes 1
	OpReductionToDimx // sum over Attr.Dim in strided groups down to reduction_dimx
	OpRMSNorm         // x / rms(x) over the dims from Attr.Dim to the last
	OpConcat          // along Attr.Dim
	OpForloopAccum    // accumulate over the for-loop, Attr.Accum says how
	OpCustomized      // kernel level: a graph-defined kernel (a block.Graph)

	// Element-wise ops added since, appended so that the kinds above keep
	// their numbers (graphs hash by kind).
	OpTanh
	OpSigmoid

	numOpKinds
)

// NumOpKinds is the number of operator kinds: every OpKind k with
// k.Valid() is below it, so tables indexed by kind can be arrays.
const NumOpKinds = int(numOpKinds)

// Class groups operators that share a shape rule and an evaluation scheme.
type Class uint8

const (
	ClassIO Class = iota + 1
	ClassUnary
	ClassBinary
	ClassMatmul
	ClassReduction
	ClassNorm
	ClassConcat
	ClassAccum
	ClassCustomized
)

// Level is a set of μGraph levels.
type Level uint8

const (
	LevelKernel Level = 1 << iota
	LevelBlock

	levelBoth = LevelKernel | LevelBlock
)

// OpInfo describes an operator kind.
type OpInfo struct {
	Name    string // as in Mirage's Python API and in our JSON
	Class   Class
	Arity   int   // operands; -1 for a variable count (customized)
	Levels  Level // where the operator may appear
	Scalars int   // how many entries of Attr.Scalars it uses
	// Commutative binary operators compute the same for swapped operands;
	// the search generates them with ordered operands only.
	Commutative bool
	// Elem is what an element-wise op (ClassUnary, ClassBinary) computes;
	// the zero Elementwise for the others.
	Elem Elementwise
}

// Elementwise is the meaning of an element-wise op, written once here for
// every backend: the interpreter, the verifier, abstract expressions, the
// cost model and the code generator each read their part, and each has a
// test that ranges over every op kind. Adding an element-wise op is a line
// of this table and a device function in mirage_runtime.cuh.
type Elementwise struct {
	// Real is the op on reals: the float64 interpreter's, the reference
	// every check compares with. NaN propagates through every op but pow,
	// which is math.Pow: pow(NaN, 0) and pow(1, NaN) are 1, as the device
	// runtime's powf and torch give.
	Real RealFunc
	// Runtime is the op's device function in mirage_runtime.cuh, taking
	// and returning float: Runtime(x, scalars...) for a unary op,
	// Runtime(x, y) for a binary one.
	Runtime string
	// Flops is the CUDA-core work of one element in fp32 flops. Special
	// functions (exp, log, sqrt, reciprocal, tanh) run on the SFU at a
	// quarter of the fp32 rate or less ([CUDA-CG] arithmetic instruction
	// throughput: 16 vs 64+ results per clock per SM), so each counts sfu.
	Flops int
	// Opaque ops have no exact meaning over a finite field: the verifier
	// models each as a random function of its operands (and scalars), drawn
	// afresh per trial. The others it computes exactly (ffverify/ops.go).
	Opaque bool
	// Expr is the op's abstract expression (package absexpr).
	Expr ExprForm
}

// RealFunc is an element-wise op on reals: x and, for a binary op, y,
// with the op's scalars s (Attr.Scalars).
type RealFunc func(x, y float64, s [2]float64) float64

// ExprForm is how abstract expressions see an element-wise op.
type ExprForm uint8

const (
	// ExprOpaque: an uninterpreted function of its operands, and of its
	// scalars when it has any (clamp's bounds).
	ExprOpaque ExprForm = iota
	// ExprScaled: its first operand's expression times a scalar
	// (mul_scalar). Abstract expressions write every scalar as one symbol:
	// they see where a factor is applied (exp(x·c) is not exp(x)·c), not
	// its value.
	ExprScaled
	// ExprAdd: the sum of its operands.
	ExprAdd
	// ExprSub: its first operand plus its second times a scalar (sub:
	// a - b = a + (-1)·b), as a program writing it with mul_scalar reads.
	ExprSub
	ExprMul // the product of its operands
	ExprDiv // the quotient
)

// sfu is the flops an SFU function counts for (see Elementwise.Flops).
const sfu = 4

// unary makes a RealFunc of a function of one real.
func unary(f func(float64) float64) RealFunc {
	return func(x, _ float64, _ [2]float64) float64 { return f(x) }
}

// binary makes a RealFunc of a function of two reals.
func binary(f func(x, y float64) float64) RealFunc {
	return func(x, y float64, _ [2]float64) float64 { return f(x, y) }
}

var opTable = [numOpKinds]OpInfo{
	OpInput:  {Name: "input", Class: ClassIO, Arity: 0, Levels: levelBoth},
	OpOutput: {Name: "output", Class: ClassIO, Arity: 1, Levels: LevelBlock},

	OpExp: {Name: "exp", Class: ClassUnary, Arity: 1, Levels: levelBoth,
		Elem: Elementwise{Real: unary(math.Exp), Runtime: "op_exp", Flops: sfu}},
	OpSquare: {Name: "square", Class: ClassUnary, Arity: 1, Levels: levelBoth,
		Elem: Elementwise{Real: unary(func(x float64) float64 { return x * x }), Runtime: "op_square", Flops: 1}},
	OpSqrt: {Name: "sqrt", Class: ClassUnary, Arity: 1, Levels: levelBoth,
		Elem: Elementwise{Real: unary(math.Sqrt), Runtime: "op_sqrt", Flops: sfu}},
	// x·sigmoid(x) = x / (1 + exp(-x)): exp, add, reciprocal, mul.
	OpSilu: {Name: "silu", Class: ClassUnary, Arity: 1, Levels: levelBoth,
		Elem: Elementwise{Real: unary(func(x float64) float64 { return x / (1 + math.Exp(-x)) }), Runtime: "op_silu", Flops: 2*sfu + 2, Opaque: true}},
	// The exact gelu (erf), not the tanh approximation: an SFU function and
	// a few FMAs.
	OpGelu: {Name: "gelu", Class: ClassUnary, Arity: 1, Levels: levelBoth,
		Elem: Elementwise{Real: unary(func(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }), Runtime: "op_gelu", Flops: sfu + 8, Opaque: true}},
	OpRelu: {Name: "relu", Class: ClassUnary, Arity: 1, Levels: levelBoth,
		Elem: Elementwise{Real: unary(relu), Runtime: "op_relu", Flops: 1, Opaque: true}},
	OpClamp: {Name: "clamp", Class: ClassUnary, Arity: 1, Levels: levelBoth, Scalars: 2, // {min, max}
		Elem: Elementwise{Real: clamp, Runtime: "op_clamp", Flops: 2, Opaque: true}},
	OpMulScalar: {Name: "mul_scalar", Class: ClassUnary, Arity: 1, Levels: levelBoth, Scalars: 1, // {factor}
		Elem: Elementwise{Real: func(x, _ float64, s [2]float64) float64 { return x * s[0] }, Runtime: "op_mul_scalar", Flops: 1, Expr: ExprScaled}},
	OpLog: {Name: "log", Class: ClassUnary, Arity: 1, Levels: levelBoth,
		Elem: Elementwise{Real: unary(math.Log), Runtime: "op_log", Flops: sfu, Opaque: true}},

	OpAdd: {Name: "add", Class: ClassBinary, Arity: 2, Levels: levelBoth, Commutative: true,
		Elem: Elementwise{Real: binary(func(x, y float64) float64 { return x + y }), Runtime: "op_add", Flops: 1, Expr: ExprAdd}},
	OpSub: {Name: "sub", Class: ClassBinary, Arity: 2, Levels: levelBoth,
		Elem: Elementwise{Real: binary(func(x, y float64) float64 { return x - y }), Runtime: "op_sub", Flops: 1, Expr: ExprSub}},
	OpMul: {Name: "mul", Class: ClassBinary, Arity: 2, Levels: levelBoth, Commutative: true,
		Elem: Elementwise{Real: binary(func(x, y float64) float64 { return x * y }), Runtime: "op_mul", Flops: 1, Expr: ExprMul}},
	// A reciprocal and a mul.
	OpDiv: {Name: "div", Class: ClassBinary, Arity: 2, Levels: levelBoth,
		Elem: Elementwise{Real: binary(func(x, y float64) float64 { return x / y }), Runtime: "op_div", Flops: sfu + 1, Expr: ExprDiv}},
	// exp2(y · log2(x)).
	OpPow: {Name: "pow", Class: ClassBinary, Arity: 2, Levels: levelBoth,
		Elem: Elementwise{Real: binary(math.Pow), Runtime: "op_pow", Flops: 2*sfu + 1, Opaque: true}},

	OpMatmul:          {Name: "matmul", Class: ClassMatmul, Arity: 2, Levels: levelBoth},
	OpReduction:       {Name: "reduction", Class: ClassReduction, Arity: 1, Levels: levelBoth},
	OpReductionToDimx: {Name: "reduction_to_dimx", Class: ClassReduction, Arity: 1, Levels: LevelBlock},
	OpRMSNorm:         {Name: "rms_norm", Class: ClassNorm, Arity: 1, Levels: levelBoth},
	OpConcat:          {Name: "concat", Class: ClassConcat, Arity: 2, Levels: LevelBlock},
	OpForloopAccum:    {Name: "forloop_accum", Class: ClassAccum, Arity: 1, Levels: LevelBlock},
	OpCustomized:      {Name: "customized", Class: ClassCustomized, Arity: -1, Levels: LevelKernel},

	OpTanh: {Name: "tanh", Class: ClassUnary, Arity: 1, Levels: levelBoth,
		Elem: Elementwise{Real: unary(math.Tanh), Runtime: "op_tanh", Flops: sfu, Opaque: true}},
	// 1 / (1 + exp(-x)): exp, add, reciprocal.
	OpSigmoid: {Name: "sigmoid", Class: ClassUnary, Arity: 1, Levels: levelBoth,
		Elem: Elementwise{Real: unary(func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }), Runtime: "op_sigmoid", Flops: 2*sfu + 1, Opaque: true}},
}

func relu(x float64) float64 {
	if x < 0 {
		return 0
	}
	return x
}

func clamp(x, _ float64, s [2]float64) float64 {
	switch lo, hi := s[0], s[1]; {
	case x < lo:
		return lo
	case x > hi:
		return hi
	}
	return x
}

// Info returns the description of k; the zero OpInfo for an invalid kind.
func (k OpKind) Info() OpInfo {
	if k < numOpKinds {
		return opTable[k]
	}
	return OpInfo{}
}

// Valid reports whether k is a defined operator.
func (k OpKind) Valid() bool { return k > OpInvalid && k < numOpKinds }

// String returns the operator's name.
func (k OpKind) String() string {
	if k.Valid() {
		return opTable[k].Name
	}
	return fmt.Sprintf("OpKind(%d)", uint8(k))
}

// AllowedAt reports whether k may appear at level l.
func (k OpKind) AllowedAt(l Level) bool { return k.Valid() && opTable[k].Levels&l != 0 }

// IsElementwise reports whether k maps each element independently (unary and
// binary element-wise operators); such chains become thread graphs.
func (k OpKind) IsElementwise() bool {
	c := k.Info().Class
	return c == ClassUnary || c == ClassBinary
}

// LookupOp returns the operator with the given name.
func LookupOp(name string) (OpKind, bool) {
	for k := OpInvalid + 1; k < numOpKinds; k++ {
		if opTable[k].Name == name {
			return k, true
		}
	}
	return OpInvalid, false
}

// OpKinds returns every operator allowed at level l, in table order.
func OpKinds(l Level) []OpKind {
	var ks []OpKind
	for k := OpInvalid + 1; k < numOpKinds; k++ {
		if k.AllowedAt(l) {
			ks = append(ks, k)
		}
	}
	return ks
}

// Accum says how forloop_accum combines the per-iteration tiles x_0..x_{F-1}
// (last dim n) into one post-loop tile. See DESIGN §3.
type Accum uint8

const (
	AccumNone      Accum = iota // Σ_i x_i; shape unchanged (Mirage's acc=None)
	AccumSum                    // Σ_i Σ_j x_i[..,j]; last dim becomes 1
	AccumMean                   // AccumSum / (F·n)
	AccumRMS                    // sqrt(Σ_i Σ_j x_i[..,j]² / (F·n))
	AccumSumToDimx              // out[..,j] = Σ_i Σ_t x_i[..,t·d+j], d = reduction_dimx
	numAccums
)

var accumNames = [numAccums]string{"none", "sum", "mean", "rms", "sum_todimx"}

// String returns the accumulator's name; AccumNone is "none" (Python's None).
func (a Accum) String() string {
	if a < numAccums {
		return accumNames[a]
	}
	return fmt.Sprintf("Accum(%d)", uint8(a))
}

// ParseAccum returns the accumulator with the given name ("none" for None).
func ParseAccum(name string) (Accum, error) {
	for a := range numAccums {
		if accumNames[a] == name {
			return a, nil
		}
	}
	return 0, fmt.Errorf("unknown accumulator %q (want None, \"sum\", \"mean\", \"rms\" or \"sum_todimx\")", name)
}

// Attr holds an operator's parameters. Only the fields its kind uses are
// meaningful; the rest stay zero, so Attr values compare and hash by kind.
type Attr struct {
	// Dim is the reduced dim (reduction, reduction_to_dimx), the concat
	// dim, or the first normalized dim of rms_norm (normalization runs over
	// Dim..rank-1; at block level always the last dim).
	Dim int
	// Scalars are clamp's {min, max} and mul_scalar's {factor}.
	Scalars [2]float64
	// Accum is forloop_accum's kind.
	Accum Accum
}

// StructHash is a's hash in kernel.Hash and block.Hash: the value
// hashstructure gives, computed field by field (internal/structhash).
func (a Attr) StructHash() uint64 {
	s := structhash.NewStruct(attrNames.Attr)
	s.Field(attrNames.Dim, structhash.Int(a.Dim))
	s.Field(attrNames.Scalars, structhash.Ordered(structhash.Ordered(0, structhash.Float64(a.Scalars[0])), structhash.Float64(a.Scalars[1])))
	s.Field(attrNames.Accum, structhash.Uint8(uint8(a.Accum)))
	return s.Sum()
}

// ValueHash is the value number of what op k with attributes a computes
// from operands of the given value numbers, the operands unordered for a
// commutative k: kernel.CanonicalHash's and block.Canonical's rule for
// every op but inputs, outputs and customized ops. It sorts operands.
func (k OpKind) ValueHash(a Attr, operands []uint64) uint64 {
	if k.Info().Commutative {
		slices.Sort(operands)
	}
	return structhash.Seq(valueName, structhash.Uint8(uint8(k)), a.StructHash(), structhash.Seq(operands...))
}

var valueName = structhash.String("canon.Op")

// attrNames are the hashes of Attr's type and field names.
var attrNames = struct{ Attr, Dim, Scalars, Accum uint64 }{
	structhash.String("Attr"), structhash.String("Dim"), structhash.String("Scalars"), structhash.String("Accum"),
}
