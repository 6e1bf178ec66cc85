package search

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

// TestKeptKeepsTheBest adds candidates in shuffled orders, from several
// goroutines, and checks that the ranking holds the best limit of them in
// rank order whatever the order, and counts the rest dropped.
func TestKeptKeepsTheBest(t *testing.T) {
	// Ties in time are broken by bytes, then launches, then hash.
	var all []*Candidate
	for i := range 50 {
		all = append(all, &Candidate{
			Estimate: Estimate{Micros: float64(i % 7), Bytes: int64(i % 3)},
			Kernels:  i % 2, Hash: uint64(1000 - i),
		})
	}
	best := slices.Clone(all)
	slices.SortFunc(best, compareCandidates)
	for _, tc := range []struct{ limit, want int }{{1, 1}, {7, 7}, {50, 50}, {80, 50}} {
		for seed := range uint64(4) {
			k := newKept(tc.limit)
			order := slices.Clone(all)
			rand.New(rand.NewPCG(seed, 1)).Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			var wg sync.WaitGroup
			for w := range 3 {
				wg.Go(func() {
					for i := w; i < len(order); i += 3 {
						k.add(order[i])
					}
				})
			}
			wg.Wait()
			got, dropped := k.ranked()
			if !slices.Equal(got, best[:tc.want]) || dropped != int64(50-tc.want) {
				t.Errorf("limit %d, order %d: kept %d (dropped %d), want the best %d in rank order (dropped %d)",
					tc.limit, seed, len(got), dropped, tc.want, 50-tc.want)
			}
		}
	}
}

// TestSearchKeepsItsBest checks that a search keeping only a few of its
// candidates returns the first of the whole ranking, and counts the
// others unchecked: the candidates are described as they complete, so
// none goes unranked.
func TestSearchKeepsItsBest(t *testing.T) {
	p := load(t, "gated_mlp.py")
	cfg := writtenConfig(t, p)
	cfg.Complete(p.Graph)
	enumerate := func(limit int) ([]*Candidate, int64, int64) {
		s, err := newSearcherFor(t.Context(), p.Graph, cfg, Options{Workers: 2, Estimate: testEstimate}, false)
		if err != nil {
			t.Fatal(err)
		}
		defer s.close()
		s.kept = newKept(limit)
		return s.enumerate(), s.complete.Load(), s.unchecked.Load()
	}
	all, complete, unchecked := enumerate(keptAll)
	if len(all) < 10 || unchecked != 0 {
		t.Fatalf("keeping all: %d of %d candidates kept, %d unchecked; want 10 or more, none unchecked", len(all), complete, unchecked)
	}
	if !slices.IsSortedFunc(all, compareCandidates) {
		t.Error("keeping all: the candidates are not in rank order")
	}
	few, complete2, unchecked := enumerate(5)
	hashes := func(cs []*Candidate) (hs []uint64) {
		for _, c := range cs {
			hs = append(hs, c.Hash)
		}
		return hs
	}
	if !slices.Equal(hashes(few), hashes(all[:5])) {
		t.Errorf("keeping 5: %x, want the first 5 of the whole ranking, %x", hashes(few), hashes(all[:5]))
	}
	if complete2 != complete || unchecked != int64(len(all)-5) {
		t.Errorf("keeping 5: %d complete, %d unchecked; want %d and %d", complete2, unchecked, complete, len(all)-5)
	}
}
