package search

import (
	"context"
	"testing"
)

// TestDescribingEndsWithTheVerification checks that ranking the found
// candidates stops once the verification's context ends, counting the
// rest unchecked: decode attention at a LLaMA shape found 196 k
// candidates at 25.5 s of a 30 s run, and describing them all took the
// search past the run's end, which dropped the seed it had verified at
// 0.7 s.
func TestDescribingEndsWithTheVerification(t *testing.T) {
	p := load(t, "gated_mlp.py")
	cfg, err := NamedConfig(p.Superopt.Config)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Restrict(Restrictions(p.Superopt.Lists))
	cfg.Complete(p.Graph)
	s, err := newSearcher(t.Context(), p.Graph, cfg, Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	found := s.enumerate()
	if len(found) == 0 {
		t.Fatal("no candidates found")
	}

	s.verifyCtx = t.Context()
	if got := s.describeAll(found); len(got) == 0 || s.unchecked.Load() != 0 {
		t.Fatalf("with time left: %d of %d candidates described, %d unchecked", len(got), len(found), s.unchecked.Load())
	}
	ended, cancel := context.WithCancel(t.Context())
	cancel()
	s.verifyCtx = ended
	if got := s.describeAll(found); len(got) != 0 || s.unchecked.Load() != int64(len(found)) {
		t.Errorf("after the verification's end: %d of %d candidates described, %d unchecked", len(got), len(found), s.unchecked.Load())
	}
}
