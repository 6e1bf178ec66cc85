package ffverify_test

import (
	"strings"
	"testing"

	"github.com/mirage-go/mirage/ffverify"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// A two-part program as a run cuts it: the whole, Y = silu(X·W1)·W2, and
// its first part, silu(X·W1), whose inputs are the whole's tensors 0 and 1.
func twoParts() (whole, first *kernel.Graph) {
	k := newKG()
	x, w1, w2 := k.in(8, 64), k.in(64, 96), k.in(96, 32)
	whole = k.outputs(k.op(ugraph.OpMatmul, k.op(ugraph.OpSilu, k.op(ugraph.OpMatmul, x, w1)), w2))
	p := newKG()
	first = p.outputs(p.op(ugraph.OpSilu, p.op(ugraph.OpMatmul, p.in(8, 64), p.in(64, 96))))
	return whole, first
}

// TestMemoSharedByNames: verifiers that name their inputs alike and share a
// memo compute a product once; named otherwise, they compute it again.
func TestMemoSharedByNames(t *testing.T) {
	whole, first := twoParts()
	for _, c := range []struct {
		name       string
		wholeNames []int
		computed   int64 // by both verifiers' programs, over both draws
	}{
		{"same names", []int{0, 1, 2}, 2 * 2}, // X·W1 once, silu(X·W1)·W2
		{"other names", []int{3, 4, 5}, 3 * 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			memo := must(ffverify.NewMemo(ffverify.Options{Seed: 4}))
			opts := ffverify.Options{Seed: 4, Memo: memo}
			opts.InputNames = []int{0, 1}
			must(ffverify.New(first, opts))
			if got := memo.Stats(); got.Computed != 2 || got.Taken != 0 {
				t.Fatalf("after the part's verifier: %+v, want 2 computed (X·W1 on two draws)", got)
			}
			opts.InputNames = c.wholeNames
			v := must(ffverify.New(whole, opts))
			if got := memo.Stats().Computed; got != c.computed {
				t.Errorf("after the whole program's verifier: %d products computed, want %d", got, c.computed)
			}
			// The verdicts are the memo's no more than they were before:
			// the program is itself, the part reordered is not.
			if r := must(v.Verify(whole)); !r.Equivalent {
				t.Errorf("the program against itself: %v", r)
			}
			swapped := newKG()
			x, w1, w2 := swapped.in(8, 64), swapped.in(64, 96), swapped.in(96, 32)
			wrong := swapped.outputs(swapped.op(ugraph.OpMatmul, swapped.op(ugraph.OpMatmul, x, w1), w2))
			if r := must(v.Verify(wrong)); r.Equivalent {
				t.Errorf("the program without its silu: %v", r)
			}
		})
	}
}

// TestInputNamesDrawTheInputs: names decide the values drawn, so a program
// and a candidate that reads its inputs in the other order are told apart
// whatever the names, and the same candidate passes under any names.
func TestInputNamesDrawTheInputs(t *testing.T) {
	k := newKG()
	a, b := k.in(16, 16), k.in(16, 16)
	program := k.outputs(k.op(ugraph.OpMatmul, a, b))
	c := newKG()
	ca, cb := c.in(16, 16), c.in(16, 16)
	swapped := c.outputs(c.op(ugraph.OpMatmul, cb, ca))
	for _, names := range [][]int{nil, {0, 1}, {1, 0}, {7, 1 << 20}} {
		opts := ffverify.Options{Seed: 2, InputNames: names}
		if r := must(ffverify.Equivalent(program, program, opts)); !r.Equivalent {
			t.Errorf("names %v: the program against itself: %v", names, r)
		}
		if r := must(ffverify.Equivalent(program, swapped, opts)); r.Equivalent {
			t.Errorf("names %v: B·A passes for A·B", names)
		}
	}
}

func TestOptionsRefusedWithAMemo(t *testing.T) {
	k := newKG()
	program := k.outputs(k.op(ugraph.OpMatmul, k.in(4, 8), k.in(8, 4)))
	memo := must(ffverify.NewMemo(ffverify.Options{Seed: 1}))
	for _, c := range []struct {
		opts ffverify.Options
		want string
	}{
		{ffverify.Options{Seed: 1, InputNames: []int{0}}, "1 input names for 2 inputs"},
		{ffverify.Options{Seed: 1, InputNames: []int{3, 3}}, "input name 3 is given twice"},
		{ffverify.Options{Seed: 1, InputNames: []int{0, -1}}, "input name -1 is negative"},
		{ffverify.Options{Seed: 2, Memo: memo}, "the memo is for seed 1 and 2 draws, the verifier draws 2 with seed 2"},
		{ffverify.Options{Seed: 1, Trials: 3, Memo: memo}, "the memo is for seed 1 and 2 draws, the verifier draws 3 with seed 1"},
	} {
		_, err := ffverify.New(program, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New with %+v: %v, want an error saying %q", c.opts, err, c.want)
		}
	}
	if _, err := ffverify.Equivalent(program, program, ffverify.Options{InputNames: []int{1}}); err == nil {
		t.Error("Equivalent took one name for two inputs")
	}
}
