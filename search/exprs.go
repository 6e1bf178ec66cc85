package search

import (
	"errors"
	"fmt"
	"slices"

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
	// unsized is an oracle for the program's unsized outputs
	// (absexpr.Unsized), in Go alone: see unsizedReaches.
	unsized *absexpr.Oracle
}

// judgeMemo memoises judge for one goroutine: the search asks about the
// same op on the same expressions in many states, and deriving an
// expression (its canonical text) costs more than the oracle's cached
// answer. Each worker owns one, so lookups need no locks.
//
// Operands are named by small ids of (expression, shape) pairs, given to
// each tensor or tile as it is created (judgeMemo.id), so that a lookup
// hashes a few words rather than expressions and shapes.
type judgeMemo struct {
	max  int // entries of a map, past which it is cleared
	ids  map[operandKey]uint32
	next uint32 // the last id given; ids are never reused, even after a clear
	// ops are the judgements of a list of op choices on some operands
	// (exprs.blockOps, exprs.kernelOp).
	ops     map[opsKey]span // in arena: the map holds no pointers, which the GC need not scan
	arena   []judgement
	allKept []judgement // see unjudged
	// inputCands are the candidate ops of block states of input ops alone
	// (blockState.inputCands).
	inputCands map[inputCandsKey][]blockCand
	// shapes are the shape rules' verdicts on op choices (shapeOK).
	shapes map[shapeKey]bool
	// unsizeds are the unsized expressions (absexpr.Unsized) of the
	// expressions unsized was asked for.
	unsizeds map[*absexpr.Expr]*absexpr.Expr
	// closures is the memo of closureReaches's judgements, which are
	// mostly of ops the search never meets: kept apart, they do not push
	// the search's own out.
	closures *judgeMemo
	fits     map[[2]ugraph.Shape]pairFit // of reach shapes, in the closures' memo (fit)
}

// inputCandsKey is what the ops on the inputs of a block depend on.
type inputCandsKey struct {
	n      int
	ids    [len(opKey{}.in)]uint32
	varies [len(opKey{}.in)]bool
	loop   [2]int32
}

// maxInputCands bounds a memo's inputCands.
const maxInputCands = 1 << 16

// maxJudgeMemo bounds a memo's entries (its maps are cleared when full).
// Most hits are on recent states' operands, so a memo that stays small
// loses little: on gqa, 1 << 16 searched as fast as 1 << 20, and the
// search's peak memory fell from 2.5 GB to 1 GB.
const maxJudgeMemo = 1 << 16

// maxClosureMemo bounds the entries of judgeMemo.closures: closures judge
// the same ops on the tiles of the same inputs under many configurations.
// On qknorm_gqa, 1 << 18 entries filled five times and judged 2.05 M
// lists anew; 1 << 20 never fills there (1.54 M, nearly all of them
// judged for the first time).
const maxClosureMemo = 1 << 20

// operandKey is what an operand contributes to a judgement.
type operandKey struct {
	expr  uint64                // the expression's ID
	shape [ugraph.MaxRank]int32 // Shape.Extents: no padding, so maps hash the key as plain memory
}

// opsKey is what the judgements of a list of op choices on some operands
// depend on.
//
// Its fields are all 4 bytes wide, with no padding between them, so that
// maps hash it as plain memory: it is looked up for every candidate op.
// (Whether the ops are unary follows from list.)
type opsKey struct {
	list int32     // which choices: see the *List constants, or a single choice's index
	args [2]uint32 // operand ids
	loop [3]int32  // unary: loopKey (accumulators depend on it)
}

// loopKey is what an opsKey holds of the loop of a unary judgement: its
// range, reduction_dimx and whether the operand is invariant.
func loopKey(l absexpr.Loop) [3]int32 {
	var invariant int32
	if l.Invariant {
		invariant = 1
	}
	return [3]int32{int32(l.Range), int32(l.ReductionDimx), invariant}
}

// Names of the lists of op choices for opsKey: the threadblock ones
// (searcher.blockUnary, ...); kernelList + i is pre-defined op choice i
// (of Config.KernelOps) alone, and i alone threadblock op choice i.
const (
	blockUnaryList = -1 - iota
	blockBinaryList
	blockNoncommutativeList
	kernelList = 1 << 16
)

// span is a run of judgements in judgeMemo.arena.
type span struct{ off, n uint32 }

// unjudged returns n judgements that keep their ops, without expressions.
func (m *judgeMemo) unjudged(n int) []judgement {
	for len(m.allKept) < n {
		m.allKept = append(m.allKept, judgement{ok: true})
	}
	return m.allKept[:n]
}

// judgement is the judgement of one op: its expression, and whether the
// op may be added.
type judgement struct {
	e  *absexpr.Expr
	ok bool
}

func newJudgeMemo() *judgeMemo {
	m := sizedJudgeMemo(maxJudgeMemo)
	m.closures = sizedJudgeMemo(maxClosureMemo)
	return m
}

func sizedJudgeMemo(max int) *judgeMemo {
	return &judgeMemo{max: max, ids: map[operandKey]uint32{}, ops: map[opsKey]span{}, inputCands: map[inputCandsKey][]blockCand{},
		shapes: map[shapeKey]bool{}, unsizeds: map[*absexpr.Expr]*absexpr.Expr{}}
}

// unsized returns absexpr.Unsized(e), memoised.
func (m *judgeMemo) unsized(e *absexpr.Expr) *absexpr.Expr {
	u, ok := m.unsizeds[e]
	if !ok {
		if len(m.unsizeds) >= m.max {
			clear(m.unsizeds)
		}
		u = absexpr.Unsized(e)
		m.unsizeds[e] = u
	}
	return u
}

// id names an operand of expression e and shape s; 0 is the operand
// without an expression.
func (m *judgeMemo) id(e *absexpr.Expr, s ugraph.Shape) uint32 {
	if e == nil {
		return 0
	}
	key := operandKey{e.ID(), s.Extents()}
	if id, ok := m.ids[key]; ok {
		return id
	}
	if len(m.ids) >= m.max {
		clear(m.ids)
	}
	m.next++
	m.ids[key] = m.next
	return m.next
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
	unsized := make([]*absexpr.Expr, len(targets))
	for i, t := range targets {
		unsized[i] = absexpr.Unsized(t)
	}
	x := &exprs{oracle: oracle}
	if x.unsized, err = absexpr.NewOracle(unsized, absexpr.Options{NoProver: true}); err != nil {
		oracle.Close()
		return nil, fmt.Errorf("search: %v", err)
	}
	for i := range program.Inputs() {
		x.inputs = append(x.inputs, absexpr.Var(absexpr.InputName(i)))
	}
	return x, nil
}

func (x *exprs) close() {
	x.oracle.Close()
	x.unsized.Close()
}

func (x *exprs) input(i int) *absexpr.Expr { return x.inputs[i] }

// kernelOp returns the expression of pre-defined op choice i (of
// Config.KernelOps) on the kernel tensors in, and whether the op may be
// added.
func (x *exprs) kernelOp(k *kernelState, i int, c OpChoice, in []kernel.TensorID) (*absexpr.Expr, bool) {
	key := opsKey{list: kernelList + int32(i)}
	for j, t := range in {
		if key.args[j] = k.tensors[t].id; key.args[j] == 0 {
			return nil, true // computed from an op without an expression
		}
	}
	js, ok := k.memo.lookup(key, 1)
	if !ok {
		var args [2]*absexpr.Expr
		var shapes [2]ugraph.Shape
		for j, t := range in {
			args[j], shapes[j] = k.tensors[t].expr, k.g.Tensors[t].Shape
		}
		js[0].e, js[0].ok = x.judge(c, args[:len(in)], shapes[:len(in)], absexpr.Loop{})
	}
	return js[0].e, js[0].ok
}

// blockOps judges the threadblock op choices list (indices of
// Config.BlockOps, all unary or all binary; id names the list for the
// memo) on tiles in0 and in1 (-1 for unary ops): their expressions, and
// whether the oracle accepts each. It sees the tiles' shapes as every
// configuration of b's group does (judgedShape); the shape rules are each
// configuration's own (blockState.validIn).
func (x *exprs) blockOps(b *blockState, id int32, list []int, in0, in1 block.TensorID) []judgement {
	m := b.k.memo
	key := opsKey{list: id}
	in := [2]block.TensorID{in0, in1}
	unary, n := in1 < 0, 2
	if unary {
		n = 1
	}
	for j, t := range in[:n] {
		if key.args[j] = b.tiles[t].id; key.args[j] == 0 {
			return m.unjudged(len(list)) // computed from an op without an expression
		}
	}
	loop := absexpr.Loop{Range: b.g.ForloopRange, ReductionDimx: b.g.ReductionDimx}
	if unary {
		loop.Invariant = !b.tiles[in0].varies
		key.loop = loopKey(loop)
	}
	js, ok := m.lookup(key, len(list))
	if ok {
		return js
	}
	var args [2]operand
	for j, t := range in[:n] {
		args[j] = operand{id: key.args[j], expr: b.tiles[t].expr, shape: b.k.s.judgedShape(b.g.Tensors[t].Shape)}
	}
	x.judgeAll(js, b.k.s, list, args[:n], loop)
	return js
}

// operand is a tile as the judgements see it: its operand id in the memo,
// expression and judged shape (searcher.judgedShape).
type operand struct {
	id    uint32
	expr  *absexpr.Expr
	shape ugraph.Shape
}

// judgeOps is blockOps on operands rather than a block state's tiles.
func (x *exprs) judgeOps(s *searcher, m *judgeMemo, id int32, list []int, args []operand, loop absexpr.Loop) []judgement {
	key := opsKey{list: id}
	for j, a := range args {
		if key.args[j] = a.id; a.id == 0 {
			return m.unjudged(len(list))
		}
	}
	if len(args) == 1 {
		key.loop = loopKey(loop)
	}
	js, ok := m.lookup(key, len(list))
	if !ok {
		x.judgeAll(js, s, list, args, loop)
	}
	return js
}

// judgeAll sets js to the judgements of the choices list on args.
func (x *exprs) judgeAll(js []judgement, s *searcher, list []int, args []operand, loop absexpr.Loop) {
	var exprs [2]*absexpr.Expr
	var shapes [2]ugraph.Shape
	for j, a := range args {
		exprs[j], shapes[j] = a.expr, a.shape
	}
	n := len(args)
	for k, i := range list {
		c := s.cfg.BlockOps[i]
		c.Attr = block.OpAttr(c.Kind, c.Attr, shapes[0])
		js[k].e, js[k].ok = x.judge(c, exprs[:n], shapes[:n], loop)
	}
}

// lookup returns the n judgements of key, and true; or, the first time,
// n zero judgements, kept under key, for the caller to fill, and false.
func (m *judgeMemo) lookup(key opsKey, n int) ([]judgement, bool) {
	if sp, ok := m.ops[key]; ok {
		return m.arena[sp.off : sp.off+sp.n], true
	}
	if len(m.ops) >= m.max {
		clear(m.ops)
		m.arena = nil // not truncated: slices of it may still be read
	}
	off := len(m.arena)
	m.arena = slices.Grow(m.arena, n)[:off+n]
	m.ops[key] = span{uint32(off), uint32(n)}
	return m.arena[off:], false
}

// judge derives the expression of c on args and consults the oracle. An
// op without an expression (concat) cannot be judged and is kept, with a
// nil expression; an op whose expression cannot be derived (its shapes
// break a rule the builder will report) or that no output contains is
// pruned. Z3 errors count as "not contained", as DESIGN §5 says of unknown
// answers.
func (x *exprs) judge(c OpChoice, args []*absexpr.Expr, shapes []ugraph.Shape, loop absexpr.Loop) (*absexpr.Expr, bool) {
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
