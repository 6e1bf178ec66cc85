package block

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/ugraph"
)

var (
	fp16 = ugraph.Float16
	none = ugraph.Attr{}
)

func sh(dims ...int) ugraph.Shape { return ugraph.MustShape(dims...) }

func newGraph(t *testing.T, grid Dim3, f int) *Graph {
	t.Helper()
	g, err := New(grid, Dim3{128, 1, 1}, f, 64)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestNewChecksLaunchParameters(t *testing.T) {
	tests := []struct {
		grid, threads Dim3
		f, dimx       int
		err           string
	}{
		{Dim3{0, 1, 1}, Dim3{128, 1, 1}, 1, 64, "axis 0 is 0"},
		{Dim3{1, 1, 70000}, Dim3{128, 1, 1}, 1, 64, "axis 2 is 70000"},
		{Dim3{1, 1, 1}, Dim3{1024, 2, 1}, 1, 64, "2048 threads"},
		{Dim3{1, 1, 1}, Dim3{0, 1, 1}, 1, 64, "axis 0 is 0"},
		{Dim3{1, 1, 1}, Dim3{1 << 32, 1 << 32, 1}, 1, 64, "axis 0 is 4294967296"},
		{Dim3{1, 1, 1}, Dim3{128, 1, 1}, 0, 64, "forloop_range 0"},
		{Dim3{1, 1, 1}, Dim3{128, 1, 1}, 4, 0, "reduction_dimx 0"},
		// F·n (an accumulator's count) must not wrap around.
		{Dim3{1, 1, 1}, Dim3{128, 1, 1}, 1 << 40, 64, "forloop_range 1099511627776, want 1 to 1073741824"},
		{Dim3{1, 1, 1}, Dim3{128, 1, 1}, 4, 1 << 40, "reduction_dimx 1099511627776"},
	}
	for _, tt := range tests {
		_, err := New(tt.grid, tt.threads, tt.f, tt.dimx)
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("New(%v, %v, %d, %d): err = %v, want %q", tt.grid, tt.threads, tt.f, tt.dimx, err, tt.err)
		}
	}
}

// The pipeline depth is 0 (the plan's) to MaxStages, set alone or read
// back by Validate.
func TestStages(t *testing.T) {
	g := newGraph(t, Dim3{4, 1, 1}, 8)
	for _, n := range []int{-1, MaxStages + 1} {
		if err := g.SetStages(n); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("stages %d, want 0 (the default) to %d", n, MaxStages)) {
			t.Errorf("SetStages(%d): err = %v", n, err)
		}
	}
	if g.Stages != 0 {
		t.Errorf("a refused depth was kept: %d", g.Stages)
	}
	for _, n := range []int{0, 1, MaxStages} {
		if err := g.SetStages(n); err != nil || g.Stages != n {
			t.Errorf("SetStages(%d): %v, stages %d", n, err, g.Stages)
		}
		if err := Validate(g); err != nil {
			t.Errorf("Validate with %d stages: %v", n, err)
		}
	}
	g.Stages = MaxStages + 1 // set by hand, past SetStages
	if err := Validate(g); err == nil || !strings.Contains(err.Error(), "stages 9") {
		t.Errorf("Validate with %d stages: err = %v", g.Stages, err)
	}
}

// TestInputTiles checks the tile shape rule of DESIGN §3: divide dim
// imap[a] by grid[a] for each axis of size > 1, then dim fmap by F.
func TestInputTiles(t *testing.T) {
	tests := []struct {
		name   string
		grid   Dim3
		f      int
		dshape ugraph.Shape
		imap   Map
		fmap   int
		tile   ugraph.Shape
		err    string
	}{
		{"replicated, loop over k", Dim3{96, 1, 1}, 64, sh(16, 4096), Replicate, 1, sh(16, 64), ""},
		{"partitioned and looped", Dim3{96, 1, 1}, 64, sh(4096, 6144), Map{1, -1, -1}, 0, sh(64, 64), ""},
		{"grid and loop on one dim", Dim3{2, 16, 1}, 4, sh(2, 64, 4096), Map{0, 2, -1}, 2, sh(1, 64, 64), ""},
		{"axis of size 1 partitions nothing", Dim3{4, 1, 1}, 1, sh(8, 8), Map{0, 1, 1}, -1, sh(2, 8), ""},
		{"no loop dim", Dim3{1, 1, 1}, 8, sh(8, 8), Replicate, -1, sh(8, 8), ""},
		{"grid does not divide", Dim3{3, 1, 1}, 1, sh(16, 64), Map{1, -1, -1}, -1, ugraph.Shape{}, "not divisible by 3"},
		{"loop does not divide", Dim3{1, 1, 1}, 3, sh(16, 64), Replicate, 1, ugraph.Shape{}, "forloop_dim 1 with forloop_range 3"},
		{"grid then loop does not divide", Dim3{32, 1, 1}, 4, sh(16, 64), Map{1, -1, -1}, 1, ugraph.Shape{}, "not divisible by 4"},
		{"two axes on one dim", Dim3{2, 2, 1}, 1, sh(16, 64), Map{1, 1, -1}, -1, ugraph.Shape{}, "grid axes 0 and 1 (sizes 2 and 2) both partition dim 1"},
		{"imap dim out of range", Dim3{2, 1, 1}, 1, sh(16, 64), Map{2, -1, -1}, -1, ugraph.Shape{}, "entry 0 is 2"},
		{"fmap out of range", Dim3{1, 1, 1}, 1, sh(16, 64), Replicate, 2, ugraph.Shape{}, "forloop_dim 2"},
	}
	for _, tt := range tests {
		g := newGraph(t, tt.grid, tt.f)
		id, err := g.AddInput(tt.dshape, fp16, tt.imap, tt.fmap)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.err == "" && g.Tensors[id].Shape != tt.tile:
			t.Errorf("%s: tile %v, want %v", tt.name, g.Tensors[id].Shape, tt.tile)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.err)
		}
	}
}

func TestTileShape(t *testing.T) {
	tests := []struct {
		grid   Dim3
		f      int
		dshape ugraph.Shape
		imap   Map
		fmap   int
		tile   ugraph.Shape // the tile divided so far, when a step fails
		failed int
	}{
		{Dim3{2, 16, 1}, 4, sh(2, 64, 4096), Map{0, 2, -1}, 2, sh(1, 64, 64), -1},
		{Dim3{4, 1, 1}, 1, sh(8, 8), Map{0, 1, 1}, -1, sh(2, 8), -1},
		{Dim3{2, 3, 1}, 1, sh(16, 64), Map{0, 1, -1}, -1, sh(8, 64), 1},
		{Dim3{32, 1, 1}, 4, sh(16, 64), Map{1, -1, -1}, 1, sh(16, 2), 3},
	}
	for _, tt := range tests {
		tile, failed := TileShape(tt.dshape, tt.grid, tt.f, tt.imap, tt.fmap)
		if tile != tt.tile || failed != tt.failed {
			t.Errorf("TileShape(%v, %v, %d, %v, %d) = %v, %d; want %v, %d", tt.dshape, tt.grid, tt.f, tt.imap, tt.fmap, tile, failed, tt.tile, tt.failed)
		}
	}
}

func TestOutputs(t *testing.T) {
	tests := []struct {
		name   string
		grid   Dim3
		omap   Map
		dshape ugraph.Shape
		err    string
	}{
		{"one axis", Dim3{96, 1, 1}, Map{1, -1, -1}, sh(16, 6144), ""},
		{"two axes", Dim3{2, 16, 1}, Map{0, 1, -1}, sh(2*16, 16*64), ""},
		{"axis of size 1 unmapped", Dim3{4, 1, 1}, Map{0, -1, -1}, sh(4*16, 64), ""},
		{"axis > 1 unmapped", Dim3{4, 2, 1}, Map{0, -1, -1}, ugraph.Shape{}, "grid axis 1 has 2 blocks but maps to no dim"},
		{"two axes on one dim", Dim3{4, 2, 1}, Map{0, 0, -1}, ugraph.Shape{}, "both partition dim 0"},
	}
	for _, tt := range tests {
		g := newGraph(t, tt.grid, 4)
		x, err := g.AddInput(sh(16, 64), fp16, Replicate, -1)
		if err != nil {
			t.Fatal(err)
		}
		acc, err := g.Add(ugraph.OpForloopAccum, none, x)
		if err != nil {
			t.Fatal(err)
		}
		err = g.AddOutput(acc, tt.omap)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.err == "" && g.Ops[len(g.Ops)-1].Output.DShape != tt.dshape:
			t.Errorf("%s: device shape %v, want %v", tt.name, g.Ops[len(g.Ops)-1].Output.DShape, tt.dshape)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.err)
		}
	}
}

// TestLoopPhases checks the rules that keep the for-loop well defined: ops
// never mix a per-iteration tile with a post-loop one, accumulators take
// per-iteration tiles, and outputs take post-loop ones (even when F = 1).
func TestLoopPhases(t *testing.T) {
	g := newGraph(t, Dim3{1, 1, 1}, 1)
	x, _ := g.AddInput(sh(16, 64), fp16, Replicate, -1)
	acc, err := g.Add(ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumRMS}, x)
	if err != nil {
		t.Fatal(err)
	}
	if g.Tensors[x].PostLoop || !g.Tensors[acc].PostLoop {
		t.Fatal("input must be per-iteration and accumulator post-loop")
	}
	if _, err := g.Add(ugraph.OpDiv, none, x, acc); err == nil || !strings.Contains(err.Error(), "inside the for-loop with one computed after it") {
		t.Errorf("mixing phases: err = %v", err)
	}
	if _, err := g.Add(ugraph.OpForloopAccum, none, acc); err == nil || !strings.Contains(err.Error(), "already computed after the for-loop") {
		t.Errorf("accumulating a post-loop tile: err = %v", err)
	}
	if err := g.AddOutput(x, Replicate); err == nil || !strings.Contains(err.Error(), "inside the for-loop") {
		t.Errorf("output of a per-iteration tile: err = %v", err)
	}
	sq, err := g.Add(ugraph.OpSqrt, none, acc)
	if err != nil || !g.Tensors[sq].PostLoop {
		t.Errorf("an op on a post-loop tile is post-loop: %v", err)
	}
	if err := g.AddOutput(sq, Replicate); err != nil {
		t.Error(err)
	}
}

func TestAddChecks(t *testing.T) {
	g := newGraph(t, Dim3{1, 1, 1}, 1)
	x, _ := g.AddInput(sh(16, 64), fp16, Replicate, -1)
	y, _ := g.AddInput(sh(16, 64), ugraph.Float32, Replicate, -1)
	tests := []struct {
		op   ugraph.OpKind
		args []TensorID
		err  string
	}{
		{ugraph.OpCustomized, []TensorID{x}, "not a threadblock compute op"},
		{ugraph.OpInput, nil, "not a threadblock compute op"},
		{ugraph.OpAdd, []TensorID{x}, "takes 2 operands, got 1"},
		{ugraph.OpExp, []TensorID{7}, "operand 7 is not a tile"},
		{ugraph.OpAdd, []TensorID{x, y}, "dtypes differ"},
		{ugraph.OpMatmul, []TensorID{x, x}, "inner dims differ (64 vs 16)"},
	}
	for _, tt := range tests {
		if _, err := g.Add(tt.op, none, tt.args...); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%v%v: err = %v, want %q", tt.op, tt.args, err, tt.err)
		}
	}
	// A block rms_norm always normalizes the last dim, whatever Dim says.
	n, err := g.Add(ugraph.OpRMSNorm, ugraph.Attr{Dim: 0}, x)
	if err != nil || g.Ops[len(g.Ops)-1].Attr.Dim != 1 || g.Tensors[n].Shape != sh(16, 64) {
		t.Errorf("rms_norm: %v, attr %+v", err, g.Ops[len(g.Ops)-1].Attr)
	}
}

func TestPopAndClone(t *testing.T) {
	g := newGraph(t, Dim3{1, 1, 1}, 2)
	x, _ := g.AddInput(sh(16, 64), fp16, Replicate, 1)
	c := g.Clone()
	e, _ := g.Add(ugraph.OpExp, none, x)
	acc, _ := g.Add(ugraph.OpForloopAccum, none, e)
	if err := g.AddOutput(acc, Replicate); err != nil {
		t.Fatal(err)
	}
	if len(c.Ops) != 1 || len(c.Tensors) != 1 {
		t.Fatalf("clone changed with the original: %d ops", len(c.Ops))
	}
	g.Pop() // output
	g.Pop() // accum
	if len(g.Ops) != 2 || len(g.Tensors) != 2 {
		t.Fatalf("after two pops: %d ops, %d tiles", len(g.Ops), len(g.Tensors))
	}
	if len(g.InputOps()) != 1 || len(g.OutputOps()) != 0 {
		t.Fatal("input/output op lists")
	}
}

// TestVaries: a tile varies between iterations when the loop walks an input
// it comes from, runs more than once, and no accumulator lies between.
func TestVaries(t *testing.T) {
	for _, f := range []int{1, 4} {
		g := newGraph(t, Dim3{2, 1, 1}, f)
		x, err := g.AddInput(sh(8, 64), fp16, Replicate, 1) // walked
		if err != nil {
			t.Fatal(err)
		}
		s, err := g.AddInput(sh(8, 1), fp16, Replicate, -1) // read whole in every iteration
		if err != nil {
			t.Fatal(err)
		}
		add := func(k ugraph.OpKind, a ugraph.Attr, in ...TensorID) TensorID {
			t.Helper()
			out, err := g.Add(k, a, in...)
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		xs := add(ugraph.OpMul, none, x, s)
		ss := add(ugraph.OpExp, none, s)
		acc := add(ugraph.OpForloopAccum, none, xs)
		mean := add(ugraph.OpForloopAccum, ugraph.Attr{Accum: ugraph.AccumMean}, ss)
		post := add(ugraph.OpMul, none, acc, mean)
		want := map[TensorID]bool{x: f > 1, s: false, xs: f > 1, ss: false, acc: false, mean: false, post: false}
		got := g.Varies()
		if len(got) != len(g.Tensors) {
			t.Fatalf("F=%d: Varies has %d entries for %d tiles", f, len(got), len(g.Tensors))
		}
		for tile, w := range want {
			if got[tile] != w {
				t.Errorf("F=%d: tile %d varies = %v, want %v", f, tile, got[tile], w)
			}
		}
	}
}
