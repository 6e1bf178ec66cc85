package absexpr

import (
	"errors"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/absexpr/z3"
)

// requireZ3 skips a test that needs Z3 when the library cannot be loaded,
// saying why; CI installs libz3-dev, so there they run.
func requireZ3(t testing.TB) {
	t.Helper()
	if err := z3.Available(); err != nil {
		t.Skipf("needs Z3: %v", err)
	}
}

// The programs of the query table, written as the derivation gives them.
var (
	// rms_norm(X) @ W with X 16×4096 and W 4096×6144.
	rmsNormMatMul = MustParse("sum(4096, mul(div(X, rms(4096, X)), W))")
	// silu(X @ W1) * (X @ W2).
	gatedMLP = MustParse("mul(silu(sum(4096, mul(X, W1))), sum(4096, mul(X, W2)))")
	// softmax(Q Kᵀ) V: head dim 64, 4096 keys.
	attention = MustParse("sum(4096, mul(div(exp(sum(64, mul(Q, K))), sum(4096, exp(sum(64, mul(Q, K))))), V))")
	// softmax(Q Kᵀ·c) V, scaled scores (derive.go writes mul_scalar's c as
	// the variable scalar).
	scaledAttention = MustParse("sum(4096, mul(div(exp(mul(scalar, sum(64, mul(Q, K)))), sum(4096, exp(mul(scalar, sum(64, mul(Q, K)))))), V))")
	// X / ((A + B)·(C + D)).
	twoSums = MustParse("div(X, mul(add(A, B), add(C, D)))")
	// rms_norm(X + alpha·(rms_norm(H) + X)) over a hidden size of 4096.
	nTrans = func() *Expr {
		h := MustParse("div(H, rms(4096, H))")
		y := Add(Var("X"), Mul(Var("alpha"), Add(h, Var("X"))))
		return Div(y, Rms(4096, y))
	}()
)

// decidedBy says which part of the oracle answers a query.
type decidedBy string

const (
	byGo decidedBy = "go" // the structural or signature check in Go
	byZ3 decidedBy = "z3"
)

// S is the attention score, and Y the sum nTrans normalizes.
const (
	S = "sum(64, mul(Q, K))"
	Y = "add(X, mul(alpha, add(div(H, rms(4096, H)), X)))"
)

func expand(s string) string {
	return strings.NewReplacer("$S", S, "$Y", Y).Replace(s)
}

var queryTable = []struct {
	target *Expr
	query  string // $S and $Y stand for the score and nTrans's sum
	want   bool
	by     decidedBy
	why    string
}{
	// RMSNorm + MatMul.
	{rmsNormMatMul, "sum(4096, mul(div(X, rms(4096, X)), W))", true, byGo, "the program itself (reflexive)"},
	{rmsNormMatMul, "div(X, rms(4096, X))", true, byGo, "the normalized input is an operand"},
	{rmsNormMatMul, "rms(4096, X)", true, byGo, "the rms of the row is a subterm"},
	{rmsNormMatMul, "sum(64, mul(div(X, rms(4096, X)), W))", true, byGo, "a per-iteration tile of the matmul on the normalized input (64 divides 4096)"},
	{rmsNormMatMul, "div(sum(4096, mul(X, W)), rms(4096, X))", true, byGo, "the fused form: matmul first, then divide (sum-div, mul-div)"},
	{rmsNormMatMul, "sum(64, mul(X, W))", true, byGo, "a matmul tile over 64 of the 4096 inputs, before normalizing (sum-div, then sum-split)"},
	{rmsNormMatMul, "div(sum(64, mul(X, W)), rms(4096, X))", true, byGo, "a normalized tile of the fused form"},
	{rmsNormMatMul, "mul(X, W)", true, byGo, "the element products, before the division moves in (mul-div)"},
	{rmsNormMatMul, "sum(1024, square(X))", true, byGo, "a block's share of the sum of squares (rms-def, then sum-split)"},
	{rmsNormMatMul, "sqrt(sum(4096, square(X)))", true, byGo, "the rms, accumulated as a sum of squares (rms-def)"},
	{rmsNormMatMul, "div(W, rms(4096, X))", true, byGo, "(X/r)·W = X·(W/r) by mul-div twice: expressions cannot tell W's rows from X's"},
	{rmsNormMatMul, "exp(X)", false, byGo, "the program has no exp"},
	{rmsNormMatMul, "rms(4096, W)", false, byGo, "only X's rms is ever taken"},
	{rmsNormMatMul, "sum(3, mul(X, W))", false, byGo, "3 does not divide 4096, so no tile sums 3 products"},
	{rmsNormMatMul, "sum(4096, mul(X, rms(4096, X)))", false, byGo, "multiplies by the rms where the program divides by it"},
	{rmsNormMatMul, "mul(W, W)", false, byGo, "the program never multiplies W by itself"},
	{rmsNormMatMul, "rms(64, X)", false, byGo, "the rms of a 64-element tile is not the rms of the row"},
	// Search queries that Z3 gave up on (testdata/search_rmsnorm_matmul.tsv,
	// in0 = X, in1 = W). The target's normal form is the one monomial
	// 4096·W·X / (1·sqrt(4096·square(1·X))); its pieces are that, its
	// denominator, the sqrt's operand 4096·square(1·X), and 1·X.
	{rmsNormMatMul, "add(div(X, rms(4096, X)), div(W, rms(4096, X)))", false, byGo, "two monomials, and every piece has one: operands only ever drop monomials"},
	{rmsNormMatMul, "sum(6144, mul(sum(2048, mul(X, W)), sum(64, W)))", false, byGo, "W twice in one monomial, which no piece has"},
	{rmsNormMatMul, "sum(8192, mul(X, W))", false, byGo, "8192·W·X: 8192 does not divide 4096"},
	{rmsNormMatMul, "div(mul(X, W), rms(64, X))", false, byGo, "its denominator, sqrt(64·square(X)), divides no denominator of a piece"},

	// Gated MLP.
	{gatedMLP, "silu(sum(4096, mul(X, W1)))", true, byGo, "the gate"},
	{gatedMLP, "sum(4096, mul(X, W2))", true, byGo, "the up projection"},
	{gatedMLP, "sum(64, mul(X, W2))", true, byGo, "a per-iteration tile of the up projection"},
	{gatedMLP, "mul(X, W1)", true, byGo, "the gate's element products"},
	{gatedMLP, "mul(silu(sum(4096, mul(X, W1))), sum(64, mul(X, W2)))", true, byGo, "the gate times one tile of the up projection, summed over tiles later (sum-split, sum-mul)"},
	{gatedMLP, "silu(sum(64, mul(X, W1)))", false, byGo, "silu of a partial sum: the program applies silu after the whole sum"},
	{gatedMLP, "silu(sum(4096, mul(X, W2)))", false, byGo, "silu on the wrong branch"},
	{gatedMLP, "sum(4096, mul(X, silu(W1)))", false, byGo, "silu of the weights, which the program never takes"},
	{gatedMLP, "mul(W1, W2)", false, byGo, "the two weights are never multiplied together"},
	{gatedMLP, "mul(X, W1, W2)", false, byGo, "W1 only ever appears inside the silu"},
	// Search queries that Z3 gave up on (testdata/search_gated_mlp.tsv, in0
	// = X, in1 = W1, in2 = W2). The pieces: 4096·W2·X·silu(4096·W1·X) and
	// the silu's operand 4096·W1·X.
	{gatedMLP, "sum(8192, mul(W1, sum(1024, mul(X, W1))))", false, byGo, "W1 twice, and a size no piece's divides"},
	{gatedMLP, "mul(silu(sum(4096, mul(X, W1))), sum(8192, mul(X, W2)))", false, byGo, "the whole up projection and then some: 8192 does not divide 4096"},
	{gatedMLP, "add(X, mul(X, W2))", false, byGo, "two monomials, and every piece has one"},

	// Attention.
	{attention, "$S", true, byGo, "the scores"},
	{attention, "sum(16, mul(Q, K))", true, byGo, "a partial dot product over 16 of the 64 head dims"},
	{attention, "exp($S)", true, byGo, "the softmax numerator"},
	{attention, "sum(4096, exp($S))", true, byGo, "the softmax denominator"},
	{attention, "sum(1024, exp($S))", true, byGo, "one of 4 blocks' partial denominators"},
	{attention, "mul(exp($S), V)", true, byGo, "unnormalized weights times values (mul-div)"},
	{attention, "sum(1024, mul(exp($S), V))", true, byGo, "one of 4 blocks' partial numerators (sum-div, sum-split)"},
	{attention, "div(sum(4096, mul(exp($S), V)), sum(4096, exp($S)))", true, byGo, "normalize once, after accumulating (sum-div)"},
	{attention, "div(sum(1024, mul(exp($S), V)), sum(4096, exp($S)))", true, byGo, "a block's partial numerator over the full denominator"},
	{attention, "sum(4, sum(1024, mul(exp($S), V)))", true, byGo, "4 partial numerators accumulated: sum over 4 of sums over 1024 (sum-nest)"},
	{attention, "exp(mul(Q, K))", false, byGo, "exp before the sum over the head dim"},
	{attention, "sum(64, exp(mul(Q, K)))", false, byGo, "exp before the sum, then summed"},
	{attention, "exp(sum(16, mul(Q, K)))", false, byGo, "exp of a partial dot product"},
	{attention, "mul(Q, V)", false, byGo, "Q only ever appears inside the exp"},
	{attention, "sum(4096, mul(exp($S), K))", false, byGo, "weights times keys instead of values"},
	{attention, "div(sum(1024, mul(exp($S), V)), sum(1024, exp($S)))", false, byGo, "a block's numerator over the block's own denominator: needs rescaling to combine"},
	// Search queries that Z3 gave up on (testdata/search_gqa.tsv, in0 = Q,
	// in1 = K, in2 = V), refuted by normal forms (normal.go).
	{attention, "sum(128, mul(Q, K))", false, byGo, "normal form 128·K·Q: the scores' 64·K·Q is the only monomial with Q and K, and 128 does not divide 64"},
	{attention, "sum(4096, mul(K, sum(2, Q)))", false, byGo, "8192·K·Q: 8192 does not divide 64 either"},
	{attention, "sum(64, mul(Q, sum(2, Q)))", false, byGo, "128·Q·Q: no monomial of any piece has Q twice"},
	{attention, "div(Q, sum(2, Q))", false, byGo, "1·Q / (2·Q): the only denominator is the softmax's, 4096·exp(64·K·Q)"},

	// nTrans.
	{nTrans, "div(H, rms(4096, H))", true, byGo, "the inner rms_norm"},
	{nTrans, "rms(4096, $Y)", true, byGo, "the outer rms"},
	{nTrans, "add(div(H, rms(4096, H)), X)", true, byGo, "the inner residual"},
	{nTrans, "mul(alpha, div(H, rms(4096, H)))", true, byGo, "alpha distributed over the inner residual (distrib)"},
	{nTrans, "mul(alpha, X)", true, byGo, "the other half of the distribution"},
	{nTrans, "add(X, mul(alpha, X))", true, byGo, "the X terms gathered (distrib, add-assoc)"},
	{nTrans, "add(X, mul(alpha, div(H, rms(4096, H))), mul(alpha, X))", true, byGo, "the whole sum, distributed"},
	{nTrans, "div(mul(alpha, H), rms(4096, H))", true, byGo, "alpha scales H before the division (mul-div)"},
	{nTrans, "mul(alpha, H)", true, byGo, "the numerator of the previous row"},
	{nTrans, "sum(1024, square($Y))", true, byGo, "a block's share of the outer sum of squares (rms-def, sum-split)"},
	{nTrans, "rms(4096, X)", false, byGo, "the rms of X alone is never taken"},
	{nTrans, "div(X, rms(4096, X))", false, byGo, "normalizing X alone"},
	{nTrans, "mul(H, X)", false, byGo, "H and X are added, never multiplied"},
	{nTrans, "add(H, X)", false, byGo, "H is normalized before it meets X"},
	// Scaled attention: where the scale is applied shows.
	{scaledAttention, "exp(mul(scalar, sum(64, mul(Q, K))))", true, byGo, "the scaled scores' exp"},
	{scaledAttention, "exp(sum(64, mul(mul(scalar, Q), K)))", true, byGo, "Q scaled before the product (mul-assoc, sum-mul)"},
	{scaledAttention, "mul(scalar, exp(sum(64, mul(Q, K))))", false, byGo, "scaled after the exp: another function"},
	{scaledAttention, "exp(sum(64, mul(Q, K)))", false, byGo, "the unscaled scores' exp"},

	// Two normalizations in a row: the denominator is a product of two sums,
	// whose quotients the normal forms leave to Z3.
	{twoSums, "div(X, add(A, B))", true, byZ3, "the first quotient (div-div)"},
	{twoSums, "div(X, add(A, C))", false, byZ3, "A + C divides neither sum"},
	{twoSums, "div(div(X, add(C, D)), add(A, B))", true, byGo, "the target, written with div-div"},
}

func TestQueryTable(t *testing.T) {
	requireZ3(t)
	oracles := map[*Expr]*Oracle{}
	for _, tt := range queryTable {
		if oracles[tt.target] == nil {
			o, err := NewOracle([]*Expr{tt.target}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer o.Close()
			oracles[tt.target] = o
		}
	}
	for _, tt := range queryTable {
		q := MustParse(expand(tt.query))
		t.Run(q.Key(), func(t *testing.T) {
			o := oracles[tt.target]
			before := o.Stats()
			got, err := o.IsSubexpr(q)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("IsSubexpr = %v, want %v: %s", got, tt.want, tt.why)
			}
			after := o.Stats()
			if by := decidedBy(map[bool]string{true: "z3", false: "go"}[after.Z3Calls > before.Z3Calls]); by != tt.by {
				t.Errorf("decided by %s, want %s", by, tt.by)
			}
		})
	}
}

// TestGoDecisionsAgreeWithZ3 asks Z3 the queries that Go decides: Go's yes
// must be provable, and Go's no must not be.
func TestGoDecisionsAgreeWithZ3(t *testing.T) {
	requireZ3(t)
	laws, err := parseAxioms(axioms)
	if err != nil {
		t.Fatal(err)
	}
	provers := map[*Expr]*prover{}
	for _, tt := range queryTable {
		if tt.by != byGo {
			continue
		}
		p := provers[tt.target]
		if p == nil {
			p, err = newProver([]*Expr{tt.target}, laws, Options{}.withDefaults().solverOptions())
			if err != nil {
				t.Fatal(err)
			}
			defer p.close()
			provers[tt.target] = p
		}
		q := MustParse(expand(tt.query))
		r, err := p.check(q)
		if err != nil {
			t.Fatal(err)
		}
		if (r == z3.Unsat) != tt.want {
			t.Errorf("%s: Z3 says %v, Go says %v", q, r, tt.want)
		}
	}
}

func TestNewOracleNeedsATarget(t *testing.T) {
	if _, err := NewOracle(nil, Options{}); err == nil {
		t.Error("NewOracle(nil) succeeded")
	}
}

func TestClosedOracle(t *testing.T) {
	requireZ3(t)
	o, err := NewOracle([]*Expr{twoSums}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	o.Close()
	// Go still decides what it can; Z3 is gone.
	if ok, err := o.IsSubexpr(MustParse("add(A, B)")); !ok || err != nil {
		t.Errorf("structural query after Close = %v, %v", ok, err)
	}
	if ok, err := o.IsSubexpr(MustParse("mul(X, A)")); ok || err != nil {
		t.Errorf("query refuted by normal forms after Close = %v, %v", ok, err)
	}
	if _, err := o.IsSubexpr(MustParse("div(X, add(A, C))")); !errors.Is(err, ErrClosed) {
		t.Errorf("Z3 query after Close: error %v, want ErrClosed", err)
	}
	o.Close() // idempotent
}

func TestMayEqualTarget(t *testing.T) {
	requireZ3(t)
	terms := func(prefix string) string {
		var s []string
		for i := range 20 {
			s = append(s, prefix+string(rune('a'+i)))
		}
		return "add(" + strings.Join(s, ", ") + ")"
	}
	tooLarge := MustParse("mul(" + terms("A") + ", " + terms("B") + ")") // 400 monomials
	for _, tt := range []struct {
		target *Expr
		query  string
		want   bool
	}{
		{attention, attention.String(), true},
		// The partial-sum form: both sums split, the division last.
		{attention, "div(sum(8, sum(512, mul(exp($S), V))), sum(8, sum(512, exp($S))))", true},
		{attention, "sum(4096, mul(exp($S), V))", false}, // unnormalised
		{attention, "sum(4096, exp($S))", false},         // a subexpression only
		{attention, "div(sum(2048, mul(exp($S), V)), sum(4096, exp($S)))", false},
		{rmsNormMatMul, "div(sum(4096, mul(X, W)), rms(4096, X))", true},
		{rmsNormMatMul, "sum(4096, mul(X, W))", false},
		{twoSums, "div(div(X, add(A, B)), add(C, D))", true},
		{twoSums, "div(X, add(A, B))", false},
		{tooLarge, "Aa", true}, // no normal form to tell by
	} {
		o, err := NewOracle([]*Expr{tt.target}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		q := MustParse(expand(tt.query))
		if got := o.MayEqualTarget(q); got != tt.want {
			t.Errorf("target %s: MayEqualTarget(%s) = %v, want %v", tt.target, q, got, tt.want)
		}
		o.Close()
	}
}

// TestOraclesShareExpressions asks two oracles of different targets, in
// turns, about the same expressions: each keeps its own answers, though
// an expression caches only one oracle's (Expr.slot) and one normal form
// (Expr.form), the first asker's.
func TestOraclesShareExpressions(t *testing.T) {
	requireZ3(t)
	a, err := NewOracle([]*Expr{rmsNormMatMul}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := NewOracle([]*Expr{gatedMLP}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	type asker struct {
		name        string
		o           *Oracle
		sub, equals bool
	}
	for _, tt := range []struct {
		query       string
		subA, subB  bool // IsSubexpr of a's target, of b's
		equalA, eqB bool // MayEqualTarget
		bFirst      bool // b asks first, and claims the slots
	}{
		{"sum(4096, mul(X, W))", true, false, false, false, false},
		{"sum(4096, mul(X, W1))", false, true, false, false, false},
		{"rms(4096, X)", true, false, false, false, true},
		{"mul(silu(sum(4096, mul(X, W1))), sum(4096, mul(X, W2)))", false, true, false, true, false},
		// New expressions equal to a's target, asked by b first.
		{"div(sum(4096, mul(W, X)), rms(4096, X))", true, false, true, false, true},
		{"sum(4096, mul(W, div(X, rms(4096, X))))", true, false, true, false, true},
	} {
		q := MustParse(tt.query)
		order := []asker{{"a", a, tt.subA, tt.equalA}, {"b", b, tt.subB, tt.eqB}}
		if tt.bFirst {
			order[0], order[1] = order[1], order[0]
		}
		for round := range 2 {
			for _, c := range order {
				got, err := c.o.IsSubexpr(q)
				if err != nil || got != c.sub {
					t.Errorf("round %d: oracle %s: IsSubexpr(%s) = %v, %v; want %v", round, c.name, q, got, err, c.sub)
				}
				if got := c.o.MayEqualTarget(q); got != c.equals {
					t.Errorf("round %d: oracle %s: MayEqualTarget(%s) = %v, want %v", round, c.name, q, got, c.equals)
				}
			}
		}
	}
}
