package interp_test

import (
	"testing"

	"github.com/mirage-go/mirage/interp"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// The programs of examples/*.py and their hand-written μGraphs
// (examples/*_mugraph.py), built op for op in Go. Each μGraph builder takes
// the parts that the mutation tests change; the zero-mutation arguments
// give the example exactly.

var threads = block.Dim3{128, 1, 1}

func shape(d ...int) ugraph.Shape { return ugraph.MustShape(d...) }

// rmsnormMatmul is examples/rmsnorm_matmul.py: rms_norm(X) @ W.
func rmsnormMatmul() *kernel.Graph {
	g := kernel.New()
	x := must(g.AddInput(shape(16, 4096), ugraph.Float16))
	w := must(g.AddInput(shape(4096, 6144), ugraph.Float16))
	d := must(g.Add(ugraph.OpRMSNorm, ugraph.Attr{Dim: 1}, x))
	check(g.MarkOutput(must(g.Add(ugraph.OpMatmul, ugraph.Attr{}, d, w))))
	return g
}

// rmsnormMatmulMuGraph is examples/rmsnorm_matmul_mugraph.py with rms as the
// accumulator of X (ugraph.AccumRMS in the example).
func rmsnormMatmulMuGraph(rms ugraph.Accum) *kernel.Graph {
	g := kernel.New()
	x := must(g.AddInput(shape(16, 4096), ugraph.Float16))
	w := must(g.AddInput(shape(4096, 6144), ugraph.Float16))
	tb := must(block.New(block.Dim3{96, 1, 1}, threads, 64, 64))
	tX := must(tb.AddInput(shape(16, 4096), ugraph.Float16, block.Map{-1, -1, -1}, 1))
	tW := must(tb.AddInput(shape(4096, 6144), ugraph.Float16, block.Map{1, -1, -1}, 0))
	tM := must(tb.Add(ugraph.OpMatmul, ugraph.Attr{}, tX, tW))
	tAccM := must(tb.Add(ugraph.OpForloopAccum, ugraph.Attr{}, tM))
	tRms := must(tb.Add(ugraph.OpForloopAccum, ugraph.Attr{Accum: rms}, tX))
	tO := must(tb.Add(ugraph.OpDiv, ugraph.Attr{}, tAccM, tRms))
	check(tb.AddOutput(tO, block.Map{1, -1, -1}))
	check(g.MarkOutput(must(g.Customized([]kernel.TensorID{x, w}, tb))[0]))
	return g
}

// gatedMLP is examples/gated_mlp.py: silu(X @ W1) * (X @ W2).
func gatedMLP() *kernel.Graph {
	g := kernel.New()
	x := must(g.AddInput(shape(8, 4096), ugraph.Float16))
	w1 := must(g.AddInput(shape(4096, 4096), ugraph.Float16))
	w2 := must(g.AddInput(shape(4096, 4096), ugraph.Float16))
	o1 := must(g.Add(ugraph.OpMatmul, ugraph.Attr{}, x, w1))
	o2 := must(g.Add(ugraph.OpMatmul, ugraph.Attr{}, x, w2))
	check(g.MarkOutput(must(g.Add(ugraph.OpMul, ugraph.Attr{}, must(g.Add(ugraph.OpSilu, ugraph.Attr{}, o1)), o2))))
	return g
}

// gatedMLPMuGraph is examples/gated_mlp_mugraph.py with W1 loaded by the
// given input map and forloop dim ({1, -1, -1} and 0 in the example).
func gatedMLPMuGraph(w1IMap block.Map, w1FMap int) *kernel.Graph {
	g := kernel.New()
	x := must(g.AddInput(shape(8, 4096), ugraph.Float16))
	w1 := must(g.AddInput(shape(4096, 4096), ugraph.Float16))
	w2 := must(g.AddInput(shape(4096, 4096), ugraph.Float16))
	tb := must(block.New(block.Dim3{64, 1, 1}, threads, 64, 64))
	tX := must(tb.AddInput(shape(8, 4096), ugraph.Float16, block.Map{-1, -1, -1}, 1))
	tW1 := must(tb.AddInput(shape(4096, 4096), ugraph.Float16, w1IMap, w1FMap))
	tW2 := must(tb.AddInput(shape(4096, 4096), ugraph.Float16, block.Map{1, -1, -1}, 0))
	tA1 := must(tb.Add(ugraph.OpForloopAccum, ugraph.Attr{}, must(tb.Add(ugraph.OpMatmul, ugraph.Attr{}, tX, tW1))))
	tA2 := must(tb.Add(ugraph.OpForloopAccum, ugraph.Attr{}, must(tb.Add(ugraph.OpMatmul, ugraph.Attr{}, tX, tW2))))
	tO := must(tb.Add(ugraph.OpMul, ugraph.Attr{}, must(tb.Add(ugraph.OpSilu, ugraph.Attr{}, tA1)), tA2))
	check(tb.AddOutput(tO, block.Map{1, -1, -1}))
	check(g.MarkOutput(must(g.Customized([]kernel.TensorID{x, w1, w2}, tb))[0]))
	return g
}

// gqa is examples/gqa.py: softmax(Q @ K) @ V without the max shift.
func gqa() *kernel.Graph {
	g := kernel.New()
	q := must(g.AddInput(shape(2, 256, 64), ugraph.Float16))
	k := must(g.AddInput(shape(2, 64, 4096), ugraph.Float16))
	v := must(g.AddInput(shape(2, 4096, 64), ugraph.Float16))
	e := must(g.Add(ugraph.OpExp, ugraph.Attr{}, must(g.Add(ugraph.OpMatmul, ugraph.Attr{}, q, k))))
	s := must(g.Add(ugraph.OpReduction, ugraph.Attr{Dim: 2}, e))
	d := must(g.Add(ugraph.OpDiv, ugraph.Attr{}, e, s))
	check(g.MarkOutput(must(g.Add(ugraph.OpMatmul, ugraph.Attr{}, d, v))))
	return g
}

// gqaMuGraph is examples/gqa_mugraph.py with the given accumulator of the
// softmax denominators in kernel 1 ("sum" in the example).
func gqaMuGraph(sAccum ugraph.Accum) *kernel.Graph {
	g := kernel.New()
	q := must(g.AddInput(shape(2, 256, 64), ugraph.Float16))
	k := must(g.AddInput(shape(2, 64, 4096), ugraph.Float16))
	v := must(g.AddInput(shape(2, 4096, 64), ugraph.Float16))

	tb1 := must(block.New(block.Dim3{2, 16, 1}, threads, 4, 64))
	tQ := must(tb1.AddInput(shape(2, 256, 64), ugraph.Float16, block.Map{0, -1, -1}, -1))
	tK := must(tb1.AddInput(shape(2, 64, 4096), ugraph.Float16, block.Map{0, 2, -1}, 2))
	tV := must(tb1.AddInput(shape(2, 4096, 64), ugraph.Float16, block.Map{0, 1, -1}, 1))
	tE := must(tb1.Add(ugraph.OpExp, ugraph.Attr{}, must(tb1.Add(ugraph.OpMatmul, ugraph.Attr{}, tQ, tK))))
	tS := must(tb1.Add(ugraph.OpForloopAccum, ugraph.Attr{Accum: sAccum}, tE))
	tO := must(tb1.Add(ugraph.OpForloopAccum, ugraph.Attr{}, must(tb1.Add(ugraph.OpMatmul, ugraph.Attr{}, tE, tV))))
	check(tb1.AddOutput(tO, block.Map{0, 2, -1}))
	check(tb1.AddOutput(tS, block.Map{0, 2, -1}))
	parts := must(g.Customized([]kernel.TensorID{q, k, v}, tb1))

	tb2 := must(block.New(block.Dim3{2, 4, 1}, threads, 1, 64))
	tOp := must(tb2.AddInput(shape(2, 256, 1024), ugraph.Float16, block.Map{0, 1, -1}, -1))
	tSp := must(tb2.AddInput(shape(2, 256, 16), ugraph.Float16, block.Map{0, 1, -1}, -1))
	tOs := must(tb2.Add(ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumSumToDimx}, tOp))
	tSs := must(tb2.Add(ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumSum}, tSp))
	check(tb2.AddOutput(must(tb2.Add(ugraph.OpDiv, ugraph.Attr{}, tOs, tSs)), block.Map{0, 1, -1}))
	check(g.MarkOutput(must(g.Customized(parts, tb2))[0]))
	return g
}

// squareMatmul is O = X @ W on 64x64 matrices, and squareMatmulMuGraph a
// μGraph for it on a 2x2 grid (x splits the rows of X and O, y the columns
// of W and O) whose for-loop walks k in 4 steps. Its square shapes let the
// maps be exchanged without changing any shape, which the examples do not.
func squareMatmul() *kernel.Graph {
	g := kernel.New()
	x := must(g.AddInput(shape(64, 64), ugraph.Float16))
	w := must(g.AddInput(shape(64, 64), ugraph.Float16))
	check(g.MarkOutput(must(g.Add(ugraph.OpMatmul, ugraph.Attr{}, x, w))))
	return g
}

func squareMatmulMuGraph(xIMap, wIMap, oMap block.Map) *kernel.Graph {
	g := kernel.New()
	x := must(g.AddInput(shape(64, 64), ugraph.Float16))
	w := must(g.AddInput(shape(64, 64), ugraph.Float16))
	tb := must(block.New(block.Dim3{2, 2, 1}, threads, 4, 64))
	tX := must(tb.AddInput(shape(64, 64), ugraph.Float16, xIMap, 1))
	tW := must(tb.AddInput(shape(64, 64), ugraph.Float16, wIMap, 0))
	acc := must(tb.Add(ugraph.OpForloopAccum, ugraph.Attr{}, must(tb.Add(ugraph.OpMatmul, ugraph.Attr{}, tX, tW))))
	check(tb.AddOutput(acc, oMap))
	check(g.MarkOutput(must(g.Customized([]kernel.TensorID{x, w}, tb))[0]))
	return g
}

// TestMuGraphs checks each hand-written μGraph against its program on
// seeded random inputs, and that mutations of it which still build are
// caught: Compare must report an error far above DefaultTolerance.
func TestMuGraphs(t *testing.T) {
	xRows, wCols := block.Map{0, -1, -1}, block.Map{-1, 1, -1}
	type mugraph struct {
		name  string
		graph func() *kernel.Graph
		equal bool // the example itself, not a mutation
	}
	for _, ex := range []struct {
		name     string
		program  func() *kernel.Graph
		mugraphs []mugraph
	}{
		{"rmsnorm_matmul", rmsnormMatmul, []mugraph{
			{"example", func() *kernel.Graph { return rmsnormMatmulMuGraph(ugraph.AccumRMS) }, true},
			{"mean for rms", func() *kernel.Graph { return rmsnormMatmulMuGraph(ugraph.AccumMean) }, false},
			{"sum for rms", func() *kernel.Graph { return rmsnormMatmulMuGraph(ugraph.AccumSum) }, false},
		}},
		{"gated_mlp", gatedMLP, []mugraph{
			{"example", func() *kernel.Graph { return gatedMLPMuGraph(block.Map{1, -1, -1}, 0) }, true},
			// W1's partitioned and walked dims exchanged: the tile is still
			// 64x64, but block b reads rows 64b.. and the loop walks columns.
			{"W1 imap and forloop dim swapped", func() *kernel.Graph { return gatedMLPMuGraph(block.Map{0, -1, -1}, 1) }, false},
		}},
		{"gqa", gqa, []mugraph{
			{"example", func() *kernel.Graph { return gqaMuGraph(ugraph.AccumSum) }, true},
			{"mean for sum", func() *kernel.Graph { return gqaMuGraph(ugraph.AccumMean) }, false},
		}},
		{"square_matmul", squareMatmul, []mugraph{
			{"tiled", func() *kernel.Graph { return squareMatmulMuGraph(xRows, wCols, block.Map{0, 1, -1}) }, true},
			{"omap dims swapped", func() *kernel.Graph { return squareMatmulMuGraph(xRows, wCols, block.Map{1, 0, -1}) }, false},
			{"X split by grid y", func() *kernel.Graph { return squareMatmulMuGraph(block.Map{-1, 0, -1}, wCols, block.Map{0, 1, -1}) }, false},
			{"W split by grid x", func() *kernel.Graph { return squareMatmulMuGraph(xRows, block.Map{1, -1, -1}, block.Map{0, 1, -1}) }, false},
		}},
	} {
		t.Run(ex.name, func(t *testing.T) {
			g := ex.program()
			ins := interp.RandomInputs(g, 1)
			want := run(t, g, ins)
			for _, m := range ex.mugraphs {
				t.Run(m.name, func(t *testing.T) {
					d, err := interp.CompareAll(want, run(t, m.graph(), ins))
					if err != nil {
						t.Fatal(err)
					}
					t.Log(d)
					switch {
					case m.equal && d.MaxRelErr > interp.DefaultTolerance:
						t.Errorf("differs from the program: %v", d)
					case !m.equal && d.MaxRelErr < 0.1:
						t.Errorf("mutation not caught: largest relative error %.3g", d.MaxRelErr)
					}
				})
			}
		})
	}
}

// BenchmarkRun times Run on each example's program and μGraph.
func BenchmarkRun(b *testing.B) {
	for _, c := range []struct {
		name  string
		graph *kernel.Graph
	}{
		{"rmsnorm_matmul/program", rmsnormMatmul()},
		{"rmsnorm_matmul/mugraph", rmsnormMatmulMuGraph(ugraph.AccumRMS)},
		{"gated_mlp/program", gatedMLP()},
		{"gated_mlp/mugraph", gatedMLPMuGraph(block.Map{1, -1, -1}, 0)},
		{"gqa/program", gqa()},
		{"gqa/mugraph", gqaMuGraph(ugraph.AccumSum)},
	} {
		b.Run(c.name, func(b *testing.B) {
			ins := interp.RandomInputs(c.graph, 1)
			for b.Loop() {
				if _, err := interp.Run(c.graph, ins); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
