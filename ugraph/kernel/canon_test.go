package kernel_test

import (
	"testing"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// gatedForm says how gatedKernel writes silu(X·W1) * (X·W2) as one
// graph-defined kernel.
type gatedForm struct {
	permuted     bool // the customized op's operands (and input ops) as X, W2, W1
	secondFirst  bool // X·W2's matmul and accumulator before X·W1's
	swappedMul   bool // mul(X·W2, silu(X·W1))
	gateOnSecond bool // silu(X·W2) * (X·W1): another function
	threads      int  // 128 unless set
	stages       int
	grid         int  // blocks: 2 unless set
	mapY         bool // grid axis y partitions X's rows and the output's
	oneIteration bool // a for-loop of one iteration, its dim unmapped
	namedLoopDim bool // with oneIteration, the loop's dim named anyway
}

func gatedKernel(f gatedForm) *kernel.Graph {
	g := kernel.New()
	x := must(g.AddInput(ugraph.MustShape(8, 64), ugraph.Float16))
	w1 := must(g.AddInput(ugraph.MustShape(64, 128), ugraph.Float16))
	w2 := must(g.AddInput(ugraph.MustShape(64, 128), ugraph.Float16))
	threads := max(f.threads, 128)
	forloop, xdim, wdim := 4, 1, 0
	if f.oneIteration && !f.namedLoopDim {
		forloop, xdim, wdim = 1, -1, -1
	} else if f.oneIteration {
		forloop = 1
	}
	b := must(block.New(block.Dim3{max(f.grid, 2), 1, 1}, block.Dim3{threads, 1, 1}, forloop, 64))
	if err := b.SetStages(f.stages); err != nil {
		panic(err)
	}
	operands := []kernel.TensorID{x, w1, w2}
	if f.permuted {
		operands = []kernel.TensorID{x, w2, w1}
	}
	tiles := map[kernel.TensorID]block.TensorID{}
	xmap := block.Replicate
	if f.mapY {
		xmap = block.Map{-1, 0, -1}
	}
	tiles[x] = must(b.AddInput(g.Tensors[x].Shape, ugraph.Float16, xmap, xdim))
	for _, w := range operands[1:] {
		tiles[w] = must(b.AddInput(g.Tensors[w].Shape, ugraph.Float16, block.Map{1, -1, -1}, wdim))
	}
	product := func(w kernel.TensorID) block.TensorID {
		return must(b.Add(ugraph.OpForloopAccum, ugraph.Attr{}, must(b.Add(ugraph.OpMatmul, ugraph.Attr{}, tiles[x], tiles[w]))))
	}
	var p1, p2 block.TensorID
	if f.secondFirst {
		p2 = product(w2)
		p1 = product(w1)
	} else {
		p1 = product(w1)
		p2 = product(w2)
	}
	if f.gateOnSecond {
		p1, p2 = p2, p1
	}
	gate := must(b.Add(ugraph.OpSilu, ugraph.Attr{}, p1))
	a, c := gate, p2
	if f.swappedMul {
		a, c = c, a
	}
	omap := block.Map{1, -1, -1}
	if f.mapY {
		omap = block.Map{1, 0, -1}
	}
	if err := b.AddOutput(must(b.Add(ugraph.OpMul, ugraph.Attr{}, a, c)), omap); err != nil {
		panic(err)
	}
	o := must(g.Customized(operands, b))
	if err := g.MarkOutput(o[0]); err != nil {
		panic(err)
	}
	return g
}

// kernelForm says how kernelOps writes exp(A) op B and A - B with
// pre-defined ops.
type kernelForm struct {
	subFirst       bool // A - B before exp(A)
	swappedAdd     bool // B + exp(A)
	swappedSub     bool // B - A: another function
	expOfB         bool // exp(B) + A: another function
	outputsSwapped bool // the outputs marked in the other order
}

func kernelOps(f kernelForm) *kernel.Graph {
	g := kernel.New()
	a := must(g.AddInput(ugraph.MustShape(8, 64), ugraph.Float16))
	b := must(g.AddInput(ugraph.MustShape(8, 64), ugraph.Float16))
	sub := func() kernel.TensorID {
		if f.swappedSub {
			return must(g.Add(ugraph.OpSub, ugraph.Attr{}, b, a))
		}
		return must(g.Add(ugraph.OpSub, ugraph.Attr{}, a, b))
	}
	var d kernel.TensorID
	if f.subFirst {
		d = sub()
	}
	e, other := a, b
	if f.expOfB {
		e, other = b, a
	}
	x, y := must(g.Add(ugraph.OpExp, ugraph.Attr{}, e)), other
	if f.swappedAdd {
		x, y = y, x
	}
	s := must(g.Add(ugraph.OpAdd, ugraph.Attr{}, x, y))
	if !f.subFirst {
		d = sub()
	}
	outs := []kernel.TensorID{s, d}
	if f.outputsSwapped {
		outs = []kernel.TensorID{d, s}
	}
	for _, o := range outs {
		if err := g.MarkOutput(o); err != nil {
			panic(err)
		}
	}
	return g
}

// CanonicalHash is the same for graphs that compute the same in another
// order, and differs where what they compute or how they launch differs.
// Each "same" case differs in Hash, so the cases test the order
// independence, not graphs written alike.
func TestCanonicalHash(t *testing.T) {
	gated := kernel.CanonicalHash(gatedKernel(gatedForm{}))
	ops := kernel.CanonicalHash(kernelOps(kernelForm{}))
	tests := []struct {
		name string
		g    *kernel.Graph
		base uint64
		same bool
	}{
		{"block: independent ops in another order", gatedKernel(gatedForm{secondFirst: true}), gated, true},
		{"block: a commutative op's operands swapped", gatedKernel(gatedForm{swappedMul: true}), gated, true},
		{"customized: operands and input ops permuted", gatedKernel(gatedForm{permuted: true}), gated, true},
		{"all three", gatedKernel(gatedForm{permuted: true, secondFirst: true, swappedMul: true}), gated, true},
		{"block: another function", gatedKernel(gatedForm{gateOnSecond: true}), gated, false},
		{"launch: another grid", gatedKernel(gatedForm{grid: 4}), gated, false},
		{"launch: more threads", gatedKernel(gatedForm{threads: 256}), gated, false},
		{"launch: a pipeline depth", gatedKernel(gatedForm{stages: 3}), gated, false},
		{"launch: a grid axis of one block mapped to a dim", gatedKernel(gatedForm{mapY: true}), gated, true},
		{"launch: a one-iteration loop's pipeline depth", gatedKernel(gatedForm{oneIteration: true, stages: 3}),
			kernel.CanonicalHash(gatedKernel(gatedForm{oneIteration: true})), true},
		{"launch: a one-iteration loop's dim mapped", gatedKernel(gatedForm{oneIteration: true, namedLoopDim: true}),
			kernel.CanonicalHash(gatedKernel(gatedForm{oneIteration: true})), true},
		{"kernel: independent ops in another order", kernelOps(kernelForm{subFirst: true}), ops, true},
		{"kernel: a commutative op's operands swapped", kernelOps(kernelForm{swappedAdd: true}), ops, true},
		{"kernel: a non-commutative op's operands swapped", kernelOps(kernelForm{swappedSub: true}), ops, false},
		{"kernel: the inputs' roles exchanged", kernelOps(kernelForm{expOfB: true}), ops, false},
		{"kernel: the outputs in another order", kernelOps(kernelForm{outputsSwapped: true}), ops, false},
	}
	for _, tt := range tests {
		if got := kernel.CanonicalHash(tt.g); (got == tt.base) != tt.same {
			t.Errorf("%s: CanonicalHash %x, base %x: want equal %v", tt.name, got, tt.base, tt.same)
		}
	}
	if kernel.Hash(gatedKernel(gatedForm{oneIteration: true})) == kernel.Hash(gatedKernel(gatedForm{oneIteration: true, namedLoopDim: true})) {
		t.Errorf("a one-iteration loop's dim mapped has the unmapped graph's Hash: the case tests nothing")
	}
	for _, g := range []*kernel.Graph{gatedKernel(gatedForm{secondFirst: true}), gatedKernel(gatedForm{swappedMul: true}),
		gatedKernel(gatedForm{permuted: true}), gatedKernel(gatedForm{mapY: true}), kernelOps(kernelForm{subFirst: true}), kernelOps(kernelForm{swappedAdd: true})} {
		if kernel.Hash(g) == kernel.Hash(gatedKernel(gatedForm{})) || kernel.Hash(g) == kernel.Hash(kernelOps(kernelForm{})) {
			t.Errorf("a reordered graph has its base's Hash: the case tests nothing")
		}
	}
}

// repeated is a kernel summing F copies of exp(x), x read whole at every
// iteration (no for-loop dim): its value depends on F though no tile's
// shape shows it.
func repeated(g *kernel.Graph, x kernel.TensorID, f int) kernel.TensorID {
	b := must(block.New(block.Dim3{1, 1, 1}, block.Dim3{128, 1, 1}, f, 64))
	in := must(b.AddInput(g.Tensors[x].Shape, ugraph.Float16, block.Map{-1, -1, -1}, -1))
	acc := must(b.Add(ugraph.OpForloopAccum, ugraph.Attr{}, must(b.Add(ugraph.OpExp, ugraph.Attr{}, in))))
	if err := b.AddOutput(acc, block.Map{-1, -1, -1}); err != nil {
		panic(err)
	}
	return must(g.Customized([]kernel.TensorID{x}, b))[0]
}

// The same two kernels (F 2 and F 4) read in other roles compute other
// outputs: (relu(K2), K4) is not (relu(K4), K2).
func TestCanonicalHashSeesTheForloopRange(t *testing.T) {
	graph := func(swap bool) *kernel.Graph {
		g := kernel.New()
		x := must(g.AddInput(ugraph.MustShape(8, 64), ugraph.Float16))
		k2, k4 := repeated(g, x, 2), repeated(g, x, 4)
		if swap {
			k2, k4 = k4, k2
		}
		for _, o := range []kernel.TensorID{must(g.Add(ugraph.OpRelu, ugraph.Attr{}, k2)), k4} {
			if err := g.MarkOutput(o); err != nil {
				panic(err)
			}
		}
		return g
	}
	if kernel.CanonicalHash(graph(false)) == kernel.CanonicalHash(graph(true)) {
		t.Error("two kernels of other for-loop ranges, their roles exchanged, hash alike")
	}
}
