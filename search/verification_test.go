package search

import (
	"context"
	"testing"

	"github.com/mirage-go/mirage/ffverify"
)

// TestVerificationStopsWithItsContext checks that the context's end stops
// a check in flight and that the verification returns what passed before
// it, without an error: a check at a LLaMA-7B gate/up shape can take
// seconds, and a search still in one when the driver's time was up lost
// every candidate it had verified.
func TestVerificationStopsWithItsContext(t *testing.T) {
	p := load(t, "gated_mlp.py")
	cfg := writtenConfig(t, p)
	res, err := Run(t.Context(), p.Graph, cfg, Options{Seed: 1, NoSeeds: true, Unverified: true, MaxResults: 4, Estimate: testEstimate})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Candidates) < 2 {
		t.Fatalf("%d candidates to verify, want 2 or more", len(res.Candidates))
	}
	verifier, err := ffverify.New(p.Graph, ffverify.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	// A context that ends once the first batch is under way: its Err is
	// nil when the batch starts, its Done closed when the checks look.
	v := verification{ctx: endingNow{t.Context()}, verifier: verifier, workers: 2}
	best, err := v.run(res.Candidates, len(res.Candidates))
	if err != nil || len(best) != 0 || v.checked != 0 || v.unchecked != int64(len(res.Candidates)) {
		t.Errorf("stopped in its first checks: %d passed, %d checked, %d unchecked, error %v; want none passed or checked, %d unchecked, no error",
			len(best), v.checked, v.unchecked, err, len(res.Candidates))
	}
	// The same checks with time pass: the ones above were stopped, not
	// rejected.
	v = verification{ctx: t.Context(), verifier: verifier, workers: 2, limit: 2}
	if best, err := v.run(res.Candidates, len(res.Candidates)); err != nil || len(best) != 2 {
		t.Errorf("with time: %d passed, error %v; want 2", len(best), err)
	}
}

// endingNow is a context whose Done is closed while its Err, which the
// verification reads before each batch, is still nil: the moment a
// deadline passes during the batch's checks.
type endingNow struct{ context.Context }

func (endingNow) Done() <-chan struct{} { return closed }
func (endingNow) Err() error            { return nil }

var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()
