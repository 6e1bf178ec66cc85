package ffverify_test

import (
	"runtime"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/ffverify"
	"github.com/mirage-go/mirage/ugraph"
)

// TestFingerprintTime: the work of a program's fingerprints is its
// matmuls' multiply-adds, batched ones too, and the message says what it
// takes on the cores at hand.
func TestFingerprintTime(t *testing.T) {
	g := newKG()
	x, w := g.in(16, 4096), g.in(4096, 11008)
	q, k := g.in(2, 8, 64), g.in(2, 64, 512)
	p := g.outputs(g.op(ugraph.OpSilu, g.op(ugraph.OpMatmul, x, w)), g.op(ugraph.OpMatmul, q, k))
	want := 16.0*4096*11008 + 2*8*64*512
	if got := ffverify.MultiplyAdds(p); got != want {
		t.Errorf("MultiplyAdds = %v, want %v", got, want)
	}
	msg := ffverify.FingerprintTime(p, ffverify.Options{})
	cores := min(runtime.GOMAXPROCS(0), ffverify.DefaultTrials)
	if !strings.HasPrefix(msg, "2 draws of 7.2e+08 multiply-adds, about ") || !strings.HasSuffix(msg, map[bool]string{true: " on 1 core", false: " on 2 cores"}[cores == 1]) {
		t.Errorf("FingerprintTime = %q", msg)
	}
}
