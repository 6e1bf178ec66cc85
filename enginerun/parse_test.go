package enginerun

import (
	"slices"
	"strings"
	"testing"
)

func TestParseEngine(t *testing.T) {
	tests := []struct {
		name  string
		out   string
		steps []int
		want  []Step
		err   string
	}{
		{"every kind of line", "engine: 3 steps\nm=1: error 0.00031 of max |want|: ok\nm=9: error 0.5 of max |want|, rows past m written: FAILED\nm=0: outside 1..8: refused\n",
			[]int{1, 9, 0}, []Step{{M: 1, Error: 0.00031, OK: true}, {M: 9, Error: 0.5, Past: true}, {M: 0, Refused: true, OK: true}}, ""},
		{"accepted outside the range", "m=99: outside 1..8: ACCEPTED", []int{99}, []Step{{M: 99}}, ""},
		{"a step missing", "m=1: error 0 of max |want|: ok", []int{1, 2}, nil, "1 step(s) reported, 2 run"},
		{"a bad m", "m=x: error 0 of max |want|: ok", []int{1}, nil, "bad line"},
		{"an error with no figure", "m=3: error ", []int{3}, nil, "bad line"},
		{"an unknown report", "m=3: crashed", []int{3}, nil, "bad line"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseEngine(tc.out, tc.steps)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}
