package cuda

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/frontend"
	"github.com/mirage-go/mirage/launch"
	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// examples are the bundled programs and their hand-written μGraphs.
var examples = []string{"rmsnorm_matmul_mugraph", "gated_mlp_mugraph", "gqa_mugraph", "rmsnorm_matmul", "gated_mlp", "gqa"}

func loadExample(t testing.TB, name string) *kernel.Graph {
	t.Helper()
	p, err := frontend.LoadFile(filepath.Join("..", "..", "examples", name+".py"), frontend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p.Graph
}

// loadSource loads a program given as Python source.
func loadSource(t testing.TB, name string, lines ...string) *kernel.Graph {
	t.Helper()
	src := "import mirage as mi\n" + strings.Join(lines, "\n") + "\n"
	p, err := frontend.Load(name+".py", []byte(src), frontend.Options{})
	if err != nil {
		t.Fatalf("%s: %v\n%s", name, err, src)
	}
	return p.Graph
}

// exampleScale keeps exp of the attention scores in fp16 range.
func exampleScale(name string) float64 {
	if strings.HasPrefix(name, "gqa") {
		return 0.25
	}
	return 1
}

// TestEmulateExamples runs the examples' emitted code, at their full
// sizes, in the CPU emulator, and checks the cost model's traffic against
// what the first run counted (as TestCostModelBytes does the workloads').
func TestEmulateExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the emulator runs take a while")
	}
	for _, ex := range examples {
		t.Run(ex, func(t *testing.T) {
			g := loadExample(t, ex)
			res, counters := emuRun(t, ex, g, exampleScale(ex), Options{Arch: sm80}, true)
			checkCostModelBytes(t, ex, g, res, counters)
		})
	}
}

// TestEmulateCases runs small programs that cover the fast paths and the
// fallbacks in the CPU emulator.
func TestEmulateCases(t *testing.T) {
	needGXX(t)
	for _, c := range emuCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			g := loadSource(t, c.name, c.src...)
			if c.uses != nil {
				plan, err := launch.Graph(g, target.MustLookup(target.Default), c.opts.Launch)
				if err != nil {
					t.Fatal(err)
				}
				got := map[launch.Code]int{}
				for _, k := range plan.Kernels {
					got[k.Code]++
				}
				for code, n := range c.uses {
					if got[code] != n {
						t.Errorf("%d %v kernels planned, want %d (all: %v)", got[code], code, n, got)
					}
				}
			}
			emuRun(t, c.name, g, c.scale, c.opts, false)
		})
	}
}
