package search

import (
	"fmt"
	"slices"
	"time"

	"github.com/mirage-go/mirage/seed"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// SeedTrial is what became of one rule's seeds in a search.
type SeedTrial struct {
	Rule string `json:"rule"`
	// Outcome: "verified" (its best-ranked seed passed the verifier),
	// "rejected" (it failed: a bug in the rule), "outranked" (its best
	// passed the verifier's fast path, but another rule's seed ranks
	// better, and its seeds wait for the ranked verification, which did
	// not reach them), "unverified" (a search whose candidates are
	// verified later, Options.Unverified), or "not placed" (none of its
	// tilings fits a block, or keeps to the grids, maps and ranges the
	// program fixed).
	Outcome string `json:"outcome"`
	Tilings int    `json:"tilings"` // its seeds the cost model placed, within the program's restrictions
}

// buildSeeds is seed.Build; a test replaces it with a rule that is wrong.
var buildSeeds = seed.Build

// seeding is the seeds of a search while their best are being verified.
type seeding struct {
	rules []ruleSeeds
	done  chan error // the verification's end
}

// ruleSeeds are one rule's seeds, ranked, and what became of them.
type ruleSeeds struct {
	trial SeedTrial
	cands []*Candidate
}

// plantSeeds builds the program's seeds (package seed), the fused μGraphs
// a rule-based fuser writes, to rank with the enumeration's candidates.
// Under verification, each rule's best-ranked seed goes through the
// verifier's fast path at once, which makes it the search's first fused
// candidate (Stats.FirstFused, as for the enumeration's), and the best
// of those through the full check, beside the enumeration (harvest waits
// for it). The other rules' seeds are ranked and verified like the
// enumeration's candidates: a full check densely evaluates the seed, and
// one whose kernels cut the reduced dim into splits shares no product
// with the program's (split_k at a LLaMA-70B shape: 12 s, against 40 ms
// for a one-kernel seed). A rule whose seed fails keeps none: they all
// compute the same.
func (s *searcher) plantSeeds() (*seeding, error) {
	sd := &seeding{done: make(chan error, 1)}
	if s.opts.NoSeeds {
		sd.done <- nil
		return sd, nil
	}
	// Seeds are built with the first block size, as the enumeration builds
	// its graphs, and then sized (blockSizes).
	seeds := buildSeeds(s.program, seed.Options{Threads: s.cfg.Threads[:1], ReductionDimx: s.cfg.ReductionDimx, SMs: s.cfg.Arch.SMs})
	for lo := 0; lo < len(seeds); {
		rs := ruleSeeds{trial: SeedTrial{Rule: seeds[lo].Rule}}
		hi := lo
		for ; hi < len(seeds) && seeds[hi].Rule == rs.trial.Rule; hi++ {
			g := seeds[hi].Graph
			c := &Candidate{Graph: g, Hash: kernel.Hash(g), Seed: rs.trial.Rule}
			// The enumeration skips graphs equal to a seed as built.
			s.recorded.Store(c.Hash, struct{}{})
			if s.cfg.admits(g) && s.describe(c) {
				s.size(c)
				rs.cands = append(rs.cands, c)
			}
		}
		lo = hi
		rs.trial.Tilings = len(rs.cands)
		slices.SortFunc(rs.cands, compareCandidates)
		switch {
		case len(rs.cands) == 0:
			rs.trial.Outcome = "not placed"
		case s.verifier == nil:
			rs.trial.Outcome = "unverified"
		default:
			reject, err := s.verifier.Reject(rs.cands[0].Graph)
			if err != nil {
				return nil, fmt.Errorf("search: verifying the %s seed: %w", rs.trial.Rule, err)
			}
			if reject {
				rs.trial.Outcome, rs.cands = "rejected", nil
				s.complete.Add(1) // the one checked: Rejected stays within Complete
				s.rejected.Add(1)
				break
			}
			s.firstFused.CompareAndSwap(0, int64(max(time.Since(s.start), 1)))
		}
		sd.rules = append(sd.rules, rs)
	}
	go func() { sd.done <- s.verifySeeds(sd.rules) }()
	return sd, nil
}

// verifySeeds fully verifies the rules' best seeds that passed the fast
// path in rank order until one passes (a rejected one is a bug in its
// rule, and the next rule's may still give the part its fast answer);
// the rules after it are outranked.
func (s *searcher) verifySeeds(rules []ruleSeeds) error {
	var order []*ruleSeeds
	for i := range rules {
		if rules[i].trial.Outcome == "" {
			order = append(order, &rules[i])
		}
	}
	slices.SortStableFunc(order, func(a, b *ruleSeeds) int { return compareCandidates(a.cands[0], b.cands[0]) })
	passed := false
	for _, rs := range order {
		if passed {
			rs.trial.Outcome = "outranked"
			continue
		}
		best := rs.cands[0]
		r, err := s.verifier.Verify(best.Graph)
		if err != nil {
			return fmt.Errorf("search: verifying the %s seed: %w", rs.trial.Rule, err)
		}
		if !r.Equivalent {
			rs.trial.Outcome, rs.cands = "rejected", nil
			s.complete.Add(1) // the one checked: Rejected stays within Complete
			s.rejected.Add(1)
			continue
		}
		rs.trial.Outcome, passed = "verified", true
		inProgramOrder(best, r.Mapping)
		best.checked = true
	}
	return nil
}

// settleOutranked says what the ranked verification made of the
// outranked rules' seeds: "rejected" where it rejected one (a bug in the
// rule), "verified" where one is among the answers.
func settleOutranked(trials []SeedTrial, best []*Candidate, rejected []string) {
	for i := range trials {
		t := &trials[i]
		switch {
		case t.Outcome != "outranked":
		case slices.Contains(rejected, t.Rule):
			t.Outcome = "rejected"
		case slices.ContainsFunc(best, func(c *Candidate) bool { return c.Seed == t.Rule }):
			t.Outcome = "verified"
		}
	}
}

// harvest waits for the seeds' verification and returns the candidates of
// the rules that passed (or that a later verification checks) and what
// became of each rule.
func (sd *seeding) harvest(s *searcher) ([]*Candidate, []SeedTrial, error) {
	if err := <-sd.done; err != nil {
		return nil, nil, err
	}
	var cands []*Candidate
	var trials []SeedTrial
	for _, rs := range sd.rules {
		trials = append(trials, rs.trial)
		cands = append(cands, rs.cands...)
	}
	s.complete.Add(int64(len(cands)))
	return cands, trials, nil
}

// BestSeed is the estimate of program's best seed, its kernels sized as
// a search sizes them (blockSizes) under cfg, unverified: what the seed
// rules would give a program the caller does not search (a variant of a
// part, seed.PadCache). False when no rule gives a seed that cfg admits
// and opts.Estimate places.
func BestSeed(program *kernel.Graph, cfg Config, opts Options) (Estimate, bool) {
	if opts.Estimate == nil {
		return Estimate{}, false
	}
	cfg.Complete(program)
	if len(cfg.Threads) == 0 {
		return Estimate{}, false
	}
	s := &searcher{cfg: cfg, opts: opts}
	var best *Candidate
	for _, sd := range buildSeeds(program, seed.Options{Threads: cfg.Threads[:1], ReductionDimx: cfg.ReductionDimx, SMs: cfg.Arch.SMs}) {
		c := &Candidate{Graph: sd.Graph, Seed: sd.Rule}
		if !cfg.admits(sd.Graph) || !s.describe(c) {
			continue
		}
		s.size(c)
		if best == nil || compareCandidates(c, best) < 0 {
			best = c
		}
	}
	if best == nil {
		return Estimate{}, false
	}
	return best.Estimate, true
}
