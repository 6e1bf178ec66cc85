package absexpr

import (
	"testing"
)

func TestUnsized(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"X", "X"},
		{"sum(4096, X)", "X"},
		{"sum(8, sum(512, exp(X)))", "exp(X)"},
		{"rms(4096, X)", "rms(1, X)"},
		{"rms(64, sum(2, X))", "rms(1, X)"},
		{"sum(4096, mul(div(X, rms(4096, X)), W))", "mul(div(X, rms(1, X)), W)"},
		{"clamp(0, 6, sum(64, X))", "clamp(0, 6, X)"},
		{"add(sum(64, X), sum(128, X))", "add(X, X)"},
		{"exp(mul(X, W))", "exp(mul(X, W))"}, // nothing sized: itself
	} {
		in, want := MustParse(tt.in), MustParse(tt.want)
		got := Unsized(in)
		if got != want {
			t.Errorf("Unsized(%s) = %s, want %s", in, got, want)
		}
		if again := Unsized(got); again != got {
			t.Errorf("Unsized(%s) = %s: not idempotent", got, again)
		}
	}
}

// TestUnsizedKeepsWhatTargetsHold checks the claim the search's pruning
// rests on (search/reach.go): an expression that is a subexpression of a
// target has an unsized image that is a subexpression of the unsized
// target, for an oracle of unsized targets that decides in Go alone. (Not
// for Z3: its laws do not equate rms(1, x) with sqrt(square(x)), which the
// model does, so Z3 may refuse the image of a rms-def rewrite.) A no from
// that oracle must never hide a yes.
func TestUnsizedKeepsWhatTargetsHold(t *testing.T) {
	oracles := map[*Expr]*Oracle{}
	for _, tt := range queryTable {
		target := Unsized(tt.target)
		if oracles[target] != nil {
			continue
		}
		o, err := NewOracle([]*Expr{target}, Options{NoProver: true})
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		oracles[target] = o
	}
	for _, tt := range queryTable {
		if !tt.want {
			continue
		}
		q := Unsized(MustParse(expand(tt.query)))
		got, err := oracles[Unsized(tt.target)].IsSubexpr(q)
		if err != nil {
			t.Fatal(err)
		}
		if !got {
			t.Errorf("%s is a subexpression of %s, but %s is not of %s (%s)",
				expand(tt.query), tt.target, q, Unsized(tt.target), tt.why)
		}
	}
	for _, tt := range []struct {
		target *Expr
		query  string
	}{
		{attention, attention.String()},
		{attention, "div(sum(8, sum(512, mul(exp($S), V))), sum(8, sum(512, exp($S))))"},
		{rmsNormMatMul, "div(sum(4096, mul(X, W)), rms(4096, X))"},
		{twoSums, "div(div(X, add(A, B)), add(C, D))"},
	} {
		o, err := NewOracle([]*Expr{Unsized(tt.target)}, Options{NoProver: true})
		if err != nil {
			t.Fatal(err)
		}
		q := Unsized(MustParse(expand(tt.query)))
		if !o.MayEqualTarget(q) {
			t.Errorf("%s may equal %s, but %s may not equal %s", expand(tt.query), tt.target, q, Unsized(tt.target))
		}
		o.Close()
	}
}

// TestOracleWithoutProver checks an oracle made with NoProver: it needs no
// Z3, says yes where the normal forms cannot decide, keeps their no, and
// closes without a prover pool.
func TestOracleWithoutProver(t *testing.T) {
	var decidedByZ3, decidedByGo int
	oracles := map[*Expr]*Oracle{}
	for _, tt := range queryTable {
		o := oracles[tt.target]
		if o == nil {
			var err error
			if o, err = NewOracle([]*Expr{tt.target}, Options{NoProver: true}); err != nil {
				t.Fatal(err)
			}
			oracles[tt.target] = o
		}
		got, err := o.IsSubexpr(MustParse(expand(tt.query)))
		if err != nil {
			t.Fatalf("%s: %v", tt.query, err)
		}
		want := tt.want
		if tt.by == byZ3 {
			want = true // undecided in Go: yes
			decidedByZ3++
		} else {
			decidedByGo++
		}
		if got != want {
			t.Errorf("IsSubexpr(%s) without a prover = %v, want %v", expand(tt.query), got, want)
		}
		if z3 := o.Stats().Z3Calls; z3 != 0 {
			t.Errorf("%d Z3 calls without a prover", z3)
		}
	}
	if decidedByZ3 == 0 || decidedByGo == 0 {
		t.Fatalf("the query table has %d rows Z3 decides and %d Go decides: want both", decidedByZ3, decidedByGo)
	}
	for _, o := range oracles {
		o.Close()
		o.Close()
	}
}
