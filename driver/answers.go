package driver

import (
	"cmp"
	"container/heap"
	"fmt"
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
// where it costs least.
func combinations(opts [][]option, n int) [][]int {
	if len(opts) == 0 || n <= 0 {
		return nil
	}
	sum := func(c []int) float64 {
		var s float64
		for k, i := range c {
			s += opts[k][i].us
		}
		return s
	}
	unfused := func(c []int) bool {
		for k, i := range c {
			if opts[k][i].graph != nil {
				return false
			}
		}
		return true
	}
	seen := map[string]bool{}
	q := &comboQueue{}
	push := func(c []int) {
		if k := fmt.Sprint(c); !seen[k] {
			seen[k] = true
			heap.Push(q, combo{choice: c, us: sum(c)})
		}
	}
	push(make([]int, len(opts)))
	var out [][]int
	for q.Len() > 0 && len(out) < n {
		c := heap.Pop(q).(combo)
		if !unfused(c.choice) {
			out = append(out, c.choice)
		}
		for k := range c.choice {
			if c.choice[k]+1 < len(opts[k]) {
				next := slices.Clone(c.choice)
				next[k]++
				push(next)
			}
		}
	}
	return out
}

// combo is a choice of one option per part, with its summed estimate.
type combo struct {
	choice []int
	us     float64
}

// comboQueue is a min-heap of combos by estimate, then by choice (so that
// equal estimates come out in a fixed order).
type comboQueue []combo

func (q comboQueue) Len() int { return len(q) }
func (q comboQueue) Less(i, j int) bool {
	if q[i].us != q[j].us {
		return q[i].us < q[j].us
	}
	return slices.Compare(q[i].choice, q[j].choice) < 0
}
func (q comboQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *comboQueue) Push(x any)   { *q = append(*q, x.(combo)) }
func (q *comboQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}
