package absexpr

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestAxiomTableParses(t *testing.T) {
	laws, err := parseAxioms(axioms)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, law := range laws {
		if seen[law.name] {
			t.Errorf("axiom %s appears twice", law.name)
		}
		seen[law.name] = true
	}
}

func TestMalformedAxiomsAreRejected(t *testing.T) {
	for _, ax := range []axiom{
		{name: "unknown guard", lhs: "sum(n, x)", rhs: "x", when: "even(n)"},
		{name: "trigger misses a variable", lhs: "add(x, y)", rhs: "add(y, x)", triggers: []string{"x"}},
		{name: "no usable trigger", lhs: "sum(n*m, x)", rhs: "x"},
		{name: "syntax", lhs: "add(x,", rhs: "x"},
	} {
		if _, err := parseAxioms([]axiom{ax}); err == nil {
			t.Errorf("axiom %q was accepted", ax.name)
		}
	}
}

// assignment is a random choice of values for an axiom's variables, with
// sizes that satisfy its guard.
type assignment struct {
	sizes   map[string]int
	numbers map[string]float64 // tensors as numbers, for the model
	exprs   map[string]*Expr   // tensors as expressions, for signatures
}

func randomAssignment(r *rand.Rand, law parsedAxiom) assignment {
	as := assignment{sizes: map[string]int{}, numbers: map[string]float64{}, exprs: map[string]*Expr{}}
	for _, v := range law.vars {
		if varIsSize(v) {
			as.sizes[v] = []int{2, 3, 4, 64}[r.IntN(4)]
			continue
		}
		as.numbers[v] = 0.5 + 1.5*r.Float64()
		as.exprs[v] = randomExpr(r, 2)
	}
	if law.when != nil { // properDivisor(m, n)
		m := []int{2, 4, 16}[r.IntN(3)]
		as.sizes["m"], as.sizes["n"] = m, m*[]int{2, 3, 8}[r.IntN(3)]
	}
	return as
}

// randomExpr builds a small expression over a few variables, with opaque
// functions and reductions in it.
func randomExpr(r *rand.Rand, depth int) *Expr {
	if depth == 0 || r.IntN(4) == 0 {
		return Var([]string{"A", "B", "C"}[r.IntN(3)])
	}
	x := randomExpr(r, depth-1)
	switch r.IntN(8) {
	case 0:
		return Add(x, randomExpr(r, depth-1))
	case 1:
		return Mul(x, randomExpr(r, depth-1))
	case 2:
		return Div(x, randomExpr(r, depth-1))
	case 3:
		return Sum(8, x)
	case 4:
		return Rms(8, x)
	case 5:
		return Exp(x)
	case 6:
		return Square(x)
	}
	return Clamp(0, 6, x)
}

// model evaluates an axiom term in the numeric model the axiom table
// describes: sum(n, x) = n·x, rms(n, x) = sqrt(n·x²).
func model(t term, as assignment) float64 {
	if t.name != "" {
		if varIsSize(t.name) {
			return float64(as.sizes[t.name])
		}
		return as.numbers[t.name]
	}
	if t.fn == "" {
		return float64(t.num)
	}
	a := make([]float64, len(t.args))
	for i, x := range t.args {
		a[i] = model(x, as)
	}
	switch t.fn {
	case "add":
		return a[0] + a[1]
	case "mul", "*":
		return a[0] * a[1]
	case "div", "/":
		return a[0] / a[1]
	case "sum":
		return a[0] * a[1]
	case "rms":
		return math.Sqrt(a[0] * a[1] * a[1])
	case "sqrt":
		return math.Sqrt(a[0])
	case "square":
		return a[0] * a[0]
	case "exp":
		return math.Exp(a[0])
	}
	panic("model: no meaning for " + t.fn)
}

// holdsInModel tries a law at random points of the model.
func holdsInModel(law parsedAxiom) error {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		as := randomAssignment(r, law)
		l, rr := model(law.lhs, as), model(law.rhs, as)
		if math.Abs(l-rr) > 1e-9*math.Max(math.Abs(l), 1) {
			return fmt.Errorf("at %v %v: %s = %g but %s = %g", as.sizes, as.numbers, law.lhs, l, law.rhs, rr)
		}
	}
	return nil
}

// wrongLaws are plausible mistakes; each must fail the checks, so that the
// checks are known to catch such rows.
var wrongLaws = []axiom{
	{name: "sum-mul twice", lhs: "sum(n, mul(x, y))", rhs: "mul(sum(n, x), sum(n, y))"},
	{name: "div-add by numerator", lhs: "add(div(z, x), div(z, y))", rhs: "div(z, add(x, y))"},
	{name: "div-div flipped", lhs: "div(div(x, y), z)", rhs: "div(mul(x, z), y)"},
	{name: "sum-nest adds", lhs: "sum(n, sum(m, x))", rhs: "sum(n*n, x)"},
	{name: "exp of a sum", lhs: "exp(add(x, y))", rhs: "add(exp(x), exp(y))"},
}

func TestAxiomsHoldInTheModel(t *testing.T) {
	laws, err := parseAxioms(axioms)
	if err != nil {
		t.Fatal(err)
	}
	for _, law := range laws {
		if err := holdsInModel(law); err != nil {
			t.Errorf("axiom %s: %v", law.name, err)
		}
	}
	wrong, err := parseAxioms(wrongLaws)
	if err != nil {
		t.Fatal(err)
	}
	for _, law := range wrong {
		if holdsInModel(law) == nil {
			t.Errorf("the model check misses the wrong law %q", law.name)
		}
	}
}

// instantiate builds an axiom side as an expression.
func instantiate(t term, as assignment) *Expr {
	if t.name != "" {
		return as.exprs[t.name]
	}
	size := func(t term) int {
		if t.name != "" {
			return as.sizes[t.name]
		}
		if t.fn == "" {
			return t.num
		}
		l, r := as.sizes[t.args[0].name], as.sizes[t.args[1].name]
		if t.fn == "*" {
			return l * r
		}
		return l / r
	}
	switch op := opByName[t.fn]; op {
	case OpSum:
		return Sum(size(t.args[0]), instantiate(t.args[1], as))
	case OpRms:
		return Rms(size(t.args[0]), instantiate(t.args[1], as))
	case OpAdd:
		return Add(instantiate(t.args[0], as), instantiate(t.args[1], as))
	case OpMul:
		return Mul(instantiate(t.args[0], as), instantiate(t.args[1], as))
	case OpDiv:
		return Div(instantiate(t.args[0], as), instantiate(t.args[1], as))
	case OpPow:
		return Pow(instantiate(t.args[0], as), instantiate(t.args[1], as))
	default:
		return unary(op, instantiate(t.args[0], as))
	}
}

// sigKey writes e's signature as text, which is the same for equal
// signatures whatever sigTable computed them.
func sigKey(e *Expr) string {
	st := newSigTable()
	return sigText(st, st.of(e))
}

// sigText writes signature s of st as {vars|Σ|atoms}, an atom as its
// function and its operands' signatures, each list sorted.
func sigText(st *sigTable, s *set) string {
	names := map[uint32]string{}
	for name, id := range st.vars {
		names[id] = name
	}
	atoms := map[uint32]sigAtom{}
	for a, id := range st.atoms {
		atoms[id] = a
	}
	var text func(s *set) string
	text = func(s *set) string {
		var vars, as []string
		reduce := false
		s.each(func(id uint32) {
			a, isAtom := atoms[id]
			switch {
			case id == reduces:
				reduce = true
			case !isAtom:
				vars = append(vars, names[id])
			default:
				t := a.op.String()
				if a.op == OpClamp {
					t += "[" + formatFloat(math.Float64frombits(a.lo)) + "," + formatFloat(math.Float64frombits(a.hi)) + "]"
				}
				for _, arg := range a.args[:ops[a.op].arity] {
					t += text(arg)
				}
				as = append(as, t)
			}
		})
		slices.Sort(vars)
		slices.Sort(as)
		sigma := ""
		if reduce {
			sigma = "|Σ"
		}
		return "{" + strings.Join(vars, ",") + sigma + "|" + strings.Join(as, ",") + "}"
	}
	return text(s)
}

// keepsSignature checks that both sides of a law have one signature, which
// is what makes the Go-side "no" sound.
func keepsSignature(law parsedAxiom) error {
	r := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		as := randomAssignment(r, law)
		l, rr := instantiate(law.lhs, as), instantiate(law.rhs, as)
		if sigKey(l) != sigKey(rr) {
			return fmt.Errorf("%s has signature %s but %s has %s", l, sigKey(l), rr, sigKey(rr))
		}
	}
	return nil
}

func TestSignatureInvariant(t *testing.T) {
	laws, err := parseAxioms(axioms)
	if err != nil {
		t.Fatal(err)
	}
	for _, law := range laws {
		if err := keepsSignature(law); err != nil {
			t.Errorf("axiom %s breaks the signature invariant: %v", law.name, err)
		}
	}
	wrong, err := parseAxioms(wrongLaws[4:]) // exp of a sum changes the atoms
	if err != nil {
		t.Fatal(err)
	}
	if keepsSignature(wrong[0]) == nil {
		t.Errorf("the invariant check misses %q", wrong[0].name)
	}
}

// TestOperandSignaturesShrink checks the other half: an operand's signature
// is within its op's, for every op.
func TestOperandSignaturesShrink(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for op := OpAdd; op < numOps; op++ {
		if !op.valid() {
			continue
		}
		for range 50 {
			x, y := randomExpr(r, 3), randomExpr(r, 3)
			var e *Expr
			switch {
			case op == OpSum || op == OpRms:
				e = map[Op]func(int, *Expr) *Expr{OpSum: Sum, OpRms: Rms}[op](16, x)
			case op == OpClamp:
				e = Clamp(0, 1, x)
			case ops[op].arity == 1:
				e = unary(op, x)
			default:
				e = map[Op]func(a, b *Expr) *Expr{
					OpAdd: func(a, b *Expr) *Expr { return Add(a, b) },
					OpMul: func(a, b *Expr) *Expr { return Mul(a, b) },
					OpDiv: Div, OpPow: Pow,
				}[op](x, y)
			}
			st := newSigTable()
			whole := st.of(e)
			for i := range e.NumArgs() {
				if part := st.of(e.Arg(i)); !subset(part, whole) {
					t.Errorf("%s: operand %s has signature %s, not within %s", e, e.Arg(i), sigText(st, part), sigText(st, whole))
				}
			}
		}
	}
}
