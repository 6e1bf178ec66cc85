package driver

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

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

// A part whose fingerprinting takes a while says so before it starts, with
// what it computes and about how long that takes; a quick one says nothing.
func TestFingerprintingAnnounced(t *testing.T) {
	defer func(d time.Duration) { announcedFingerprint = d }(announcedFingerprint)
	program := load(t, "llama_mlp")
	for _, c := range []struct {
		least time.Duration
		want  []string
	}{
		{5 * time.Second, nil},
		{0, []string{ // sorted
			"part (matmul, add) -> [8, 64]: fingerprinting it first: 2 draws of 6.6e+04 multiply-adds, under 10ms on ",
			"part (rms_norm, matmul, silu, matmul, mul) -> [8, 128]: fingerprinting it first: 2 draws of 1.3e+05 multiply-adds, under 10ms on ",
		}},
	} {
		announcedFingerprint = c.least
		var mu sync.Mutex
		var lines []string
		log := func(line string) {
			mu.Lock()
			defer mu.Unlock()
			if strings.Contains(line, "fingerprinting") {
				lines = append(lines, line)
			}
		}
		if _, err := Run(context.Background(), program, Options{MaxStates: 1, TimeLimit: 20 * time.Second, Workers: 2, Seed: 1, Log: log}); err != nil {
			t.Fatal(err)
		}
		if len(lines) != len(c.want) {
			t.Errorf("from %v: %q, want %d lines", c.least, lines, len(c.want))
			continue
		}
		slices.Sort(lines)
		for i, w := range c.want {
			if !strings.HasPrefix(lines[i], w) {
				t.Errorf("from %v: %q, want a line starting %q", c.least, lines, w)
			}
		}
	}
}

// Log gets one line at a time, though parts are searched at once: a
// caller may write the lines to a bytes.Buffer (found by review: mirage's
// own tests did, and two parts' lines could interleave or be lost).
func TestLogOneLineAtATime(t *testing.T) {
	defer func(d time.Duration) { announcedFingerprint = d }(announcedFingerprint)
	announcedFingerprint = 0 // every part says it fingerprints, as it starts
	var inside, most atomic.Int32
	var lines atomic.Int32
	log := func(string) {
		n := inside.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(5 * time.Millisecond) // a slow writer: overlaps would show
		lines.Add(1)
		inside.Add(-1)
	}
	// Four parts of different shapes: four searches, four sets of lines.
	var body strings.Builder
	for i, n := range []int{32, 48, 64, 80} {
		fmt.Fprintf(&body, "X%d = g.new_input(dims=(8, %d), dtype=mi.float16)\nW%d = g.new_input(dims=(%d, %d), dtype=mi.float16)\n", i, n, i, n, n)
		fmt.Fprintf(&body, "g.mark_output(g.matmul(g.rms_norm(X%d, normalized_shape=(%d,)), W%d))\n", i, n, i)
	}
	_, err := Run(context.Background(), loadSource(t, "four", body.String()), Options{MaxStates: 1, TimeLimit: 10 * time.Second, Workers: 4, Seed: 1, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	if most.Load() != 1 || lines.Load() < 4 {
		t.Errorf("%d lines logged, up to %d at once; want one at a time", lines.Load(), most.Load())
	}
}
