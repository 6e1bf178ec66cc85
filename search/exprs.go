package search

import (
	"errors"
	"fmt"
	"unique"

	"github.com/mirage-go/mirage/absexpr"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// exprs derives the abstract expression of each op the search adds and asks
// the oracle whether the program's outputs contain it.
type exprs struct {
	inputs []*absexpr.Expr // per program input
	oracle *absexpr.Oracle
}

// judgeMemo memoises judge for one goroutine: the search asks about the
// same op on the same expressions in many states, and deriving an
// expression (its canonical text) costs more than the oracle's cached
// answer. Each worker owns one, so lookups need no locks.
type judgeMemo map[judgeKey]judgement

// maxJudgeMemo bounds a memo's entries (it is cleared when full).
const maxJudgeMemo = 1 << 20

// judgeKey is what judge's answer depends on.
type judgeKey struct {
	choice OpChoice
	args   [2]unique.Handle[string]
	shapes [2]ugraph.Shape
	loop   absexpr.Loop
}

type judgement struct {
	e  *absexpr.Expr
	ok bool
}

func newExprs(program *kernel.Graph) (*exprs, error) {
	targets, err := absexpr.Targets(program)
	if err != nil {
		return nil, fmt.Errorf("search: abstract expressions of the program: %v", err)
	}
	oracle, err := absexpr.NewOracle(targets, absexpr.Options{})
	if err != nil {
		return nil, fmt.Errorf("search: %v", err)
	}
	x := &exprs{oracle: oracle}
	for i := range program.Inputs() {
		x.inputs = append(x.inputs, absexpr.Var(absexpr.InputName(i)))
	}
	return x, nil
}

func (x *exprs) close() { x.oracle.Close() }

func (x *exprs) input(i int) *absexpr.Expr { return x.inputs[i] }

// kernelOp returns the expression of pre-defined op c on the kernel tensors
// in, and whether the op may be added.
func (x *exprs) kernelOp(k *kernelState, c OpChoice, in []kernel.TensorID) (*absexpr.Expr, bool) {
	var args [2]*absexpr.Expr
	var shapes [2]ugraph.Shape
	for i, t := range in {
		args[i], shapes[i] = k.expr[t], k.g.Tensors[t].Shape
	}
	return x.judge(k.memo, c, args[:len(in)], shapes[:len(in)], absexpr.Loop{})
}

// blockOp returns the expression of threadblock op c on the tiles in, and
// whether the op may be added.
func (x *exprs) blockOp(b *blockState, c OpChoice, in []block.TensorID) (*absexpr.Expr, bool) {
	var args [2]*absexpr.Expr
	var shapes [2]ugraph.Shape
	for i, t := range in {
		args[i], shapes[i] = b.expr[t], b.g.Tensors[t].Shape
	}
	loop := absexpr.Loop{Range: b.g.ForloopRange, ReductionDimx: b.g.ReductionDimx}
	c.Attr = block.OpAttr(c.Kind, c.Attr, shapes[0])
	return x.judge(b.k.memo, c, args[:len(in)], shapes[:len(in)], loop)
}

// judge derives the expression and consults the oracle. An op without an
// expression (concat, or anything computed from one) cannot be judged and
// is kept, with a nil expression; an op whose expression cannot be derived
// (its shapes break a rule the builder will report) or that no output
// contains is pruned. Z3 errors count as "not contained", as DESIGN §5
// says of unknown answers.
func (x *exprs) judge(memo judgeMemo, c OpChoice, args []*absexpr.Expr, shapes []ugraph.Shape, loop absexpr.Loop) (*absexpr.Expr, bool) {
	key := judgeKey{choice: c}
	if c.Kind == ugraph.OpForloopAccum || c.Kind == ugraph.OpReductionToDimx {
		key.loop = loop // no other op's expression depends on it
	}
	for i, a := range args {
		if a == nil {
			return nil, true // computed from an op without an expression
		}
		key.args[i] = a.Handle()
		key.shapes[i] = shapes[i]
	}
	if j, ok := memo[key]; ok {
		return j.e, j.ok
	}
	e, ok := x.derive(c, args, shapes, loop)
	if len(memo) >= maxJudgeMemo {
		clear(memo)
	}
	memo[key] = judgement{e, ok}
	return e, ok
}

func (x *exprs) derive(c OpChoice, args []*absexpr.Expr, shapes []ugraph.Shape, loop absexpr.Loop) (*absexpr.Expr, bool) {
	e, err := absexpr.ForOp(c.Kind, c.Attr, args, shapes, loop)
	switch {
	case errors.Is(err, absexpr.ErrNoExpr):
		return nil, true
	case err != nil:
		return nil, false
	}
	ok, err := x.oracle.IsSubexpr(e)
	return e, ok && err == nil
}
