package cuda

import (
	"math"
	"testing"
)

// A scalar is printed as the float32 literal the kernels compute with,
// and refused where float32 would make it another number: infinite, or
// zero where it is not.
func TestFloatLit(t *testing.T) {
	for _, tt := range []struct {
		v    float64
		want string // "": refused
	}{
		{1, "1.0f"},
		{0.08838834764831845, "0.088388346f"},
		{-2.5e-3, "-0.0025f"},
		{0, "0.0f"},
		{1e-40, "1e-40f"}, // a float32 subnormal: kept
		{1e308, ""},
		{-1e39, ""},
		{1e-46, ""}, // zero in float32
		{math.NaN(), ""},
	} {
		got, err := floatLit(tt.v)
		if (err == nil) != (tt.want != "") || got != tt.want {
			t.Errorf("floatLit(%v) = %q, %v; want %q", tt.v, got, err, tt.want)
		}
	}
}
