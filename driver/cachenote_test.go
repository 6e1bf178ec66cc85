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
// of 2048 keys, and a part whose answer is already as fast, get none.
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
	for _, keys := range []int{2047, 2039} {
		o := attention(keys)
		note := cacheNote(o, o.unfusedUs, opts)
		var padded, was float64
		if _, err := fmt.Sscanf(note[strings.Index(note, "est. "):], "est. %f µs against %f", &padded, &was); err != nil {
			t.Fatalf("%d keys: note %q: %v", keys, note, err)
		}
		if !strings.Contains(note, fmt.Sprintf("attention over %d keys", keys)) || !strings.Contains(note, "K and V allocated at 2048 keys and a mask input") ||
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
