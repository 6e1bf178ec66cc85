package ffverify

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/mirage-go/mirage/internal/memlimit"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
	"github.com/mirage-go/mirage/ugraph/layout"
)

const (
	// DefaultTrials is the number of independent draws. One draw already
	// errs with probability below 1e-7 on the graphs we search (see the
	// package documentation); the second squares that, and covers what the
	// bound assumes rather than proves (exp of polynomial arguments, sqrt,
	// random functions), for twice the time of a full check that accepts.
	DefaultTrials = 2
	// DefaultSamples is the number of positions per output that the fast
	// path compares. A wrong candidate usually differs almost everywhere,
	// so a few positions reject it; one that differs in few places passes
	// them and is caught by the full check.
	DefaultSamples = 8
	// DefaultSharedInputs bounds the input elements, over all draws, that
	// a Verifier keeps for every candidate's full check (8 bytes each, so
	// 1 GiB). Evaluating the program on New holds them all at once anyway.
	DefaultSharedInputs = 1 << 27
	// DefaultProductBytes bounds the memory of the products of input
	// tiles that full checks share (see products), over all draws.
	DefaultProductBytes = 1 << 30
)

// Options configure a Verifier.
type Options struct {
	// Trials is the number of independent random draws (inputs and random
	// functions) the outputs must agree on; 0 means DefaultTrials.
	Trials int
	// Seed makes the draws, and so every verdict, reproducible.
	Seed uint64
	// Samples is the number of output positions per output that Reject
	// compares; 0 means DefaultSamples, a negative value turns the fast
	// path off (Verify then runs the full check only).
	Samples int
	// SharedInputs bounds the input elements, over all draws, that the
	// Verifier materialises once and shares between candidates, rather
	// than computing them in every full check: if the program's inputs
	// have more, or sharing them would exceed MaxBytes, none are shared.
	// 0 means DefaultSharedInputs; negative, none.
	SharedInputs int
	// MaxBytes bounds the memory that evaluations take: what a Verifier
	// keeps (the program's outputs on every draw, shared inputs) plus what
	// the draws being evaluated at once hold. New, Equivalent and a
	// Verifier's methods refuse, before allocating, a graph whose draw
	// alone would exceed it, with a *memlimit.Error saying how much it
	// needs; fewer draws run in parallel when more would exceed it. 0 means
	// memlimit.Default (4 GiB).
	MaxBytes int64
	// InputNames, when not nil, names the program's inputs, one distinct
	// name each, none negative: Verifiers with the same Seed draw the same
	// values for inputs of the same name and shape, so that they can share
	// their products (Memo). A run names the inputs of its parts' programs
	// and of the whole program by the whole program's tensors. Nil names
	// input k by k.
	InputNames []int
	// Memo, when not nil, is a products' memo the Verifier shares with
	// others of the same Seed and Trials (NewMemo). A Verifier whose
	// program's draw does not fit in MaxBytes beside the memo's budget
	// keeps a smaller memo of its own.
	Memo *Memo
	// Constants keys the model of the constants (ConstantsKey), which
	// must depend on the program: 0 means the program's own key.
	// Verifiers that share a Memo and evaluate tensors of one program
	// alike (a run's parts and the whole) give that program's key, so
	// that their computed values, and the products of those the memo
	// keeps, are alike too.
	Constants uint64
}

func (o Options) normalized() (Options, error) {
	if o.Trials < 0 {
		return o, fmt.Errorf("ffverify: %d trials", o.Trials)
	}
	if o.MaxBytes < 0 {
		return o, fmt.Errorf("ffverify: MaxBytes %d", o.MaxBytes)
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = memlimit.Default
	}
	if o.Trials == 0 {
		o.Trials = DefaultTrials
	}
	if o.Samples == 0 {
		o.Samples = DefaultSamples
	}
	if o.SharedInputs == 0 {
		o.SharedInputs = DefaultSharedInputs
	}
	return o, nil
}

// Verifier checks candidate μGraphs against one program. It holds the
// program's outputs on every draw (its fingerprints) and is read-only after
// New, so any number of goroutines may call its methods at once.
type Verifier struct {
	opts    Options
	inputs  []ugraph.Shape // the program's input shapes, in order
	outputs []ugraph.Shape // the program's output shapes, in order
	prints  [][]*tensor    // per trial: the program's outputs
	// dense holds, per trial, the inputs materialised on first use, when
	// they are few enough (Options.SharedInputs): candidates' full checks
	// then copy tiles rather than hash every element they read, and no
	// longer fill fresh memory with a weight each.
	dense [][]func() *tensor
	// products holds, per trial, the memo of input tile products that the
	// candidates' full checks share, when the inputs are shared.
	products  []*products
	memoBytes int64 // the products' budget, over all draws
	// held is the memory that prints and dense take (or will, once the
	// inputs are materialised), in bytes.
	held int64
	// stop, when closed, ends the checks (StopWhen).
	stop <-chan struct{}
}

// ErrStopped is the error of a check given up because the channel given
// to StopWhen was closed.
var ErrStopped = errors.New("ffverify: the check was stopped")

// errStopped is the panic value that stops an evaluation (trial.check).
var errStopped = errors.New("ffverify: stopped")

// StopWhen returns a Verifier that shares v's fingerprints, inputs and
// memo, and whose checks (Verify, Reject) give up with ErrStopped once
// stop is closed: a search left behind when its run's time is over stops
// at once, rather than finish a check no one will read while the next run
// waits for the processor. v itself is not stopped.
func (v *Verifier) StopWhen(stop <-chan struct{}) *Verifier {
	w := *v
	w.stop = stop
	return &w
}

// stopped turns an evaluation stopped by its check (errStopped) into
// ErrStopped.
func stopped(err *error) {
	if e := recover(); e != nil {
		if e != errStopped {
			panic(e)
		}
		*err = ErrStopped
	}
}

// checkStop panics with errStopped once v.stop is closed.
func (v *Verifier) checkStop() {
	if v.stop == nil {
		return
	}
	select {
	case <-v.stop:
		panic(errStopped)
	default:
	}
}

// New evaluates program on every draw (in parallel, as many draws at once
// as Options.MaxBytes allows) and returns a Verifier for it. It fails if
// the program is not a valid μGraph: one that the kernel and block builders
// would build op by op, with at least one output; or if its outputs on
// every draw and one draw's evaluation would not fit in Options.MaxBytes.
func New(program *kernel.Graph, opts Options) (*Verifier, error) {
	return NewStopping(program, opts, nil)
}

// NewStopping is New, given up with ErrStopped once stop is closed; the
// Verifier it returns stops with it too (StopWhen). A nil stop never
// closes.
func NewStopping(program *kernel.Graph, opts Options, stop <-chan struct{}) (*Verifier, error) {
	opts, err := opts.normalized()
	if err != nil {
		return nil, err
	}
	p, err := newPlan(program)
	if err != nil {
		return nil, fmt.Errorf("ffverify: program: %w", err)
	}
	if err := opts.checkNames(len(program.Inputs())); err != nil {
		return nil, err
	}
	if opts.Constants == 0 {
		opts.Constants = ConstantsKey(program)
	}
	v := newVerifier(p, opts)
	v.stop = stop
	v.held = ugraph.MulSize(int64(opts.Trials), p.outputBytes())
	if err := v.shareInputs(p); err != nil {
		return nil, err
	}
	// The program's products go to the memo too, and stay (pin): a
	// candidate's fused matmul that sums them whole (wholeSums) copies
	// them from there.
	p.memo = v.products != nil
	pins, err := v.evaluate(p)
	if err != nil {
		return nil, err
	}
	for t, ps := range v.products {
		ps.pin(pins[t])
	}
	return v, nil
}

// evaluate runs the program p on every draw and keeps its outputs, whose
// memory is in v.held already. It returns, per draw, the memo keys of the
// products the program took (trial.pins).
func (v *Verifier) evaluate(p *plan) (pins [][]any, err error) {
	out := p.outputBytes()
	u := p.memory(v.dense != nil)
	w, err := v.opts.workers(v.opts.Trials, v.held, max(u.peak-out, 0),
		fmt.Sprintf("evaluating the program (keeping its outputs on %d draws)", v.opts.Trials), "a draw "+p.peak(u))
	if err != nil {
		return nil, fmt.Errorf("ffverify: program: %w", err)
	}
	v.prints = make([][]*tensor, v.opts.Trials)
	pins = make([][]any, v.opts.Trials)
	halted := false
	eachDraw(v.opts.Trials, w, func(t int) (outs []*tensor) {
		defer func() {
			if e := recover(); e != nil {
				if e != errStopped {
					panic(e)
				}
				outs = nil // stopped (StopWhen)
			}
		}()
		tr := v.trial(p, t)
		tr.pins = &pins[t]
		return p.run(tr)
	}, func(t int, outs []*tensor) bool {
		v.prints[t], halted = outs, outs == nil
		return !halted
	})
	if halted {
		return nil, ErrStopped
	}
	return pins, nil
}

// newVerifier returns a Verifier for p's graph with no draws yet.
func newVerifier(p *plan, opts Options) *Verifier {
	v := &Verifier{opts: opts}
	for _, id := range p.g.Inputs() {
		v.inputs = append(v.inputs, p.g.Tensors[id].Shape)
	}
	for _, id := range p.g.Outputs {
		v.outputs = append(v.outputs, p.g.Tensors[id].Shape)
	}
	return v
}

// shareInputs sets up v.dense for p's inputs, if they are few enough and
// sharing them leaves room for a draw in Options.MaxBytes, and the
// products' memo, whether they are shared or not: Options.Memo where it
// leaves that room, else a memo of v's own.
func (v *Verifier) shareInputs(p *plan) error {
	var n int64
	for _, s := range v.inputs {
		n = ugraph.AddSize(n, int64(s.NumElements()))
	}
	shared := ugraph.AddSize(v.held, ugraph.MulSize(int64(v.opts.Trials), p.inputBytes()))
	share := ugraph.MulSize(n, int64(v.opts.Trials)) <= int64(v.opts.SharedInputs) && ugraph.AddSize(shared, p.memory(true).peak) <= v.opts.MaxBytes
	if share {
		v.held = shared
		v.dense = make([][]func() *tensor, v.opts.Trials)
		for t := range v.dense {
			tr := p.trial(v.opts, t)
			for k, s := range v.inputs {
				v.dense[t] = append(v.dense[t], sync.OnceValue(func() *tensor { return tr.newInputTensor(k, s) }))
			}
		}
	}
	// The products' memo takes what is left after the program's draw, up
	// to DefaultProductBytes, and leaves most of it to the candidates.
	// A candidate's check uses it only where that leaves room for both
	// (Verifier.plan), so it is not part of held.
	// A shared memo (Options.Memo) is used whole where the program's draw
	// fits beside it: like a memo of v's own, a candidate's check uses it
	// only where it fits beside the candidate's draw too.
	draw := ugraph.AddSize(v.held, p.memory(share).peak)
	if m := v.opts.Memo; m != nil {
		if err := m.fits(v.opts); err != nil {
			return err
		}
		if ugraph.AddSize(draw, m.budget) <= v.opts.MaxBytes {
			v.memoBytes, v.products = m.budget, m.draws
			return nil
		}
	}
	memo := min(DefaultProductBytes, (v.opts.MaxBytes-draw)/4)
	if memo <= 0 {
		return nil
	}
	v.memoBytes = memo
	v.products = make([]*products, v.opts.Trials)
	for t := range v.products {
		v.products[t] = newProducts(memo/int64(v.opts.Trials), trialKey(v.opts.Seed, t))
	}
	return nil
}

// trial compiles p for draw t, with the shared inputs and, where p may
// use it, the products' memo.
func (v *Verifier) trial(p *plan, t int) *trial {
	tr := p.trial(v.opts, t)
	tr.stop = v.stop
	if v.dense != nil {
		tr.dense = v.dense[t]
	}
	if p.memo && v.products != nil {
		tr.products = v.products[t]
	}
	return tr
}

// Options returns the options in effect, defaults filled in.
func (v *Verifier) Options() Options { return v.opts }

// InOrder reports whether an equivalent candidate's outputs are the
// program's in their order: the candidate can take the program's place.
func (r Result) InOrder() bool {
	for j, i := range r.Mapping {
		if i != j {
			return false
		}
	}
	return r.Equivalent
}

// Result is the verdict on a candidate.
type Result struct {
	Equivalent bool
	// Mapping, when Equivalent, gives for each candidate output the program
	// output it computes (outputs may come in any order). Where outputs
	// agree with more than one program output (two equal outputs), each
	// keeps its own position when the order allows: a candidate whose
	// outputs are the program's in order maps to the identity.
	Mapping []int
	// Where the candidate was caught, when not Equivalent: a candidate
	// output that no program output matches; a position in it (one entry
	// per dim) where it differs from the first program output of its shape
	// that it was seen to differ from (nil when there is none: it
	// duplicates an output that another candidate output matches); and the
	// draw. Output and Trial are -1 when the candidate's output shapes are
	// not the program's (no draw needed), and when Equivalent.
	Output int
	Index  []int
	Trial  int
}

func (r Result) String() string {
	switch {
	case r.Equivalent:
		return fmt.Sprintf("equivalent (outputs map to %v)", r.Mapping)
	case r.Output < 0:
		return "not equivalent: the output shapes differ"
	case r.Index == nil:
		return fmt.Sprintf("not equivalent: output %d duplicates another output (trial %d)", r.Output, r.Trial)
	}
	return fmt.Sprintf("not equivalent: output %d differs at %v (trial %d)", r.Output, r.Index, r.Trial)
}

// Equivalent checks b against a and returns what New(a, opts) then
// Verify(b) would. Unlike a Verifier, which keeps the program's outputs on
// every draw for the candidates to come, it keeps a draw only while it
// compares it, evaluating as many at once as GOMAXPROCS and
// Options.MaxBytes allow, so its memory does not grow with Options.Trials.
func Equivalent(a, b *kernel.Graph, opts Options) (Result, error) {
	opts, err := opts.normalized()
	if err != nil {
		return Result{}, err
	}
	pa, err := newPlan(a)
	if err != nil {
		return Result{}, fmt.Errorf("ffverify: program: %w", err)
	}
	if err := opts.checkNames(len(a.Inputs())); err != nil {
		return Result{}, err
	}
	if opts.Constants == 0 {
		opts.Constants = ConstantsKey(a)
	}
	v := newVerifier(pa, opts)
	pb, err := v.candidatePlan(b)
	if err != nil {
		return Result{}, err
	}
	if v.shapesDiffer(pb) {
		return Result{Output: -1, Trial: -1}, nil
	}
	// Draw 0's program outputs stay for the fast path and the first
	// comparison. A draw evaluates the program, then the candidate while
	// the program's outputs wait to be compared.
	out := pa.outputBytes()
	v.held = ugraph.AddSize(out, matcherBytes(len(pb.g.Outputs), len(pa.g.Outputs)))
	ua, ub := pa.memory(false), pb.memory(false)
	w, err := opts.workers(opts.Trials, v.held, max(ua.peak, ugraph.AddSize(out, ub.peak)),
		"evaluating the program and the candidate on one draw",
		fmt.Sprintf("the program %s, the candidate %s", pa.peak(ua), pb.peak(ub)))
	if err != nil {
		return Result{}, fmt.Errorf("ffverify: %w", err)
	}
	v.prints = [][]*tensor{pa.run(pa.trial(opts, 0))}
	// The fast path may do a 256th of a dense evaluation's work, as
	// Verify's where a memo makes the full check cheap: a comparison is
	// mostly asked of graphs expected to agree (an emitted answer), for
	// which the fast path is wasted, and it saves a wrong one at most a
	// draw's evaluations.
	if r, rejected := v.fast(pb, 256); rejected {
		return r, nil
	}
	m := newMatcher(pb, v.outputs)
	var r Result
	rejected := false
	eachDraw(opts.Trials, w, func(t int) []diff {
		want := v.prints[0]
		if t > 0 {
			want = pa.run(pa.trial(opts, t))
		}
		return m.differ(pb.run(pb.trial(opts, t)), want)
	}, func(t int, d []diff) bool {
		r, rejected = m.apply(t, d)
		return !rejected
	})
	if !rejected {
		r, _ = m.verdict(opts.Trials - 1)
	}
	return r, nil
}

// Reject is the fast path: it compares a few sampled output positions of
// the candidate on the first draw, computing only what those positions
// need. true means not equivalent: an output differs on the first draw
// (Verify finds the same); false means only that the samples agree, or
// that computing them would cost about as much as the full check (each
// position depends on most of the graph). It
// fails on an invalid candidate or one whose inputs differ from the
// program's.
func (v *Verifier) Reject(candidate *kernel.Graph) (rejected bool, err error) {
	defer stopped(&err)
	p, err := v.plan(candidate)
	if err != nil {
		return false, err
	}
	_, rejected = v.fast(p, 16)
	return rejected, nil
}

// Verify decides whether candidate computes the program's outputs: it runs
// the fast path, then compares every output position on every draw. Like
// Reject, it only reads candidate, which must not change during the call.
func (v *Verifier) Verify(candidate *kernel.Graph) (r Result, err error) {
	defer stopped(&err)
	p, err := v.plan(candidate)
	if err != nil {
		return Result{}, err
	}
	if r, rejected := v.fast(p, fastShare(p)); rejected {
		return r, nil
	}
	return v.full(p), nil
}

// plan validates a candidate and checks that its inputs are the program's,
// and that evaluating it fits in Options.MaxBytes beside what v holds.
func (v *Verifier) plan(c *kernel.Graph) (*plan, error) {
	p, err := v.candidatePlan(c)
	if err != nil {
		return nil, err
	}
	u := p.memory(v.dense != nil)
	need := ugraph.AddSize(ugraph.AddSize(v.held, u.peak), matcherBytes(len(c.Outputs), len(v.outputs)))
	if need > v.opts.MaxBytes {
		err := &memlimit.Error{What: "evaluating it", Need: need, Limit: v.opts.MaxBytes, Detail: "a draw " + p.peak(u)}
		return nil, fmt.Errorf("ffverify: candidate: %w", err)
	}
	p.memo = ugraph.AddSize(need, v.memoBytes) <= v.opts.MaxBytes
	return p, nil
}

// candidatePlan is plan without the memory check.
func (v *Verifier) candidatePlan(c *kernel.Graph) (*plan, error) {
	p, err := newPlan(c)
	if err != nil {
		return nil, fmt.Errorf("ffverify: candidate: %w", err)
	}
	ins := c.Inputs()
	if len(ins) != len(v.inputs) {
		return nil, fmt.Errorf("ffverify: candidate has %d inputs, the program %d", len(ins), len(v.inputs))
	}
	for k, id := range ins {
		if s := c.Tensors[id].Shape; s != v.inputs[k] {
			return nil, fmt.Errorf("ffverify: candidate input %d is %v, the program's %v", k, s, v.inputs[k])
		}
	}
	return p, nil
}

// shapesDiffer reports whether the candidate's output shapes are not a
// permutation of the program's.
func (v *Verifier) shapesDiffer(p *plan) bool {
	var got []ugraph.Shape
	for _, id := range p.g.Outputs {
		got = append(got, p.g.Tensors[id].Shape)
	}
	want := slices.Clone(v.outputs)
	less := func(a, b ugraph.Shape) int { return slices.Compare(a.Dims(), b.Dims()) }
	slices.SortFunc(got, less)
	slices.SortFunc(want, less)
	return !slices.Equal(got, want)
}

// fast compares sampled positions on draw 0; it returns a not-equivalent
// Result and true as soon as they rule out every matching of outputs. It
// computes one position of every output at a time, so a candidate that is
// wrong almost everywhere costs about one position's cone.
//
// The demand-driven evaluation may do at most 1/share of the work a dense
// evaluation does (plan.denseWork; it costs some ten times as much a unit):
// 1/16 for Reject, and for Verify unless its full check has the products'
// memo (fastShare); beyond that the fast path gives up and the full check
// decides.
func (v *Verifier) fast(p *plan, share int64) (r Result, rejected bool) {
	if v.shapesDiffer(p) {
		return Result{Output: -1, Trial: -1}, true
	}
	if v.opts.Samples < 0 {
		return Result{}, false
	}
	defer func() {
		if e := recover(); e != nil {
			if e != errBudget {
				panic(e)
			}
			r, rejected = Result{}, false
		}
	}()
	// Its pages take at most a dense evaluation's worth of values, and
	// what MaxBytes leaves.
	room := min(p.denseSize(), (v.opts.MaxBytes-v.held)/elemBytes)
	tr := p.trial(v.opts, 0)
	tr.stop = v.stop
	l := newLazy(p, tr, int(max(p.denseWork()/share, 1<<12)), int(room))
	m := newMatcher(p, v.outputs)
	pos := make([][]int, len(p.g.Outputs))
	for i, id := range p.g.Outputs {
		pos[i] = samplePositions(v.opts.Seed, p.g.Tensors[id].Shape, v.opts.Samples)
	}
	for s := range v.opts.Samples {
		v.checkStop()
		for i, id := range p.g.Outputs {
			if s >= len(pos[i]) {
				continue
			}
			idx := pos[i][s]
			got := l.value(int(id), idx)
			failed := false
			for j := range v.outputs {
				if m.ok[i][j] && got != v.prints[0][j].v[idx] {
					m.fail(i, j, idx)
					failed = true
				}
			}
			if failed {
				if caught, ok := m.verdict(0); ok {
					return caught, true
				}
			}
		}
	}
	return Result{}, false
}

// fastShare is the inverse of the share of a dense evaluation's values that
// Verify's fast path may compute for p. Most candidates a search completes
// are correct, and for those the fast path is wasted work: where the full
// check that follows draws its products from the memo (most of its cost),
// the fast path may compute a sixteenth as much as Reject's, which decides
// alone (a cached result's check, say).
func fastShare(p *plan) int64 {
	if p.memo {
		return 256
	}
	return 16
}

// full compares every position on every draw.
func (v *Verifier) full(p *plan) Result {
	m := newMatcher(p, v.outputs)
	for t := range v.opts.Trials {
		if r, rejected := m.apply(t, m.differ(p.run(v.trial(p, t)), v.prints[t])); rejected {
			return r
		}
	}
	r, _ := m.verdict(v.opts.Trials - 1)
	return r
}

// samplePositions returns the positions of an output of shape s that the
// fast path compares: all of them for a small output, else n positions
// drawn from the seed and the shape (so the same for every candidate,
// whatever the order of its outputs).
func samplePositions(seed uint64, s ugraph.Shape, n int) []int {
	total := s.NumElements()
	if total <= n {
		pos := make([]int, total)
		for i := range pos {
			pos[i] = i
		}
		return pos
	}
	key := seed
	for _, d := range s.Dims() {
		key = hash(key, uint64(d))
	}
	pos := make([]int, n)
	for i := range pos {
		pos[i] = int(hash(key, uint64(i)) % uint64(total))
	}
	return pos
}

// matcher tracks which candidate outputs may still equal which program
// outputs (same shape, no difference seen yet), and where each pair first
// differed.
type matcher struct {
	shapes []ugraph.Shape // candidate output shapes
	ok     [][]bool       // [candidate][program]
	diff   [][]int        // [candidate][program]: flat position of the first difference, or -1
}

func newMatcher(p *plan, program []ugraph.Shape) *matcher {
	m := &matcher{}
	for i, id := range p.g.Outputs {
		s := p.g.Tensors[id].Shape
		m.shapes = append(m.shapes, s)
		m.ok = append(m.ok, make([]bool, len(program)))
		m.diff = append(m.diff, slices.Repeat([]int{-1}, len(program)))
		for j, ps := range program {
			m.ok[i][j] = ps == s
		}
	}
	return m
}

// diff says that candidate output i differs from program output j on a
// draw, first at flat position idx.
type diff struct{ i, j, idx int }

// differ compares the candidate's outputs got with the program's want on
// one draw, every position of every pair of the same shape. It only reads
// m's shapes, so draws may call it in parallel.
func (m *matcher) differ(got, want []*tensor) []diff {
	var ds []diff
	for i, g := range got {
		for j, w := range want {
			if g.shape != w.shape {
				continue
			}
			for idx, e := range g.v {
				if e != w.v[idx] {
					ds = append(ds, diff{i, j, idx})
					break
				}
			}
		}
	}
	return ds
}

// apply records the differences of draw t and returns verdict(t).
func (m *matcher) apply(t int, ds []diff) (Result, bool) {
	for _, d := range ds {
		m.fail(d.i, d.j, d.idx)
	}
	return m.verdict(t)
}

func (m *matcher) fail(i, j, idx int) {
	m.ok[i][j] = false
	if m.diff[i][j] < 0 {
		m.diff[i][j] = idx
	}
}

// verdict finds a perfect matching of candidate outputs to program outputs
// among the pairs still possible (Kuhn's augmenting paths, in output order,
// so the result is deterministic). Without one, it returns the Result that
// names the first candidate output left unmatched, and true.
func (m *matcher) verdict(trial int) (Result, bool) {
	n := len(m.ok)
	owner := slices.Repeat([]int{-1}, n) // program output -> candidate output
	var augment func(i int, seen []bool) bool
	// Each candidate output tries its own position first, and the
	// outputs before it have taken theirs where they could: when the
	// identity is a matching, it is the one found.
	augment = func(i int, seen []bool) bool {
		try := func(j int) bool {
			if !m.ok[i][j] || seen[j] {
				return false
			}
			seen[j] = true
			if owner[j] < 0 || augment(owner[j], seen) {
				owner[j] = i
				return true
			}
			return false
		}
		if i < len(m.ok[i]) && try(i) {
			return true
		}
		for j := range m.ok[i] {
			if j != i && try(j) {
				return true
			}
		}
		return false
	}
	for i := range n {
		if augment(i, make([]bool, n)) {
			continue
		}
		r := Result{Output: i, Trial: trial}
		for _, idx := range m.diff[i] {
			if idx >= 0 {
				r.Index = layout.UnpadIndex(layout.Pad(m.shapes[i]).Index(idx), m.shapes[i].Rank())
				break
			}
		}
		return r, true
	}
	mapping := make([]int, n)
	for j, i := range owner {
		mapping[i] = j
	}
	return Result{Equivalent: true, Mapping: mapping, Output: -1, Trial: -1}, false
}
