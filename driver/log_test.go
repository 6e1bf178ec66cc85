package driver

import "testing"

// A part's log line tells its fused time from its unfused one.
func TestDistinctDecimals(t *testing.T) {
	for _, tt := range []struct {
		a, b         float64
		wantA, wantB string
	}{
		{30.86, 34.35, "30.9", "34.4"},
		{2.19, 2.21, "2.19", "2.21"},
		{2.2004, 2.2012, "2.200", "2.201"},
		{5, 5, "5.000", "5.000"},
	} {
		if a, b := distinctDecimals(tt.a, tt.b); a != tt.wantA || b != tt.wantB {
			t.Errorf("distinctDecimals(%v, %v) = %s, %s; want %s, %s", tt.a, tt.b, a, b, tt.wantA, tt.wantB)
		}
	}
}
