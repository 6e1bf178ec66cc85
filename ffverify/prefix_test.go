package ffverify_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/ffverify"
)

// TestPrefix: a verifier cut to fewer rows judges candidates as one made
// for that many rows does (same draws: same fingerprints), without
// evaluating the program again; so does one that evaluates the program on
// the first rows of the full verifier's inputs (Rows).
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
		rows, err := big.Rows(rmsnormMatmul(m, 64, 96))
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
			if got, err := rows.Verify(cand); err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("m = %d, %s: the verifier on the first rows says %+v (%v), one made at m = %d %+v", m, c.name, got, err, m, want)
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
		if _, err := big.Rows(g); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("Rows, %s: %v; want an error with %q", tt.name, err, tt.err)
		}
	}
}

// TestRowsEvaluates: Rows judges against the program it is given, not the
// full verifier's fingerprints cut to its rows: given another function on
// those rows (mean where the full program has rms), it tells a candidate
// for the full program's function apart, where Prefix, trusting the
// promise, cannot.
func TestRowsEvaluates(t *testing.T) {
	big, err := ffverify.New(rmsnormMatmul(16, 64, 96), ffverify.Options{Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	other := rmsForMean(rmsnormMatmulFused(4, 64, 96, 3, 4))
	cand := rmsnormMatmulFused(4, 64, 96, 3, 4)
	rows, err := big.Rows(other)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := rows.Verify(cand); err != nil || r.Equivalent {
		t.Errorf("Rows of a mean program: the rms candidate is %+v (%v), want not equivalent", r, err)
	}
	if r, err := rows.Verify(other); err != nil || !r.Equivalent {
		t.Errorf("Rows of a mean program: the program itself is %+v (%v), want equivalent", r, err)
	}
	cut, err := big.Prefix(other)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := cut.Verify(cand); err != nil || !r.Equivalent {
		t.Errorf("Prefix of a mean program: the rms candidate is %+v (%v); Prefix keeps the full program's fingerprints", r, err)
	}
}
