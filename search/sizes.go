package search

import (
	"github.com/mirage-go/mirage/ugraph/kernel"
	"golang.org/x/sync/errgroup"
)

// sizeGain is how much faster, by the estimate, another block size must
// make a candidate to be chosen over the size it was built with: the model
// is fitted to four-warp blocks, and a gain within its noise is no reason
// to leave them.
const sizeGain = 0.02

// blockSizes gives each graph-defined kernel of g the block size, among
// the configuration's Threads, that the cost model estimates fastest (a
// size that gains less than sizeGain of the candidate's time keeps the one
// before), and returns the graph, a copy where a size changed, with its
// estimate; built is g's estimate as given. The size does not change what
// a kernel computes, only how many warps share its tiles, so the
// enumeration builds every block graph with the first size and the choice
// is made here, once per candidate: since a graph's estimate is the sum of
// its kernels', each kernel's size is chosen alone.
func (s *searcher) blockSizes(g *kernel.Graph, built Estimate) (*kernel.Graph, Estimate) {
	best := built
	if len(s.cfg.Threads) < 2 {
		return g, best
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
	return g, best
}

// sizedCandidates is how many of the enumeration's candidates, best first
// as built, get their kernels sized: sizing estimates each kernel again at
// every other size, which for the tens of thousands a time-limited search
// completes took the time its verification needed. Sizing only lowers an
// estimate, so the candidates past these keep an estimate that is an upper
// bound of their sized one. Seeds are all sized.
const sizedCandidates = 1024

// size gives the kernels of c, described already, their block sizes
// (blockSizes), which may change its graph, hash and estimate.
func (s *searcher) size(c *Candidate) {
	if s.opts.Estimate == nil || c.Customized == 0 {
		return
	}
	g, e := s.blockSizes(c.Graph, c.Estimate)
	if g != c.Graph {
		c.Graph, c.Hash = g, kernel.Hash(g)
	}
	c.Estimate = e
}

// sizeAll sizes cands in parallel, until the verification's context ends.
func (s *searcher) sizeAll(cands []*Candidate) {
	var g errgroup.Group
	g.SetLimit(max(s.opts.Workers, 1))
	const chunk = 64
	for lo := 0; lo < len(cands); lo += chunk {
		g.Go(func() error {
			for _, c := range cands[lo:min(lo+chunk, len(cands))] {
				if s.verifyCtx.Err() != nil {
					return nil
				}
				s.size(c)
			}
			return nil
		})
	}
	g.Wait()
}
