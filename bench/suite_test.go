package bench

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/target"
)

func TestSuiteCheck(t *testing.T) {
	ok := Suite{Workers: 2, Tolerances: DefaultTolerances}
	for _, tt := range []struct {
		name string
		edit func(*Suite)
		err  string
	}{
		{"defaults", func(*Suite) {}, ""},
		{"no workers", func(s *Suite) { s.Workers = 0 }, "--workers 0: want at least 1"},
		{"negative tolerance", func(s *Suite) { s.Tolerances.Estimate = -0.1 }, "--tolerance -0.1: want 0 or more"},
		{"time ratio below 1", func(s *Suite) { s.Tolerances.SearchTime = 0.5 }, "--time-ratio 0.5: want 1 or more"},
		{"time ratio off", func(s *Suite) { s.Tolerances.SearchTime = 0 }, ""},
		{"a tolerance that is NaN", func(s *Suite) { s.Tolerances.Estimate = math.NaN() }, "--tolerance NaN: want 0 or more"},
		{"an infinite tolerance", func(s *Suite) { s.Tolerances.Estimate = math.Inf(1) }, "--tolerance +Inf: want 0 or more"},
		{"a time ratio that is NaN", func(s *Suite) { s.Tolerances.SearchTime = math.NaN() }, "--time-ratio NaN: want 1 or more"},
		{"an infinite time ratio", func(s *Suite) { s.Tolerances.SearchTime = math.Inf(1) }, "--time-ratio +Inf: want 1 or more"},
		{"only paths, none", func(s *Suite) { s.OnlyPaths = true }, "--only-paths: no PATH given"},
		{"negative shard balance", func(s *Suite) { s.ShardBalance = -1 }, "--shard-balance -1: want 0 or more"},
		{"a dynamic batch backwards", func(s *Suite) { s.DynamicBatch = "5..2" }, "--dynamic-batch: "},
		{"a dynamic batch that is no range", func(s *Suite) { s.DynamicBatch = "64" }, "--dynamic-batch: "},
		{"a dynamic batch", func(s *Suite) { s.DynamicBatch = "1..64" }, ""},
	} {
		s := ok
		tt.edit(&s)
		err := s.Check()
		if (err == nil) != (tt.err == "") || (err != nil && !strings.HasPrefix(err.Error(), tt.err)) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.err)
		}
	}
}

// The built-in workloads are picked by name; a path given always runs.
func TestSuiteWorkloads(t *testing.T) {
	example := filepath.Join("..", "examples", "gqa.py")
	for _, tt := range []struct {
		name      string
		only      []string
		onlyPaths bool
		paths     []string
		want      []string // workload names; nil with err
		err       string
	}{
		{"picked and a path", []string{"lora", "ntrans"}, false, []string{example}, []string{"lora", "ntrans", "gqa"}, ""},
		{"paths only", nil, true, []string{example}, []string{"gqa"}, ""},
		{"an unknown name", []string{"nonesuch"}, false, nil, nil, "--workload nonesuch names no built-in workload"},
		{"names with paths only", []string{"lora"}, true, []string{example}, nil, "--workload picks among the built-in workloads"},
	} {
		s := Suite{Only: tt.only, OnlyPaths: tt.onlyPaths, Paths: tt.paths}
		ws, err := s.workloads()
		var names []string
		for _, w := range ws {
			names = append(names, w.Name)
		}
		switch {
		case tt.err != "":
			if err == nil || !strings.HasPrefix(err.Error(), tt.err) {
				t.Errorf("%s: %v, want %q", tt.name, err, tt.err)
			}
		case err != nil || !slices.Equal(names, tt.want):
			t.Errorf("%s: %v, %v; want %v", tt.name, names, err, tt.want)
		}
	}
}

// A bad input is refused before anything is searched or written: the
// output directory, new, is not even made.
func TestSuiteRefusesBeforeRunning(t *testing.T) {
	out := filepath.Join(t.TempDir(), "results")
	s := Suite{Arch: target.MustLookup("sm_90"), Workers: 1, Tolerances: DefaultTolerances, Out: out,
		OnlyPaths: true, Paths: []string{filepath.Join("..", "examples", "gqa.py")}, Compare: filepath.Join(out, "none.json")}
	if _, err := s.Run(context.Background()); err == nil || !strings.HasPrefix(err.Error(), "--compare: ") {
		t.Fatalf("a missing baseline: %v", err)
	}
	s.Compare, s.Config = "", "nonesuch"
	if _, err := s.Run(context.Background()); err == nil || !strings.HasPrefix(err.Error(), "--config: ") {
		t.Fatalf("an unknown preset: %v", err)
	}
	s.Config, s.DynamicBatch = "", "5..2"
	if _, err := s.Run(context.Background()); err == nil || !strings.HasPrefix(err.Error(), "--dynamic-batch: ") {
		t.Fatalf("a backward dynamic batch: %v", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("%s exists (%v): a refused run made it", out, err)
	}
}
