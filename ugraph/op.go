package ugraph

import "fmt"

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

	numOpKinds
)

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
}

// Columns: name, class, arity, levels, scalars, commutative.
var opTable = [numOpKinds]OpInfo{
	OpInput:           {"input", ClassIO, 0, levelBoth, 0, false},
	OpOutput:          {"output", ClassIO, 1, LevelBlock, 0, false},
	OpExp:             {"exp", ClassUnary, 1, levelBoth, 0, false},
	OpSquare:          {"square", ClassUnary, 1, levelBoth, 0, false},
	OpSqrt:            {"sqrt", ClassUnary, 1, levelBoth, 0, false},
	OpSilu:            {"silu", ClassUnary, 1, levelBoth, 0, false},
	OpGelu:            {"gelu", ClassUnary, 1, levelBoth, 0, false},
	OpRelu:            {"relu", ClassUnary, 1, levelBoth, 0, false},
	OpClamp:           {"clamp", ClassUnary, 1, levelBoth, 2, false},
	OpMulScalar:       {"mul_scalar", ClassUnary, 1, levelBoth, 1, false},
	OpLog:             {"log", ClassUnary, 1, levelBoth, 0, false},
	OpAdd:             {"add", ClassBinary, 2, levelBoth, 0, true},
	OpSub:             {"sub", ClassBinary, 2, LevelBlock, 0, false},
	OpMul:             {"mul", ClassBinary, 2, levelBoth, 0, true},
	OpDiv:             {"div", ClassBinary, 2, levelBoth, 0, false},
	OpPow:             {"pow", ClassBinary, 2, levelBoth, 0, false},
	OpMatmul:          {"matmul", ClassMatmul, 2, levelBoth, 0, false},
	OpReduction:       {"reduction", ClassReduction, 1, levelBoth, 0, false},
	OpReductionToDimx: {"reduction_to_dimx", ClassReduction, 1, LevelBlock, 0, false},
	OpRMSNorm:         {"rms_norm", ClassNorm, 1, levelBoth, 0, false},
	OpConcat:          {"concat", ClassConcat, 2, LevelBlock, 0, false},
	OpForloopAccum:    {"forloop_accum", ClassAccum, 1, LevelBlock, 0, false},
	OpCustomized:      {"customized", ClassCustomized, -1, LevelKernel, 0, false},
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
