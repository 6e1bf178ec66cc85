package cost

import (
	"bytes"
	"reflect"
	"testing"
)

// FuzzReadProfile: a profile file (--profile, mirage tune's output) is
// read without a panic, and one that reads writes back as itself: every
// profile ReadProfile accepts passes Write's check, and reads again equal.
func FuzzReadProfile(f *testing.F) {
	for _, s := range []string{
		`{"version": 1, "arch": "sm_90", "gpu": "NVIDIA H100 80GB HBM3", "measurements": [
		  {"program": "gqa", "hash": "0123456789abcdef", "median_us": 12.5, "runs": 200, "p10_us": 12.1, "p90_us": 13.0, "estimated_us": 11.9}]}`,
		`{"version": 1, "arch": "h200", "measurements": []}`,
		`{"version": 1, "arch": "sm_90", "measurements": [{"program": "x", "hash": "0123456789abcdef", "median_us": 1e-3}], "clocks": {"sm": 1980}}`,
		`{"version": 1, "arch": "sm_90", "arch": "sm_80", "measurements": []}`,
		`{"version": 1, "arch": "sm_90", "measurements": [{"program": "x", "hash": "0123456789ABCDEF", "median_us": 5}]}`,
		`{"version": 1, "arch": "sm_90", "measurements": [{"program": "x", "hash": "0123456789abcdef", "median_us": 5, "p10_us": 6, "p90_us": 7}]}`,
		`{"version": 2}`,
		`{"version": 1, "arch": "sm_90", "measurements": null} {"version": 1}`,
		`[`, ``, `null`, `{"measurements": [[[[[[]]]]]]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ReadProfile(bytes.NewReader(data))
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := p.Write(&out); err != nil {
			t.Fatalf("a profile ReadProfile accepted does not write: %v", err)
		}
		q, err := ReadProfile(&out)
		if err != nil {
			t.Fatalf("a profile written does not read: %v\n%s", err, out.Bytes())
		}
		if !reflect.DeepEqual(p, q) {
			t.Fatalf("read %+v, wrote and read %+v", p, q)
		}
	})
}
