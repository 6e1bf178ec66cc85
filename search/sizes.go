package search

import "github.com/mirage-go/mirage/ugraph/kernel"

// sizeGain is how much faster, by the estimate, another block size must
// make a candidate to be chosen over the size it was built with: the model
// is fitted to four-warp blocks, and a gain within its noise is no reason
// to leave them.
const sizeGain = 0.02

// blockSizes gives each graph-defined kernel of g the block size, among
// the configuration's Threads, that the cost model estimates fastest (a
// size that gains less than sizeGain of the candidate's time keeps the one
// before), and returns the graph, a copy where a size changed, with its
// estimate. The size does not change what a kernel computes, only how
// many warps share its tiles, so the enumeration builds every block graph
// with the first size and the choice is made here, once per candidate:
// since a graph's estimate is the sum of its kernels', each kernel's size
// is chosen alone.
func (s *searcher) blockSizes(g *kernel.Graph) (*kernel.Graph, Estimate, error) {
	best, err := s.opts.Estimate(g)
	if err != nil || len(s.cfg.Threads) < 2 {
		return g, best, err
	}
	for i := range g.Ops {
		b := g.Ops[i].Block
		if b == nil {
			continue
		}
		for _, th := range s.cfg.Threads {
			if th == b.Threads {
				continue
			}
			sized := *b
			sized.Threads = th
			try := g.Clone()
			try.Ops[i].Block = &sized
			e, err := s.opts.Estimate(try)
			if err != nil || e.Micros > best.Micros*(1-sizeGain) {
				continue // does not fit, or not enough faster
			}
			g, best, b = try, e, &sized
		}
	}
	return g, best, nil
}
