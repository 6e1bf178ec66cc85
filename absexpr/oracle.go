package absexpr

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/mirage-go/mirage/absexpr/z3"
)

// Options tune an Oracle. The zero value takes every default.
type Options struct {
	// MaxInstances caps the quantifier instances of one Z3 query
	// (smt.qi.max_instances). A query Z3 cannot prove normally ends when
	// E-matching has nothing left to instantiate, or else at this cap:
	// both are counted, not timed, so unlike a timeout they do not depend
	// on the machine's load. Default 5000: the queries mirage's tests know
	// the answer to need fewer than 300.
	MaxInstances uint
	// Timeout bounds one Z3 query in wall-clock time. It is a backstop, far
	// above what queries take (the slowest recorded search query takes
	// 75ms alone, 300ms on a loaded machine), so that it does not decide
	// answers: a query that reaches it counts as "no", and whether it
	// reaches it depends on the load. Default 2s.
	Timeout time.Duration
	// Provers caps the Z3 contexts the oracle keeps (one per goroutine in a
	// query at a time). Default GOMAXPROCS.
	Provers int
	// NoProver makes an oracle that decides in Go alone, without Z3, in
	// the model of the axioms: a query the normal forms cannot refute is
	// answered yes. Its no is a proof that neither the laws nor the model
	// make the query a subexpression, so it serves callers that prune on
	// no only, and questions the laws cannot answer (absexpr.Unsized).
	NoProver bool
}

const (
	defaultMaxInstances = 5000
	defaultTimeout      = 2 * time.Second
)

func (o Options) withDefaults() Options {
	if o.MaxInstances == 0 {
		o.MaxInstances = defaultMaxInstances
	}
	if o.Timeout == 0 {
		o.Timeout = defaultTimeout
	}
	if o.Provers <= 0 {
		o.Provers = runtime.GOMAXPROCS(0)
	}
	return o
}

// Stats count an oracle's work since it was made.
type Stats struct {
	Queries       int64         // IsSubexpr calls
	CacheHits     int64         // answered from the cache
	FastYes       int64         // decided yes in Go (filter.go, normal.go)
	FastNo        int64         // decided no in Go
	Z3Calls       int64         // decided by Z3
	Z3Unknown     int64         // of which Z3 gave up (counted as no)
	Z3Interrupted int64         // of which Z3 overran its timeout (see z3.ErrInterrupted)
	Z3Time        time.Duration // total time in Z3 queries
	Z3MaxTime     time.Duration // slowest Z3 query
	Provers       int64         // Z3 contexts made
}

// Oracle decides whether an expression is a subexpression, modulo the
// axioms, of one of the targets (the program's output expressions). It is
// safe for concurrent use; every answer is cached.
//
// Go decides what it can first (filter.go, normal.go): on the search's
// workload, every query. The rest goes to Z3, on one of a pool of contexts
// that each hold the axioms and the targets; a query is pushed, checked and
// popped, so a goroutine never shares a context and no query pays for
// setting one up.
//
// Answers are deterministic as long as no query reaches Options.Timeout:
// the Go decisions are functions of the query, Z3's instance cap is
// counted, not timed, and a prover's answers do not depend on the queries it
// answered before (TestStress checks both under load). The residual risk is
// a query that Go leaves to Z3 (a denominator divided by a sum of several
// monomials) and that Z3 neither settles nor gives up on within the
// timeout: it counts as "no" when it times out, so its answer may depend on
// the machine's load.
type Oracle struct {
	targets []*Expr
	index   *targetIndex
	laws    []parsedAxiom
	opts    Options

	serial uint64   // names the oracle in an expression's verdict slot
	cache  sync.Map // *Expr -> bool, where the expression's slot is another oracle's
	flight singleflight.Group
	pool   proverPool

	queries, cacheHits, fastYes, fastNo atomic.Int64
	z3Calls, z3Unknown, z3Interrupted   atomic.Int64
	z3Nanos                             atomic.Int64
	z3MaxNanos                          atomic.Int64
}

// oracles numbers the oracles made (Oracle.serial), from 1.
var oracles atomic.Uint64

// ErrClosed is returned by queries on a closed oracle.
var ErrClosed = errors.New("absexpr: oracle is closed")

// NewOracle makes an oracle for targets. It needs Z3, and fails with
// z3.Available's explanation when Z3 cannot be loaded.
func NewOracle(targets []*Expr, opts Options) (*Oracle, error) {
	if len(targets) == 0 {
		return nil, errors.New("absexpr: an oracle needs at least one target")
	}
	if opts.NoProver {
		return &Oracle{targets: slices.Clone(targets), index: newTargetIndex(targets), opts: opts, serial: oracles.Add(1)}, nil
	}
	if err := z3.Available(); err != nil {
		return nil, fmt.Errorf("absexpr: the subexpression oracle needs Z3: %w", err)
	}
	laws, err := parseAxioms(axioms)
	if err != nil {
		return nil, err
	}
	o := &Oracle{
		serial:  oracles.Add(1),
		targets: slices.Clone(targets),
		index:   newTargetIndex(targets),
		laws:    laws,
		opts:    opts.withDefaults(),
	}
	o.pool.init(o.opts.Provers, o.newProver)
	// Make one prover now, so that a broken setup fails here rather than on
	// the first query.
	p, err := o.pool.get()
	if err != nil {
		return nil, err
	}
	o.pool.put(p)
	return o, nil
}

func (o Options) solverOptions() z3.SolverOptions {
	return z3.SolverOptions{Timeout: o.Timeout, MaxQuantifierInstances: o.MaxInstances}
}

func (o *Oracle) newProver() (*prover, error) {
	return newProver(o.targets, o.laws, o.opts.solverOptions())
}

// Targets are the expressions the oracle was made for.
func (o *Oracle) Targets() []*Expr { return slices.Clone(o.targets) }

// IsSubexpr reports whether e (not nil) is a subexpression of a target
// modulo the axioms. When Z3 cannot decide within its bounds the answer is
// false. An error means Z3 itself failed, or the oracle is closed; such
// answers are not cached.
func (o *Oracle) IsSubexpr(e *Expr) (bool, error) {
	o.queries.Add(1)
	if ok, hit := e.verdict(o.serial); hit {
		o.cacheHits.Add(1)
		return ok, nil
	}
	if v, ok := o.cache.Load(e); ok {
		o.cacheHits.Add(1)
		return v.(bool), nil
	}
	v, err, _ := o.flight.Do(strconv.FormatUint(e.id, 36), func() (any, error) {
		if ok, hit := e.verdict(o.serial); hit { // answered while we waited
			return ok, nil
		}
		if v, ok := o.cache.Load(e); ok {
			return v, nil
		}
		ok, err := o.decide(e)
		if err == nil && !e.claimVerdict(o.serial, ok) {
			o.cache.Store(e, ok) // the slot is another oracle's
		}
		return ok, err
	})
	if err != nil {
		return false, err
	}
	return v.(bool), nil
}

// MayEqualTarget reports whether e may equal a target modulo the axioms. It
// is false only when the normal forms prove that the laws cannot make them
// equal (normal.go), and true when a normal form is too large to tell. The
// search asks it of a complete candidate's outputs: every intermediate
// being a subexpression does not make the last one the whole.
func (o *Oracle) MayEqualTarget(e *Expr) bool {
	return o.index.nf.equalsTarget(e) != no
}

// decide answers without the cache: in Go when it can, else with Z3.
func (o *Oracle) decide(e *Expr) (bool, error) {
	if o.opts.NoProver {
		ok := o.index.holdsInModel(e)
		if ok {
			o.fastYes.Add(1)
		} else {
			o.fastNo.Add(1)
		}
		return ok, nil
	}
	if ok, decided := o.index.decide(e); decided {
		if ok {
			o.fastYes.Add(1)
		} else {
			o.fastNo.Add(1)
		}
		return ok, nil
	}
	return o.askZ3(e)
}

func (o *Oracle) askZ3(e *Expr) (bool, error) {
	r, err := o.prove(e)
	return r == z3.Unsat, err
}

// prove asks Z3 whether e is a subexpression: Unsat means it is, Sat that
// it is not, Unknown that Z3 gave up.
func (o *Oracle) prove(e *Expr) (z3.Result, error) {
	p, err := o.pool.get()
	if err != nil {
		return z3.Unknown, err
	}
	start := time.Now()
	r, err := p.check(e)
	d := time.Since(start)
	switch {
	case errors.Is(err, z3.ErrInterrupted):
		// Z3 overran its timeout: the query is unknown, and the prover is
		// retired (once Z3 lets go of it, if the check was abandoned).
		o.pool.discard(p)
		o.z3Interrupted.Add(1)
		r = z3.Unknown
	case err != nil:
		o.pool.discard(p) // its state is unknown after a Z3 error
		return z3.Unknown, fmt.Errorf("absexpr: Z3 on %s: %w", e.abbrev(), err)
	default:
		o.pool.put(p)
	}
	o.z3Calls.Add(1)
	o.z3Nanos.Add(int64(d))
	storeMax(&o.z3MaxNanos, int64(d))
	if r == z3.Unknown {
		o.z3Unknown.Add(1)
	}
	return r, nil
}

// storeMax raises m to v if v is larger.
func storeMax(m *atomic.Int64, v int64) {
	for cur := m.Load(); v > cur; cur = m.Load() {
		if m.CompareAndSwap(cur, v) {
			return
		}
	}
}

// Stats reports the oracle's counters.
func (o *Oracle) Stats() Stats {
	return Stats{
		Queries:       o.queries.Load(),
		CacheHits:     o.cacheHits.Load(),
		FastYes:       o.fastYes.Load(),
		FastNo:        o.fastNo.Load(),
		Z3Calls:       o.z3Calls.Load(),
		Z3Unknown:     o.z3Unknown.Load(),
		Z3Interrupted: o.z3Interrupted.Load(),
		Z3Time:        time.Duration(o.z3Nanos.Load()),
		Z3MaxTime:     time.Duration(o.z3MaxNanos.Load()),
		Provers:       o.pool.made.Load(),
	}
}

// Close releases the oracle's Z3 contexts. Queries in flight finish; later
// ones that need Z3 fail with ErrClosed.
func (o *Oracle) Close() {
	if !o.opts.NoProver {
		o.pool.close()
	}
}

// proverPool keeps up to a fixed number of provers; a goroutine takes one
// for a query and puts it back, so no two goroutines ever share a context.
type proverPool struct {
	idle   chan *prover
	slots  chan struct{} // one token per prover that may still be made
	done   chan struct{} // closed by close
	create func() (*prover, error)
	made   atomic.Int64

	mu     sync.Mutex // orders put against close
	closed bool
}

func (pp *proverPool) init(size int, create func() (*prover, error)) {
	pp.idle = make(chan *prover, size)
	pp.slots = make(chan struct{}, size)
	for range size {
		pp.slots <- struct{}{}
	}
	pp.done = make(chan struct{})
	pp.create = create
}

// get takes an idle prover, else makes one if the cap allows, else waits for
// one to come back.
func (pp *proverPool) get() (*prover, error) {
	select {
	case <-pp.done:
		return nil, ErrClosed
	case p := <-pp.idle:
		return p, nil
	default:
	}
	select {
	case <-pp.done:
		return nil, ErrClosed
	case p := <-pp.idle:
		return p, nil
	case <-pp.slots:
		p, err := pp.create()
		if err != nil {
			pp.slots <- struct{}{}
			return nil, err
		}
		pp.made.Add(1)
		return p, nil
	}
}

// put returns p for reuse, or closes it if the pool is closed.
func (pp *proverPool) put(p *prover) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if pp.closed {
		p.close()
		return
	}
	pp.idle <- p // never blocks: no more than cap(idle) provers exist
}

// discard closes p and frees its slot for a fresh one once its context is
// deleted, which waits for an abandoned check to end: so runaway checks
// never outnumber the slots.
func (pp *proverPool) discard(p *prover) {
	p.close()
	go func() {
		<-p.ctx.Deleted()
		pp.slots <- struct{}{}
	}()
}

func (pp *proverPool) close() {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if pp.closed {
		return
	}
	pp.closed = true
	close(pp.done)
	for {
		select {
		case p := <-pp.idle:
			p.close()
		default:
			return
		}
	}
}
