package ffverify_test

import (
	"testing"

	"github.com/mirage-go/mirage/ffverify"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// rowsProgram is exp(X) for X of m rows by 64: its rows are independent.
func rowsProgram(t *testing.T, m int) *kernel.Graph {
	t.Helper()
	k := newKG()
	return k.outputs(k.op(ugraph.OpExp, k.in(m, 64)))
}

func TestPoolCutsTheFirstKept(t *testing.T) {
	opts := ffverify.Options{Trials: 2, Seed: 3}
	big, err := ffverify.New(rowsProgram(t, 16), opts)
	if err != nil {
		t.Fatal(err)
	}
	other, err := ffverify.New(rowsProgram(t, 8), opts)
	if err != nil {
		t.Fatal(err)
	}
	p := ffverify.NewPool()
	p.Keep("exp", big)
	p.Keep("exp", other) // the first kept stays
	if p.Kept("exp") != big {
		t.Fatal("Keep replaced the first verifier kept")
	}
	small := rowsProgram(t, 4)
	for name, cut := range map[string]func() (*ffverify.Verifier, error){
		"Prefix": func() (*ffverify.Verifier, error) { return p.Prefix("exp", small), nil },
		"Rows":   func() (*ffverify.Verifier, error) { return p.Rows("exp", small) },
	} {
		v, err := cut()
		if err != nil || v == nil {
			t.Fatalf("%s: %v, %v", name, v, err)
		}
		r, err := v.Verify(rowsProgram(t, 4))
		if err != nil || !r.Equivalent {
			t.Errorf("%s: the program at 4 rows against its own cut: %+v, %v", name, r, err)
		}
	}
	if got := p.Reused(); got != 2 {
		t.Errorf("Reused = %d, want 2", got)
	}
	if v := p.Prefix("other", small); v != nil {
		t.Error("Prefix of a key never kept returned a verifier")
	}
	if v, err := p.Rows("other", small); v != nil || err != nil {
		t.Errorf("Rows of a key never kept: %v, %v", v, err)
	}
	p.Drop("exp")
	if p.Kept("exp") != nil {
		t.Error("Drop kept the verifier")
	}
	var none *ffverify.Pool // keeps nothing, and says so
	none.Keep("exp", big)
	if none.Kept("exp") != nil || none.Prefix("exp", small) != nil || none.Reused() != 0 {
		t.Error("a nil pool kept something")
	}
}
