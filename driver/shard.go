package driver

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mirage-go/mirage/search"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// Shard is slice Index (from 0) of Count of a sharded run (DESIGN §8).
type Shard struct{ Index, Count int }

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// MaxShards bounds the number of shards of a run.
const MaxShards = 1 << 16

// Check reports a slice that does not exist.
func (s Shard) Check() error {
	switch {
	case s.Count < 1:
		return fmt.Errorf("shard %v: the number of shards must be at least 1", s)
	case s.Count > MaxShards:
		return fmt.Errorf("shard %v: at most %d shards", s, MaxShards)
	case s.Index < 0 || s.Index >= s.Count:
		return fmt.Errorf("shard %v: the index must be in 0..%d", s, s.Count-1)
	}
	return nil
}

// ParseShard parses "I/N": slice I (from 0) of N.
func ParseShard(s string) (Shard, error) {
	i, n, ok := strings.Cut(s, "/")
	if !ok {
		return Shard{}, fmt.Errorf("shard %q: want I/N (slice I of N, I from 0) or auto", s)
	}
	var sh Shard
	var err error
	if sh.Index, err = strconv.Atoi(strings.TrimSpace(i)); err != nil {
		return Shard{}, fmt.Errorf("shard %q: the index %q is not a number", s, i)
	}
	if sh.Count, err = strconv.Atoi(strings.TrimSpace(n)); err != nil {
		return Shard{}, fmt.Errorf("shard %q: the count %q is not a number", s, n)
	}
	return sh, sh.Check()
}

// ShardFromEnv takes the slice from the scheduler that started the process.
// In a Slurm job array, slice SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN of
// SLURM_ARRAY_TASK_MAX - SLURM_ARRAY_TASK_MIN + 1 (not
// SLURM_ARRAY_TASK_COUNT, which is not that on a sparse array such as
// --array=0,2-3, whose missing index the merge then reports); when count
// (--shards) is given, slice SLURM_ARRAY_TASK_ID of count, so that an index
// can be run again as an array of its own (--array=1). In a Kubernetes
// Indexed Job, slice JOB_COMPLETION_INDEX of count, which must be given:
// the Job's completions are not in its pods' environment. count 0 means
// not given.
func ShardFromEnv(getenv func(string) string, count int) (Shard, error) {
	if id := getenv("SLURM_ARRAY_TASK_ID"); id != "" {
		num := func(name string) (int, error) {
			v := getenv(name)
			n, err := strconv.Atoi(v)
			if err != nil {
				return 0, fmt.Errorf("--shard auto: %s=%q is not a number", name, v)
			}
			return n, nil
		}
		task, err := num("SLURM_ARRAY_TASK_ID")
		if err != nil {
			return Shard{}, err
		}
		sh := Shard{Index: task, Count: count}
		if count == 0 {
			lo, err := num("SLURM_ARRAY_TASK_MIN")
			if err != nil {
				return Shard{}, err
			}
			hi, err := num("SLURM_ARRAY_TASK_MAX")
			if err != nil {
				return Shard{}, err
			}
			// Checked before subtracting: values near the ends of int64
			// would wrap around into a slice that looks valid.
			switch {
			case lo > hi:
				return Shard{}, fmt.Errorf("--shard auto: SLURM_ARRAY_TASK_MIN=%d is above SLURM_ARRAY_TASK_MAX=%d", lo, hi)
			case task < lo || task > hi:
				return Shard{}, fmt.Errorf("--shard auto: SLURM_ARRAY_TASK_ID=%d is outside SLURM_ARRAY_TASK_MIN..MAX (%d..%d)", task, lo, hi)
			case uint64(hi)-uint64(lo) >= MaxShards: // exact: hi >= lo
				return Shard{}, fmt.Errorf("--shard auto: SLURM_ARRAY_TASK_MIN..MAX (%d..%d) is more than %d shards", lo, hi, MaxShards)
			}
			sh = Shard{Index: int(uint64(task) - uint64(lo)), Count: int(uint64(hi)-uint64(lo)) + 1}
		}
		if err := sh.Check(); err != nil {
			return Shard{}, fmt.Errorf("--shard auto (Slurm array task %d): %v", task, err)
		}
		return sh, nil
	}
	if id := getenv("JOB_COMPLETION_INDEX"); id != "" {
		i, err := strconv.Atoi(id)
		if err != nil {
			return Shard{}, fmt.Errorf("--shard auto: JOB_COMPLETION_INDEX=%q is not a number", id)
		}
		if count < 1 {
			return Shard{}, fmt.Errorf("--shard auto in a Kubernetes Indexed Job (JOB_COMPLETION_INDEX=%d) needs --shards N, the Job's completions", i)
		}
		sh := Shard{Index: i, Count: count}
		if err := sh.Check(); err != nil {
			return Shard{}, fmt.Errorf("--shard auto (JOB_COMPLETION_INDEX=%d): %v", i, err)
		}
		return sh, nil
	}
	return Shard{}, fmt.Errorf("--shard auto: not in a Slurm job array (no SLURM_ARRAY_TASK_ID) nor a Kubernetes Indexed Job (no JOB_COMPLETION_INDEX); give --shard I/N")
}

// deal shares the subtrees of the parts' searches out among n slices. The
// units dealt are whole parts where they are small (at most 1/4n of the
// whole), else the sets of a part's subtrees that share memos
// (search.Subtree.Memo: a slice that holds them all searches their
// threadblock graphs once); the largest go first, each to the slice least
// loaded so far (the lowest on ties). A part without subtrees (its graphs
// of pre-defined ops are found by any search of it) is a unit of its own.
// deal returns, per slice and part, the indices of the part's subtrees
// the slice explores, ascending, or nil where it has none of the part.
func deal(parts [][]search.Subtree, n int) [][][]int {
	type unit struct {
		part     int
		subtrees []int
		size     float64
	}
	var total float64
	for _, p := range parts {
		for _, t := range p {
			total += t.Size
		}
	}
	var units []unit
	for k, p := range parts {
		var size float64
		for _, t := range p {
			size += t.Size
		}
		if size <= total/float64(4*n) || len(p) == 0 {
			all := make([]int, len(p))
			for i := range all {
				all[i] = i
			}
			units = append(units, unit{part: k, subtrees: all, size: size})
			continue
		}
		byMemo := map[uint64]int{} // memo -> its unit
		for i, t := range p {
			u, ok := byMemo[t.Memo]
			if !ok {
				u = len(units)
				byMemo[t.Memo] = u
				units = append(units, unit{part: k})
			}
			units[u].subtrees = append(units[u].subtrees, i)
			units[u].size += t.Size
		}
	}
	// Stable: equal sizes keep the order of the parts and subtrees.
	slices.SortStableFunc(units, func(a, b unit) int { return cmp.Compare(b.size, a.size) })
	load := make([]float64, n)
	out := make([][][]int, n)
	for i := range out {
		out[i] = make([][]int, len(parts))
	}
	for _, u := range units {
		s := 0
		for i := range load {
			if load[i] < load[s] {
				s = i
			}
		}
		load[s] += u.size
		out[s][u.part] = append(nonNilInts(out[s][u.part]), u.subtrees...)
	}
	for _, slice := range out {
		for _, subs := range slice {
			slices.Sort(subs)
		}
	}
	return out
}

func nonNilInts(s []int) []int {
	if s == nil {
		return []int{}
	}
	return s
}

// shardResults is how many unverified candidates a shard keeps of each
// part's search when the run keeps partResults verified ones: the merge
// verifies them in rank order, and needs more only when the verifier
// rejects more than the margin (rare: the abstract expressions already
// matched), then searching the part itself (search.ErrUnsettled).
func shardResults(partResults int) int {
	if partResults <= 0 {
		return 0 // all of them
	}
	return max(4*partResults, partResults+8)
}

// ShardPart is what a slice's search of one part found.
type ShardPart struct {
	Key       string         // search.Key of the part's whole search
	Subtrees  []int          // the subtrees the slice explored, ascending
	NSubtrees int            // of the part's search
	Result    *search.Result // the slice's best candidates, ranked, unverified
}

// ShardResult is what one slice of a sharded run found.
type ShardResult struct {
	Shard   Shard
	Parts   []ShardPart
	Stats   search.Stats // totals over the slice's searches
	Stopped string       // why the slice stopped early, if it did: it is then incomplete
	// Interrupted is set when the run was interrupted (a signal): what it
	// searched is no slice, and is not to be written.
	Interrupted bool
}

// RunShard searches slice sh of program, as Run would search the whole:
// the parts of Run's first round (every process computes the same ones,
// and the same subtrees of each, from the program and opts alone) are
// dealt out among sh.Count slices (deal), and this process searches its
// own. Each part's search keeps its best opts.PartResults verified
// candidates; MergeShards, then Run, rank the slices' together, search
// the later rounds' parts (those of parts that did not fuse), stitch and
// verify as one process does.
func RunShard(ctx context.Context, program *kernel.Graph, opts Options, sh Shard) (*ShardResult, error) {
	if err := sh.Check(); err != nil {
		return nil, err
	}
	d, runCtx, done, err := begin(ctx, program, opts)
	if err != nil {
		return nil, err
	}
	defer done()
	todo, err := d.firstOutcomes()
	if err != nil {
		return nil, err
	}
	subtrees := make([][]search.Subtree, len(todo))
	for k, o := range todo {
		// Every shard must list the same subtrees, or the slices would
		// not cover the search, so the time limit does not cut the
		// listing short (about a second at a whole layer); an interrupt
		// does, and the shard then writes nothing, as one interrupted
		// later does (found by review: both exited 2, unusable input).
		if subtrees[k], err = search.Subtrees(ctx, o.program, o.cfg); err != nil {
			if d.interrupted() {
				return &ShardResult{Shard: sh, Interrupted: true}, nil
			}
			return nil, fmt.Errorf("listing the subtrees of the part (%s): %v", d.kinds(o), err)
		}
	}
	mine := deal(subtrees, sh.Count)[sh.Index]
	var searched []*outcome
	for k, o := range todo {
		if mine[k] != nil {
			o.subtrees, o.nsubtrees = mine[k], len(subtrees[k])
			searched = append(searched, o)
		}
	}
	d.searchAll(runCtx, searched, nil)
	res := &ShardResult{Shard: sh}
	for _, o := range searched {
		r := d.resultOf(o)
		sr := r.searched
		if sr == nil { // not searched, or abandoned: the slice is incomplete
			why := "time limit"
			if d.interrupted() {
				why = "interrupted"
			}
			sr = &search.Result{Stats: search.Stats{Stopped: why}}
		}
		res.Stats.Add(sr.Stats)
		if res.Stopped == "" {
			res.Stopped = sr.Stats.Stopped
		}
		res.Parts = append(res.Parts, ShardPart{Key: d.wholeKey(o), Subtrees: o.subtrees, NSubtrees: o.nsubtrees, Result: sr})
	}
	res.Interrupted = d.interrupted()
	res.Stats.Stopped = res.Stopped
	res.Stats.Seconds = time.Since(d.start).Seconds()
	return res, nil
}

// firstOutcomes returns the outcomes of the first round's parts that are
// to be searched, each once, in the order of their parts.
func (d *run) firstOutcomes() ([]*outcome, error) {
	var todo []*outcome
	// Never cut short: every shard must compute the same slicing.
	for _, p := range cut(d.ix, d.firstGroups(nil)) {
		o, err := d.outcomeOf(p)
		if err != nil {
			return nil, err
		}
		if !d.resultOf(o).done && !slices.Contains(todo, o) {
			todo = append(todo, o)
		}
	}
	return todo, nil
}
