package ffverify

import (
	"fmt"
	"runtime"

	"github.com/mirage-go/mirage/internal/memlimit"
	"github.com/mirage-go/mirage/ugraph"
)

// elemBytes is the size of one value of the model (two uint32 residues).
const elemBytes = 8

// tensorBytes is the size of a tensor of shape s of values of the model.
func tensorBytes(s ugraph.Shape) int64 { return s.Bytes(elemBytes) }

// usage is what a dense evaluation of a plan holds at its peak.
type usage struct {
	peak int64 // bytes
	op   int   // the op during which the peak is reached
}

// memory returns the most memory that one dense evaluation (run) of p holds
// at once, following run's allocations: the live kernel results (each is
// dropped after its last use), the inputs that pre-defined ops read whole
// (materialised then, unless the draw shares its inputs, which the caller
// counts), a graph-defined kernel's tiles and results while it runs, and
// div's inverted copy of its divisor. Sums saturate (ugraph.AddSize).
func (p *plan) memory(shared bool) usage {
	g := p.g
	held := make([]int64, len(g.Tensors)) // bytes per tensor, while it is live
	var live int64
	hold := func(t int) {
		if held[t] == 0 {
			held[t] = tensorBytes(g.Tensors[t].Shape)
			live = ugraph.AddSize(live, held[t])
		}
	}
	var u usage
	for i := range g.Ops {
		if !p.live[i] {
			continue
		}
		op := &g.Ops[i]
		var during int64 // freed when the op ends
		switch op.Kind {
		case ugraph.OpInput:
			// Materialised where a pre-defined op reads it, if at all.
		case ugraph.OpCustomized:
			for _, t := range op.Out {
				hold(int(t))
			}
			for _, t := range p.blocks[i].g.Tensors {
				during = ugraph.AddSize(during, tensorBytes(t.Shape))
			}
		default:
			for j, t := range op.In {
				switch {
				case p.inputPos[t] >= 0 && shared:
				case op.Kind == ugraph.OpMatmul && j == 1 && p.inputPos[t] >= 0 && held[t] == 0:
					// computed a panel at a time (matmulInput)
					b := g.Tensors[t].Shape
					during = ugraph.AddSize(during, int64(panelElems(b.Dim(b.Rank()-2), b.Last())*elemBytes))
				default:
					hold(int(t))
				}
			}
			hold(int(op.Out[0]))
			if op.Kind == ugraph.OpDiv {
				during = tensorBytes(g.Tensors[op.In[1]].Shape)
			}
		}
		if n := ugraph.AddSize(live, during); n > u.peak {
			u = usage{peak: n, op: i}
		}
		for _, t := range op.In {
			if p.lastUse[t] == i && held[t] > 0 {
				live -= held[t]
				held[t] = 0
			}
		}
	}
	// Outputs that are inputs are materialised at the end.
	for _, t := range g.Outputs {
		if !shared {
			hold(int(t))
		}
	}
	if live > u.peak {
		u = usage{peak: live, op: len(g.Ops) - 1}
	}
	return u
}

// outputBytes is the size of p's outputs, which a Verifier keeps per draw.
func (p *plan) outputBytes() int64 {
	var n int64
	for _, t := range p.g.Outputs {
		n = ugraph.AddSize(n, tensorBytes(p.g.Tensors[t].Shape))
	}
	return n
}

// inputBytes is the size of p's inputs, materialised.
func (p *plan) inputBytes() int64 {
	var n int64
	for _, t := range p.g.Inputs() {
		n = ugraph.AddSize(n, tensorBytes(p.g.Tensors[t].Shape))
	}
	return n
}

// matcherBytes is what comparing n candidate outputs with m program
// outputs takes: per pair, a flag and a position (newMatcher) and the
// record of a difference (diff). A graph read from a file may have outputs
// by the hundred thousand.
func matcherBytes(n, m int) int64 {
	return ugraph.MulSize(ugraph.MulSize(int64(n), int64(m)), 1+8+24)
}

// peak says where a draw of p takes the most memory, for a memory error:
// "peaks at op 3 (matmul) with 193 MiB".
func (p *plan) peak(u usage) string {
	return fmt.Sprintf("peaks at op %d (%v) with %s", u.op, p.g.Ops[u.op].Kind, memlimit.Format(u.peak))
}

// workers returns how many draws may be evaluated at once when each takes
// perDraw bytes and held bytes are taken besides: at most GOMAXPROCS and
// draws, at least 1. It fails, with a *memlimit.Error that says what (the
// work) and detail, when not even one draw fits in o.MaxBytes.
func (o Options) workers(draws int, held, perDraw int64, what, detail string) (int, error) {
	if need := ugraph.AddSize(held, perDraw); need > o.MaxBytes {
		return 0, &memlimit.Error{What: what, Need: need, Limit: o.MaxBytes, Detail: detail}
	}
	w := min(runtime.GOMAXPROCS(0), draws)
	if perDraw > 0 {
		w = int(min(int64(w), (o.MaxBytes-held)/perDraw))
	}
	return max(w, 1), nil
}

// eachDraw calls run(t) for every draw t in [0, n), on at most w
// goroutines at once, and passes the results to done in the order of t.
// done ends the loop by returning false: no draw starts after that, and the
// results of those under way are dropped. A result is held until those of
// earlier draws are done: at most w draws run at once, but more results
// may wait.
func eachDraw[R any](n, w int, run func(t int) R, done func(t int, r R) bool) {
	type result struct {
		t int
		r R
	}
	results := make(chan result)
	pending := map[int]R{} // finished, waiting for earlier draws
	next, inFlight, stop := 0, 0, false
	for t := 0; ; {
		for ; !stop && inFlight < w && next < n; next++ {
			inFlight++
			go func(t int) { results <- result{t, run(t)} }(next)
		}
		if inFlight == 0 {
			return
		}
		x := <-results
		inFlight--
		pending[x.t] = x.r
		for r, ok := pending[t]; ok && !stop; r, ok = pending[t] {
			delete(pending, t)
			stop = !done(t, r)
			t++
		}
	}
}
