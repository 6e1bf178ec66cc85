package ffverify_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/mirage-go/mirage/ffverify"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// Benchmarks at the shapes of the examples; the RMSNorm+MatMul ones are the
// paper's running example (X 16×4096, W 4096×6144). Besides ns/op (wall
// clock) each reports cpu-ns/op, the process's CPU time per op, which stays
// meaningful on a shared machine; run with -cpu 1 to pin one core.

// cpuTime is the CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loop runs f b.N times (after set-up) and reports the CPU time per op.
func loop(b *testing.B, f func() error) {
	b.Helper()
	start := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		if err := f(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

// rmsForMean is the fused RMSNorm+MatMul μGraph with a mean accumulator
// where the rms belongs: wrong almost everywhere.
func rmsForMean(g *kernel.Graph) *kernel.Graph {
	return must(mutate(g, edits{blockOp: func(_, _ int, op *block.Op) {
		if op.Kind == ugraph.OpForloopAccum && op.Attr.Accum == ugraph.AccumRMS {
			op.Attr.Accum = ugraph.AccumMean
		}
	}}))
}

func rejects(v *ffverify.Verifier, g *kernel.Graph) func() error {
	return func() error {
		if rejected, err := v.Reject(g); err != nil || !rejected {
			return errorf("Reject = %v, %v; want true", rejected, err)
		}
		return nil
	}
}

func verifies(v *ffverify.Verifier, g *kernel.Graph, want bool) func() error {
	return func() error {
		if r, err := v.Verify(g); err != nil || r.Equivalent != want {
			return errorf("Verify = %v, %v; want equivalent = %v", r, err, want)
		}
		return nil
	}
}

// BenchmarkRejectRMSNormMatmul: the fast path on a wrong candidate.
func BenchmarkRejectRMSNormMatmul(b *testing.B) {
	v := must(ffverify.New(rmsnormMatmul(16, 4096, 6144), ffverify.Options{}))
	loop(b, rejects(v, rmsForMean(rmsnormMatmulFused(16, 4096, 6144, 96, 64))))
}

// BenchmarkVerifyRMSNormMatmul: the full check of the correct fused
// μGraph (the fast path, then every position on DefaultTrials draws). After
// the first, its products come from the Verifier's memo: what each further
// candidate of a search with the same for-loop costs.
func BenchmarkVerifyRMSNormMatmul(b *testing.B) {
	v := must(ffverify.New(rmsnormMatmul(16, 4096, 6144), ffverify.Options{}))
	loop(b, verifies(v, rmsnormMatmulFused(16, 4096, 6144, 96, 64), true))
}

// BenchmarkNewRMSNormMatmul: fingerprinting the program on every draw
// (the draws run in parallel).
func BenchmarkNewRMSNormMatmul(b *testing.B) {
	p := rmsnormMatmul(16, 4096, 6144)
	loop(b, func() error { _, err := ffverify.New(p, ffverify.Options{}); return err })
}

// BenchmarkRejectGQA: the fast path on a wrong two-kernel attention
// μGraph, whose every output element depends on a whole row of 4096
// attention scores.
func BenchmarkRejectGQA(b *testing.B) {
	v := must(ffverify.New(gqa(2, 256, 64, 4096), ffverify.Options{}))
	wrong := must(mutate(gqaSplit(2, 256, 64, 4096, 16, 4, 4), blockOp(1, 3, func(op *block.Op) { op.Attr.Accum = ugraph.AccumMean })))
	loop(b, rejects(v, wrong))
}

// BenchmarkVerifyGQA: the full check of examples/gqa_mugraph.py.
func BenchmarkVerifyGQA(b *testing.B) {
	v := must(ffverify.New(gqa(2, 256, 64, 4096), ffverify.Options{}))
	loop(b, verifies(v, gqaSplit(2, 256, 64, 4096, 16, 4, 4), true))
}

// BenchmarkNewLLaMAUp: fingerprinting the up projection of a LLaMA-7B MLP
// block at 16 tokens, silu(X·W1)·(X·W3) with W 4096×11008: what a part's
// first fused answer waits for (two draws, two 721M-product matmuls and
// 90M input elements each).
func BenchmarkNewLLaMAUp(b *testing.B) {
	g := newKG()
	x, w1, w3 := g.in(16, 4096), g.in(4096, 11008), g.in(4096, 11008)
	p := g.outputs(g.op(ugraph.OpMul, g.op(ugraph.OpSilu, g.op(ugraph.OpMatmul, x, w1)), g.op(ugraph.OpMatmul, x, w3)))
	loop(b, func() error { _, err := ffverify.New(p, ffverify.Options{}); return err })
}
