package absexpr

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// Deriving expressions from μGraph ops (DESIGN §5).
//
//	input k            the variable InputName(k)
//	exp, sqrt, ...     the same function of the operand
//	mul_scalar(x, c)   mul(x, scalar): every scalar is the one variable
//	                   Scalar, so its place shows, not its value
//	sub(a, b)          add(a, mul(b, scalar)): a + (-1)·b
//	mul(a, a)          square(a), as the square op's: a norm's sum of
//	                   squares reads alike however a program writes it
//	matmul(a, b)       sum(k, mul(a, b)), k the inner dim (a's last)
//	reduction(x, d)    sum(n, x), n = x's extent along d
//	reduction_to_dimx  sum(n/r, x): each result sums n/r elements (r =
//	                   reduction_dimx)
//	rms_norm(x)        div(x, sqrt(mul(sum(n, square(x)), scalar))), n the
//	                   normalized elements: the root of the mean of squares,
//	                   as a program that writes it out reads
//	forloop_accum x over F iterations, n = x's last dim:
//	  none             sum(F, x)
//	  sum              sum(F·n, x)
//	  mean             mul(sum(F·n, x), scalar); x itself when F·n = 1
//	  rms              sqrt(mul(sum(F·n, square(x)), scalar))
//	  sum_todimx       sum(F·n/r, x)
//	  where x is the same tile in every iteration (Loop.Invariant), the F
//	  terms are equal: F is 1 above, and none, sum and sum_todimx multiply
//	  by the scalar F when F > 1. So the mean of a per-row scale of width 1
//	  that the loop does not walk is the scale.
//	concat             no expression (ErrNoExpr)
//	block input        the device tensor's expression: grid partitioning
//	                   and for-loop tiling are invisible
//	customized         each output is its block graph's output tile's

// InputName is the variable that stands for a kernel graph's k-th input
// (in the order Graph.Inputs lists them). A candidate μGraph and the
// program it replaces share their inputs, and so their variables.
func InputName(k int) string { return "in" + strconv.Itoa(k) }

// ErrNoExpr reports an op that has no abstract expression (concat), or one
// whose operand has none. The oracle cannot judge such a tensor; the search
// should not prune it on expressions.
var ErrNoExpr = errors.New("absexpr: no abstract expression")

// Loop is what a block-level op needs to know of its graph. Kernel-level ops
// take the zero Loop.
type Loop struct {
	Range         int // forloop_range F
	ReductionDimx int // reduction_dimx
	// Invariant is set when an accumulator's operand is the same tile in
	// every iteration (block.Graph.Varies is false for it).
	Invariant bool
}

// elementwise is the expression of element-wise op k with attributes a on
// args, by the op table's abstract form (ugraph.Elementwise.Expr).
func elementwise(k ugraph.OpKind, a ugraph.Attr, args []*Expr) (*Expr, error) {
	switch form := k.Info().Elem.Expr; form {
	case ugraph.ExprScaled:
		return Mul(args[0], Scalar()), nil
	case ugraph.ExprAdd:
		return Add(args...), nil
	case ugraph.ExprSub:
		return Add(args[0], Mul(args[1], Scalar())), nil
	case ugraph.ExprMul:
		if len(args) == 2 && args[0] == args[1] {
			return Square(args[0]), nil // x·x is x², however a program writes it
		}
		return Mul(args...), nil
	case ugraph.ExprDiv:
		return Div(args[0], args[1]), nil
	case ugraph.ExprOpaque:
		op, ok := opaqueOp(k)
		if !ok {
			break
		}
		if ops[op].bounded {
			return bounded(op, a.Scalars[0], a.Scalars[1], args)
		}
		return apply(op, args), nil
	}
	return nil, fmt.Errorf("absexpr: %v has no abstract form", k) // TestEveryElementwiseOpHasAnExpression
}

// ForOp is the expression of the result of a compute op of kind k, with
// attributes a, applied to operands with the given expressions and shapes.
// The search can call it before it makes the op. Input, output and
// customized ops are not compute ops; see ForKernel and ForBlock.
func ForOp(k ugraph.OpKind, a ugraph.Attr, args []*Expr, shapes []ugraph.Shape, loop Loop) (*Expr, error) {
	info := k.Info()
	switch {
	case !k.Valid() || info.Class == ugraph.ClassIO || info.Class == ugraph.ClassCustomized:
		return nil, fmt.Errorf("absexpr: %v is not a compute op", k)
	case len(args) != info.Arity || len(shapes) != info.Arity:
		return nil, fmt.Errorf("absexpr: %v takes %d operands, got %d expressions and %d shapes", k, info.Arity, len(args), len(shapes))
	case k == ugraph.OpConcat:
		return nil, fmt.Errorf("%w for %v", ErrNoExpr, k)
	}
	for i, x := range args {
		if x == nil {
			return nil, fmt.Errorf("%w for operand %d of %v", ErrNoExpr, i, k)
		}
		if !shapes[i].Valid() {
			return nil, fmt.Errorf("absexpr: %v: operand %d has invalid shape %v", k, i, shapes[i])
		}
	}
	x, s := args[0], shapes[0]
	if k.IsElementwise() {
		if err := ugraph.CheckScalars(k, a, shapes); err != nil {
			return nil, err
		}
		return elementwise(k, a, args)
	}
	switch k {
	case ugraph.OpMatmul:
		return sum(s.Last(), Mul(args[0], args[1]))
	case ugraph.OpReduction, ugraph.OpReductionToDimx:
		if a.Dim < 0 || a.Dim >= s.Rank() {
			return nil, fmt.Errorf("absexpr: %v over dim %d of %v", k, a.Dim, s)
		}
		if k == ugraph.OpReduction {
			return sum(s.Dim(a.Dim), x)
		}
		return sumToDimx(k, s.Dim(a.Dim), loop.ReductionDimx, x)
	case ugraph.OpRMSNorm:
		if a.Dim < 0 || a.Dim >= s.Rank() {
			return nil, fmt.Errorf("absexpr: %v from dim %d of %v", k, a.Dim, s)
		}
		n := 1
		for d := a.Dim; d < s.Rank(); d++ {
			n *= s.Dim(d) // at most MaxDim⁴ = 2⁶⁰
		}
		r, err := rootMeanSquare(n, x)
		if err != nil {
			return nil, err
		}
		return Div(x, r), nil
	case ugraph.OpForloopAccum:
		return accumulate(a.Accum, loop, s.Last(), x)
	}
	return nil, fmt.Errorf("absexpr: no expression rule for %v", k)
}

// accumulate is forloop_accum's expression: x over F iterations, n its
// last dim.
func accumulate(acc ugraph.Accum, loop Loop, n int, x *Expr) (*Expr, error) {
	f := loop.Range
	if f < 1 {
		return nil, fmt.Errorf("absexpr: forloop_accum with forloop_range %d", f)
	}
	copies := 1 // equal terms each distinct one stands for
	if loop.Invariant {
		f, copies = 1, f
	}
	var e *Expr
	var err error
	switch acc { // f·n is at most MaxDim², far from overflowing
	case ugraph.AccumNone:
		e, err = sum(f, x)
	case ugraph.AccumSum:
		e, err = sum(f*n, x)
	case ugraph.AccumSumToDimx:
		e, err = sumToDimx(ugraph.OpForloopAccum, f*n, loop.ReductionDimx, x)
	case ugraph.AccumMean: // divides by the copies too
		if f*n == 1 {
			return x, nil
		}
		s, err := sum(f*n, x)
		if err != nil {
			return nil, err
		}
		return Mul(s, Scalar()), nil
	case ugraph.AccumRMS:
		return rootMeanSquare(f*n, x)
	default:
		return nil, fmt.Errorf("absexpr: unknown accumulator %v", acc)
	}
	if err != nil {
		return nil, err
	}
	if copies > 1 {
		e = Mul(e, Scalar())
	}
	return e, nil
}

// rootMeanSquare is the rms of x over n elements written out, as a
// program that computes it from square, reduction, mul_scalar and sqrt
// reads: a norm written either way is one expression.
func rootMeanSquare(n int, x *Expr) (*Expr, error) {
	s, err := sum(n, Square(x))
	if err != nil {
		return nil, err
	}
	return Sqrt(Mul(s, Scalar())), nil
}

// sumToDimx sums n elements in strided groups down to r: each result sums
// n/r of them.
func sumToDimx(k ugraph.OpKind, n, r int, x *Expr) (*Expr, error) {
	if r < 1 || n%r != 0 {
		return nil, fmt.Errorf("absexpr: %v of %d elements to reduction_dimx %d", k, n, r)
	}
	return sum(n/r, x)
}

// ForBlock derives the expression of every tile of b, given the expressions
// of the device tensors its input ops read, in order. It also returns the
// expression of each output op's device tensor, in order. A tile with no
// expression (see ErrNoExpr) is nil.
func ForBlock(b *block.Graph, inputs []*Expr) (tiles, outputs []*Expr, err error) {
	loop := Loop{Range: b.ForloopRange, ReductionDimx: b.ReductionDimx}
	varies := b.Varies()
	tiles = make([]*Expr, len(b.Tensors))
	nIn := 0
	for i := range b.Ops {
		op := &b.Ops[i]
		switch op.Kind {
		case ugraph.OpInput:
			if nIn >= len(inputs) {
				return nil, nil, fmt.Errorf("absexpr: block graph reads input %d of %d", nIn, len(inputs))
			}
			tiles[op.Out] = inputs[nIn]
			nIn++
		case ugraph.OpOutput:
			outputs = append(outputs, tiles[op.In[0]])
		default:
			ins := op.Operands()
			args := make([]*Expr, len(ins))
			shapes := make([]ugraph.Shape, len(ins))
			for j, t := range ins {
				args[j], shapes[j] = tiles[t], b.Tensors[t].Shape
			}
			loop.Invariant = !varies[ins[0]]
			e, err := ForOp(op.Kind, op.Attr, args, shapes, loop)
			if err != nil && !errors.Is(err, ErrNoExpr) {
				return nil, nil, fmt.Errorf("absexpr: block op %d: %w", i, err)
			}
			tiles[op.Out] = e
		}
	}
	if nIn != len(inputs) {
		return nil, nil, fmt.Errorf("absexpr: block graph has %d input ops for %d inputs", nIn, len(inputs))
	}
	return tiles, outputs, nil
}

// ForKernel derives the expression of every tensor of g: the k-th input is
// the variable InputName(k). A tensor with no expression (see ErrNoExpr) is
// nil.
func ForKernel(g *kernel.Graph) ([]*Expr, error) {
	exprs := make([]*Expr, len(g.Tensors))
	nIn := 0
	for i := range g.Ops {
		op := &g.Ops[i]
		args := make([]*Expr, len(op.In))
		shapes := make([]ugraph.Shape, len(op.In))
		for j, t := range op.In {
			args[j], shapes[j] = exprs[t], g.Tensors[t].Shape
		}
		switch op.Kind {
		case ugraph.OpInput:
			exprs[op.Out[0]] = Var(InputName(nIn))
			nIn++
		case ugraph.OpCustomized:
			_, outs, err := ForBlock(op.Block, args)
			if err != nil {
				return nil, fmt.Errorf("absexpr: kernel op %d: %w", i, err)
			}
			if len(outs) != len(op.Out) {
				return nil, fmt.Errorf("absexpr: kernel op %d: %d results for %d block outputs", i, len(op.Out), len(outs))
			}
			for j, t := range op.Out {
				exprs[t] = outs[j]
			}
		default:
			e, err := ForOp(op.Kind, op.Attr, args, shapes, Loop{})
			if err != nil && !errors.Is(err, ErrNoExpr) {
				return nil, fmt.Errorf("absexpr: kernel op %d: %w", i, err)
			}
			exprs[op.Out[0]] = e
		}
	}
	return exprs, nil
}

// Targets are the expressions of g's marked outputs: what an Oracle for the
// program g checks candidates against.
func Targets(g *kernel.Graph) ([]*Expr, error) {
	exprs, err := ForKernel(g)
	if err != nil {
		return nil, err
	}
	if len(g.Outputs) == 0 {
		return nil, errors.New("absexpr: the kernel graph marks no output")
	}
	targets := make([]*Expr, len(g.Outputs))
	for i, t := range g.Outputs {
		if targets[i] = exprs[t]; targets[i] == nil {
			return nil, fmt.Errorf("%w for output %d (tensor %d)", ErrNoExpr, i, t)
		}
	}
	return targets, nil
}
