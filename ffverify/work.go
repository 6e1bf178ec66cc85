package ffverify

import (
	"cmp"
	"fmt"
	"runtime"
	"time"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// MultiplyAddsPerSecond is what one core multiplies and adds in a draw's
// matmuls, in the model's field (AVX2; BenchmarkMatmul's 16×4096×11008
// product took 225 ms on the 2-core development VM): the rate that says
// how long fingerprinting a program takes.
const MultiplyAddsPerSecond = 3.2e9

// MultiplyAdds is the multiply-adds of one draw's evaluation of g's
// pre-defined matmuls: what fingerprinting a program (a part as written)
// costs, nearly all of it at a model's shapes.
func MultiplyAdds(g *kernel.Graph) float64 {
	var n float64
	for i := range g.Ops {
		op := &g.Ops[i]
		if op.Kind != ugraph.OpMatmul {
			continue
		}
		n += float64(terms(op.Kind, g.Tensors[op.In[0]].Shape, g.Tensors[op.Out[0]].Shape))
	}
	return n
}

// EvaluationTime is how long evaluating each of gs on opts' draws takes
// here, from their matmuls alone (MultiplyAdds), a draw a core at a time;
// with the draws and the cores it counts.
func EvaluationTime(opts Options, gs ...*kernel.Graph) (d time.Duration, draws, cores int) {
	draws = cmp.Or(opts.Trials, DefaultTrials)
	var work float64
	for _, g := range gs {
		work += MultiplyAdds(g)
	}
	cores = max(1, min(runtime.GOMAXPROCS(0), draws))
	rounds := (draws + cores - 1) / cores
	return time.Duration(float64(rounds) * work / MultiplyAddsPerSecond * float64(time.Second)), draws, cores
}

// About says duration d for a message, to two or three figures: "about
// 230ms", "about 12.3s", "about 5m36s"; "under 10ms" below that.
func About(d time.Duration) string {
	switch {
	case d < 10*time.Millisecond:
		return "under 10ms"
	case d < time.Second:
		d = d.Round(10 * time.Millisecond)
	case d < time.Minute:
		d = d.Round(100 * time.Millisecond)
	default:
		d = d.Round(time.Second)
	}
	return "about " + d.String()
}

// FingerprintTime says how long New takes for g with opts here
// (EvaluationTime), for a message: "2 draws of 1.1e+12 multiply-adds,
// about 5m36s on 2 cores".
func FingerprintTime(g *kernel.Graph, opts Options) string {
	d, draws, cores := EvaluationTime(opts, g)
	return fmt.Sprintf("%d draws of %.2g multiply-adds, %s on %s", draws, MultiplyAdds(g), About(d), Cores(cores))
}

// Cores is "1 core" or "N cores".
func Cores(n int) string {
	if n == 1 {
		return "1 core"
	}
	return fmt.Sprintf("%d cores", n)
}
