package kernel_test

import (
	"strings"
	"testing"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// must unwraps a builder result in test set-up, where an error is a bug in
// the test itself.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// The fused RMSNorm+MatMul kernel of examples/rmsnorm_matmul_mugraph.py.
func TestCustomizedRMSNormMatmul(t *testing.T) {
	g := kernel.New()
	x := must(g.AddInput(ugraph.MustShape(16, 4096), ugraph.Float16))
	w := must(g.AddInput(ugraph.MustShape(4096, 6144), ugraph.Float16))

	b := must(block.New(block.Dim3{96, 1, 1}, block.Dim3{128, 1, 1}, 64, 64))
	tx := must(b.AddInput(g.Tensors[x].Shape, ugraph.Float16, block.Replicate, 1))
	tw := must(b.AddInput(g.Tensors[w].Shape, ugraph.Float16, block.Map{1, -1, -1}, 0))
	tm := must(b.Add(ugraph.OpMatmul, ugraph.Attr{}, tx, tw))
	acc := must(b.Add(ugraph.OpForloopAccum, ugraph.Attr{}, tm))
	rms := must(b.Add(ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumRMS}, tx))
	o := must(b.Add(ugraph.OpDiv, ugraph.Attr{}, acc, rms))
	if err := b.AddOutput(o, block.Map{1, -1, -1}); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[block.TensorID]ugraph.Shape{
		tx: ugraph.MustShape(16, 64), tw: ugraph.MustShape(64, 64), tm: ugraph.MustShape(16, 64),
		acc: ugraph.MustShape(16, 64), rms: ugraph.MustShape(16, 1), o: ugraph.MustShape(16, 64),
	} {
		if got := b.Tensors[id].Shape; got != want {
			t.Errorf("tile %d: shape %v, want %v", id, got, want)
		}
	}
	outs := must(g.Customized([]kernel.TensorID{x, w}, b))
	if got, want := g.Tensors[outs[0]].Shape, ugraph.MustShape(16, 6144); got != want {
		t.Fatalf("output shape %v, want %v", got, want)
	}
	// Swapped operands no longer match the block graph's input ops.
	_, err := g.Customized([]kernel.TensorID{w, x}, b)
	if err == nil || !strings.Contains(err.Error(), "input 0 is [4096, 6144]") {
		t.Fatalf("swapped operands: err = %v", err)
	}
}
