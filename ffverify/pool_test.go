package ffverify_test

import (
	"fmt"
	"sync"
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
	// With m inside the heads, 4 x m x 64, fewer rows are not the first
	// of the memory: neither cut is made, and the caller makes its own.
	heads := func(m int) *kernel.Graph {
		k := newKG()
		return k.outputs(k.op(ugraph.OpExp, k.in(4, m, 64)))
	}
	hv, err := ffverify.New(heads(16), opts)
	if err != nil {
		t.Fatal(err)
	}
	p.Keep("heads", hv)
	if v := p.Prefix("heads", heads(4)); v != nil {
		t.Error("Prefix cut 4 x 4 x 64 from 4 x 16 x 64")
	}
	if v, err := p.Rows("heads", heads(4)); v != nil || err != nil {
		t.Errorf("Rows of 4 x 4 x 64 from 4 x 16 x 64: %v, %v; want neither", v, err)
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

// A pool is shared by the searches of a dynamic run's parts, which keep
// and cut verifiers at once (go test -race checks the locking).
func TestPoolIsSafeForConcurrentUse(t *testing.T) {
	opts := ffverify.Options{Trials: 1, Seed: 5}
	big, err := ffverify.New(rowsProgram(t, 16), opts)
	if err != nil {
		t.Fatal(err)
	}
	small := rowsProgram(t, 2)
	p := ffverify.NewPool()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			key := fmt.Sprint(i % 2)
			for range 20 {
				p.Keep(key, big)
				if v := p.Prefix(key, small); v == nil {
					t.Error("Prefix of a kept verifier returned nil")
				}
				if _, err := p.Rows(key, small); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if got := p.Reused(); got != 8*20*2 {
		t.Errorf("Reused = %d, want %d", got, 8*20*2)
	}
}
