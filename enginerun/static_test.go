package enginerun

import (
	"math"
	"testing"

	"github.com/mirage-go/mirage/interp"
	"github.com/mirage-go/mirage/ugraph"
)

// An output agrees within its tolerance of the largest finite |want|,
// with every element finite where the interpreter's is, and not finite
// where it is not.
func TestCompare(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, tt := range []struct {
		name      string
		want, got []float64
		ok        bool
		nonFinite int
	}{
		{"equal", []float64{1, -2, 4}, []float64{1, -2, 4}, true, 0},
		{"within 2e-2 of the largest", []float64{1, -2, 4}, []float64{1.05, -2, 4}, true, 0},
		{"past it", []float64{1, -2, 4}, []float64{1.1, -2, 4}, false, 0},
		{"an element never written", []float64{1, -2, 4}, []float64{1, nan, 4}, false, 1},
		{"the program's own NaN, kept", []float64{1, nan, 4}, []float64{1, nan, 4}, true, 0},
		{"the program's own infinity, kept", []float64{1, inf, 4}, []float64{1, inf, 4}, true, 0},
		{"the program's NaN, computed as a number", []float64{1, nan, 4}, []float64{1, 2, 4}, false, 0},
	} {
		want := &interp.Tensor{Shape: ugraph.MustShape(len(tt.want)), Data: tt.want}
		o := compare(want, tt.got, Tolerance)
		if o.OK != tt.ok || o.NonFinite != tt.nonFinite {
			t.Errorf("%s: ok %v, %d not finite (error %g); want %v, %d", tt.name, o.OK, o.NonFinite, o.Error, tt.ok, tt.nonFinite)
		}
	}
}
