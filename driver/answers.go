package driver

import (
	"cmp"
	"container/heap"
	"math"
	"slices"

	"github.com/mirage-go/mirage/ugraph/kernel"
)

// MaxAnswers bounds the whole-program answers a run of several parts
// returns when asked for all of them (Options.Answers < 0): their
// combinations multiply.
const MaxAnswers = 64

// option is one way to run a part: a verified replacement, or (graph nil)
// the part's own ops.
type option struct {
	graph *kernel.Graph
	us    float64
	seed  string // the rule that built graph, if a seed
}

// partOptions are the ways to run each part, fastest first: its search's
// verified fused candidates and its own ops. A part whose search did not
// finish, or that is a customized op as written (never searched), runs its
// own ops only.
func (d *run) partOptions(outs []*outcome) [][]option {
	opts := make([][]option, len(outs))
	for k, o := range outs {
		own := option{us: o.unfusedUs}
		r := d.resultOf(o)
		var fused []option
		if r.done && r.searched != nil {
			for _, c := range r.searched.Candidates {
				if c.Customized > 0 {
					fused = append(fused, option{graph: c.Graph, us: c.Estimate.Micros, seed: c.Seed})
				}
			}
		}
		opts[k] = append(fused, own)
		slices.SortStableFunc(opts[k], func(a, b option) int { return cmp.Compare(a.us, b.us) })
	}
	return opts
}

// combinations returns up to n choices of one option per part, by their
// summed estimate, fastest first (a part's kernels run one after another,
// so a program's estimate is its parts'), leaving out the one that runs
// every part's own ops (the unfused program). The first is each part's
// fastest option; then, step by step, the next-fastest option of the part
// where it costs least. Equal sums come in the order of their choices:
// the sums are of whole nanoseconds (nanos), exact in any order, where
// float sums built step by step would round apart sums that are equal.
//
// The choices form a tree: a choice's parent has the option before it at
// its last part that is not at its fastest, so a choice's children step
// that part or a later one, and each is reached once. A choice holds only
// its steps, so the work grows with the parts times n, not the parts
// squared (a 20,000-op program cut into 6,666 parts took 8 s here).
func combinations(opts [][]option, n int) [][]int {
	if len(opts) == 0 || n <= 0 {
		return nil
	}
	var base int64
	fastestFused := 0 // parts whose fastest option is fused
	for _, o := range opts {
		base += nanos(o[0].us)
		if o[0].graph != nil {
			fastestFused++
		}
	}
	unfused := func(c combo) bool {
		fused := fastestFused
		for _, s := range c.steps {
			if opts[s.part][0].graph != nil {
				fused--
			}
			if opts[s.part][s.option].graph != nil {
				fused++
			}
		}
		return fused == 0
	}
	q := &comboQueue{{ns: base}}
	var out [][]int
	for q.Len() > 0 && len(out) < n {
		c := heap.Pop(q).(combo)
		if !unfused(c) {
			out = append(out, c.choice(len(opts)))
		}
		from, at := 0, 0 // the last part stepped, and the option it is at
		if len(c.steps) > 0 {
			last := c.steps[len(c.steps)-1]
			from, at = last.part, last.option
		}
		for k := from; k < len(opts); k++ {
			i, keep := 1, c.steps
			if k == from && len(c.steps) > 0 {
				i, keep = at+1, c.steps[:len(c.steps)-1]
			}
			if i >= len(opts[k]) {
				continue
			}
			steps := append(slices.Clip(keep), step{k, i})
			heap.Push(q, combo{steps: steps, ns: c.ns + nanos(opts[k][i].us) - nanos(opts[k][i-1].us)})
		}
	}
	return out
}

// combo is a choice of one option per part: each part's fastest but at
// steps, with its summed estimate.
type combo struct {
	steps []step // by part, ascending
	ns    int64
}

// nanos is an estimate in µs as whole nanoseconds, at most 2⁴⁰ (18
// minutes: a sum over a million parts stays exact).
func nanos(us float64) int64 {
	const most = 1 << 40
	if !(us*1e3 < most) { // NaN too
		return most
	}
	return max(int64(math.Round(us*1e3)), 0)
}

// step is a part's option, other than its fastest, in a combo.
type step struct{ part, option int }

// choice is c's option of each of n parts.
func (c combo) choice(n int) []int {
	ch := make([]int, n)
	for _, s := range c.steps {
		ch[s.part] = s.option
	}
	return ch
}

// compareChoices compares the choices of a and b as vectors of options
// by part, lexicographically.
func compareChoices(a, b []step) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		switch {
		case a[i].part != b[i].part:
			// The one stepped at the earlier part is the larger there.
			return -cmp.Compare(a[i].part, b[i].part)
		case a[i].option != b[i].option:
			return cmp.Compare(a[i].option, b[i].option)
		}
	}
	return cmp.Compare(len(a), len(b))
}

// comboQueue is a min-heap of combos by estimate, then by choice (so that
// equal estimates come out in a fixed order).
type comboQueue []combo

func (q comboQueue) Len() int { return len(q) }
func (q comboQueue) Less(i, j int) bool {
	if q[i].ns != q[j].ns {
		return q[i].ns < q[j].ns
	}
	return compareChoices(q[i].steps, q[j].steps) < 0
}
func (q comboQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *comboQueue) Push(x any)   { *q = append(*q, x.(combo)) }
func (q *comboQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}
