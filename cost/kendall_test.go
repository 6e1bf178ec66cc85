package cost

import (
	"math"
	"testing"
)

func TestKendallTau(t *testing.T) {
	tests := []struct {
		name string
		a, b []float64
		want float64 // NaN: undefined
	}{
		{"same order", []float64{1, 2, 3, 4}, []float64{10, 20, 30, 40}, 1},
		{"reversed", []float64{1, 2, 3, 4}, []float64{4, 3, 2, 1}, -1},
		{"one swap of four", []float64{1, 2, 3, 4}, []float64{1, 3, 2, 4}, 4.0 / 6},        // C=5, D=1
		{"tie in a", []float64{1, 1, 2}, []float64{1, 2, 3}, 2 / math.Sqrt(2*3)},           // C=2, D=0, a ties 1
		{"ties on both", []float64{1, 1, 2, 3}, []float64{1, 2, 2, 3}, 4 / math.Sqrt(5*5)}, // C=4, D=0, 1 tie each
		{"constant side", []float64{1, 1, 1}, []float64{1, 2, 3}, math.NaN()},
		{"one pair", []float64{1}, []float64{2}, math.NaN()},
		{"empty", nil, nil, math.NaN()},
	}
	for _, tt := range tests {
		got := KendallTau(tt.a, tt.b)
		if math.IsNaN(tt.want) != math.IsNaN(got) || (!math.IsNaN(got) && math.Abs(got-tt.want) > 1e-12) {
			t.Errorf("%s: KendallTau(%v, %v) = %v, want %v", tt.name, tt.a, tt.b, got, tt.want)
		}
		if back := KendallTau(tt.b, tt.a); !math.IsNaN(got) && math.Abs(back-got) > 1e-12 {
			t.Errorf("%s: not symmetric: %v vs %v", tt.name, got, back)
		}
	}
}

func TestKendallTauPanicsOnLengthMismatch(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	KendallTau([]float64{1, 2}, []float64{1})
}

func TestOrderAgreement(t *testing.T) {
	tests := []struct {
		name      string
		est, meas []float64
		want      float64 // NaN: the GPU tells no pair apart
	}{
		{"same order", []float64{1, 2, 3}, []float64{10, 20, 30}, 1},
		{"reversed", []float64{1, 2, 3}, []float64{30, 20, 10}, -1},
		{"a near-equal pair left out", []float64{1, 2, 3}, []float64{10.2, 10, 30}, 1},            // 2% apart: not ordered
		{"a pair the model ties counts half", []float64{1, 1, 3}, []float64{10, 20, 30}, 2.0 / 3}, // 2.5 agree, 0.5 disagree
		{"one swap of three", []float64{1, 2, 3}, []float64{20, 10, 30}, 1.0 / 3},
		{"nothing apart", []float64{1, 2}, []float64{10, 10.4}, math.NaN()},
	}
	for _, tt := range tests {
		got := orderAgreement(tt.est, tt.meas, 0.05)
		if math.IsNaN(tt.want) != math.IsNaN(got) || (!math.IsNaN(got) && math.Abs(got-tt.want) > 1e-12) {
			t.Errorf("%s: orderAgreement(%v, %v) = %v, want %v", tt.name, tt.est, tt.meas, got, tt.want)
		}
	}
}
