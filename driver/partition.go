package driver

import (
	"fmt"
	"slices"
	"sync"

	"github.com/mirage-go/mirage/cost"
	"github.com/mirage-go/mirage/launch"
	"github.com/mirage-go/mirage/seed"
	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// A Part is a connected piece of a program that one search takes: a run of
// the program's compute ops, consecutive in program order, and perhaps
// copies of cheap ops of earlier parts that it recomputes rather than
// read (recompute). The parts of a partition depend on one another only in
// their order. The tensors a part reads from outside are its inputs; those
// it computes that later parts read, or that are program outputs, are its
// outputs. Both stay in device memory: they are the cut points.
type Part struct {
	Ops     []int             // indices into the program's Ops, ascending
	Inputs  []kernel.TensorID // the program's tensors it reads, in the order its ops first read them
	Outputs []kernel.TensorID // the program's tensors it provides, in the order its ops make them
}

// key names p by what it computes from what: its ops, inputs and outputs.
func (p Part) key() string { return fmt.Sprint(p.Ops, p.Inputs, p.Outputs) }

// Limits say which parts one search can take: what its graph-defined
// kernels may hold under the configuration the part will be searched with.
type Limits struct {
	Ops      int // compute ops
	BlockOps int // the part's ops as threadblock ops (blockCost), over all its kernels
	Inputs   int // MaxBlockInputs
	Outputs  int // MaxBlockOutputs
}

// Partition cuts the compute ops of g into parts that one search can take
// under the limits limitsFor gives for each (those of the configuration it
// would be searched with): split, then recompute, then cut.
func Partition(g *kernel.Graph, limitsFor func(ops []int) Limits) []Part {
	ix := index(g, target.MustLookup(target.Default))
	return cut(ix, recompute(ix, split(ix, computeOps(g), limitsFor, true, nil), limitsFor))
}

// coverage is what the seed rules make of a run of ops as a part.
type coverage struct {
	premise bool // a rule's premise holds: it builds seeds
	placed  bool // one of them runs on the target: its tiles fit the shared memory
}

// coverageOf says what the seed rules make of ops (ascending) as a part
// of g: its program, with the tensors it reads as inputs and those it
// provides (program outputs, or read by other ops) as outputs. The answer
// is kept by the program's hash: the runs of a stack of layers are a few
// programs, so cutting 10,000 ops asks about 37. A run no rule can take
// (seed.MayCover) is answered before its program is built.
func coverageOf(g *indexed, ops []int) coverage {
	if !seed.MayCover(g.Graph, ops) {
		return coverage{}
	}
	return g.coverageOfPart(Part{Ops: ops, Inputs: partInputs(g, ops), Outputs: partOutputs(g, ops)})
}

// coverageOfPart is coverageOf for a part of a partition: its outputs are
// those cut gave it, without the copies that recompute made of ops other
// parts compute too (a norm that two parts read is an output of neither).
func (g *indexed) coverageOfPart(p Part) coverage {
	if !seed.MayCover(g.Graph, p.Ops) {
		return coverage{}
	}
	pg, err := p.Program(g.Graph)
	if err != nil {
		return coverage{}
	}
	h := kernel.Hash(pg)
	g.mu.Lock()
	c, ok := g.covers[h]
	g.mu.Unlock()
	if ok {
		return c
	}
	c.premise, c.placed = seed.Covers(pg, g.arch.SMs, func(s *kernel.Graph) bool {
		_, err := cost.EstimateGraph(s, g.arch)
		return err == nil
	})
	g.mu.Lock()
	g.covers[h] = c
	g.mu.Unlock()
	return c
}

// indexed is a program with what partitioning asks of it at every step
// computed once: who produces and who reads each tensor. Without it, a
// 10,000-op program took minutes to cut (each question scanned every op).
type indexed struct {
	*kernel.Graph
	producer []int   // per tensor, the op that makes it
	readers  [][]int // per tensor, the live ops that read it, ascending, once each
	output   []bool  // per tensor, whether it is a program output
	// arch is the target the parts are cut for: coverageOf places seeds on it.
	arch target.Arch
	mu   sync.Mutex
	// covers keeps coverageOf's answers by the hash of the part's program.
	covers map[uint64]coverage
}

// index indexes g, for parts cut for arch.
func index(g *kernel.Graph, arch target.Arch) *indexed {
	ix := &indexed{Graph: g, producer: make([]int, len(g.Tensors)), readers: make([][]int, len(g.Tensors)), output: make([]bool, len(g.Tensors)),
		arch: arch, covers: map[uint64]coverage{}}
	live := launch.Live(g)
	for i, op := range g.Ops {
		for _, t := range op.Out {
			ix.producer[t] = i
		}
		if !live[i] {
			continue // a dead op's reads keep nothing in device memory
		}
		for _, t := range op.In {
			if r := ix.readers[t]; len(r) == 0 || r[len(r)-1] != i {
				ix.readers[t] = append(r, i)
			}
		}
	}
	for _, t := range g.Outputs {
		ix.output[t] = true
	}
	return ix
}

// groupsOf returns, per op of ix, the groups that hold it, ascending.
func (ix *indexed) groupsOf(groups [][]int) [][]int {
	of := make([][]int, len(ix.Ops))
	for k, ops := range groups {
		for _, o := range ops {
			of[o] = append(of[o], k)
		}
	}
	return of
}

// split cuts ops (ascending) into runs that one search can take under the
// limits limitsFor gives. Of the ways to cut, it takes one with the fewest
// runs (each is at best one kernel launch); of those, when the searches
// take seeds (seeds), one with the fewest runs outside every seed rule's
// premise (a covered run has a fused answer at once; one that is not may find
// none in its budget: attention with K's norm written out, cut after exp,
// left the norm and Q·K to an enumeration that found nothing, where a
// cut after the norm gives two covered runs); and of those one that keeps
// the fewest bytes of intermediate tensors in device memory (each cut
// tensor is written and read back). An op that is not searchable even
// alone is a run of its own.
//
// Once stop (unless nil) says so, the ops not yet placed are runs of one
// op each: cutting a large program must not outlast the run's budget.
func split(g *indexed, ops []int, limitsFor func(ops []int) Limits, seeds bool, stop func() bool) [][]int {
	n := len(ops)
	type best struct {
		runs, bare int // runs, and those no seed rule covers
		bytes      int64
		from       int // the start of the last run
	}
	dp := make([]best, n+1)
	for j := 1; j <= n; j++ {
		if j%64 == 0 && stop != nil && stop() {
			for ; j <= n; j++ {
				dp[j] = best{runs: dp[j-1].runs + 1, bare: dp[j-1].bare, bytes: dp[j-1].bytes, from: j - 1}
			}
			break
		}
		dp[j] = best{runs: -1}
		for i := j - 1; i >= max(0, j-maxPartOps); i-- {
			run := ops[i:j]
			if j-i > 1 && !searchable(g, run, limitsFor(run), seeds) {
				continue // a longer run may be connected where this one is not
			}
			cand := best{runs: dp[i].runs + 1, bare: dp[i].bare, bytes: dp[i].bytes + cutBytes(g, run), from: i}
			if seeds && !coverageOf(g, run).premise {
				cand.bare++
			}
			if dp[j].runs < 0 || cand.runs < dp[j].runs ||
				cand.runs == dp[j].runs && (cand.bare < dp[j].bare || cand.bare == dp[j].bare && cand.bytes < dp[j].bytes) {
				dp[j] = cand
			}
		}
	}
	var runs [][]int
	for j := n; j > 0; j = dp[j].from {
		runs = append(runs, slices.Clone(ops[dp[j].from:j]))
	}
	slices.Reverse(runs)
	return runs
}

// maxPartOps bounds the ops of a part: two graph-defined kernels of ten
// threadblock ops each, the most a preset allows.
const maxPartOps = 20

// recompute copies into a group the cheap ops of earlier groups whose
// results it reads, when all their operands are program inputs and the
// group stays searchable: a norm or an element-wise op recomputed in each
// kernel that reads it (an RMSNorm shared by two projections, say) is
// cheaper than a kernel of its own and a round trip through device memory,
// and lets each consumer fuse it. An op that more than maxRecomputes
// groups read is computed once, by its own group.
func recompute(g *indexed, groups [][]int, limitsFor func(ops []int) Limits) [][]int {
	readBy := make([]int, len(g.Ops)) // per op, the other groups that read its result
	for _, grp := range groups {
		for _, o := range readFrom(g, grp) {
			readBy[o]++
		}
	}
	out := make([][]int, len(groups))
	for k, grp := range groups {
		grp = slices.Clone(grp)
		for {
			added := false
			for _, i := range grp {
				for _, t := range g.Ops[i].In {
					o := g.producer[t]
					if slices.Contains(grp, o) || !cheap(g, o) || readBy[o] > maxRecomputes {
						continue
					}
					with := append(slices.Clone(grp), o)
					slices.Sort(with)
					if searchable(g, with, limitsFor(with), false) {
						grp, added = with, true
						break
					}
				}
				if added {
					break
				}
			}
			if !added {
				break
			}
		}
		out[k] = grp
	}
	// A group left with nothing but copies that others recompute is gone.
	var kept [][]int
	of := g.groupsOf(out)
	gone := make([]bool, len(out))
	for k, grp := range out {
		if gone[k] = copiedWhole(g, of, gone, grp, k); !gone[k] {
			kept = append(kept, grp)
		}
	}
	return kept
}

// maxRecomputes bounds the groups that recompute one op: an RMSNorm shared
// by the q, k and v projections, or by gate and up, is recomputed in each;
// one shared by a projection per head, written head by head (32 or more),
// is computed once. Past a few copies their launches (each copy left
// unfused is a kernel of its own) and their reads of the op's operands
// cost more than the one round trip through device memory they save.
const maxRecomputes = 4

// readFrom lists the ops outside grp whose results grp's ops read, once
// each, ascending.
func readFrom(g *indexed, grp []int) []int {
	var out []int
	for _, i := range grp {
		for _, t := range g.Ops[i].In {
			if o := g.producer[t]; !slices.Contains(grp, o) && !slices.Contains(out, o) {
				out = append(out, o)
			}
		}
	}
	slices.Sort(out)
	return out
}

// cheap reports whether op o of g is worth recomputing: a norm or an
// element-wise op whose operands are all program inputs.
func cheap(g *indexed, o int) bool {
	op := &g.Ops[o]
	if c := op.Kind.Info().Class; c != ugraph.ClassNorm && !op.Kind.IsElementwise() {
		return false
	}
	for _, t := range op.In {
		if g.Ops[g.producer[t]].Kind != ugraph.OpInput {
			return false
		}
	}
	return true
}

// copiedWhole reports whether group k (grp) can go: every op of it is
// also in a later group, and every group that reads an op's result
// without computing it comes after another group that computes it (one
// not gone). A group between k and the copies that reads the result
// needs k: a norm copied into the projection after a gated pair that
// reads it is still computed before the pair. of holds the groups of each
// op, ascending.
func copiedWhole(g *indexed, of [][]int, gone []bool, grp []int, k int) bool {
	for _, o := range grp {
		gs := of[o]
		if gs[len(gs)-1] <= k {
			return false
		}
		first := -1 // the first group other than k that computes o
		for _, m := range gs {
			if m != k && !gone[m] {
				first = m
				break
			}
		}
		for _, t := range g.Ops[o].Out {
			for _, r := range g.readers[t] {
				for _, j := range of[r] {
					if !slices.Contains(gs, j) && j < first {
						return false
					}
				}
			}
		}
	}
	return true
}

// cut makes the parts of groups (each ascending ops): the tensors each
// reads from outside are its inputs; those it computes that a later group
// reads without computing them itself, or that are program outputs (and
// computed by no later group), are its outputs.
func cut(g *indexed, groups [][]int) []Part {
	parts := make([]Part, len(groups))
	of := g.groupsOf(groups)
	for k, ops := range groups {
		p := Part{Ops: ops, Inputs: partInputs(g, ops)}
		for _, i := range ops {
			for _, t := range g.Ops[i].Out {
				if providedBy(g, of, t) == k {
					p.Outputs = append(p.Outputs, t)
				}
			}
		}
		parts[k] = p
	}
	return parts
}

// partInputs returns the tensors that ops (ascending) read from outside,
// in the order the ops first read them: not by the tensors' numbers, so
// that the same layer at two depths of a stack (its weights numbered
// before the activation it reads, or after) is one part program, with
// one hash, searched once.
func partInputs(g *indexed, ops []int) []kernel.TensorID {
	var in []kernel.TensorID
	inside := map[kernel.TensorID]bool{}
	for _, i := range ops {
		for _, t := range g.Ops[i].In {
			if !inside[t] && !slices.Contains(in, t) {
				in = append(in, t)
			}
		}
		for _, t := range g.Ops[i].Out {
			inside[t] = true
		}
	}
	return in
}

// providedBy returns which group provides tensor t to the groups that read
// it without computing it, and to the program's outputs: the last group
// that computes t before the first such reader (or the last that computes
// it, for an output). -1 when no one needs it from a group. of holds the
// groups of each op, ascending.
func providedBy(g *indexed, of [][]int, t kernel.TensorID) int {
	makers := of[g.producer[t]]
	if len(makers) == 0 {
		return -1
	}
	// The first group after one that computes t, reading t without
	// computing it.
	need := -1
	for _, r := range g.readers[t] {
		for _, k := range of[r] {
			if k > makers[0] && (need < 0 || k < need) && !slices.Contains(makers, k) {
				need = k
				break // of[r] ascends
			}
		}
	}
	switch {
	case need >= 0:
		last := -1
		for _, k := range makers {
			if k < need {
				last = k
			}
		}
		return last
	case g.output[t]:
		return makers[len(makers)-1]
	}
	return -1
}

// blockCost estimates how many threadblock ops a fused form of the part
// needs, input ops included (the generator's MaxBlockOps counts them): a
// matmul is itself and the accumulator over its for-loop; rms_norm is the
// threadblock rms_norm, or, before matmuls, the rms accumulator and a
// division of each matmul's result; a reduction a block reduction and an
// accumulator; an element-wise op itself. A part with neither matmul nor
// reduction needs one accumulator more, to make its result post-loop.
func blockCost(g *indexed, ops []int, inputs int) int {
	n, accumulated := inputs, false
	for _, i := range ops {
		op := &g.Ops[i]
		switch op.Kind.Info().Class {
		case ugraph.ClassMatmul, ugraph.ClassReduction:
			n += 2
			accumulated = true
		case ugraph.ClassNorm:
			n += 1 + matmulsReading(g, ops, op.Out[0])
		default:
			n++
		}
	}
	if !accumulated {
		n++
	}
	return n
}

// matmulsReading counts the matmuls of ops that read t.
func matmulsReading(g *indexed, ops []int, t kernel.TensorID) int {
	n := 0
	for _, i := range ops {
		if g.Ops[i].Kind == ugraph.OpMatmul && slices.Contains(g.Ops[i].In, t) {
			n++
		}
	}
	return n
}

// searchable reports whether one search can take the part made of ops
// under lim: connected, with no graph-defined kernel of the program's own
// (a program that already wrote one keeps it as a part of its own), and
// within the limits. With seeds, a part with a seed that runs on the
// target may pass the limits on ops, on threadblock ops and on a kernel's
// inputs and outputs: the rule builds its fused kernel whole, where the
// enumeration's limits keep it from reaching one (an RMSNorm before a
// LLaMA MLP's gate and up projections, or before a layer's q, k and v
// projections: a launch and a round trip of the norm saved, and the three
// weights read in one kernel). A rule whose premise holds but whose seeds
// do not fit would leave such a part with no fused answer.
func searchable(g *indexed, ops []int, lim Limits, seeds bool) bool {
	for _, i := range ops {
		if g.Ops[i].Kind == ugraph.OpCustomized {
			return len(ops) == 1
		}
	}
	// Past the limit on ops, only a rule's seeds can take the part.
	if len(ops) > lim.Ops && !(seeds && seed.MayCover(g.Graph, ops)) || !connected(g, ops) {
		return false
	}
	inputs, outs := len(partInputs(g, ops)), len(partOutputs(g, ops))
	if len(ops) <= lim.Ops && inputs <= lim.Inputs && outs <= lim.Outputs && blockCost(g, ops, inputs) <= lim.BlockOps {
		return true
	}
	return seeds && coverageOf(g, ops).placed
}

// partOutputs returns what ops (ascending) provide as a part on its own:
// the program outputs they compute, and what the rest of the program
// reads from them.
func partOutputs(g *indexed, ops []int) []kernel.TensorID {
	var out []kernel.TensorID
	for _, i := range ops {
		for _, t := range g.Ops[i].Out {
			if g.output[t] || readElsewhere(g, ops, t) {
				out = append(out, t)
			}
		}
	}
	return out
}

// readElsewhere reports whether an op outside ops reads t.
func readElsewhere(g *indexed, ops []int, t kernel.TensorID) bool {
	for _, r := range g.readers[t] {
		if !slices.Contains(ops, r) {
			return true
		}
	}
	return false
}

// connected reports whether ops form one piece, linked through the tensors
// they share (a shared program input links two matmuls that read it: one
// kernel can load it once for both).
func connected(g *indexed, ops []int) bool {
	if len(ops) == 0 {
		return false
	}
	seen := map[int]bool{ops[0]: true}
	todo := []int{ops[0]}
	for len(todo) > 0 {
		a := g.Ops[todo[len(todo)-1]]
		todo = todo[:len(todo)-1]
		for _, j := range ops {
			if !seen[j] && shareTensor(a, g.Ops[j]) {
				seen[j] = true
				todo = append(todo, j)
			}
		}
	}
	return len(seen) == len(ops)
}

func shareTensor(a, b kernel.Op) bool {
	for _, t := range a.In {
		if slices.Contains(b.In, t) || slices.Contains(b.Out, t) {
			return true
		}
	}
	for _, t := range a.Out {
		if slices.Contains(b.In, t) {
			return true
		}
	}
	return false
}

// cutBytes is the device-memory traffic of what the run of ops writes for
// the rest of the program (not its outputs): written once, read back.
func cutBytes(g *indexed, ops []int) int64 {
	var b int64
	for _, i := range ops {
		for _, t := range g.Ops[i].Out {
			if !g.output[t] && readElsewhere(g, ops, t) {
				b += 2 * int64(g.Tensors[t].Bytes())
			}
		}
	}
	return b
}

// computeOps returns the indices of g's ops other than inputs that an output
// depends on: the others are in no part, as the emitted code launches none.
func computeOps(g *kernel.Graph) []int {
	var ops []int
	live := launch.Live(g)
	for i, op := range g.Ops {
		if op.Kind != ugraph.OpInput && live[i] {
			ops = append(ops, i)
		}
	}
	return ops
}

// describe lists the part's ops: "rms_norm, matmul, silu".
func (p Part) describe(g *kernel.Graph) string {
	s := ""
	for i, op := range p.Ops {
		if i > 0 {
			s += ", "
		}
		s += g.Ops[op].Kind.String()
	}
	return s
}

// Program returns p as a program of its own: its inputs, in order, as the
// graph's inputs, its ops replayed, its outputs marked in order.
func (p Part) Program(g *kernel.Graph) (*kernel.Graph, error) {
	pg := kernel.New()
	ids := map[kernel.TensorID]kernel.TensorID{}
	for _, t := range p.Inputs {
		id, err := pg.AddInput(g.Tensors[t].Shape, g.Tensors[t].DType)
		if err != nil {
			return nil, err
		}
		ids[t] = id
	}
	for _, i := range p.Ops {
		if err := replay(pg, &g.Ops[i], ids); err != nil {
			return nil, fmt.Errorf("op %d: %v", i, err)
		}
	}
	for _, t := range p.Outputs {
		if err := pg.MarkOutput(ids[t]); err != nil {
			return nil, err
		}
	}
	return pg, nil
}

// replay adds op to dst, its operands renamed by ids, and names its
// results in ids.
func replay(dst *kernel.Graph, op *kernel.Op, ids map[kernel.TensorID]kernel.TensorID) error {
	in := make([]kernel.TensorID, len(op.In))
	for k, t := range op.In {
		id, ok := ids[t]
		if !ok {
			return fmt.Errorf("%v reads tensor %d, which is not computed yet", op.Kind, t)
		}
		in[k] = id
	}
	var outs []kernel.TensorID
	switch op.Kind {
	case ugraph.OpCustomized:
		var err error
		if outs, err = dst.Customized(in, op.Block); err != nil {
			return err
		}
	default:
		out, err := dst.Add(op.Kind, op.Attr, in...)
		if err != nil {
			return err
		}
		outs = []kernel.TensorID{out}
	}
	for r, t := range op.Out {
		ids[t] = outs[r]
	}
	return nil
}
