package ffverify_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/ffverify"
	"github.com/mirage-go/mirage/internal/memlimit"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// TestMemoryBound: work whose draws would not fit in Options.MaxBytes is
// refused before anything is allocated, with the memory it needs.
func TestMemoryBound(t *testing.T) {
	// exp of a legal 32768x32768 input: the input read whole and the
	// result, 8 GiB each.
	g := newKG()
	huge := g.outputs(g.op(ugraph.OpExp, g.in(32768, 32768)))
	// A candidate for a·b (1x32768 by 32768x1) that sums the 8 GiB outer
	// product b·a instead.
	dot := func(outer bool) *kernel.Graph {
		g := newKG()
		a, b := g.in(1, 32768), g.in(32768, 1)
		if !outer {
			return g.outputs(g.op(ugraph.OpMatmul, a, b))
		}
		ba := g.op(ugraph.OpMatmul, b, a)
		return g.outputs(g.opA(ugraph.OpReduction, dim(0), g.opA(ugraph.OpReduction, dim(1), ba)))
	}
	// Outputs by the thousand: comparing every pair of outputs of one
	// shape takes memory quadratic in their number.
	g = newKG()
	x := g.in(1)
	outs := make([]kernel.TensorID, 20000)
	for i := range outs {
		outs[i] = g.op(ugraph.OpExp, x)
	}
	many := g.outputs(outs...)
	for _, c := range []struct {
		name string
		run  func() error
		need int64  // at least
		want string // the error
	}{
		{"program", func() error { _, err := ffverify.New(huge, ffverify.Options{}); return err }, 24 << 30,
			"ffverify: program: evaluating the program (keeping its outputs on 2 draws) needs 24 GiB of memory, more than the limit of 4 GiB; a draw peaks at op 1 (exp) with 16 GiB"},
		{"program and candidate", func() error { _, err := ffverify.Equivalent(huge, huge, ffverify.Options{}); return err }, 32 << 30,
			"ffverify: evaluating the program and the candidate on one draw needs 32 GiB of memory, more than the limit of 4 GiB; the program peaks at op 1 (exp) with 16 GiB, the candidate peaks at op 1 (exp) with 16 GiB"},
		{"candidate", func() error {
			_, err := must(ffverify.New(dot(false), ffverify.Options{})).Verify(dot(true))
			return err
		}, 8 << 30, "ffverify: candidate: evaluating it needs 8 GiB of memory, more than the limit of 4 GiB; a draw peaks at op 3 (reduction) with 8 GiB"},
		{"a bound of 1 KiB", func() error { _, err := ffverify.Equivalent(mm(), mm(), ffverify.Options{MaxBytes: 1024}); return err }, 6 << 10,
			"more than the limit of 1 KiB"},
		{"20000 outputs", func() error { _, err := ffverify.Equivalent(many, many, ffverify.Options{}); return err }, 20000 * 20000 * 33,
			"ffverify: evaluating the program and the candidate on one draw needs 12.3 GiB of memory"},
		// A Verifier keeps the program's outputs on every draw.
		{"many draws kept", func() error {
			_, err := ffverify.New(rm(), ffverify.Options{Trials: 1000, MaxBytes: 64 << 10})
			return err
		}, 1000 * 4 * 48 * 8,
			"(keeping its outputs on 1000 draws)"},
	} {
		err := c.run()
		var me *memlimit.Error
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &me) || me.Need < c.need {
			t.Errorf("%s: err = %v, want a *memlimit.Error of at least %d bytes containing %q", c.name, err, c.need, c.want)
		}
	}
}

// TestEquivalentMemoryDoesNotGrowWithTrials: Equivalent keeps a draw only
// while it compares it, so a bound that one draw fits runs any number of
// draws, where keeping them all (as a Verifier does) would not fit.
func TestEquivalentMemoryDoesNotGrowWithTrials(t *testing.T) {
	opts := ffverify.Options{Trials: 1000, MaxBytes: 64 << 10}
	if r, err := ffverify.Equivalent(rm(), rm(), opts); err != nil || !r.Equivalent {
		t.Errorf("Equivalent, %d trials within %d bytes: %v, %v", opts.Trials, opts.MaxBytes, r, err)
	}
	wrong := rmsForMean(rmsnormMatmulFused(4, 32, 48, 2, 2))
	want := must(must(ffverify.New(rm(), ffverify.Options{Trials: 3})).Verify(wrong))
	opts.Trials = 3
	if got := must(ffverify.Equivalent(rm(), wrong, opts)); !reflect.DeepEqual(got, want) {
		t.Errorf("Equivalent = %+v, a Verifier says %+v", got, want)
	}
}
