package bench

import (
	"strings"
	"testing"
)

func TestShardBalance(t *testing.T) {
	for _, tt := range []struct {
		secs  []float64
		ratio float64
		line  string
	}{
		{[]float64{2, 3, 3, 4}, 4.0 / 3, "slowest 4.0 s, mean 3.0 s, 1.33x the mean (within the 1.5x goal)"},
		{[]float64{1, 1, 1, 5}, 2.5, "slowest 5.0 s, mean 2.0 s, 2.50x the mean (OVER the 1.5x goal)"},
	} {
		b := NewShardBalance("gqa", tt.secs, 0)
		if d := b.Ratio - tt.ratio; d > 1e-9 || d < -1e-9 {
			t.Errorf("%v: ratio %v, want %v", tt.secs, b.Ratio, tt.ratio)
		}
		var out strings.Builder
		if err := WriteShardBalance(&out, b); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), tt.line) {
			t.Errorf("%v: %q, want %q in it", tt.secs, out.String(), tt.line)
		}
	}
}
