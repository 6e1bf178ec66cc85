package search

import (
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
	"github.com/mirage-go/mirage/ugraph/thread"
	"golang.org/x/sync/errgroup"
)

// sizeGain is how much faster, by the estimate, another block size or
// pipeline depth must make a candidate to be chosen over the one it was
// built with: the model is fitted to four-warp blocks of the deepest
// pipeline that fits, and a gain within its noise is no reason to leave
// them.
const sizeGain = 0.02

// blockSizes gives each graph-defined kernel of g the block size, among
// the configuration's Threads, and the pipeline depth, among its Stages,
// that the cost model estimates fastest together (a choice that gains less
// than sizeGain of the candidate's time keeps the one before), and returns
// the graph, a copy where a choice changed, with its estimate; built is
// g's estimate as given. Neither changes what a kernel computes, only how
// many warps share its tiles and how many tiles each input keeps in
// flight (and so how many blocks an SM holds), so the enumeration builds
// every block graph with the first size and the default depth (0), and
// the choice is made here, once per candidate: since a graph's estimate
// is the sum of its kernels', each kernel's choice is made alone. The two
// are chosen together because they trade against each other: more warps
// hide latency as a deeper pipeline does, and a shallower one makes room
// for more blocks.
func (s *searcher) blockSizes(g *kernel.Graph, built Estimate) (*kernel.Graph, Estimate) {
	best := built
	if max(len(s.cfg.Threads), 1)*max(len(s.cfg.Stages), 1) < 2 {
		return g, best
	}
	for i := range g.Ops {
		b := g.Ops[i].Block
		if b == nil {
			continue
		}
		threads, stages := s.cfg.Threads, s.cfg.Stages
		if len(threads) == 0 {
			threads = []block.Dim3{b.Threads}
		}
		if len(stages) == 0 {
			stages = []int{b.Stages}
		}
		// A depth past the for-loop's iterations plans as the iterations
		// do: each pair is estimated once (the graph's own not at all).
		type launchPair struct {
			threads block.Dim3
			depth   int
		}
		tried := map[launchPair]bool{{b.Threads, thread.Depth(b, thread.Options{})}: true}
		chosen, bar := g, best.Micros*(1-sizeGain)
		for _, th := range threads {
			for _, st := range stages {
				sized := *b
				sized.Threads, sized.Stages = th, st
				p := launchPair{th, thread.Depth(&sized, thread.Options{})}
				if tried[p] {
					continue
				}
				tried[p] = true
				try := g.Clone()
				try.Ops[i].Block = &sized
				e, err := s.opts.Estimate(try)
				if err != nil || e.Micros > bar || chosen != g && e.Micros >= best.Micros {
					continue // does not fit, not enough faster, or not the fastest yet
				}
				chosen, best = try, e
			}
		}
		g = chosen
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
