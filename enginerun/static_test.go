package enginerun

import (
	"math"
	"slices"
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
		compared  int // the positions where want is finite
	}{
		{"equal", []float64{1, -2, 4}, []float64{1, -2, 4}, true, 0, 3},
		{"within 2e-2 of the largest", []float64{1, -2, 4}, []float64{1.05, -2, 4}, true, 0, 3},
		{"past it", []float64{1, -2, 4}, []float64{1.1, -2, 4}, false, 0, 3},
		{"an element never written", []float64{1, -2, 4}, []float64{1, nan, 4}, false, 1, 3},
		{"the program's own NaN, kept", []float64{1, nan, 4}, []float64{1, nan, 4}, true, 0, 2},
		{"the program's own infinity, kept", []float64{1, inf, 4}, []float64{1, inf, 4}, true, 0, 2},
		{"the program's NaN, computed as a number", []float64{1, nan, 4}, []float64{1, 2, 4}, false, 0, 2},
		{"nothing finite", []float64{nan, -inf}, []float64{nan, -inf}, true, 0, 0},
	} {
		want := &interp.Tensor{Shape: ugraph.MustShape(len(tt.want)), Data: tt.want}
		o := compare(want, tt.got, Tolerance)
		if o.OK != tt.ok || o.NonFinite != tt.nonFinite || o.Compared != tt.compared {
			t.Errorf("%s: ok %v, %d not finite, %d compared (error %g); want %v, %d, %d", tt.name, o.OK, o.NonFinite, o.Compared, o.Error, tt.ok, tt.nonFinite, tt.compared)
		}
	}
}

// Where gives an output's worst element as coordinates, as the float64
// and finite-field checks print theirs (found by a user's sweep: emu
// printed "at 26302" where ff printed "[7 5233]").
func TestOutputWhere(t *testing.T) {
	for _, tt := range []struct {
		shape ugraph.Shape
		at    int
		want  []int
	}{
		{ugraph.MustShape(8, 8192), 26302, []int{3, 1726}},
		{ugraph.MustShape(2, 3, 4), 23, []int{1, 2, 3}},
		{ugraph.MustShape(5), 0, []int{0}},
	} {
		if got := (Output{Shape: tt.shape, At: tt.at}).Where(); !slices.Equal(got, tt.want) {
			t.Errorf("%v at %d: %v, want %v", tt.shape, tt.at, got, tt.want)
		}
	}
}
