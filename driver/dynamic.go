package driver

import (
	"context"
	"errors"
	"fmt"
	"github.com/mirage-go/mirage/codegen/cuda"
	"maps"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mirage-go/mirage/cost"
	"github.com/mirage-go/mirage/ffverify"
	"github.com/mirage-go/mirage/search"
	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// A dynamic dim (DESIGN §9) is the symbol m of a program whose inputs were
// marked with kernel.Graph.WithDynamic. Its range LO..HI is covered by
// buckets: bucket b serves the m above the bucket before it, up to b, and
// is searched as the static program at m = b.

// DynamicFlag is one --dynamic INPUT:DIM=LO..HI: Input is an input's
// position (from 0) or the program's name for it.
type DynamicFlag struct {
	Input  string
	Dim    int
	Lo, Hi int
}

func (f DynamicFlag) String() string { return fmt.Sprintf("%s:%d=%d..%d", f.Input, f.Dim, f.Lo, f.Hi) }

// ParseDynamicFlag parses INPUT:DIM=LO..HI.
func ParseDynamicFlag(s string) (DynamicFlag, error) {
	var f DynamicFlag
	bad := func(why string) (DynamicFlag, error) {
		return DynamicFlag{}, fmt.Errorf("--dynamic %q: %s (want INPUT:DIM=LO..HI, e.g. X:0=1..64)", s, why)
	}
	in, rest, ok := strings.Cut(s, ":")
	if !ok || in == "" {
		return bad("no INPUT:")
	}
	dim, rng, ok := strings.Cut(rest, "=")
	if !ok {
		return bad("no =LO..HI")
	}
	// Whether the input has the dim is MarkDynamic's to say, which knows
	// its shape.
	d, err := strconv.Atoi(dim)
	if err != nil || d < 0 {
		return bad(fmt.Sprintf("DIM %q is not a dim (a number from 0)", dim))
	}
	los, his, ok := strings.Cut(rng, "..")
	if !ok {
		return bad("the range has no ..")
	}
	lo, err1 := strconv.Atoi(los)
	hi, err2 := strconv.Atoi(his)
	switch {
	case err1 != nil || err2 != nil:
		return bad("LO and HI must be integers")
	case lo < 1:
		return bad(fmt.Sprintf("LO is %d; m counts rows, at least 1", lo))
	case lo > hi:
		return bad(fmt.Sprintf("LO %d is above HI %d", lo, hi))
	case hi > ugraph.MaxDim:
		return bad(fmt.Sprintf("HI %d is above %d", hi, ugraph.MaxDim))
	}
	f.Input, f.Dim, f.Lo, f.Hi = in, d, lo, hi
	return f, nil
}

// MarkDynamic returns program with the inputs the flags name marked (one
// symbol m: every flag must give the same range), and the range. names
// maps the program's names for inputs to their positions; computed holds
// its names for tensors it computes (frontend.Program's Names and
// Computed). An op that mixes rows is a *kernel.DynamicError.
func MarkDynamic(program *kernel.Graph, flags []DynamicFlag, names map[string]int, computed map[string]bool) (*kernel.Graph, int, int, error) {
	inputs := program.Inputs()
	dims := map[kernel.TensorID]int{}
	for _, f := range flags {
		if f.Lo != flags[0].Lo || f.Hi != flags[0].Hi {
			return nil, 0, 0, fmt.Errorf("--dynamic %v and %v: the dynamic inputs share one m, so one range", flags[0], f)
		}
		k, err := strconv.Atoi(f.Input)
		if err != nil {
			var ok bool
			switch k, ok = names[f.Input]; {
			case !ok && computed[f.Input]:
				return nil, 0, 0, fmt.Errorf("--dynamic %v: %s holds a tensor the program computes, not an input: a variable names the tensor it holds when the program ends%s", f, f.Input, knownNames(names))
			case !ok:
				return nil, 0, 0, fmt.Errorf("--dynamic %v: the program has no input named %s%s", f, f.Input, knownNames(names))
			}
		} else if k < 0 || k >= len(inputs) {
			return nil, 0, 0, fmt.Errorf("--dynamic %v: the program has %d inputs (0 to %d)", f, len(inputs), len(inputs)-1)
		}
		t := inputs[k]
		if r := program.Tensors[t].Shape.Rank(); f.Dim >= r {
			return nil, 0, 0, fmt.Errorf("--dynamic %v: input %d is %v, with no dim %d", f, k, program.Tensors[t].Shape, f.Dim)
		}
		if d, ok := dims[t]; ok && d != f.Dim {
			return nil, 0, 0, fmt.Errorf("--dynamic %v: input %d already has dim %d dynamic; one dim per input", f, k, d)
		}
		dims[t] = f.Dim
	}
	if len(flags) == 0 {
		return nil, 0, 0, errors.New("no --dynamic input")
	}
	g, err := program.WithDynamic(dims)
	if err != nil {
		return nil, 0, 0, err
	}
	return g, flags[0].Lo, flags[0].Hi, nil
}

func knownNames(names map[string]int) string {
	if len(names) == 0 {
		return " (it names none; give the input's position)"
	}
	return " (inputs: " + strings.Join(slices.Sorted(maps.Keys(names)), ", ") + ", or a position)"
}

// DefaultBuckets are the powers of two from the first at or above lo up to
// the first at or above hi: 1, 2, 4, ..., 64 for 1..64; 8, ..., 64 for 5..64.
func DefaultBuckets(lo, hi int) []int {
	b := 1 << (bits.Len(uint(lo)) - 1) // at or below lo
	if b < lo {
		b *= 2
	}
	var out []int
	for ; ; b *= 2 {
		out = append(out, b)
		if b >= hi {
			return out
		}
	}
}

// ParseBuckets parses --buckets 1,8,64 and checks it against lo..hi:
// ascending sizes, each within the range but the last, which is at or
// above hi.
func ParseBuckets(s string, lo, hi int) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		b, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("--buckets %q: %q is not an integer", s, f)
		}
		out = append(out, b)
	}
	if err := CheckBuckets(out, lo, hi); err != nil {
		return nil, fmt.Errorf("--%v", err)
	}
	return out, nil
}

// CheckBuckets checks bucket sizes against the range lo..hi.
func CheckBuckets(b []int, lo, hi int) error {
	switch {
	case lo < 1 || lo > hi:
		return fmt.Errorf("the range %d..%d is not one of rows (1 <= LO <= HI)", lo, hi)
	case len(b) == 0:
		return errors.New("buckets []: no bucket")
	}
	for i, s := range b {
		switch {
		case s < lo:
			return fmt.Errorf("buckets %v: %d is below the range %d..%d", b, s, lo, hi)
		case i > 0 && s <= b[i-1]:
			return fmt.Errorf("buckets %v: sizes must ascend (%d after %d)", b, s, b[i-1])
		case i < len(b)-1 && s >= hi:
			return fmt.Errorf("buckets %v: %d already covers HI %d; the buckets after it serve no m", b, s, hi)
		case s > ugraph.MaxDim:
			return fmt.Errorf("buckets %v: %d is too large", b, s)
		}
	}
	if last := b[len(b)-1]; last < hi {
		return fmt.Errorf("buckets %v: the last bucket %d is below HI %d; m up to %d would have none", b, last, hi, hi)
	}
	return nil
}

// Bucket is the answer for the m a bucket serves.
type Bucket struct {
	Size   int // the m it was searched at
	Lo, Hi int // the m it serves
	// Unsearched says why the bucket was not searched when RunDynamic
	// passed over it ahead of its time ("" when it was searched, or met
	// the end of the run): its fingerprints would have taken longer than
	// its share of the time.
	Unsearched string
	*Result
}

// DynamicResult is the outcome of RunDynamic: a bucket per size, each its
// own verified answer.
type DynamicResult struct {
	Program *kernel.Graph // the program, with m
	Lo, Hi  int
	Buckets []*Bucket
	Stats   search.Stats // totals over the buckets
	Stopped string       // why a bucket stopped early, if one did
	// Reused counts the part searches that checked their candidates with
	// fingerprints cut from a larger bucket's.
	Reused int
}

// RunDynamic superoptimizes program (with the dynamic dim m, in lo..hi)
// once per bucket size, as the static program at m = size, largest first.
//
// The buckets share work: a part's search at a smaller size checks its
// candidates against the fingerprints the largest bucket's search made
// of the same part, cut to its rows (ffverify.Verifier.Prefix; the
// program's rows are independent), rather than evaluating the part again;
// and the searches share Options.Cache. The whole run keeps
// Options.TimeLimit: each bucket may take the time left in proportion to
// its size among the buckets left, so time a bucket does not use goes to
// the smaller ones, and at least minBucketTime while that much is left.
// The buckets left when the time is over (or the run is interrupted) get
// the program as written at once, unsearched: however many buckets, the
// run keeps its limit. (They may still run a larger bucket's μGraph:
// adopt.)
func RunDynamic(ctx context.Context, program *kernel.Graph, lo, hi int, buckets []int, opts Options) (*DynamicResult, error) {
	if !program.Dynamic() {
		return nil, errors.New("RunDynamic: the program has no dynamic dim")
	}
	if err := CheckBuckets(buckets, lo, hi); err != nil {
		return nil, err
	}
	if opts.TimeLimit <= 0 {
		opts.TimeLimit = DefaultTimeLimit
	}
	start := time.Now()
	deadline := start.Add(opts.TimeLimit)
	res := &DynamicResult{Program: program, Lo: lo, Hi: hi, Buckets: make([]*Bucket, len(buckets))}
	opts.fingerprints = ffverify.NewPool()
	opts.constants = ffverify.ConstantsKey(program)
	left := 0
	for _, size := range buckets {
		left += size
	}
	for i := len(buckets) - 1; i >= 0; i-- {
		size := buckets[i]
		static, err := program.Bind(size)
		if err != nil {
			return nil, err
		}
		o := opts
		remaining := time.Until(deadline)
		o.TimeLimit = min(max(time.Duration(float64(remaining)*float64(size)/float64(left)), minBucketTime), remaining)
		left -= size
		if o.Log != nil {
			log := opts.Log
			o.Log = func(line string) { log(fmt.Sprintf("bucket %d: %s", size, line)) }
		}
		var r *Result
		skipped := ""
		switch {
		case ctx.Err() != nil:
			r, err = unsearched(static, o, "interrupted")
		case remaining < minBucketTime:
			r, err = unsearched(static, o, "time limit")
		default:
			// A bucket whose fingerprints alone would take longer than its
			// share is passed over at once: searched, it would spend the
			// share and answer nothing, and the smaller buckets after it,
			// which fingerprint in a fraction of the time, would get what
			// is left of none.
			// (Where a larger bucket's fingerprints are kept, this one's are
			// cut from them, at no cost.)
			if d, _, cores := fingerprintTime(ffverify.Options{}, static); opts.fingerprints.Len() == 0 && d > o.TimeLimit {
				skipped = fmt.Sprintf("fingerprinting it would take %s on %s, more than its %s of --time-limit",
					ffverify.About(d), ffverify.Cores(cores), o.TimeLimit.Round(100*time.Millisecond))
				if o.Log != nil {
					o.Log("not searched: " + skipped)
				}
				r, err = unsearched(static, o, "time limit")
				break
			}
			r, err = Run(ctx, static, o)
		}
		if err != nil {
			return nil, fmt.Errorf("bucket m = %d: %v", size, err)
		}
		from := lo
		if i > 0 {
			from = buckets[i-1] + 1
		}
		res.Buckets[i] = &Bucket{Size: size, Lo: from, Hi: min(size, hi), Unsearched: skipped, Result: r}
		res.Stats.Add(r.Stats)
		if r.Stopped != "" && res.Stopped == "" {
			res.Stopped = r.Stopped
		}
	}
	if ctx.Err() != nil {
		res.Stopped = "interrupted" // whichever bucket stopped first, and why
	}
	if err := res.adopt(opts.Arch); err != nil {
		return nil, err
	}
	res.Stats.Seconds = time.Since(start).Seconds()
	res.Reused = opts.fingerprints.Reused()
	return res, nil
}

// minBucketTime is the least time a bucket is searched for: a bucket with
// less left is not searched.
const minBucketTime = time.Second

// fingerprintTime predicts how long fingerprinting a program takes here
// (a variable for the tests).
var fingerprintTime = ffverify.EvaluationTime

// unsearched is the answer of a program that is not searched (a bucket
// left no time): the program as written, as Run gives it when no search
// starts, but without cutting the program into parts, which would cost as
// much again for every such bucket.
func unsearched(program *kernel.Graph, opts Options, stopped string) (*Result, error) {
	if opts.Arch.Name == "" {
		opts.Arch = target.MustLookup(target.Default)
	}
	d := &run{opts: opts, program: program}
	baseline, err := d.estimate(program)
	if err != nil {
		return nil, fmt.Errorf("estimating the program: %v", err)
	}
	c, err := d.candidate(program, true)
	if err != nil {
		return nil, err
	}
	return &Result{Program: program, Baseline: baseline, Candidates: []*Candidate{c}, Stopped: stopped}, nil
}

// adopt lets a bucket run the next larger bucket's best μGraph when the
// cost model has that one, run for the bucket's size (its rows past m move
// nothing), faster than the bucket's own best: the larger bucket's graph is
// verified at its size, and, equivalent to a program whose rows are
// independent, it computes any fewer rows as the program does. The
// adopted graph goes first among the bucket's candidates (Candidate.Rows
// says its size). Largest first, so a bucket may adopt what the next one
// adopted.
func (r *DynamicResult) adopt(arch target.Arch) error {
	if arch.Name == "" {
		arch = target.MustLookup(target.Default)
	}
	for i := len(r.Buckets) - 2; i >= 0; i-- {
		b, next := r.Buckets[i], r.Buckets[i+1]
		// Without a padded program's copies: the same for both at one m,
		// and the candidates' estimates are of their kernels.
		own, err := r.estimateRows(b.Candidates[0].Graph, b.rowsOf(b.Candidates[0]), b.Size, arch, false)
		if err != nil {
			return err
		}
		theirs, err := r.estimateRows(next.Candidates[0].Graph, next.rowsOf(next.Candidates[0]), b.Size, arch, false)
		if err != nil {
			return err
		}
		if cost.Compare(theirs, own) < 0 {
			c := *next.Candidates[0]
			c.Rows, c.Estimate = next.rowsOf(next.Candidates[0]), theirs
			b.Candidates = append([]*Candidate{&c}, b.Candidates...)
		}
	}
	return nil
}

// rowsOf is the m candidate c's graph is written for.
func (b *Bucket) rowsOf(c *Candidate) int {
	if c.Rows > 0 {
		return c.Rows
	}
	return b.Size
}

// BucketFor returns the bucket that serves m: the smallest at or above it.
func (r *DynamicResult) BucketFor(m int) (*Bucket, bool) {
	if m < r.Lo || m > r.Hi {
		return nil, false
	}
	for _, b := range r.Buckets {
		if m <= b.Size {
			return b, true
		}
	}
	return nil, false
}

// EstimateAt is the cost model's time of the answer for m rows: the
// bucket that serves m, its chosen candidate (rank, as EmitCUDA took it)
// run for m rows of the bucket's size.
func (r *DynamicResult) EstimateAt(m, rank int, arch target.Arch) (cost.Estimate, error) {
	b, ok := r.BucketFor(m)
	if !ok {
		return cost.Estimate{}, fmt.Errorf("m = %d is outside %d..%d", m, r.Lo, r.Hi)
	}
	if rank < 0 || rank >= len(b.Candidates) {
		return cost.Estimate{}, fmt.Errorf("bucket %d has no candidate %d", b.Size, rank)
	}
	c := b.Candidates[rank]
	return r.estimateRows(c.Graph, b.rowsOf(c), m, arch, true)
}

// estimateRows is the cost model's time of g, written for size rows, run
// for m of them. A padded program's kernels run every row of the bucket
// (cuda.Rows.Padded), and its entry point copies the m rows of each input
// and output with m (with copies: what a call costs).
func (r *DynamicResult) estimateRows(g *kernel.Graph, size, m int, arch target.Arch, copies bool) (cost.Estimate, error) {
	rows := cost.Rows{Bucket: size, Active: m, Dims: map[kernel.TensorID]int{}}
	ins, outs := r.Program.DynamicDims()
	if r.Program.Padded() {
		if !copies {
			return cost.EstimateRows(g, arch, rows)
		}
		// One launch of the copy kernel for up to cuda.MaxRowsCopies
		// tensors in, and one for those out.
		launches := func(ts []kernel.TensorID, dims []int) {
			n := 0
			for k, t := range ts {
				if dims[k] < 0 {
					continue
				}
				if n%cuda.MaxRowsCopies == 0 {
					rows.Copies = append(rows.Copies, 0)
				}
				rows.Copies[len(rows.Copies)-1] += int64(g.Tensors[t].Bytes() / size * m)
				n++
			}
		}
		launches(g.Inputs(), ins)
		launches(g.Outputs, outs)
		return cost.EstimateRows(g, arch, rows)
	}
	for k, t := range g.Inputs() {
		if ins[k] >= 0 {
			rows.Dims[t] = ins[k]
		}
	}
	for j, t := range g.Outputs {
		if outs[j] >= 0 {
			rows.Dims[t] = outs[j]
		}
	}
	rows.Dims = g.RowDims(rows.Dims) // as the emitted code cuts them (cuda.EmitDynamic)
	return cost.EstimateRows(g, arch, rows)
}
