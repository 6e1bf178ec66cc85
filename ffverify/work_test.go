package ffverify_test

import (
	"runtime"
	"testing"
	"time"

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
	// 7.2e+08 multiply-adds a draw at MultiplyAddsPerSecond, a draw a core.
	about := ffverify.About(time.Duration(float64((ffverify.DefaultTrials+cores-1)/cores) * want / ffverify.MultiplyAddsPerSecond * float64(time.Second)))
	if wantMsg := "2 draws of 7.2e+08 multiply-adds, " + about + map[bool]string{true: " on 1 core", false: " on 2 cores"}[cores == 1]; msg != wantMsg {
		t.Errorf("FingerprintTime = %q, want %q", msg, wantMsg)
	}
}

// TestAbout: a duration in a message keeps two or three figures, so that
// a quarter of a second does not read as "about 0s".
func TestAbout(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "under 10ms"},
		{9 * time.Millisecond, "under 10ms"},
		{225 * time.Millisecond, "about 230ms"},
		{999 * time.Millisecond, "about 1s"},
		{12345 * time.Millisecond, "about 12.3s"},
		{336400 * time.Millisecond, "about 5m36s"},
	} {
		if got := ffverify.About(c.d); got != c.want {
			t.Errorf("About(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}
