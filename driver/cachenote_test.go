package driver

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mirage-go/mirage/cost"
	"github.com/mirage-go/mirage/search"
	"github.com/mirage-go/mirage/target"
)

// A part attending over a cache whose keys split poorly (2047 = 23·89, a
// prime 2039) gets a note with the estimate of the same attention over a
// cache of 2048 keys and a mask, which the model puts well below; a cache
// of 2048 keys, and a part whose answer is already as fast, get none. 3000
// keys get 3072 (3·1024), not the next multiple of 64, 3008 = 64·47, which
// splits no better (found by a sweep of real-shape programs).
func TestCacheNote(t *testing.T) {
	arch := target.MustLookup("sm_90")
	d := &run{opts: Options{Arch: arch}}
	opts := d.searchOptions(time.Time{}, 1)
	attention := func(keys int) *outcome {
		t.Helper()
		pg := loadSource(t, "attention", fmt.Sprintf(`
Q = g.new_input(dims=(32, 4, 128), dtype=mi.float16)
K = g.new_input(dims=(32, 128, %[1]d), dtype=mi.float16)
V = g.new_input(dims=(32, %[1]d, 128), dtype=mi.float16)
E = g.exp(g.mul_scalar(g.matmul(Q, K), 0.08838834764831845))
g.mark_output(g.matmul(g.div(E, g.reduction(E, 2)), V))`, keys))
		cfg, err := partConfig(pg, "", search.Restrictions{}, arch)
		if err != nil {
			t.Fatal(err)
		}
		e, err := cost.EstimateGraph(pg, arch)
		if err != nil {
			t.Fatal(err)
		}
		return &outcome{program: pg, cfg: cfg, unfusedUs: e.Micros}
	}
	for _, c := range []struct{ keys, padded int }{{2047, 2048}, {2039, 2048}, {3000, 3072}} {
		keys := c.keys
		o := attention(keys)
		note := cacheNote(o, o.unfusedUs, opts)
		if !strings.Contains(note, "est. ") {
			t.Fatalf("%d keys: note %q, want one with the padded cache's estimate", keys, note)
		}
		var padded, was float64
		if _, err := fmt.Sscanf(note[strings.Index(note, "est. "):], "est. %f µs against %f", &padded, &was); err != nil {
			t.Fatalf("%d keys: note %q: %v", keys, note, err)
		}
		if !strings.Contains(note, fmt.Sprintf("attention over %d keys", keys)) || !strings.Contains(note, fmt.Sprintf("K and V allocated at %d keys and a mask input", c.padded)) ||
			padded > 0.9*o.unfusedUs || was != float64(int(o.unfusedUs*10+0.5))/10 {
			t.Errorf("%d keys (%.1f µs as written): note %q", keys, o.unfusedUs, note)
		}
		if note := cacheNote(o, padded, opts); note != "" {
			t.Errorf("%d keys: an answer as fast as the padded cache's got a note: %q", keys, note)
		}
	}
	if o := attention(2048); cacheNote(o, o.unfusedUs, opts) != "" {
		t.Error("a cache of 2048 keys got a note")
	}
}
