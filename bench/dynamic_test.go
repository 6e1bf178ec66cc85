package bench

import (
	"bytes"
	"strings"
	"testing"
)

func TestDynamicCost(t *testing.T) {
	for _, tt := range []struct {
		all, largest float64
		ratio        string
		verdict      string
	}{
		{21.5, 9.6, "2.24x", "within the 3x goal"},
		{40, 10, "4.00x", "OVER the 3x goal"},
	} {
		d := NewDynamicCost("rmsnorm_matmul", 0, 1, 64, []int{1, 64}, []float64{1, tt.all - 1}, tt.all, tt.largest)
		var out bytes.Buffer
		if err := WriteDynamicCost(&out, d); err != nil {
			t.Fatal(err)
		}
		line := out.String()
		for _, want := range []string{"rmsnorm_matmul with m in 1..64", "2 buckets", "; " + tt.ratio + " (" + tt.verdict + ")"} {
			if !strings.Contains(line, want) {
				t.Errorf("%q lacks %q", line, want)
			}
		}
	}
}
