package jsonfloat

import (
	"encoding/json"
	"math"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	for _, tt := range []struct {
		v    float64
		text string
	}{
		{1.5, `1.5`},
		{0, `0`},
		{math.Inf(1), `"+Inf"`},
		{math.Inf(-1), `"-Inf"`},
		{math.NaN(), `"NaN"`},
	} {
		b, err := json.Marshal(Float(tt.v))
		if err != nil || string(b) != tt.text {
			t.Errorf("%v: %s, %v; want %s", tt.v, b, err, tt.text)
			continue
		}
		var back Float
		if err := json.Unmarshal(b, &back); err != nil || !(float64(back) == tt.v || math.IsNaN(tt.v) && math.IsNaN(float64(back))) {
			t.Errorf("%s read back as %v, %v", b, back, err)
		}
	}
	var f Float
	for _, bad := range []string{`"inf"`, `true`, `"1.5"`} {
		if err := json.Unmarshal([]byte(bad), &f); err == nil {
			t.Errorf("%s read as %v", bad, f)
		}
	}
}
