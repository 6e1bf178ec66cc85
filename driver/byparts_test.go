package driver

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mirage-go/mirage/ffverify"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// When the stitched program's own check cannot finish in the budget (at
// a model's shapes it evaluates every matmul again), the answer stands on
// its parts' checks and its wiring: fused, and marked so.
func TestAnswerVerifiedByPartsWhenTheWholeCheckRunsOut(t *testing.T) {
	defer func(c func(*run, *kernel.Graph, []Part, []*outcome) (bool, error)) { wholeCheck = c }(wholeCheck)
	wholeCheck = func(d *run, _ *kernel.Graph, _ []Part, _ []*outcome) (bool, error) {
		<-d.verifyStop // as a check of a program too large for the budget
		return false, ffverify.ErrStopped
	}
	program := load(t, "llama_mlp")
	res, err := Run(context.Background(), program, Options{MaxStates: 1, TimeLimit: 4 * time.Second, Workers: 2, Seed: 1, Answers: 4})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Parts) < 2 {
		t.Fatalf("%d parts: the whole check is skipped for one", len(res.Parts))
	}
	best := res.Candidates[0]
	if best.Unfused || !best.ByParts || best.Customized == 0 {
		t.Fatalf("best answer %+v, want a fused one verified by parts", best)
	}
	// Every answer after it stands on its parts too: the budget that
	// ended the first check is over for them all.
	fused := 0
	for i, c := range res.Candidates {
		if c.Unfused {
			continue
		}
		fused++
		if !c.ByParts {
			t.Errorf("answer %d is not marked verified by parts", i)
		}
		if r, err := ffverify.Equivalent(program, c.Graph, ffverify.Options{Seed: 3}); err != nil || !r.Equivalent {
			t.Errorf("answer %d, verified by parts, is not the program: %+v %v", i, r, err)
		}
	}
	if fused != 4 {
		t.Errorf("%d fused answers, want the 4 asked for", fused)
	}
}

// A whole check that finds an answer wrong (a bug: its parts passed) takes
// away the proof by parts: the answers after the budget ends are left out,
// not accepted on it.
func TestNoAnswerByPartsAfterAWholeCheckFails(t *testing.T) {
	defer func(c func(*run, *kernel.Graph, []Part, []*outcome) (bool, error)) { wholeCheck = c }(wholeCheck)
	var calls atomic.Int32
	wholeCheck = func(d *run, _ *kernel.Graph, _ []Part, _ []*outcome) (bool, error) {
		switch calls.Add(1) {
		case 1:
			return true, nil
		case 2:
			return false, nil // answer 1 "is not the program"
		}
		<-d.verifyStop // the rest run out of time
		return false, ffverify.ErrStopped
	}
	res, err := Run(context.Background(), load(t, "llama_mlp"), Options{MaxStates: 1, TimeLimit: 4 * time.Second, Workers: 2, Seed: 1, Answers: 4})
	if err != nil {
		t.Fatal(err)
	}
	var fused []*Candidate
	for _, c := range res.Candidates {
		if !c.Unfused {
			fused = append(fused, c)
		}
	}
	if len(fused) != 1 || fused[0].ByParts {
		t.Errorf("%d fused answers (first by parts: %v), want the one checked whole", len(fused), len(fused) > 0 && fused[0].ByParts)
	}
}

// The wiring check fails when a part's replacement was verified against
// another part's program.
func TestWiringCheckCatchesAnotherPartsProgram(t *testing.T) {
	program := load(t, "llama_mlp")
	d, _, done, err := begin(context.Background(), program, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	parts := cut(d.ix, d.firstGroups(nil))
	if len(parts) < 2 {
		t.Fatalf("%d parts", len(parts))
	}
	outs := make([]*outcome, len(parts))
	for k, p := range parts {
		if outs[k], err = d.outcomeOf(p); err != nil {
			t.Fatal(err)
		}
	}
	if !d.wiredAsVerified(parts, outs) {
		t.Fatal("the parts' own programs do not give back the program")
	}
	outs[0], outs[1] = outs[1], outs[0]
	if d.wiredAsVerified(parts, outs) {
		t.Error("two parts' programs swapped pass the wiring check")
	}
}

// The stitched programs' checks after the run's end share one grace: the
// first finishes; the next two, which would run forever, are abandoned
// within one grace together, where each had its own and 64 answers
// overran the time limit by seconds. (Each its own would take two graces
// at least; the bound below leaves a loaded machine a whole grace of
// slack, and nothing depends on how long a check sleeps.)
func TestChecksAfterTheEndShareOneGrace(t *testing.T) {
	defer func(c func(*run, *kernel.Graph, []Part, []*outcome) (bool, error)) { wholeCheck = c }(wholeCheck)
	var calls atomic.Int32
	wholeCheck = func(d *run, _ *kernel.Graph, _ []Part, _ []*outcome) (bool, error) {
		if calls.Add(1) == 1 {
			return true, nil
		}
		<-d.verifyStop
		return false, ffverify.ErrStopped
	}
	d, _, done, err := begin(context.Background(), load(t, "llama_mlp"), Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	var start time.Time
	for i, want := range []error{nil, errAbandoned, errAbandoned} {
		if i == 1 {
			start = time.Now()
		}
		if _, err := d.verifyWithin(ended, d.program, nil, nil); err != want {
			t.Errorf("check %d after the end: error %v, want %v", i, err, want)
		}
	}
	if took := time.Since(start); took >= 2*verifyGrace {
		t.Errorf("the two endless checks were abandoned after %v, a grace each (%v)", took, verifyGrace)
	}
}

// A search that ends after the parts are reported (one left running at
// the run's end) changes no result and logs nothing: the part was
// reported, and logged, as not searched, and the answers read what the
// reports read.
func TestASearchEndingAfterTheReportsChangesNothing(t *testing.T) {
	var lines []string
	d, _, done, err := begin(context.Background(), load(t, "llama_mlp"), Options{Seed: 1, Log: func(s string) { lines = append(lines, s) }})
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	parts := cut(d.ix, d.firstGroups(nil))
	outs := make([]*outcome, len(parts))
	for k, p := range parts {
		if outs[k], err = d.outcomeOf(p); err != nil {
			t.Fatal(err)
		}
	}
	reports := d.reports(parts, outs)
	logged := len(lines)
	d.search(context.Background(), outs[0], time.Now(), 1) // ends at once: its deadline has passed
	if r := d.resultOf(outs[0]); r.done {
		t.Errorf("the late search set the part's result: %+v", r)
	}
	if len(lines) != logged {
		t.Errorf("the late search logged %q", lines[logged:])
	}
	if reports[0].WhyNot != "the run ended before its search did" {
		t.Errorf("part 0 reported %q", reports[0].WhyNot)
	}
}

// The log says why the whole check ended: the budget, or an interrupt.
func TestByPartsSaysWhyTheWholeCheckEnded(t *testing.T) {
	defer func(c func(*run, *kernel.Graph, []Part, []*outcome) (bool, error)) { wholeCheck = c }(wholeCheck)
	for _, tt := range []struct {
		interrupt bool
		want      string
	}{
		{false, "the stitched program's own check did not finish in time;"},
		{true, "the stitched program's own check was interrupted;"},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		wholeCheck = func(d *run, _ *kernel.Graph, _ []Part, _ []*outcome) (bool, error) {
			if tt.interrupt {
				cancel()
			}
			<-d.verifyStop
			return false, ffverify.ErrStopped
		}
		var said []string
		_, err := Run(ctx, load(t, "llama_mlp"), Options{MaxStates: 1, TimeLimit: 4 * time.Second, Workers: 2, Seed: 1,
			Log: func(s string) { said = append(said, s) }})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(said, func(s string) bool { return strings.HasPrefix(s, tt.want) }) {
			t.Errorf("interrupted %v: no %q in the log %q", tt.interrupt, tt.want, said)
		}
	}
}
