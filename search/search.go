// Package search is the μGraph generator: given a program (a kernel graph of
// pre-defined ops), it enumerates kernel graphs and graph-defined kernels
// (threadblock graphs) that could compute the same function, prunes them
// with abstract expressions, verifies the complete ones with finite-field
// fingerprints, and returns every verified μGraph, best first.
//
// The enumeration is a depth-first search over ops added one at a time, at
// two levels: kernel ops (pre-defined ops and customized ops), and, inside a
// customized op, threadblock ops. Each candidate op goes through, in order:
//
//  1. the canonical order (opKey): every graph is generated exactly once;
//  2. abstract-expression pruning (absexpr): the op's expression must be a
//     subexpression of an output expression of the program;
//  3. the shape rules (the ugraph builders);
//  4. dead-end bounds: a state that can no longer become a complete graph
//     within the size limits is dropped.
//
// A kernel state whose open tensors (those no op consumes) have the
// program's output shapes, and whose expressions can equal the program's,
// is a complete candidate. Candidates are ranked by the cost model as they
// complete, the best kept (kept), and verified best first after the search
// (the verifier's fast path rejects most wrong ones at once), until enough
// have passed.
//
// Work is split into tasks at the first customized op of each kernel
// prefix (one task per input set and threadblock configuration); workers
// run tasks in parallel, and their candidates are ranked in a total order,
// so the result does not depend on the number of workers.
package search

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/mirage-go/mirage/absexpr"
	"github.com/mirage-go/mirage/cost"
	"github.com/mirage-go/mirage/ffverify"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// Options control a run of the generator (as opposed to Config, which says
// what it explores).
type Options struct {
	Workers int // parallel workers; 0 means 1
	// Deadline, when not zero, ends the enumeration (Stats.Stopped "time
	// limit"); the verification of what was found goes on until Run's
	// context is done, and then returns the candidates verified so far.
	Deadline time.Time
	// Stop, when closed, ends the enumeration as an interrupt does (Stats.Stopped
	// "interrupted"); the verification goes on as after Deadline.
	Stop      <-chan struct{}
	Seed      uint64 // seed of the verifier's random draws
	MaxStates int64  // stop after this many states; 0 means no limit
	// MaxLiveHeap, when positive, ends the enumeration (Stats.Stopped
	// "memory") once the process's live heap passes it: the memo of what
	// was searched grows with the states (an attention part's search, gigabytes
	// in a minute), and a run that outgrows the machine's memory ends in
	// swap or the OOM killer.
	MaxLiveHeap int64
	// MaxMemory bounds the memory of the verifier's evaluations
	// (ffverify.Options.MaxBytes); 0 means memlimit.Default. It is not in
	// the cache's key: it changes whether a check runs, never its verdict.
	MaxMemory int64
	// Subtrees, when not nil, are the root subtrees (indices into the list
	// Subtrees returns, ascending) that this run explores; the others are
	// skipped. The graphs of pre-defined ops only, which lie in no subtree,
	// are found by every run. Processes that each explore some of the
	// subtrees, all of them between them, find together what one process
	// finds: VerifyMerged ranks and verifies their results as Run does.
	Subtrees []int
	// Unverified ranks the candidates and returns the first MaxResults
	// (0: all) without verifying them: a run's share of a search whose
	// candidates are verified together afterwards (VerifyMerged).
	Unverified bool
	// Verifier, when set, holds the program's fingerprints, made earlier
	// with Seed (ffverify.New, or Verifier.Prefix of a search of the same
	// program at more rows): the search checks its candidates with it
	// instead of evaluating the program again. It does not change what
	// the search finds.
	Verifier *ffverify.Verifier
	// MaxResults bounds how many candidates are returned: candidates are
	// verified in rank order until MaxResults have passed. 0 means all,
	// which verifies every candidate (about a second each for attention)
	// of the best 65,536 the search keeps (keptAll).
	MaxResults int
	// Estimate, when set, gives a candidate's estimated run time and the
	// figures shown with it; candidates are ranked by estimated time. When
	// nil, they are ranked by kernel launches. (The cost model lives on
	// this package's floor, so the caller supplies it.)
	Estimate func(*kernel.Graph) (Estimate, error)
	// Progress, when set, is called about every ProgressEvery with the
	// statistics so far (from a separate goroutine), through the search
	// and the verification after it, and once more at the end.
	Progress      func(Stats)
	ProgressEvery time.Duration
	// NoSeeds leaves out the rules' seeds (package seed): the candidates
	// are the enumeration's only.
	NoSeeds bool
}

// verifier returns Options.Verifier, which must draw with Seed, else a
// new verifier of program's fingerprints.
func (o Options) verifier(program *kernel.Graph) (*ffverify.Verifier, error) {
	if v := o.Verifier; v != nil {
		if v.Options().Seed != o.Seed {
			return nil, fmt.Errorf("search: Options.Verifier draws with seed %d, the search with %d", v.Options().Seed, o.Seed)
		}
		return v, nil
	}
	v, err := ffverify.New(program, o.verifierOptions())
	if err != nil {
		return nil, fmt.Errorf("search: fingerprinting the program: %v", err)
	}
	return v, nil
}

// verifierOptions are the options of the verifier a search makes.
func (o Options) verifierOptions() ffverify.Options {
	return ffverify.Options{Seed: o.Seed, MaxBytes: o.MaxMemory}
}

// Estimate is what a cost model says of a candidate.
type Estimate struct {
	Micros float64 // estimated run time
	Bytes  int64   // moved through device memory
	Flops  int64
}

// Stats count what the generator did.
type Stats struct {
	States        int64   `json:"states"`         // states created (ops added, threadblock configurations opened)
	PrunedOrder   int64   `json:"pruned_order"`   // candidate kernel ops out of canonical order (threadblock ops are generated in order)
	PrunedAbsexpr int64   `json:"pruned_absexpr"` // ops whose expression no program output contains; complete states whose outputs' expressions are not the program's
	PrunedShape   int64   `json:"pruned_shape"`   // ops the shape rules reject
	PrunedDead    int64   `json:"pruned_dead"`    // states that cannot complete within the size limits
	Complete      int64   `json:"complete"`       // complete candidates found, to be verified best first
	Rejected      int64   `json:"rejected"`       // complete candidates the verifier rejected
	Verified      int64   `json:"verified"`       // complete candidates verified equivalent
	Unchecked     int64   `json:"unchecked"`      // candidates not verified: beyond MaxResults, past what the search keeps (kept), or left when its time ended
	Seconds       float64 `json:"seconds"`
	FirstFused    float64 `json:"first_fused_seconds"` // when the first fused candidate passed the fast path; -1 if none
	// RankedFused is the estimate of the best-ranked fused candidate the
	// verifier did not reject: verified, or not checked (0: none). When no
	// fused candidate is among those kept, every fused one that may
	// compute the program ranks at or below it.
	RankedFused float64 `json:"ranked_fused_us,omitempty"`
	Stopped     string  `json:"stopped,omitempty"` // why the search stopped early, if it did
}

// Result is the outcome of a search.
type Result struct {
	Candidates []*Candidate // verified, best first (ranked only, when Unverified)
	// Unverified says that the candidates were ranked, not verified
	// (Options.Unverified): some may not compute the program.
	Unverified bool
	Stats      Stats
	Oracle     absexpr.Stats // the abstract-expression oracle's work
	// Seeds says what became of each rule's seeds (plantSeeds), in the
	// order the rules were tried; nil when no rule applied.
	Seeds []SeedTrial
	// Verifier is the one the candidates were checked with (nil when
	// Unverified, or when the result came from a cache), for a later
	// search of the same program at fewer rows (Options.Verifier).
	Verifier *ffverify.Verifier `json:"-"`
}

// Candidate is a verified μGraph with the figures it is ranked by.
type Candidate struct {
	Graph         *kernel.Graph
	Hash          uint64
	Kernels       int          // kernel launches (customized and pre-defined ops)
	Customized    int          // graph-defined kernels
	Grids         []block.Dim3 // of the graph-defined kernels, in order
	ForloopRanges []int
	Estimate      Estimate // zero without Options.Estimate
	// Seed is the rule that built the candidate (package seed); "" for
	// one the enumeration found.
	Seed string
	// checked: it passed the verifier already (a seed), with its
	// outputs in the program's order.
	checked bool
	// rejected: the verifier rejected it (rankedFused passes over it).
	rejected bool
}

// ErrNoProgress is returned when the program has nothing to search: no
// output computed by an op.
var ErrNoProgress = errors.New("search: the program computes nothing (its outputs are inputs)")

// Run searches for μGraphs equivalent to program. It stops early, keeping
// what it found, when ctx is done or Options.MaxStates is reached; Stats
// then says why.
func Run(ctx context.Context, program *kernel.Graph, cfg Config, opts Options) (*Result, error) {
	start := time.Now()
	cfg.Complete(program)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !slices.IsSorted(opts.Subtrees) {
		return nil, errors.New("search: Options.Subtrees must be in ascending order")
	}
	if cfg.MaxBlockInputs > len(opKey{}.in) {
		return nil, fmt.Errorf("config %q: at most %d inputs per graph-defined kernel", cfg.Name, len(opKey{}.in))
	}
	if cfg.MaxBlockOutputs > maxOutputs {
		return nil, fmt.Errorf("config %q: at most %d outputs per graph-defined kernel", cfg.Name, maxOutputs)
	}
	enumCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if !opts.Deadline.IsZero() {
		enumCtx, cancel = context.WithDeadline(enumCtx, opts.Deadline)
		defer cancel()
	}
	if opts.Stop != nil {
		go func() {
			select {
			case <-opts.Stop:
				cancel()
			case <-enumCtx.Done():
			}
		}()
	}
	s, err := newSearcherFor(enumCtx, program, cfg, opts, !opts.Unverified)
	if err != nil {
		return nil, err
	}
	defer s.close()
	s.verifyCtx = ctx
	stopProgress := s.reportProgress(start)

	seeding, err := s.plantSeeds()
	if err != nil {
		stopProgress()
		return nil, err
	}
	found := s.enumerate()
	seeds, trials, err := seeding.harvest(s)
	if err != nil {
		stopProgress()
		return nil, err
	}
	best, err := s.verifyBest(seeds, found)
	s.stop() // records why, if Run's context ended the verification
	stopProgress()
	if err != nil {
		return nil, err
	}
	settleOutranked(trials, best, s.rejectedSeeds)
	res := &Result{Candidates: best, Unverified: opts.Unverified, Verifier: s.verifier, Seeds: trials}
	res.Stats = s.snapshot()
	res.Oracle = s.exprs.oracle.Stats()
	res.Stats.Seconds = time.Since(start).Seconds()
	return res, nil
}

// enumerate runs the enumeration and returns the complete candidates it
// kept (kept), ranked and unverified. It cuts the tree of kernel prefixes
// into tasks at their first customized op; workers run the tasks as they
// come (spawn blocks while all are busy).
func (s *searcher) enumerate() []*Candidate {
	root := s.newKernelState()
	var workers errgroup.Group
	workers.SetLimit(s.opts.Workers)
	memos := make(chan *judgeMemo, s.opts.Workers) // one per running worker
	for range s.opts.Workers {
		memos <- newJudgeMemo()
	}
	explored := subtreeFilter(s.opts)
	spawned := 0
	root.spawn = func(t *task) {
		spawned++
		if !explored(spawned - 1) {
			return
		}
		workers.Go(func() error {
			if !s.stop() {
				t.prefix.useMemo(<-memos)
				t.run()
				memos <- t.prefix.memo
			}
			return nil
		})
	}
	root.explore()
	root.flush()
	workers.Wait()

	cands, dropped := s.kept.ranked()
	s.unchecked.Add(dropped)
	return cands
}

// searcher holds what every worker shares: the program, its expressions,
// the verifier and the counters.
type searcher struct {
	ctx       context.Context // ends the enumeration
	verifyCtx context.Context // ends the verification after it

	// rejectedSeeds are the rules whose seeds the ranked verification
	// rejected (settleOutranked).
	rejectedSeeds []string
	// rankedFused is Stats.RankedFused's bits, set when the candidates
	// are ranked (a progress report may read it meanwhile).
	rankedFused atomic.Uint64

	cfg       Config
	opts      Options
	program   *kernel.Graph
	outShapes []ugraph.Shape // the program's output shapes, sorted
	exprs     *exprs
	verifier  *ffverify.Verifier
	// blockUnary, blockBinary and blockNoncommutative list the indices of
	// the unary, binary and non-commutative binary cfg.BlockOps by kind and
	// attributes, the canonical order of ops on the same operands.
	blockUnary, blockBinary, blockNoncommutative []int
	// sizeDims and groupable: see group.go (sizeDims).
	sizeDims  uint32
	groupable bool
	// closable: no op choice (concat) makes results that the expressions
	// and judged shapes cannot tell, so the closures of reach.go hold.
	closable bool
	start    time.Time

	recorded sync.Map // kernel.Hash of complete candidates -> struct{}, see record
	// visit, when set (by tests), is called by the workers with the op
	// keys of every state explored.
	visit func(keys []opKey)

	// blockSearches are the complete graphs of each threadblock search
	// done, for replay (openBlocks).
	blockSearches  *shardedMap[blockSearchKey, []completeBlock]
	configLists    sync.Map                            // configsKey -> []blockConfig, see blockConfigs
	interned       sync.Map                            // inputSig or confKey -> uint32, see intern
	nextID         atomic.Uint32                       // the last number interned
	replayedBlocks atomic.Int64                        // the complete blocks blockSearches holds
	reach          *shardedMap[reachKey, bool]         // see reaches
	unsizedReach   *shardedMap[unsizedKey, bool]       // see unsizedReaches
	fruitless      *shardedMap[fruitlessKey, struct{}] // see openBlocks

	// states, which every worker adds to at every state, and stopped,
	// which every worker reads there, are each on a cache line of their
	// own (cacheLine): sharing one with other counters would make each
	// addition evict it from the other cores.
	_          [cacheLine]byte
	states     atomic.Int64
	_          [cacheLine - 8]byte
	stopped    atomic.Pointer[string]
	_          [cacheLine - 8]byte
	overHeap   atomic.Bool  // the live heap passed Options.MaxLiveHeap (checkHeap)
	firstFused atomic.Int64 // ns since start; 0 = none yet

	prunedOrder, prunedAbsexpr, prunedShape, prunedDead atomic.Int64 // kernelState.flush adds to them
	complete, rejected, verified, unchecked             atomic.Int64

	kept *kept // the best candidates completed so far (record)
	// blockHashes memoizes block.Hash of the block graphs attached to
	// candidates (each to many; attached, they do not change).
	blockHashes sync.Map // *block.Graph -> uint64
}

// blockHash is block.Hash(b), computed once per block graph.
func (s *searcher) blockHash(b *block.Graph) uint64 {
	if h, ok := s.blockHashes.Load(b); ok {
		return h.(uint64)
	}
	h := block.Hash(b)
	s.blockHashes.Store(b, h)
	return h
}

// cacheLine is the size of a cache line on the machines we run on.
const cacheLine = 64

func newSearcher(ctx context.Context, program *kernel.Graph, cfg Config, opts Options) (*searcher, error) {
	return newSearcherFor(ctx, program, cfg, opts, true)
}

// newSearcherFor is newSearcher, without the verifier unless verifying:
// fingerprinting a program at a real model's shape takes seconds, and
// listing the subtrees verifies nothing.
func newSearcherFor(ctx context.Context, program *kernel.Graph, cfg Config, opts Options, verifying bool) (*searcher, error) {
	s := &searcher{ctx: ctx, cfg: cfg, opts: opts, program: program, start: time.Now(), kept: newKept(keptLimit(opts)),
		blockSearches: newShardedMap[blockSearchKey, []completeBlock](),
		reach:         newShardedMap[reachKey, bool](),
		unsizedReach:  newShardedMap[unsizedKey, bool](),
		fruitless:     newShardedMap[fruitlessKey, struct{}](),
	}
	if opts.Workers < 1 {
		s.opts.Workers = 1
	}
	for _, t := range program.Outputs {
		s.outShapes = append(s.outShapes, program.Tensors[t].Shape)
		if op, _ := program.Producer(t); program.Ops[op].Kind == ugraph.OpInput {
			return nil, ErrNoProgress
		}
	}
	slices.SortFunc(s.outShapes, compareShapes)
	var order []int
	for i := range cfg.BlockOps {
		order = append(order, i)
	}
	slices.SortStableFunc(order, func(i, j int) int {
		a, b := cfg.BlockOps[i], cfg.BlockOps[j]
		return keyOf(a.Kind, a.Attr, nil, 0).compare(keyOf(b.Kind, b.Attr, nil, 0))
	})
	for _, i := range order {
		switch info := cfg.BlockOps[i].Kind.Info(); {
		case info.Arity == 1:
			s.blockUnary = append(s.blockUnary, i)
		case !info.Commutative:
			s.blockNoncommutative = append(s.blockNoncommutative, i)
			fallthrough
		default:
			s.blockBinary = append(s.blockBinary, i)
		}
	}
	s.sizeDims, s.groupable = sizeDims(cfg.BlockOps)
	s.closable = s.groupable
	var err error
	if s.exprs, err = newExprs(program); err != nil {
		return nil, err
	}
	if !verifying {
		return s, nil
	}
	if s.verifier, err = opts.verifier(program); err != nil {
		s.exprs.close()
		return nil, err
	}
	return s, nil
}

func (s *searcher) close() { s.exprs.close() }

func compareShapes(a, b ugraph.Shape) int {
	return slices.Compare(a.Dims(), b.Dims())
}

// stop reports whether the search must stop, recording why the first time.
// It is cheap enough to call at every state.
func (s *searcher) stop() bool {
	if s.stopped.Load() != nil {
		return true
	}
	var why string
	switch {
	case s.ctx.Err() != nil:
		why = "interrupted"
		if errors.Is(s.ctx.Err(), context.DeadlineExceeded) {
			why = "time limit"
		}
	case s.opts.MaxStates > 0 && s.states.Load() >= s.opts.MaxStates:
		why = "state budget"
	case s.overHeap.Load():
		why = "memory"
	default:
		return false
	}
	reason := why // allocated here only: stop is called for every state
	s.stopped.CompareAndSwap(nil, &reason)
	return true
}

func (s *searcher) snapshot() Stats {
	st := Stats{
		States: s.states.Load(), PrunedOrder: s.prunedOrder.Load(),
		PrunedAbsexpr: s.prunedAbsexpr.Load(), PrunedShape: s.prunedShape.Load(), PrunedDead: s.prunedDead.Load(),
		Complete: s.complete.Load(), Rejected: s.rejected.Load(), Verified: s.verified.Load(), Unchecked: s.unchecked.Load(),
		Seconds: time.Since(s.start).Seconds(), FirstFused: -1, RankedFused: math.Float64frombits(s.rankedFused.Load()),
	}
	if ns := s.firstFused.Load(); ns > 0 {
		st.FirstFused = time.Duration(ns).Seconds()
	}
	if why := s.stopped.Load(); why != nil {
		st.Stopped = *why
	}
	return st
}

func (s *searcher) reportProgress(start time.Time) (stop func()) {
	if s.opts.Progress == nil {
		return func() {}
	}
	every := s.opts.ProgressEvery
	if every <= 0 {
		every = 200 * time.Millisecond
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				s.opts.Progress(s.snapshot())
			}
		}
	}()
	return func() { close(done); wg.Wait(); s.opts.Progress(s.snapshot()) }
}

// task is the subtree below one customized op opened on a kernel prefix:
// its input set and threadblock configuration.
type task struct {
	prefix *kernelState // a private copy of the kernel state
	in     openInputs
	conf   blockConfig
}

// run explores the task's subtree; its complete candidates go to the
// searcher's ranking (record).
func (t *task) run() {
	k := t.prefix
	k.openConfs(t.in, []blockConfig{t.conf})
	k.flush()
}

// inProgramOrder reorders c's outputs, which the generator records in
// tensor order, to the program's: mapping gives for each of them the
// program output it computes (ffverify.Result.Mapping).
func inProgramOrder(c *Candidate, mapping []int) {
	outs := make([]kernel.TensorID, len(mapping))
	for j, i := range mapping {
		outs[i] = c.Graph.Outputs[j]
	}
	c.Graph.Outputs = outs
	c.Hash = kernel.Hash(c.Graph)
}

// verifyBest ranks the candidates, the seeds (described already) and
// those the enumeration found, verifies them in rank order (in parallel;
// the fast path, then the full check) and returns the first MaxResults
// that pass; under Options.Unverified it returns the first MaxResults
// ranked, unverified.
func (s *searcher) verifyBest(seeds, found []*Candidate) ([]*Candidate, error) {
	s.sizeAll(found[:min(len(found), sizedCandidates)])
	cands := append(seeds, found...)
	slices.SortFunc(cands, compareCandidates)
	cands = distinct(cands)
	if s.opts.Unverified {
		n := len(cands)
		if s.opts.MaxResults > 0 {
			n = min(n, s.opts.MaxResults)
		}
		s.unchecked.Add(int64(len(cands) - n))
		s.rankedFused.Store(math.Float64bits(rankedFused(cands)))
		return cands[:n], nil
	}
	v := verification{ctx: s.verifyCtx, verifier: s.verifier, workers: s.opts.Workers, limit: s.opts.MaxResults}
	best, err := v.run(cands, len(cands))
	if short := s.opts.MaxResults <= 0 || len(best) < s.opts.MaxResults; short && v.checked < len(cands) && !s.stop() {
		// A batch that would outlast the deadline was not started: the
		// answer is short of the search's, as if the deadline had passed
		// (found by review: Stopped stayed "", and the cache kept it).
		reason := "time limit"
		s.stopped.CompareAndSwap(nil, &reason)
	}
	s.rankedFused.Store(math.Float64bits(rankedFused(cands)))
	s.rejectedSeeds = v.rejectedSeeds
	s.verified.Add(v.verified)
	s.rejected.Add(v.rejected)
	s.unchecked.Add(v.unchecked)
	return best, err
}

// verification verifies ranked candidates in order until limit (0: all)
// have passed.
type verification struct {
	ctx      context.Context // ends it, keeping what passed so far
	verifier *ffverify.Verifier
	workers  int
	limit    int
	// what it did
	verified, rejected, unchecked int64
	checked                       int      // of the candidates
	rejectedSeeds                 []string // the rules of the seeds it rejected
}

// run verifies cands[:settled] in rank order until v.limit have passed,
// and returns them. The verifier failing on a candidate (one the
// generator built, so valid by construction) is a bug, reported as an
// error rather than counted as a rejection.
//
// Batches of the worker count are verified in parallel, in rank order,
// until enough have passed: the result is the same for any number of
// workers. The context's end stops the checks in flight, and run returns
// what passed before: a caller waiting for the search (the driver) gives
// up on all it verified when it returns late, and one candidate's check
// at a model's shape can take seconds more than all before it. A batch
// is not started when the slowest so far would outlast the deadline.
func (v *verification) run(cands []*Candidate, settled int) ([]*Candidate, error) {
	verifier := v.verifier.StopWhen(v.ctx.Done())
	limit := v.limit
	if limit <= 0 {
		limit = len(cands)
	}
	var best []*Candidate
	done := 0
	var slowest time.Duration
	for done < settled && len(best) < limit && v.ctx.Err() == nil {
		if end, ok := v.ctx.Deadline(); ok && time.Until(end) < slowest {
			break
		}
		started := time.Now()
		batch := cands[done:min(done+v.workers, settled)]
		ok := make([]bool, len(batch))
		stopped := make([]bool, len(batch))
		var g errgroup.Group
		for j, c := range batch {
			if c.checked {
				ok[j] = true
				continue
			}
			g.Go(func() error {
				r, err := verifier.Verify(c.Graph)
				switch {
				case errors.Is(err, ffverify.ErrStopped):
					stopped[j] = true
					return nil
				case err != nil:
					return fmt.Errorf("search: verifying a candidate: %w", err)
				}
				if ok[j] = r.Equivalent; ok[j] {
					inProgramOrder(c, r.Mapping)
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return nil, err
		}
		// The context's end stops the checks in flight: what passed
		// before the first stopped one, in rank order, stands.
		at := slices.Index(stopped, true)
		if at >= 0 {
			batch = batch[:at]
		}
		for j, c := range batch {
			switch {
			case !ok[j]:
				v.rejected++
				c.rejected = true
				if c.Seed != "" && !slices.Contains(v.rejectedSeeds, c.Seed) {
					v.rejectedSeeds = append(v.rejectedSeeds, c.Seed)
				}
			case len(best) < limit:
				v.verified++
				best = append(best, c)
			default:
				v.unchecked++ // passed, but beyond the limit
			}
		}
		done += len(batch)
		slowest = max(slowest, time.Since(started))
		if at >= 0 {
			break
		}
	}
	v.checked = done
	// Candidates verified before (seeds) pass without work: those the
	// context's end left out still count, in rank order.
	for _, c := range cands[done:settled] {
		if c.checked && len(best) < limit {
			v.verified++
			best = append(best, c)
			done++
		}
	}
	v.unchecked += int64(len(cands) - done)
	return best, nil
}

// ErrUnsettled is returned by VerifyMerged when the candidates the runs
// kept do not settle the answer: more of them failed the verifier than
// one run's share held, and what that run did not keep may rank next.
var ErrUnsettled = errors.New("search: the runs' candidates do not settle the best ones")

// VerifyMerged finishes a search shared out among runs (Options.Subtrees)
// that ranked their candidates but left them unverified
// (Options.Unverified, each keeping its best MaxResults or more): it ranks
// their candidates together, each once, and verifies them in rank order
// as Run does, until opts.MaxResults have passed. The answer is Run's
// as long as the verification stays among candidates that every run kept
// enough of to rank them (a run that kept k of more ranks nothing past
// its k-th); should it need to go past (the verifier rejected that many),
// it returns ErrUnsettled, and the caller searches again.
func VerifyMerged(ctx context.Context, program *kernel.Graph, runs []*Result, opts Options) (*Result, error) {
	start := time.Now()
	res := &Result{}
	var cands []*Candidate
	seen := map[uint64]bool{}
	for _, r := range runs {
		for _, c := range r.Candidates {
			if !seen[c.Hash] {
				seen[c.Hash] = true
				cands = append(cands, c)
			}
		}
		res.Stats.Add(r.Stats)
		res.Stats.Seconds = max(res.Stats.Seconds, r.Stats.Seconds)
		if res.Stats.Stopped == "" {
			res.Stats.Stopped = r.Stats.Stopped
		}
	}
	slices.SortFunc(cands, compareCandidates)
	cands = distinct(cands)
	// cands[:settled] is a prefix of the one run's ranking: every
	// candidate in it was kept by any run that found it, since it ranks
	// before the last one each truncated run kept.
	settled, truncated := len(cands), false
	for _, r := range runs {
		if r.Stats.Unchecked == 0 {
			continue
		}
		truncated = true // the run kept only its best
		at := 0          // it kept none: nothing is settled
		if len(r.Candidates) > 0 {
			last := r.Candidates[len(r.Candidates)-1]
			var found bool
			if at, found = slices.BinarySearchFunc(cands, last, compareCandidates); found {
				at++
			}
		}
		settled = min(settled, at)
	}
	res.Stats.Verified, res.Stats.Rejected, res.Stats.Unchecked = 0, 0, 0
	if len(cands) == 0 {
		if truncated {
			return nil, ErrUnsettled
		}
		res.Stats.FirstFused = -1
		return res, nil
	}
	verifier, err := ffverify.New(program, opts.verifierOptions())
	if err != nil {
		return nil, fmt.Errorf("search: fingerprinting the program: %v", err)
	}
	v := verification{ctx: ctx, verifier: verifier, workers: max(opts.Workers, 1), limit: opts.MaxResults}
	best, err := v.run(cands, settled)
	if err != nil {
		return nil, err
	}
	res.Stats.RankedFused = rankedFused(cands)
	short := opts.MaxResults <= 0 || len(best) < opts.MaxResults // fewer passed than wanted
	switch {
	case short && v.checked < settled && res.Stats.Stopped == "":
		// The context ended the verification, as it ends Run's.
		res.Stats.Stopped = "time limit"
		if errors.Is(ctx.Err(), context.Canceled) {
			res.Stats.Stopped = "interrupted"
		}
	case short && truncated && v.checked == settled:
		return nil, ErrUnsettled
	}
	res.Candidates = best
	res.Stats.Verified, res.Stats.Rejected = v.verified, v.rejected
	res.Seeds = mergeSeeds(runs, best)
	for _, r := range runs {
		res.Stats.Unchecked += r.Stats.Complete
	}
	res.Stats.Unchecked -= v.verified + v.rejected
	verifying := time.Since(start).Seconds()
	res.Stats.Seconds += verifying // the slowest run's, then the verification
	// The runs never verified: the merge's first fused candidate is its
	// verification's, counted from the merge's start (the runs' time is
	// theirs, elsewhere).
	res.Stats.FirstFused = -1
	if slices.ContainsFunc(best, func(c *Candidate) bool { return c.Customized > 0 }) {
		res.Stats.FirstFused = verifying
	}
	return res, nil
}

// mergeSeeds is what became of each rule's seeds in runs whose
// candidates were verified together: "verified" where one of the rule's
// seeds passed (is among best), else what the runs said ("unverified").
// Runs read back from shard files carry no trials.
func mergeSeeds(runs []*Result, best []*Candidate) []SeedTrial {
	var trials []SeedTrial
	for _, r := range runs {
		for _, t := range r.Seeds {
			if slices.ContainsFunc(trials, func(u SeedTrial) bool { return u.Rule == t.Rule }) {
				continue
			}
			if slices.ContainsFunc(best, func(c *Candidate) bool { return c.Seed == t.Rule }) {
				t.Outcome = "verified"
			}
			trials = append(trials, t)
		}
	}
	return trials
}

// describe fills in c's counts and estimate from its graph, its kernels
// at the size they were built with (size chooses after); it reports false
// when the cost model cannot estimate it.
func (s *searcher) describe(c *Candidate) bool {
	g := c.Graph
	for _, op := range g.Ops {
		if op.Kind == ugraph.OpInput {
			continue
		}
		c.Kernels++
		if op.Kind == ugraph.OpCustomized {
			c.Customized++
			c.Grids = append(c.Grids, op.Block.Grid)
			c.ForloopRanges = append(c.ForloopRanges, op.Block.ForloopRange)
		}
	}
	if s.opts.Estimate != nil {
		e, err := s.opts.Estimate(g)
		if err != nil {
			return false
		}
		c.Estimate = e
	}
	return true
}

// ranked is what cost.Compare ranks c by.
func (c *Candidate) ranked() cost.Estimate {
	e := cost.Estimate{Micros: c.Estimate.Micros, Bytes: c.Estimate.Bytes}
	for _, g := range c.Grids {
		e.Blocks += g.Count()
	}
	return e
}

// distinct drops from the ranked cands each one that computes what a
// better-ranked one computes, in another order of its ops or operands
// (kernel.CanonicalHash): a seed rule and the enumeration often build the
// same graph so, and the answers would list it twice. Such twins estimate
// alike, so only candidates that tie in the ranking but for their hashes
// are compared. A seed is the one kept (preferTwin), a verified one
// first.
func distinct(cands []*Candidate) []*Candidate {
	out := make([]*Candidate, 0, len(cands))
	for i := 0; i < len(cands); {
		j := i + 1
		for j < len(cands) && tied(cands[i], cands[j]) {
			j++
		}
		if j == i+1 {
			out = append(out, cands[i])
			i = j
			continue
		}
		kept := map[uint64]int{} // canonical hash -> index in out
		for _, c := range cands[i:j] {
			key := kernel.CanonicalHash(c.Graph)
			at, ok := kept[key]
			if !ok {
				kept[key] = len(out)
				out = append(out, c)
				continue
			}
			if preferTwin(c, out[at]) {
				out[at] = c
			}
		}
		i = j
	}
	return out
}

// preferTwin reports whether c takes the place of its twin kept, which
// ranks before it: a graph a seed rule built takes an enumerated one's
// (a shard's search builds the seeds as one process's does, but verifies
// none, so the choice must not depend on what was verified when); of two
// seeds, one verified before the ranking takes the other's: it stays an
// answer however the verification of the rest ends.
func preferTwin(c, kept *Candidate) bool {
	if (c.Seed != "") != (kept.Seed != "") {
		return c.Seed != ""
	}
	return c.checked && !kept.checked
}

// tied reports whether a and b rank alike but for their hashes.
func tied(a, b *Candidate) bool { return compareEstimates(a, b) == 0 }

// compareCandidates ranks by the estimate (time, then bytes moved, then
// blocks), then kernel launches, then hash (a total order, so ranks never
// depend on timing).
func compareCandidates(a, b *Candidate) int {
	return cmp.Or(compareEstimates(a, b), cmp.Compare(a.Hash, b.Hash))
}

// rankedFused is the estimate of the first fused candidate of cands, in
// rank order, that the verifier did not reject; 0 when there is none.
func rankedFused(cands []*Candidate) float64 {
	if i := slices.IndexFunc(cands, func(c *Candidate) bool { return c.Customized > 0 && !c.rejected }); i >= 0 {
		return cands[i].Estimate.Micros
	}
	return 0
}

// compareEstimates is compareCandidates without the hash.
func compareEstimates(a, b *Candidate) int {
	return cmp.Or(cost.Compare(a.ranked(), b.ranked()), cmp.Compare(a.Kernels, b.Kernels))
}
