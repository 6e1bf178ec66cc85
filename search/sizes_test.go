package search

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mirage-go/mirage/frontend"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

var threads128, threads256, threads512 = block.Dim3{128, 1, 1}, block.Dim3{256, 1, 1}, block.Dim3{512, 1, 1}

// sizesOf lists the block sizes of g's graph-defined kernels, in order.
func sizesOf(g *kernel.Graph) []block.Dim3 {
	var s []block.Dim3
	for _, op := range g.Ops {
		if op.Block != nil {
			s = append(s, op.Block.Threads)
		}
	}
	return s
}

// byKernel is an estimate that adds up a price per graph-defined kernel,
// given its grid and block size (so that kernels can prefer different
// sizes), or fails for a kernel the price rejects.
func byKernel(price func(grid, threads block.Dim3) (float64, bool)) func(*kernel.Graph) (Estimate, error) {
	return func(g *kernel.Graph) (Estimate, error) {
		var us float64
		for _, op := range g.Ops {
			if op.Block == nil {
				continue
			}
			p, ok := price(op.Block.Grid, op.Block.Threads)
			if !ok {
				return Estimate{}, errors.New("does not fit")
			}
			us += p
		}
		return Estimate{Micros: us}, nil
	}
}

func TestBlockSizes(t *testing.T) {
	p, err := frontend.LoadFile(filepath.Join("..", "examples", "gqa_mugraph.py"), frontend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g := p.Graph // two kernels: grid (2, 16, 1), then (2, 4, 1); 128 threads each
	if got := sizesOf(g); !slices.Equal(got, []block.Dim3{threads128, threads128}) {
		t.Fatalf("the example's kernels have %v threads, want 128 each", got)
	}
	all := []block.Dim3{threads128, threads256, threads512}
	first := func(grid block.Dim3) bool { return grid[1] == 16 }
	for _, c := range []struct {
		name    string
		threads []block.Dim3
		price   func(grid, threads block.Dim3) (float64, bool)
		want    []block.Dim3
		us      float64
	}{
		{"more warps, faster", all, func(_, th block.Dim3) (float64, bool) { return 1280 / float64(th[0]), true },
			[]block.Dim3{threads512, threads512}, 5},
		{"each kernel alone", all, func(grid, th block.Dim3) (float64, bool) {
			if first(grid) {
				return 1280 / float64(th[0]), true
			}
			return float64(th[0]) / 128, true // the second prefers its 128
		}, []block.Dim3{threads512, threads128}, 3.5},
		{"a gain under sizeGain keeps the size built", all, func(_, th block.Dim3) (float64, bool) {
			return 100 - float64(th[0])/256, true // of the 199 µs, 256 threads gain 0.25%, 512 0.75%
		}, []block.Dim3{threads128, threads128}, 199},
		{"a size that does not fit is passed over", all, func(_, th block.Dim3) (float64, bool) {
			return 1280 / float64(th[0]), th[0] < 512
		}, []block.Dim3{threads256, threads256}, 10},
		{"one size: nothing to choose", []block.Dim3{threads128}, func(_, th block.Dim3) (float64, bool) {
			return 1280 / float64(th[0]), true
		}, []block.Dim3{threads128, threads128}, 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &searcher{cfg: Config{Threads: c.threads}, opts: Options{Estimate: byKernel(c.price)}}
			built, err := s.opts.Estimate(g)
			if err != nil {
				t.Fatal(err)
			}
			got, e := s.blockSizes(g, built)
			if sizes := sizesOf(got); !slices.Equal(sizes, c.want) {
				t.Errorf("sizes %v, want %v", sizes, c.want)
			}
			if e.Micros != c.us {
				t.Errorf("estimate %v µs, want %v (the chosen sizes')", e.Micros, c.us)
			}
			if slices.Equal(c.want, []block.Dim3{threads128, threads128}) && got != g {
				t.Errorf("no size changed, yet the graph was copied")
			}
			if sizes := sizesOf(g); !slices.Equal(sizes, []block.Dim3{threads128, threads128}) {
				t.Errorf("the graph given changed: %v (block graphs are shared)", sizes)
			}
		})
	}
}

// stagesOf lists the pipeline depths of g's graph-defined kernels.
func stagesOf(g *kernel.Graph) []int {
	var s []int
	for _, op := range g.Ops {
		if op.Block != nil {
			s = append(s, op.Block.Stages)
		}
	}
	return s
}

// The pipeline depth is chosen with the block size, kernel by kernel,
// where the pair gains sizeGain, and only where it can change the plan:
// the second kernel has one for-loop iteration, so no pipeline, and gets
// no depth however its (fake) price would have it.
func TestPipelineDepths(t *testing.T) {
	p, err := frontend.LoadFile(filepath.Join("..", "examples", "gqa_mugraph.py"), frontend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g := p.Graph // two kernels: grid (2, 16, 1) with 4 iterations, then (2, 4, 1) with 1
	first := func(b *block.Graph) bool { return b.Grid[1] == 16 }
	for _, c := range []struct {
		name   string
		stages []int
		// price of one kernel; false: it does not fit
		price func(b *block.Graph) (float64, bool)
		want  []int
		sizes []block.Dim3
		us    float64
		// estimates blockSizes makes: every distinct plan but the graph's
		// own, per kernel (0: not checked)
		estimates int
	}{
		{"the first kernel shallower, the second as built", []int{0, 2, 3}, func(b *block.Graph) (float64, bool) {
			if first(b) {
				return map[int]float64{0: 10, 2: 6, 3: 8}[b.Stages], true
			}
			return map[int]float64{0: 5, 2: 1, 3: 1}[b.Stages], true // no pipeline to change
		}, []int{2, 0}, []block.Dim3{threads128, threads128}, 11,
			// the first kernel: 2 sizes x depths 4, 2, 3, less its own; the second: the other size
			2*3 - 1 + 1},
		{"a depth that does not fit is passed over", []int{0, 2, 3}, func(b *block.Graph) (float64, bool) {
			return map[int]float64{0: 10, 2: 9, 3: 1}[b.Stages], b.Stages != 3
		}, []int{2, 0}, []block.Dim3{threads128, threads128}, 19, 0},
		{"a depth past the iterations plans as the iterations", []int{0, 6}, func(b *block.Graph) (float64, bool) {
			return map[int]float64{0: 10, 6: 1}[b.Stages], true // 6 of 4 iterations is 4: the default
		}, []int{0, 0}, []block.Dim3{threads128, threads128}, 20, 1 + 1},
		{"size and depth chosen together", []int{0, 3}, func(b *block.Graph) (float64, bool) {
			if b.Threads == threads256 && b.Stages == 3 && first(b) {
				return 4, true // neither alone gains
			}
			return 10, true
		}, []int{3, 0}, []block.Dim3{threads256, threads128}, 14, 0},
		{"one depth: nothing to choose", []int{0}, func(b *block.Graph) (float64, bool) {
			return 10 - float64(b.Stages), true
		}, []int{0, 0}, []block.Dim3{threads128, threads128}, 20, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			estimates := 0
			estimate := func(g *kernel.Graph) (Estimate, error) {
				estimates++
				var us float64
				for _, op := range g.Ops {
					if op.Block == nil {
						continue
					}
					p, ok := c.price(op.Block)
					if !ok {
						return Estimate{}, errors.New("does not fit")
					}
					us += p
				}
				return Estimate{Micros: us}, nil
			}
			s := &searcher{cfg: Config{Threads: []block.Dim3{threads128, threads256}, Stages: c.stages}, opts: Options{Estimate: estimate}}
			built, err := estimate(g)
			if err != nil {
				t.Fatal(err)
			}
			estimates = 0
			got, e := s.blockSizes(g, built)
			if st := stagesOf(got); !slices.Equal(st, c.want) {
				t.Errorf("stages %v, want %v", st, c.want)
			}
			if sizes := sizesOf(got); !slices.Equal(sizes, c.sizes) {
				t.Errorf("sizes %v, want %v", sizes, c.sizes)
			}
			if e.Micros != c.us {
				t.Errorf("estimate %v µs, want %v", e.Micros, c.us)
			}
			if c.estimates > 0 && estimates != c.estimates {
				t.Errorf("%d estimates, want %d", estimates, c.estimates)
			}
			if st := stagesOf(g); !slices.Equal(st, []int{0, 0}) {
				t.Errorf("the graph given changed: %v (block graphs are shared)", st)
			}
		})
	}
}

// A search's candidates carry the sizes the cost model chose, within the
// program's own blockdims when it gives them, and the estimate of the
// graph as returned.
func TestSearchSizesItsKernels(t *testing.T) {
	program := normProgram(t, 32)
	for _, c := range []struct {
		name     string
		restrict []block.Dim3
	}{
		{"default sizes", nil},
		{"the program's blockdims", []block.Dim3{threads128}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := NamedConfig("default")
			if err != nil {
				t.Fatal(err)
			}
			if c.restrict != nil {
				cfg.Restrict(Restrictions{Threads: c.restrict})
			}
			allowed := c.restrict
			if allowed == nil {
				allowed = []block.Dim3{threads128, threads256, threads512}
			}
			res, err := Run(context.Background(), program, cfg, Options{Seed: 1, MaxStates: 20000, MaxResults: 20, Estimate: testEstimate})
			if err != nil {
				t.Fatal(err)
			}
			sized := false
			for _, cand := range res.Candidates {
				for _, th := range sizesOf(cand.Graph) {
					if !slices.Contains(allowed, th) {
						t.Errorf("a kernel of %v threads, outside %v", th, allowed)
					}
					sized = sized || th != threads128
				}
				e, err := testEstimate(cand.Graph)
				if err != nil {
					t.Fatal(err)
				}
				if e.Micros != cand.Estimate.Micros {
					t.Errorf("candidate estimated %v µs, its graph %v", cand.Estimate.Micros, e.Micros)
				}
				if cand.Hash != kernel.Hash(cand.Graph) {
					t.Errorf("a candidate's hash is not its graph's")
				}
			}
			if want := c.restrict == nil; sized != want {
				t.Errorf("some kernel larger than 128 threads: %v, want %v", sized, want)
			}
		})
	}
}
