package search

import (
	"slices"
	"testing"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
)

// newTestSearcher is a searcher for the example program name under its own
// configuration with maxOps threadblock ops.
func newTestSearcher(t *testing.T, name string, maxOps int) *searcher {
	t.Helper()
	p := load(t, name)
	cfg := writtenConfig(t, p)
	cfg.Complete(p.Graph)
	cfg.MaxBlockOps = maxOps
	s, err := newSearcher(t.Context(), p.Graph, cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.close)
	return s
}

// TestBlockCandidatesAreTheCanonicalOnes walks threadblock searches and
// checks, in every state, that the candidate ops the generator keeps
// incrementally (addCands) are exactly, and in the same order, those a
// search from scratch would try: every choice on every operand list whose
// key follows the last op's, in the right phases, that the oracle accepts.
func TestBlockCandidatesAreTheCanonicalOnes(t *testing.T) {
	for _, tt := range []struct {
		program string
		maxOps  int
		loop    bool // the first valid configuration with a for-loop, or without
	}{
		{"rmsnorm_matmul.py", 6, false},
		{"rmsnorm_matmul.py", 6, true},
		{"gqa.py", 7, true},
	} {
		s := newTestSearcher(t, tt.program, tt.maxOps)
		k := s.newKernelState()
		ins := k.g.Inputs()
		var b *blockState
		for _, c := range s.blockConfigs(k.g, ins, false) {
			if c.forloop > 1 == tt.loop {
				if bs := k.newBlockState(ins, []blockConfig{c}, nil); len(bs.confs) == 1 {
					b = bs
					break
				}
			}
		}
		if b == nil {
			t.Fatalf("%s: no valid configuration", tt.program)
		}
		states := 0
		var walk func(from, to int, last opKey)
		walk = func(from, to int, last opKey) {
			states++
			got := b.cands[from:to]
			want := fromScratch(b, last)
			if len(got) != len(want) {
				t.Fatalf("%s: state %d: %d candidates, from scratch %d", tt.program, states, len(got), len(want))
			}
			for i := range got {
				if got[i].choice != want[i].choice || got[i].in != want[i].in {
					t.Fatalf("%s: state %d: candidate %d is %+v, from scratch %+v", tt.program, states, i, got[i], want[i])
				}
			}
			if b.opsLeft() <= 0 {
				return
			}
			for j := from; j < to; j++ {
				c := b.cands[j]
				out, ok := b.push(c)
				if !ok {
					continue
				}
				start := len(b.cands)
				b.cands = append(b.cands, b.cands[j+1:to]...)
				b.addCands(out)
				walk(start, len(b.cands), candKey(s, c))
				b.cands = b.cands[:start]
				b.pop()
			}
		}
		walk(0, len(b.cands), keyOf(ugraph.OpInput, ugraph.Attr{}, nil, 0))
		t.Logf("%s: %d states", tt.program, states)
		if states < 20 {
			t.Errorf("%s: only %d states walked", tt.program, states)
		}
	}
}

func candKey(s *searcher, c blockCand) opKey {
	ch := s.cfg.BlockOps[c.choice]
	var ids []int32
	for _, t := range c.operands() {
		ids = append(ids, int32(t))
	}
	return keyOf(ch.Kind, ch.Attr, ids, 0)
}

// fromScratch lists, in key order, the ops that may follow the op of key
// last in b, by trying every choice on every operand list.
func fromScratch(b *blockState, last opKey) []blockCand {
	s := b.k.s
	n := block.TensorID(len(b.g.Tensors))
	post := func(x block.TensorID) bool { return b.g.Tensors[x].PostLoop }
	var cs []blockCand
	for i, ch := range s.cfg.BlockOps {
		info := ch.Kind.Info()
		var lists [][2]block.TensorID
		for x := range n {
			if info.Arity == 1 {
				if !refusedAccum(ch, post(x), b.g.ForloopRange, b.tiles[x].varies) {
					lists = append(lists, [2]block.TensorID{x, -1})
				}
				continue
			}
			for y := range n {
				if post(x) == post(y) && !(info.Commutative && y < x) {
					lists = append(lists, [2]block.TensorID{x, y})
				}
			}
		}
		for _, in := range lists {
			c := blockCand{choice: int32(i), in: in}
			if candKey(s, c).compare(last) <= 0 {
				continue
			}
			if s.exprs.blockOps(b, int32(i), []int{i}, in[0], in[1])[0].ok && b.validIn(&c) != 0 {
				cs = append(cs, c)
			}
		}
	}
	slices.SortFunc(cs, func(a, c blockCand) int { return candKey(s, a).compare(candKey(s, c)) })
	return cs
}

func TestMirrored(t *testing.T) {
	grids := []block.Dim3{{2, 4, 1}, {4, 2, 1}, {4, 4, 1}, {2, 8, 1}}
	tests := []struct {
		grid  block.Dim3
		split [3]int8
		want  bool
	}{
		{block.Dim3{2, 4, 1}, [3]int8{0, 3, -1}, false},
		{block.Dim3{4, 2, 1}, [3]int8{3, 0, -1}, true}, // (2, 4) splitting 0, 3 is kept
		{block.Dim3{4, 2, 1}, [3]int8{0, 3, -1}, false},
		{block.Dim3{4, 4, 1}, [3]int8{1, 0, -1}, true},
		{block.Dim3{4, 4, 1}, [3]int8{0, 1, -1}, false},
		{block.Dim3{2, 8, 1}, [3]int8{3, 0, -1}, false}, // (8, 2) is not a grid of the list
		{block.Dim3{4, 1, 1}, [3]int8{2, -1, -1}, false},
	}
	for _, tt := range tests {
		if got := mirrored(tt.grid, tt.split, grids); got != tt.want {
			t.Errorf("mirrored(%v, %v) = %v, want %v", tt.grid, tt.split, got, tt.want)
		}
	}
}

func TestFreeClasses(t *testing.T) {
	tests := []struct {
		program string
		free    [][2]int // (input, dim) of the free classes
		summed  [][2]int // and of classes that are not free
	}{
		// X[16,4096] @ W[4096,6144]: rows and columns are free, k is summed.
		{"rmsnorm_matmul.py", [][2]int{{0, 0}, {1, 1}}, [][2]int{{0, 1}, {1, 0}}},
		// Q[2,256,64] K[2,64,4096] V[2,4096,64]: batch, queries and V's
		// columns are free; the head dim of Q·K and the keys are summed.
		{"gqa.py", [][2]int{{0, 0}, {0, 1}, {2, 2}}, [][2]int{{0, 2}, {1, 1}, {1, 2}, {2, 1}}},
	}
	for _, tt := range tests {
		p := load(t, tt.program)
		c := classify(p.Graph, p.Graph)
		ins := p.Graph.Inputs()
		for _, d := range tt.free {
			if !slices.Contains(c.free, c.of[ins[d[0]]][d[1]]) {
				t.Errorf("%s: input %d dim %d should be of a free class", tt.program, d[0], d[1])
			}
		}
		for _, d := range tt.summed {
			if slices.Contains(c.free, c.of[ins[d[0]]][d[1]]) {
				t.Errorf("%s: input %d dim %d should not be of a free class", tt.program, d[0], d[1])
			}
		}
	}
}
