package search

import (
	"container/heap"
	"slices"
	"sync"
)

// keptCandidates is how many candidates beyond Options.MaxResults a search
// keeps, best first, of all it completes. A long attention search
// completes millions; kept whole, they filled gigabytes, and ranking them
// after the enumeration took longer than the time left for it, so that
// the ones left unranked were lost whatever their rank. The verifier walks
// the ranking until MaxResults pass: it would need this many rejections
// first (each a fast-path check at least) to reach past what is kept.
const keptCandidates = 8192

// kept is the ranking of the candidates the enumeration completes: the
// workers describe each as they complete it (describe) and add it here,
// which keeps the best limit of them in compareCandidates's order. The
// order is total, so what is kept does not depend on which worker found
// what, or when.
type kept struct {
	mu      sync.Mutex
	limit   int        // > 0
	worst   worstFirst // a heap: the worst kept candidate first
	dropped int64      // candidates that ranked past limit
}

// newKept returns a ranking that keeps the best limit candidates.
func newKept(limit int) *kept { return &kept{limit: max(limit, 1)} }

// keptAll is how many candidates a search that verifies every candidate
// (MaxResults 0) keeps: a decode-attention part completes millions, which
// no verification gets through (a check at a model's shape takes
// milliseconds to seconds), and kept whole they fill the machine's memory.
const keptAll = 1 << 16

// keptLimit is how many candidates a search with opts keeps: MaxResults
// and keptCandidates more, or keptAll for MaxResults 0.
func keptLimit(opts Options) int {
	if opts.MaxResults <= 0 {
		return keptAll
	}
	return opts.MaxResults + keptCandidates
}

// add ranks c, described already, among the kept candidates.
func (k *kept) add(c *Candidate) {
	k.mu.Lock()
	defer k.mu.Unlock()
	switch {
	case len(k.worst) < k.limit:
		heap.Push(&k.worst, c)
	case compareCandidates(c, k.worst[0]) < 0:
		k.worst[0] = c
		heap.Fix(&k.worst, 0)
		k.dropped++
	default:
		k.dropped++
	}
}

// ranked returns the kept candidates best first, and how many were
// dropped. It is called once the workers are done.
func (k *kept) ranked() ([]*Candidate, int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	cands := slices.Clone([]*Candidate(k.worst))
	slices.SortFunc(cands, compareCandidates)
	return cands, k.dropped
}

// worstFirst is a heap of candidates whose first is the one ranked last.
type worstFirst []*Candidate

func (h worstFirst) Len() int           { return len(h) }
func (h worstFirst) Less(i, j int) bool { return compareCandidates(h[i], h[j]) > 0 }
func (h worstFirst) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *worstFirst) Push(x any)        { *h = append(*h, x.(*Candidate)) }
func (h *worstFirst) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}
