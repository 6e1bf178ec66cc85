package ffverify_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/ffverify"
)

// TestPrefix: a verifier cut to fewer rows judges candidates as one made
// for that many rows does (same draws: same fingerprints), without
// evaluating the program again.
func TestPrefix(t *testing.T) {
	opts := ffverify.Options{Seed: 9}
	big, err := ffverify.New(rmsnormMatmul(16, 64, 96), opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []int{1, 3, 16} {
		cut, err := big.Prefix(rmsnormMatmul(m, 64, 96))
		if err != nil {
			t.Fatal(err)
		}
		own, err := ffverify.New(rmsnormMatmul(m, 64, 96), opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name       string
			equivalent bool
		}{
			{"fused", true},
			{"mean for rms", false},
		} {
			cand := rmsnormMatmulFused(m, 64, 96, 3, 4)
			if !c.equivalent {
				cand = rmsForMean(cand)
			}
			got, err1 := cut.Verify(cand)
			want, err2 := own.Verify(cand)
			if err1 != nil || err2 != nil || got.Equivalent != c.equivalent || !reflect.DeepEqual(got, want) {
				t.Errorf("m = %d, %s: the cut verifier says %+v (%v), one made at m = %d %+v (%v)", m, c.name, got, err1, m, want, err2)
			}
		}
	}
	for _, tt := range []struct {
		name string
		err  string
	}{
		{"more rows", "is not the first rows"},
		{"other columns", "is not the first rows"},
	} {
		g := rmsnormMatmul(32, 64, 96)
		if tt.name == "other columns" {
			g = rmsnormMatmul(16, 64, 32)
		}
		if _, err := big.Prefix(g); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s: %v; want an error with %q", tt.name, err, tt.err)
		}
	}
}
