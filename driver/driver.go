// Package driver superoptimizes whole programs (DESIGN §7): it cuts a
// program into parts that one search can take (Partition), searches each
// part with a configuration derived from its ops and shapes, splits the
// parts that do not fuse and searches the pieces, stitches the best μGraph
// of each part into one kernel graph (Stitch), verifies it against the
// whole program, and ranks it beside the unfused program, which is always
// an answer. It owns the time budget of the whole run.
//
// Around the run it holds what the commands that search and write decide:
// the files they read (Load, Input.MarkDynamic), a run's options from the
// user's settings (Settings.Options, Configure), the output set and its
// CUDA (Output, Emit with its manifest), and the reports --json and the
// tables print (report.go). cmd/mirage only parses flags and prints;
// search never sees more than a part.
package driver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mirage-go/mirage/cost"
	"github.com/mirage-go/mirage/ffverify"
	"github.com/mirage-go/mirage/internal/memlimit"
	"github.com/mirage-go/mirage/search"
	"github.com/mirage-go/mirage/seed"
	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// DefaultTimeLimit is the budget of a run when Options.TimeLimit is 0, so
// that a plain superopt always ends.
const DefaultTimeLimit = 5 * time.Minute

// Options configure Run.
type Options struct {
	Name     string              // the program's name (profiles key measurements by it)
	Arch     target.Arch         // the target: cost model and shared memory
	Preset   string              // a named configuration for every part; "": chosen per part
	Restrict search.Restrictions // the program's superoptimize lists
	// TimeLimit bounds the whole run, searches, verification and all; 0
	// means DefaultTimeLimit. When it runs out, the parts searched so far
	// (and the candidates each search verified) make the answer.
	TimeLimit time.Duration
	Workers   int    // parallel workers over all searches; 0 means 1
	Seed      uint64 // the verifier's draws
	MaxStates int64  // per part search; 0 means no limit
	NoSeeds   bool   // searches leave out the rules' seeds (search.Options.NoSeeds)
	// MaxMemory bounds the memory of each verifier's evaluations
	// (ffverify.Options.MaxBytes); 0 means memlimit.Default.
	MaxMemory int64
	// PartResults is how many candidates each part's search verifies
	// (best first); 0 means 2, a negative number all of them.
	PartResults int
	// Answers is how many whole-program answers Run returns beside the
	// unfused program, best first: combinations of the parts' verified
	// candidates (and their own ops), each stitched and verified against
	// the whole program. 0 means as many as PartResults; a negative
	// number every one, up to MaxAnswers for a program of several parts.
	Answers int
	Cache   *search.Cache // nil: no cache
	// Searched holds the unverified results of part searches shared out
	// among the shards of a sharded run (MergeShards), by the search.Key
	// of the part's whole search: such a part is verified, not searched.
	Searched map[string][]*search.Result
	Profiles *cost.Profiles // measured times that override the model
	// Log, when set, receives a line for each part as it is searched,
	// from one goroutine at a time.
	Log func(string)

	// fingerprints, in the runs of RunDynamic, are the parts' verifiers of
	// the buckets searched so far.
	fingerprints *ffverify.Pool
	// constants keys the verifiers' model of constants
	// (ffverify.Options.Constants): every verifier of a run takes the
	// program's, so that they compute its tensors alike and share their
	// products; RunDynamic's buckets take the dynamic program's, as they
	// share verifiers too. 0: Run takes its program's.
	constants uint64
}

// Result is the outcome of Run.
type Result struct {
	Program  *kernel.Graph
	Baseline cost.Estimate // the unfused program
	// Candidates are whole-program answers, verified against the program,
	// best first: the unfused program, always, and up to Options.Answers
	// others.
	Candidates []*Candidate
	Parts      []*PartReport
	Stats      search.Stats // totals over the parts' searches
	Stopped    string       // why the run stopped early ("time limit", "interrupted"), if it did
	// byPart is set when the run ended inside its searches' time and
	// Stopped says why a part's search stopped (its share of the limit,
	// or --max-states).
	byPart bool
}

// Candidate is a whole-program answer.
type Candidate struct {
	Graph         *kernel.Graph
	Hash          uint64
	Estimate      cost.Estimate
	Kernels       int // kernel launches
	Customized    int // graph-defined kernels among them
	Grids         []block.Dim3
	ForloopRanges []int
	Unfused       bool // the program as written
	Measured      bool // Estimate.Micros is a profile's measured time
	// Seed names the rules (package seed) that built its parts'
	// replacements, "+"-joined in part order; "" when the enumeration
	// found them all.
	Seed string
	// ByParts: the stitched program's own check did not finish in the
	// budget; each part's replacement is verified against its part and
	// the program is wired as they were (wiredAsVerified).
	ByParts bool
	// Rows, in a bucket of a dynamic program (RunDynamic), is the m the
	// graph is written for when it is not the bucket's size: the graph of a
	// larger bucket that the bucket runs on fewer rows (adopted).
	Rows int
}

// PartReport says what happened to one part of the final partition.
type PartReport struct {
	Ops         []int    // the program's ops, by index
	Kinds       []string // their kinds
	Inputs      int
	Outputs     int
	Config      string
	Fused       bool    // the answer runs the part in graph-defined kernels
	WhyNot      string  // why not, when not fused
	EstimatedUs float64 // the part as the answer runs it
	UnfusedUs   float64 // the part's own ops
	Cached      bool    // its search came from the cache
	SameAs      int     // an earlier part with the same canonical hash, searched once; -1
	Stats       search.Stats
	// Seed is the rule (package seed) that built the part's answer; ""
	// when unfused or found by the enumeration.
	Seed string
	// Seeds says what became of each rule's seeds in its search.
	Seeds []search.SeedTrial
	// FirstFusedAt is when, in seconds since the run began, the part had
	// its first fused candidate, faster than its ops or not (its search's
	// Stats.FirstFused, counted from the run's start); -1 if it had none.
	FirstFusedAt float64
	// Note is advice on writing the part so that it runs faster (a cache
	// padded to aligned keys, cacheNote); "" when there is none.
	Note string
}

// outcome is a part program to search, and what searching it gave; parts
// with equal canonical hashes share one.
type outcome struct {
	program   *kernel.Graph
	cfg       search.Config
	unfusedUs float64
	// subtrees, in a shard's run, are the subtrees of its search that the
	// shard explores (search.Options.Subtrees).
	subtrees  []int
	nsubtrees int    // of its search
	result    result // under run.mu: a search abandoned on interruption may still write it
	ops       string // the ops, inputs and outputs of the part that made it, printed (the fingerprint pool's key)
	// inputs are the program's tensors that the part that made it reads,
	// in order: its verifier names its inputs by them, as the whole
	// program's does (ffverify.Options.InputNames), to share products.
	inputs []int
	// fingerprinting is set, under run.mu, while the part's program is
	// evaluated for its verifier: at a prefill's shapes that alone can
	// outlast the run.
	fingerprinting bool
}

// result is what a search of a part gave.
type result struct {
	best *kernel.Graph // the replacement; nil: the part's own ops
	// done is set once searched (or given up on); timedOut when the search
	// stopped at its share of the budget, or never started; slower when it
	// found fused μGraphs, none faster than the part's own ops.
	done, timedOut, slower bool
	fused, cached          bool
	whyNot                 string
	note                   string // PartReport.Note
	estimatedUs            float64
	stats                  search.Stats
	searched               *search.Result // the search's own result; nil if none
	seed                   string         // the rule that built best, if a seed
	merged                 bool           // searched by shards, verified here (VerifyMerged)
	// startedAt is when the search began (after the part's fingerprints
	// were made), or the cache answered, since the run's start.
	startedAt time.Duration
}

// Run superoptimizes program. It returns an error only for a program or
// options it cannot work with; a part the search cannot fuse keeps its
// own ops, so there is always an answer.
func Run(ctx context.Context, program *kernel.Graph, opts Options) (*Result, error) {
	d, ctx, done, err := begin(ctx, program, opts)
	if err != nil {
		return nil, err
	}
	defer done()
	interrupt, start := d.interruptCtx, d.start
	baseline, err := d.estimate(program)
	if err != nil {
		return nil, fmt.Errorf("estimating the program: %v", err)
	}
	res := &Result{Program: program, Baseline: baseline}
	if b, arch := ioBytes(program), d.opts.Arch; b > arch.MemBytes {
		d.logf("warning: the program's inputs and outputs take %s, more than the %s of device memory of %s (%s): no such GPU holds them",
			memlimit.Format(b), memlimit.Format(arch.MemBytes), arch.Name, arch.GPU)
	}
	groups := d.firstGroups(d.searchOver)
	parts, outs, err := d.searchRounds(ctx, groups)
	if err != nil {
		return nil, err
	}
	res.Parts = d.reports(parts, outs)
	res.Stats = d.searchedStats()

	unfused, err := d.candidate(program, true)
	if err != nil {
		return nil, err
	}
	res.Candidates = []*Candidate{unfused}
	answers, err := d.answers(ctx, parts, outs, res.Parts)
	if err != nil {
		return nil, err
	}
	res.Candidates = append(res.Candidates, answers...)
	res.Stats.FirstFused = firstFusedAt(res.Parts)
	slices.SortStableFunc(res.Candidates, func(a, b *Candidate) int { return cost.Compare(a.Estimate, b.Estimate) })
	switch {
	case interrupt.Err() != nil:
		res.Stopped = "interrupted"
	case ctx.Err() != nil:
		// The run ended with a search (or the stitched verification)
		// unfinished.
		res.Stopped = "time limit"
	default:
		res.Stopped = d.stopped(outs)
		// Inside the searches' time, what stopped was a part's search (its
		// share, --max-states); past it, the run's time limit.
		res.byPart = res.Stopped != "" && time.Now().Before(d.searchEnd)
	}
	res.Stats.Seconds = time.Since(start).Seconds()
	return res, nil
}

// stopped is why the first part whose search stopped early stopped: its
// share of the time limit, or the state budget (--max-states); "" when
// every search ran to its end.
func (d *run) stopped(outs []*outcome) string {
	for _, o := range outs {
		if r := d.resultOf(o); r.timedOut {
			if r.searched != nil && r.searched.Stats.Stopped != "" {
				return r.searched.Stats.Stopped
			}
			return "time limit"
		}
	}
	return ""
}

// begin sets a run up: the options' defaults, the run's state with its
// search and verification deadlines, and the context its searches and
// verification run under (done releases it).
func begin(ctx context.Context, program *kernel.Graph, opts Options) (d *run, runCtx context.Context, done func(), err error) {
	if program.Dynamic() {
		return nil, nil, nil, errors.New("the program has a dynamic dim: search it per bucket (RunDynamic)")
	}
	if opts.TimeLimit <= 0 {
		opts.TimeLimit = DefaultTimeLimit
	}
	if opts.Workers < 1 {
		opts.Workers = 1
	}
	if opts.PartResults == 0 {
		opts.PartResults = 2
	}
	if opts.Answers == 0 {
		opts.Answers = opts.PartResults
	}
	if opts.Arch.Name == "" {
		opts.Arch = target.MustLookup(target.Default)
	}
	start := time.Now()
	lim, err := limitsFor(program, opts.Preset)
	if err != nil {
		return nil, nil, nil, err
	}
	// interrupt ends the searches' enumeration at once; searchCtx, their
	// verification, half of interruptGrace later, so that each returns
	// what it verified while the run still waits; runCtx, the run's own,
	// interruptGrace later, or at the time limit.
	interrupt := ctx
	runCtx, cancel := context.WithDeadline(context.WithoutCancel(ctx), start.Add(opts.TimeLimit))
	searchCtx, cancelSearches := context.WithCancel(runCtx)
	stopAfter := context.AfterFunc(interrupt, func() {
		time.AfterFunc(interruptGrace/2, cancelSearches)
		time.AfterFunc(interruptGrace, cancel)
	})
	if opts.constants == 0 {
		opts.constants = ffverify.ConstantsKey(program)
	}
	if log := opts.Log; log != nil {
		// The parts' searches end concurrently; Log sees one line at a
		// time (a caller's bytes.Buffer is not safe for concurrent use).
		var mu sync.Mutex
		opts.Log = func(line string) { mu.Lock(); defer mu.Unlock(); log(line) }
	}
	d = &run{opts: opts, program: program, ix: index(program, opts.Arch), limits: lim, outcomes: map[uint64]*outcome{},
		interrupt: interrupt.Done(), interruptCtx: interrupt, searchCtx: searchCtx, start: start, verifyStop: make(chan struct{})}
	d.memo, _ = ffverify.NewMemo(ffverify.Options{Seed: opts.Seed, MaxBytes: opts.MaxMemory})
	// Searches enumerate until the budget but a tenth (at least 4 s, at
	// most 30 s): that is left for sizing and verifying what they found,
	// and the stitched program. (A search ranks its candidates as it
	// completes them; the floor dates from ranking them afterwards, which
	// for a 6-op element-wise part's 49k took more than a 2 s floor.)
	reserve := min(max(opts.TimeLimit/10, 4*time.Second), 30*time.Second, opts.TimeLimit/2)
	d.searchEnd = start.Add(opts.TimeLimit - reserve)
	// Verifying what the searches found ends halfway through the reserve,
	// so that each search returns what it verified by then, in time for
	// the stitched program's check: a search still verifying when the run
	// ends is a part lost.
	d.verifyEnd = start.Add(opts.TimeLimit - reserve/2)
	return d, runCtx, func() { stopAfter(); cancelSearches(); cancel() }, nil
}

// ioBytes is the device memory that g's inputs and outputs take, each
// tensor once (saturating rather than wrapping).
func ioBytes(g *kernel.Graph) int64 {
	var n int64
	seen := map[kernel.TensorID]bool{}
	for _, t := range append(g.Inputs(), g.Outputs...) {
		if !seen[t] {
			seen[t] = true
			n = ugraph.AddSize(n, int64(g.Tensors[t].Bytes()))
		}
	}
	return n
}

// firstGroups are the ops of the first round's parts (Partition's groups,
// before cut). stop (unless nil) cuts the partition short (split).
func (d *run) firstGroups(stop func() bool) [][]int {
	return recompute(d.ix, split(d.ix, computeOps(d.program), d.limits, !d.opts.NoSeeds, stop), d.limits)
}

// searchOver reports whether the searches' time is over: the run was
// interrupted or its search deadline passed.
func (d *run) searchOver() bool {
	return d.interrupted() || !time.Now().Before(d.searchEnd)
}

// run is the state of one Run.
type run struct {
	opts      Options
	program   *kernel.Graph
	ix        *indexed // program, indexed for partitioning
	limits    func(ops []int) Limits
	start     time.Time
	searchEnd time.Time       // searches stop enumerating then
	verifyEnd time.Time       // and verifying then
	interrupt <-chan struct{} // closed on interrupt: searches stop
	// interruptCtx is the caller's context, whose end is the interrupt.
	interruptCtx context.Context
	// searchCtx ends the searches' verification: with the run's context,
	// or halfway through the grace after an interrupt (begin).
	searchCtx context.Context
	mu        sync.Mutex          // guards every outcome's result, and reported
	outcomes  map[uint64]*outcome // by the canonical hash of a part's program
	// reported is set once the parts are reported: a search that ends
	// after that (left running at the run's end) changes nothing, and
	// says nothing, so the reports and the answers agree.
	reported bool

	// whole checks stitched programs against the program; made once. It
	// stops when verifyStop is closed (stopVerifying).
	wholeOnce sync.Once
	whole     *ffverify.Verifier
	wholeErr  error
	// memo is the products' memo that the parts' verifiers and the whole
	// program's share (ffverify.Memo); nil when the options are bad,
	// which each verifier then reports.
	memo       *ffverify.Memo
	verifyStop chan struct{}
	stopOnce   sync.Once
	// graceEnd is when the stitched programs' checks are given up, set by
	// the first that sees the run end (verifyWithin).
	graceOnce sync.Once
	graceEnd  time.Time
}

// stopVerifying gives up the stitched programs' verification for good.
func (d *run) stopVerifying() { d.stopOnce.Do(func() { close(d.verifyStop) }) }

// searchedStats sums the statistics of every search the run made, each
// part's program once: those of parts a later round cut again too, the work
// the run did rather than the final parts' share of it.
func (d *run) searchedStats() search.Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	var s search.Stats
	for _, o := range d.outcomes {
		if o.result.done {
			s.Add(o.result.stats)
		}
	}
	return s
}

// outcomeOf returns the outcome of part p's program, made if new.
func (d *run) outcomeOf(p Part) (*outcome, error) {
	pg, err := p.Program(d.program)
	if err != nil {
		return nil, fmt.Errorf("part of ops %v: %v", p.Ops, err)
	}
	h := kernel.Hash(pg)
	if o, ok := d.outcomes[h]; ok {
		return o, nil
	}
	e, err := d.estimate(pg)
	if err != nil {
		return nil, err
	}
	o := &outcome{program: pg, unfusedUs: e.Micros, ops: p.key(), inputs: names(p.Inputs)}
	d.outcomes[h] = o
	if len(p.Ops) == 1 && d.program.Ops[p.Ops[0]].Kind == ugraph.OpCustomized {
		o.result = result{done: true, fused: true, estimatedUs: e.Micros}
		o.cfg.Name = "as written"
		return o, nil
	}
	if o.cfg, err = partConfig(pg, d.opts.Preset, d.opts.Restrict, d.opts.Arch); err != nil {
		return nil, err
	}
	return o, nil
}

// estimate is the cost model's estimate of g, a measured time overriding
// it where a profile has one. Where the profile measured other graphs of
// the program, with their estimates, the estimate of a graph it did not
// measure is put on the measured times' scale (Profiles.Scale): measured
// and unmeasured graphs then rank together.
func (d *run) estimate(g *kernel.Graph) (cost.Estimate, error) {
	e, _, err := d.estimateMeasured(g)
	return e, err
}

// estimateMeasured is estimate, and whether the time is measured.
func (d *run) estimateMeasured(g *kernel.Graph) (cost.Estimate, bool, error) {
	e, err := cost.EstimateGraph(g, d.opts.Arch)
	if err != nil {
		return e, false, err
	}
	e, measured := d.profiled(g, e)
	return e, measured, nil
}

// profiled is e, the model's estimate of g, with the profile's measured
// time where it has one, else on the measured times' scale (estimate);
// and whether the time is measured.
func (d *run) profiled(g *kernel.Graph, e cost.Estimate) (cost.Estimate, bool) {
	if us, ok := d.opts.Profiles.Lookup(d.opts.Arch.Name, d.opts.Name, g); ok {
		e.Micros = us
		return e, true
	}
	if scale, ok := d.opts.Profiles.Scale(d.opts.Arch.Name, d.opts.Name); ok {
		e.Micros *= scale
	}
	return e, false
}

// resultOf returns what o's search gave so far.
func (d *run) resultOf(o *outcome) result {
	d.mu.Lock()
	defer d.mu.Unlock()
	return o.result
}

// search searches o's program until deadline (the cache first) and keeps
// its best candidate when it beats the part's own ops. The verification
// of what was found may go on past deadline, until ctx ends.
func (d *run) search(ctx context.Context, o *outcome, deadline time.Time, workers int) {
	r := d.searchPart(ctx, o, deadline, workers)
	r.done = true
	d.mu.Lock()
	late := d.reported
	if !late {
		o.result = r
	}
	d.mu.Unlock()
	if late {
		return // reported as not searched already
	}
	if o.subtrees != nil {
		if r.searched != nil {
			d.logf("part (%s): %d of its %d subtrees searched, %d candidates kept for the merge [%s, %d states in %.1fs]",
				d.kinds(o), len(o.subtrees), o.nsubtrees, len(r.searched.Candidates), o.cfg.Name, r.stats.States, r.stats.Seconds)
		}
		return
	}
	d.log(o, r)
}

func (d *run) searchPart(ctx context.Context, o *outcome, deadline time.Time, workers int) result {
	r := result{estimatedUs: o.unfusedUs}
	if d.interrupted() || ctx.Err() != nil || !time.Now().Before(deadline) {
		r.whyNot, r.timedOut = "not searched: the run ended first", true
		return r
	}
	opts := d.searchOptions(deadline, workers)
	if o.subtrees != nil { // a shard's share: verified by the merge
		opts.Subtrees, opts.Unverified, opts.MaxResults = o.subtrees, true, shardResults(d.opts.PartResults)
	}
	key := search.Key(o.program, o.cfg, opts)
	var res *search.Result
	if shares := d.shares(o); shares != nil {
		vctx, cancel := context.WithDeadline(d.searchCtx, d.verifyEnd)
		defer cancel()
		var err error
		r.startedAt, r.merged = time.Since(d.start), true
		switch res, err = search.VerifyMerged(vctx, o.program, shares, opts); {
		case errors.Is(err, search.ErrUnsettled):
			d.logf("part (%s): the shards' candidates failed the verifier past what they kept; searching it here", d.kinds(o))
			res, r.merged = nil, false
		case err != nil:
			r.whyNot = "verification failed: " + withMemoryHint(err)
			return r
		}
	}
	var base *ffverify.Verifier
	if res == nil && !opts.Unverified {
		// The part's verifier checks a cached result as it would the
		// search's candidates, so that its products are the run's (the
		// whole program's check takes them). The search's checks end with
		// the run's context: by then its answer is not waited for, and the
		// processors are the next run's (a bucket's, a workload's) or the
		// writer's.
		d.mu.Lock()
		o.fingerprinting = true
		d.mu.Unlock()
		v, err := d.verifier(o, ctx.Done())
		d.mu.Lock()
		o.fingerprinting = false
		d.mu.Unlock()
		switch {
		case errors.Is(err, ffverify.ErrStopped):
			r.whyNot, r.timedOut = unfingerprinted(o), true
			return r
		case err != nil:
			r.whyNot = "search failed: fingerprinting the part: " + withMemoryHint(err)
			return r
		}
		opts.Verifier, base = v, v.StopWhen(nil)
	}
	if res == nil && d.opts.Cache != nil {
		switch cached, hit, err := d.opts.Cache.Load(key, o.program, opts); {
		case err != nil:
			d.logf("warning: ignoring the cache: %v", err)
		case hit:
			res, r.cached, r.startedAt = cached, true, time.Since(d.start)
			d.logf("using cached result %s", key)
			d.opts.fingerprints.Keep(o.ops, base)
		}
	}
	if res == nil {
		vctx, cancel := context.WithDeadline(d.searchCtx, d.verifyEnd)
		defer cancel()
		var err error
		r.startedAt = time.Since(d.start)
		if res, err = search.Run(vctx, o.program, o.cfg, opts); err != nil {
			if errors.Is(err, ffverify.ErrStopped) {
				r.whyNot, r.timedOut = "the run ended before its candidates were verified", true
				return r
			}
			r.whyNot = "search failed: " + withMemoryHint(err)
			return r
		}
		d.opts.fingerprints.Keep(o.ops, base)
		if d.opts.Cache != nil && res.Stats.Stopped == "" {
			if err := d.opts.Cache.Store(key, "part", res); err != nil {
				d.logf("warning: cache: %v", err) // a cache that cannot be written only costs time
			}
		}
	}
	r.searched = res
	r.stats = res.Stats
	r.timedOut = res.Stats.Stopped != ""
	r.judge(res, o.unfusedUs, d.opts.NoSeeds)
	if o.subtrees == nil && !d.opts.NoSeeds {
		r.note = cacheNote(o, r.estimatedUs, opts)
	}
	return r
}

// cacheNote is the advice for a part that attends over a cache whose keys
// split poorly among the blocks (seed.PadCache): where the same attention
// with K and V allocated at aligned keys (a multiple of one of
// seed.CacheAligns: the one whose seed the model finds fastest), and a
// mask, has a seed that
// the model puts 10% or more below the part's answer (us), it says so
// with both figures. "" otherwise.
func cacheNote(o *outcome, us float64, opts search.Options) string {
	// The padding the model finds fastest: a larger cache only where it
	// is 2% faster than a smaller one.
	var pc seed.PaddedCache
	var best float64
	for _, align := range seed.CacheAligns {
		p, ok := seed.PadCache(o.program, align)
		if !ok || p.Padded == pc.Padded {
			continue
		}
		if e, ok := search.BestSeed(p.Graph, o.cfg, opts); ok && (pc.Graph == nil || e.Micros < 0.98*best) {
			pc, best = p, e.Micros
		}
	}
	if pc.Graph == nil || best > 0.9*us {
		return ""
	}
	how := "and a mask input added to the scores (−inf past the last key in use)"
	if !pc.Mask {
		how = "and the mask −inf past the last key in use"
	}
	return fmt.Sprintf("attention over %d keys, which split poorly among the blocks: with K and V allocated at %d keys %s, est. %.1f µs against %.1f",
		pc.Keys, pc.Padded, how, best, us)
}

// judge sets what r says of a part whose search gave res, against the
// part's own ops at unfusedUs: its best fused candidate where one is
// faster, else why not.
func (r *result) judge(res *search.Result, unfusedUs float64, noSeeds bool) {
	slower := func(us float64) {
		r.slower = true
		r.whyNot = fmt.Sprintf("the best fused μGraph (%.1f µs) is no faster than the part's own ops (%.1f µs)", us, unfusedUs)
	}
	for _, c := range res.Candidates {
		if c.Customized == 0 {
			continue
		}
		if c.Estimate.Micros < unfusedUs {
			r.best, r.fused, r.estimatedUs, r.seed = c.Graph, true, c.Estimate.Micros, c.Seed
		} else {
			slower(c.Estimate.Micros)
		}
		return
	}
	// The candidates kept are all unfused (the part's ops as written, or
	// others like them): every fused one ranks below the last of them,
	// unverified (first_fused_at_seconds stays -1; found by a user's
	// sweep, which read the two as contradicting each other).
	if f := res.Stats.RankedFused; f > 0 && f >= unfusedUs {
		r.slower = true
		r.whyNot = fmt.Sprintf("the best fused μGraph the search ranked (%.1f µs, not verified: it ranks below the candidates kept) is no faster than the part's own ops (%.1f µs)", f, unfusedUs)
		return
	}
	r.whyNot = whyNoneFound(res, noSeeds, r.merged)
}

// stopCause is the noun for a search's Stats.Stopped, as the reasons
// read it: "the enumeration stopped at the interrupt" (found by review:
// "at the interrupted").
func stopCause(stopped string) string {
	switch stopped {
	case "interrupted":
		return "interrupt"
	case "memory":
		return "memory bound"
	}
	return stopped
}

// whyNoneFound says, in words a user can act on, why a search that ran
// gave no fused candidate: what the enumeration reached, what the
// verifier made of it, and which seeds were tried.
func whyNoneFound(res *search.Result, noSeeds, merged bool) string {
	st := res.Stats
	st.Stopped = stopCause(st.Stopped)
	var why string
	switch {
	case st.States == 0 && st.Stopped != "":
		// Its share went to the part's fingerprint and the seeds' checks.
		why = fmt.Sprintf("the %s came before the enumeration's first state", st.Stopped)
	case st.Complete == 0 && st.Stopped != "":
		why = fmt.Sprintf("the enumeration stopped at the %s after %d states with no candidate complete", st.Stopped, st.States)
	case st.Complete == 0:
		why = fmt.Sprintf("the enumeration ended after %d states with no candidate complete", st.States)
	case st.Verified == 0 && st.Rejected > 0 && st.Unchecked == 0:
		why = fmt.Sprintf("all %d candidates failed verification", st.Rejected)
	case st.Verified == 0 && st.Rejected > 0:
		why = fmt.Sprintf("the %d best-ranked of %d candidates failed verification; the %s ended it", st.Rejected, st.Complete, cmp.Or(st.Stopped, stopCause("time limit")))
	case st.Verified == 0:
		why = fmt.Sprintf("the %s came before any of its %d candidates was verified", cmp.Or(st.Stopped, stopCause("time limit")), st.Complete)
	default:
		why = "no equivalent fused μGraph found"
		if st.Stopped != "" {
			why += " before the " + st.Stopped
		}
	}
	switch {
	case noSeeds:
		return why + "; seeds off"
	case merged && len(res.Seeds) == 0:
		return why + "; seeds as the shards tried them"
	}
	return why + "; " + seedsTried(res.Seeds)
}

// seedsTried says which seeds a search tried and what became of them.
func seedsTried(trials []search.SeedTrial) string {
	if len(trials) == 0 {
		return "no seed rule applies (" + strings.Join(seed.Rules(), ", ") + ")"
	}
	var parts []string
	for _, t := range trials {
		parts = append(parts, fmt.Sprintf("%s %s", t.Rule, t.Outcome))
	}
	return "seeds: " + strings.Join(parts, ", ")
}

// unfingerprinted says why o's part was not searched when the run ended
// while its program was being evaluated for the verifier, and what that
// takes: a longer --time-limit is the remedy.
func unfingerprinted(o *outcome) string {
	return "the run ended before the part was fingerprinted (" + ffverify.FingerprintTime(o.program, ffverify.Options{}) + ")"
}

// verifier returns the verifier of o's part's search, stopped once stop is
// closed: one made from a larger bucket's (ffverify.Pool.Prefix), else a
// new one, as the search would make it. A new one that takes a while is
// announced: at a prefill's shapes it is the run's first seconds, and
// nothing else is printed then.
func (d *run) verifier(o *outcome, stop <-chan struct{}) (*ffverify.Verifier, error) {
	if v := d.opts.fingerprints.Prefix(o.ops, o.program); v != nil {
		return v.StopWhen(stop), nil
	}
	opts := d.verifierOptions(o.inputs)
	if t, _, _ := ffverify.EvaluationTime(opts, o.program); t >= announcedFingerprint {
		d.logf("part (%s) -> %s: fingerprinting it first: %s", d.kinds(o), outputShapes(o.program), ffverify.FingerprintTime(o.program, opts))
	}
	return ffverify.NewStopping(o.program, opts, stop)
}

// announcedFingerprint is the least fingerprinting time the run announces
// (a variable for the tests).
var announcedFingerprint = 5 * time.Second

// names are the tensor ids, as ffverify.Options.InputNames.
func names(ids []kernel.TensorID) []int {
	n := make([]int, len(ids))
	for i, id := range ids {
		n[i] = int(id)
	}
	return n
}

// withMemoryHint is err's message, with how to raise the bound when it is
// an evaluation over it.
func withMemoryHint(err error) string {
	if memlimit.IsOver(err) {
		return err.Error() + " (--max-memory raises the limit)"
	}
	return err.Error()
}

// verifierOptions are the options of the verifiers the run makes itself,
// as its searches make theirs (search.Options), for a program whose inputs
// are the whole program's tensors with ids inputs: they draw the same values
// for the same tensor, and share the run's memo of products.
func (d *run) verifierOptions(inputs []int) ffverify.Options {
	return ffverify.Options{Seed: d.opts.Seed, MaxBytes: d.opts.MaxMemory, InputNames: inputs, Memo: d.memo, Constants: d.opts.constants}
}

// liveHeapBudget is the live heap at which a search stops enumerating: a
// quarter of the process's memory limit (mirage sets it to 3/4 of the
// machine's or its cgroup's memory; GOMEMLIMIT overrides). The collector's
// target is twice the live heap, and the verification and sizing after the
// enumeration allocate more: at half the limit (when the search still
// estimated its candidates afterwards) an attention search spent minutes
// collecting at the limit and grew past it. 0 (none) without a limit.
func liveHeapBudget() int64 {
	if l := debug.SetMemoryLimit(-1); l > 0 && l < math.MaxInt64 {
		return l / 4
	}
	return 0
}

// searchOptions are the options of a part's search. Its estimates plan
// each block graph once (cost.Estimator): the search attaches one block
// graph to many candidates, and never changes it once attached.
func (d *run) searchOptions(deadline time.Time, workers int) search.Options {
	est := cost.NewEstimator(d.opts.Arch)
	return search.Options{Workers: workers, Seed: d.opts.Seed, MaxStates: d.opts.MaxStates, MaxResults: max(d.opts.PartResults, 0), NoSeeds: d.opts.NoSeeds,
		Deadline: deadline, Stop: d.interrupt, MaxLiveHeap: liveHeapBudget(), MaxMemory: d.opts.MaxMemory,
		Estimate: func(g *kernel.Graph) (search.Estimate, error) {
			e, err := est.Graph(g)
			if err != nil {
				return search.Estimate{}, err
			}
			e, _ = d.profiled(g, e)
			return search.Estimate{Micros: e.Micros, Bytes: e.Bytes, Flops: e.Flops}, nil
		}}
}

// shares returns the shards' shares of o's search, when the run is a
// merge's (Options.Searched) and they searched it.
func (d *run) shares(o *outcome) []*search.Result {
	if d.opts.Searched == nil {
		return nil
	}
	return d.opts.Searched[d.wholeKey(o)]
}

// wholeKey is the search.Key of the whole search of o's part: the same in
// every shard, whichever subtrees it explores.
func (d *run) wholeKey(o *outcome) string {
	return search.Key(o.program, o.cfg, d.searchOptions(time.Time{}, 1))
}

// interrupted reports whether the run was interrupted.
func (d *run) interrupted() bool {
	select {
	case <-d.interrupt:
		return true
	default:
		return false
	}
}

func (d *run) logf(format string, args ...any) {
	if d.opts.Log != nil {
		d.opts.Log(fmt.Sprintf(format, args...))
	}
}

// kinds lists the kinds of o's part's ops.
func (d *run) kinds(o *outcome) string {
	var kinds []string
	for _, op := range o.program.Ops {
		if op.Kind != ugraph.OpInput {
			kinds = append(kinds, op.Kind.String())
		}
	}
	return strings.Join(kinds, ", ")
}

// log reports a searched part.
func (d *run) log(o *outcome, r result) {
	fused, was := distinctDecimals(r.estimatedUs, o.unfusedUs)
	what := fmt.Sprintf("fused: %s µs, was %s µs", fused, was)
	if !r.fused {
		what = "not fused: " + r.whyNot
	}
	d.logf("part (%s) -> %s: %s [%s, %d states in %.1fs]", d.kinds(o), outputShapes(o.program), what, o.cfg.Name, r.stats.States, r.stats.Seconds)
	if r.note != "" {
		d.logf("part (%s) -> %s: note: %s", d.kinds(o), outputShapes(o.program), r.note)
	}
}

// outputShapes names the shapes of g's outputs: the log's lines of parts
// of the same ops (a layer's q and its LoRA's down projection, both
// rms_norm then matmul) tell them apart, searched pieces the final table
// does not hold among them.
func outputShapes(g *kernel.Graph) string {
	var shapes []string
	for _, t := range g.Outputs {
		shapes = append(shapes, g.Tensors[t].Shape.String())
	}
	return strings.Join(shapes, ", ")
}

// distinctDecimals formats two times with one decimal, or with as many
// more (up to three) as it takes to tell them apart: a part fused for a
// 0.4% gain is not reported as "2.2 µs, was 2.2 µs".
func distinctDecimals(a, b float64) (string, string) {
	prec := 1
	for ; prec < 3; prec++ {
		if strconv.FormatFloat(a, 'f', prec, 64) != strconv.FormatFloat(b, 'f', prec, 64) {
			break
		}
	}
	return strconv.FormatFloat(a, 'f', prec, 64), strconv.FormatFloat(b, 'f', prec, 64)
}

// reports describes the final parts.
func (d *run) reports(parts []Part, outs []*outcome) []*PartReport {
	d.mu.Lock()
	d.reported = true
	d.mu.Unlock()
	var rs []*PartReport
	first := map[*outcome]int{}
	for k, p := range parts {
		o := outs[k]
		res := d.resultOf(o)
		if !res.done {
			res = result{whyNot: "the run ended before its search did"}
			d.mu.Lock()
			if o.fingerprinting {
				res.whyNot = unfingerprinted(o)
			}
			d.mu.Unlock()
			if _, seen := first[o]; !seen {
				d.log(o, res) // the searched parts said so as they ended
			}
		}
		if !res.fused {
			res.best, res.estimatedUs = nil, o.unfusedUs
		}
		r := &PartReport{Ops: p.Ops, Inputs: len(p.Inputs), Outputs: len(p.Outputs), Config: o.cfg.Name,
			Fused: res.fused, WhyNot: res.whyNot, EstimatedUs: res.estimatedUs, UnfusedUs: o.unfusedUs,
			Cached: res.cached, SameAs: -1, Stats: res.stats, Seed: res.seed, FirstFusedAt: res.firstFusedAt(), Note: res.note}
		if res.searched != nil {
			r.Seeds = res.searched.Seeds
		}
		for _, i := range p.Ops {
			r.Kinds = append(r.Kinds, d.program.Ops[i].Kind.String())
		}
		if j, ok := first[o]; ok {
			r.SameAs = j
		} else {
			first[o] = k
		}
		rs = append(rs, r)
	}
	return rs
}

// interruptGrace is how long the searches may go on after an interrupt:
// verifying what they found for half of it, returning it in the rest.
const interruptGrace = time.Second

// verifyGrace is how long the stitched program's verification may go on
// once the run's context has ended (an interrupt, the time limit).
const verifyGrace = 500 * time.Millisecond

// errAbandoned reports a verification the run did not wait for.
var errAbandoned = errors.New("driver: verification abandoned")

// verifyWithin is verify, given up verifyGrace after ctx ends or the run
// is interrupted: an interrupted run answers at once, with what it has
// verified. (interruptGrace is the searches', which are over by now.) The
// grace is the run's, counted from the first check that saw the end, and
// the answers checked after the time limit share it (a grace each let 64
// answers overrun --time-limit by 40%).
func (d *run) verifyWithin(ctx context.Context, g *kernel.Graph, parts []Part, outs []*outcome) (bool, error) {
	type verdict struct {
		ok  bool
		err error
	}
	ch := make(chan verdict, 1)
	check := wholeCheck // read here: an abandoned check outlives the call
	go func() {
		ok, err := check(d, g, parts, outs)
		ch <- verdict{ok, err}
	}()
	select {
	case v := <-ch:
		return v.ok, v.err
	case <-ctx.Done():
	case <-d.interrupt:
	}
	d.graceOnce.Do(func() { d.graceEnd = time.Now().Add(verifyGrace) })
	select {
	case v := <-ch:
		return v.ok, v.err
	case <-time.After(time.Until(d.graceEnd)):
		// What is left of it would only take the processors; the run
		// verifies nothing more.
		d.stopVerifying()
		return false, errAbandoned
	}
}

// wholeCheck is (*run).verify; a test replaces it with a check that
// never finishes.
var wholeCheck = (*run).verify

// verify checks a stitched program against the program, unless its one
// part is the program itself, whose search verified the replacement. The
// program's verifier is made once and kept for the run's other answers
// (wholeVerifier).
func (d *run) verify(g *kernel.Graph, parts []Part, outs []*outcome) (bool, error) {
	if len(parts) == 1 && kernel.Hash(outs[0].program) == kernel.Hash(d.program) {
		return true, nil
	}
	whole, err := d.wholeVerifier()
	if err != nil {
		return false, fmt.Errorf("verifying the stitched program: %v", err)
	}
	r, err := whole.Verify(g)
	if err != nil {
		return false, fmt.Errorf("verifying the stitched program: %v", err)
	}
	// Each output must be the program's output in its place, not merely
	// one of them.
	return r.InOrder(), nil
}

// wholeVerifier returns the program's verifier, made once (by the first
// caller; the others wait for it). It gives up (ffverify.ErrStopped) once
// the run stops verifying (stopVerifying).
func (d *run) wholeVerifier() (*ffverify.Verifier, error) {
	d.wholeOnce.Do(func() {
		opts := d.verifierOptions(names(d.program.Inputs()))
		// No fast path: a stitched program is made of verified parts, so
		// its check is expected to pass, and the fast path's sampled
		// positions, each the cone of a whole layer, would cost up to half
		// a full check for nothing (a LLaMA-70B MLP's answer: 14 of 27 s).
		opts.Samples = -1
		d.whole, d.wholeErr = ffverify.NewStopping(d.program, opts, d.verifyStop)
	})
	return d.whole, d.wholeErr
}

// answers are the run's whole-program answers beside the unfused program:
// up to Options.Answers combinations of the parts' options (combinations),
// each stitched and verified against the program, fastest first. The
// first is every part's fastest option (the answer the reports describe)
// unless that is the unfused program: when it cannot be verified (the run
// ended, or, a bug, it is not equivalent) its fused parts are reported
// unfused. A later combination that fails is left out. Once the run's
// budget ends a whole check, that answer and the rest stand on their
// parts' checks where the wiring allows (wiredAsVerified; ByParts).
func (d *run) answers(ctx context.Context, parts []Part, outs []*outcome, reports []*PartReport) ([]*Candidate, error) {
	opts := d.partOptions(outs)
	n := d.opts.Answers
	switch {
	case n < 0 && len(opts) == 1:
		n = len(opts[0])
	case n < 0:
		n = MaxAnswers
	}
	var out []*Candidate
	// Once the whole check cannot finish in the budget, the answers left
	// stand on their parts' checks and the wiring (wiredAsVerified, the
	// same for every combination: it is about the parts' programs), as
	// the first does: the run is over, and waiting out verifyGrace for
	// each would only delay them. Unless a whole check has failed: then
	// the parts' checks and the wiring are not proof (a bug is), and
	// nothing more stands on them.
	abandoned, wired, disproved := false, false, false
	for rank, choice := range combinations(opts, n) {
		repl := make([]*kernel.Graph, len(parts))
		for k, i := range choice {
			repl[k] = opts[k][i].graph
		}
		g, err := Stitch(d.program, parts, repl)
		if err != nil {
			return nil, err
		}
		var ok bool
		if abandoned {
			err = errAbandoned
		} else {
			ok, err = d.verifyWithin(ctx, g, parts, outs)
		}
		byParts := false
		if errors.Is(err, errAbandoned) && !abandoned {
			abandoned, wired = true, d.wiredAsVerified(parts, outs)
			if wired && !disproved {
				// The whole check did not fit the budget (at a model's
				// shapes it evaluates every matmul twice); the parts'
				// checks and the wiring prove the answer.
				// (rank counts the combinations, not the table's rows,
				// which hold the unfused program too: the rows say it.)
				why := "did not finish in time"
				if d.interrupted() {
					why = "was interrupted"
				}
				d.logf("the stitched program's own check %s; its parts are verified and it is wired as they were: the answers marked \"verified part by part\" stand on their parts' checks", why)
			}
		}
		if err == nil && !ok {
			disproved = true
		}
		if abandoned && wired && !disproved {
			ok, err, byParts = true, nil, true
		}
		if rank == 0 {
			switch {
			case errors.Is(err, errAbandoned):
				unfuse(reports, "the run ended before the stitched program was verified")
			case err != nil:
				return nil, err
			case !ok:
				// Each part's replacement passed the verifier against its
				// part, so this is a bug; the unfused program stays the
				// answer.
				unfuse(reports, "the stitched program did not verify")
			}
		}
		if errors.Is(err, errAbandoned) {
			break // the run is over: what is verified is the answer
		}
		if err != nil || !ok {
			if rank > 0 {
				why := "the verifier found it differs from the program (a bug: its parts passed)"
				if err != nil {
					why = err.Error()
				}
				d.logf("warning: answer %d (a combination of verified parts) did not verify: %s", rank, why)
			}
			continue
		}
		c, err := d.candidate(g, false)
		if err != nil {
			return nil, err
		}
		c.ByParts = byParts
		var rules []string
		for k, i := range choice {
			if r := opts[k][i].seed; r != "" && !slices.Contains(rules, r) {
				rules = append(rules, r)
			}
		}
		c.Seed = strings.Join(rules, "+")
		out = append(out, c)
	}
	return out, nil
}

// wiredAsVerified reports whether a program stitched from the parts'
// replacements computes the program because each replacement computes its
// part: every replacement passed the verifier against its outcome's
// program (the search's check, or the cache's), so splicing those
// programs in their place must give back the program's own ops, op for op
// (Stitch with no replacement), with nothing left to evaluate.
func (d *run) wiredAsVerified(parts []Part, outs []*outcome) bool {
	own, err := Stitch(d.program, parts, make([]*kernel.Graph, len(parts)))
	if err != nil {
		return false
	}
	checked := make([]*kernel.Graph, len(parts))
	for k, o := range outs {
		checked[k] = o.program
	}
	spliced, err := Stitch(d.program, parts, checked)
	return err == nil && kernel.Hash(spliced) == kernel.Hash(own)
}

// firstFusedAt is when the part had its first fused candidate (whether or
// not it is faster than the part's ops), in seconds since the run began;
// -1 if it had none. A search's first passed the verifier's fast path
// then; it counts only where the search ended with a fused candidate that
// passed the full check too (a LLaMA-70B part's seeds pass the fast path
// in 0.1 s and the full check seconds later, which a short run may not
// reach).
func (r result) firstFusedAt() float64 {
	if r.fused && r.searched == nil { // a customized op as written
		return 0
	}
	if r.searched == nil || !slices.ContainsFunc(r.searched.Candidates, func(c *search.Candidate) bool { return c.Customized > 0 }) {
		return -1
	}
	switch ff := r.stats.FirstFused; {
	case r.cached:
		return r.startedAt.Seconds() // the cache answered at once
	case ff >= 0:
		return (r.startedAt + time.Duration(ff*float64(time.Second))).Seconds()
	}
	return -1
}

// firstFusedAt is when every part had its first fused candidate, in
// seconds since the run began; -1 when a part had none.
func firstFusedAt(reports []*PartReport) float64 {
	at := -1.0
	for _, r := range reports {
		if r.FirstFusedAt < 0 {
			return -1
		}
		at = max(at, r.FirstFusedAt)
	}
	return at
}

// unfuse reports every fused part unfused, for why.
func unfuse(reports []*PartReport, why string) {
	for _, r := range reports {
		if r.Fused {
			r.Fused, r.WhyNot, r.EstimatedUs, r.Seed = false, why, r.UnfusedUs, ""
		}
	}
}

// candidate describes g as an answer.
func (d *run) candidate(g *kernel.Graph, unfused bool) (*Candidate, error) {
	e, measured, err := d.estimateMeasured(g)
	if err != nil {
		return nil, err
	}
	c := &Candidate{Graph: g, Hash: kernel.Hash(g), Estimate: e, Unfused: unfused, Measured: measured}
	for _, op := range g.Ops {
		switch {
		case op.Block != nil:
			c.Kernels++
			c.Customized++
			c.Grids = append(c.Grids, op.Block.Grid)
			c.ForloopRanges = append(c.ForloopRanges, op.Block.ForloopRange)
		case op.Kind != ugraph.OpInput:
			c.Kernels++
		}
	}
	// Launches as the code runs them: a matmul and the add folded into
	// its cuBLASLt call are one.
	if e.Launches > 0 {
		c.Kernels = e.Launches
	}
	return c, nil
}
