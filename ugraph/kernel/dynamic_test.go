package kernel

import (
	"errors"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/ugraph"
)

// rmsnormMatmul is O = rms_norm(X) @ W, X rows x 64, W 64 x 32.
func rmsnormMatmul(t *testing.T, rows int) *Graph {
	t.Helper()
	g := New()
	x, _ := g.AddInput(ugraph.MustShape(rows, 64), ugraph.Float16)
	w, _ := g.AddInput(ugraph.MustShape(64, 32), ugraph.Float16)
	n, err := g.Add(ugraph.OpRMSNorm, ugraph.Attr{Dim: 1}, x)
	if err != nil {
		t.Fatal(err)
	}
	o, err := g.Add(ugraph.OpMatmul, ugraph.Attr{}, n, w)
	if err != nil {
		t.Fatal(err)
	}
	g.MarkOutput(o)
	return g
}

func TestWithDynamicAndBind(t *testing.T) {
	g := rmsnormMatmul(t, 16)
	d, err := g.WithDynamic(map[TensorID]int{0: 0})
	if err != nil {
		t.Fatal(err)
	}
	ins, outs := d.DynamicDims()
	if ins[0] != 0 || ins[1] != -1 || outs[0] != 0 || !d.Dynamic() || g.Dynamic() {
		t.Fatalf("dynamic dims: inputs %v, outputs %v", ins, outs)
	}
	if Hash(d) == Hash(g) {
		t.Fatal("the dynamic program hashes as the static one")
	}
	for _, m := range []int{1, 3, 16, 64} {
		b, err := d.Bind(m)
		if err != nil {
			t.Fatal(err)
		}
		if want := rmsnormMatmul(t, m); Hash(b) != Hash(want) {
			t.Errorf("Bind(%d) is not the program written at %d rows:\n%v\nwant\n%v", m, m, b, want)
		}
	}
	if _, err := d.Bind(0); err == nil {
		t.Error("Bind(0) succeeded")
	}
}

func TestWithDynamicRefuses(t *testing.T) {
	g := rmsnormMatmul(t, 16)
	for _, tt := range []struct {
		name string
		dims map[TensorID]int
		op   int
		err  string
	}{
		{"the hidden dim", map[TensorID]int{0: 1}, 2, "normalizes across the dynamic dim m"},
		{"a weight", map[TensorID]int{1: 0}, 3, "the weight"},
		{"no such dim", map[TensorID]int{0: 2}, 0, "has no dim 2"},
	} {
		_, err := g.WithDynamic(tt.dims)
		var de *DynamicError
		if !errors.As(err, &de) || de.Op != tt.op || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s: %v; want a DynamicError at op %d with %q", tt.name, err, tt.op, tt.err)
		}
	}
	// m as the last dim of a program that keeps it apart: the emitted code
	// cannot cut it.
	h := New()
	x, _ := h.AddInput(ugraph.MustShape(4, 16, 64), ugraph.Float16)
	e, _ := h.Add(ugraph.OpExp, ugraph.Attr{}, x)
	h.MarkOutput(e)
	if _, err := h.WithDynamic(map[TensorID]int{0: 2}); err == nil || !strings.Contains(err.Error(), "last dim") {
		t.Errorf("m as the last dim: %v", err)
	}
}

// A program is Padded when a tensor has m inside an outer dim of extent
// above 1, wherever that tensor is: an input, an output, or one computed
// between them (a layer's heads made by a broadcast).
func TestPadded(t *testing.T) {
	heads := func() *Graph {
		g := New()
		x, _ := g.AddInput(ugraph.MustShape(1, 16, 64), ugraph.Float16)
		ones, _ := g.AddInput(ugraph.MustShape(4, 1, 1), ugraph.Float16)
		w, _ := g.AddInput(ugraph.MustShape(4, 64, 8), ugraph.Float16)
		h, _ := g.Add(ugraph.OpMul, ugraph.Attr{}, x, ones) // 4 x m x 64
		q, _ := g.Add(ugraph.OpMatmul, ugraph.Attr{}, h, w) // 4 x m x 8
		s, _ := g.Add(ugraph.OpReduction, ugraph.Attr{Dim: 0}, q)
		g.MarkOutput(s) // 1 x m x 8
		return g
	}
	exp := New()
	x, _ := exp.AddInput(ugraph.MustShape(4, 16, 64), ugraph.Float16)
	e, _ := exp.Add(ugraph.OpExp, ugraph.Attr{}, x)
	exp.MarkOutput(e)
	for _, tt := range []struct {
		name   string
		g      *Graph
		dims   map[TensorID]int
		padded bool
	}{
		{"m outermost", rmsnormMatmul(t, 16), map[TensorID]int{0: 0}, false},
		{"m outermost of extent above 1", heads(), map[TensorID]int{0: 1}, true}, // the heads between
		{"m inside a batch dim", exp, map[TensorID]int{0: 1}, true},
		{"m outermost of a batch", exp, map[TensorID]int{0: 0}, false},
		{"no m", rmsnormMatmul(t, 16), nil, false},
	} {
		d, err := tt.g.WithDynamic(tt.dims)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if got := d.Padded(); got != tt.padded {
			t.Errorf("%s: Padded() = %v, want %v", tt.name, got, tt.padded)
		}
	}
}

// RowDims carries a bucket's rows from its input X to the results of
// pre-defined ops that keep rows apart, and no further: not across a
// reduction of the rows, nor into an op that meets a full-size operand
// without them, nor past a batch dim that puts the rows out of a prefix.
func TestRowDims(t *testing.T) {
	const rows = 16
	g := New()
	add := func(k ugraph.OpKind, a ugraph.Attr, in ...TensorID) TensorID {
		t.Helper()
		out, err := g.Add(k, a, in...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	x, _ := g.AddInput(ugraph.MustShape(rows, 64), ugraph.Float16)
	w, _ := g.AddInput(ugraph.MustShape(64, 32), ugraph.Float16)
	y, _ := g.AddInput(ugraph.MustShape(rows, 32), ugraph.Float16) // full size, without the rows
	b, _ := g.AddInput(ugraph.MustShape(1, 32), ugraph.Float16)
	n := add(ugraph.OpRMSNorm, ugraph.Attr{Dim: 1}, x)
	p := add(ugraph.OpMatmul, ugraph.Attr{}, n, w)
	s := add(ugraph.OpSilu, ugraph.Attr{}, p)
	biased := add(ugraph.OpAdd, ugraph.Attr{}, s, b)
	sums := add(ugraph.OpReduction, ugraph.Attr{Dim: 1}, biased)
	mixed := add(ugraph.OpMul, ugraph.Attr{}, s, y)
	column := add(ugraph.OpReduction, ugraph.Attr{Dim: 0}, s)
	heads, _ := g.AddInput(ugraph.MustShape(2, rows, 8), ugraph.Float16) // rows inside the heads: no prefix
	headsExp := add(ugraph.OpExp, ugraph.Attr{}, heads)
	g.MarkOutput(sums)
	g.MarkOutput(mixed)
	g.MarkOutput(column)
	g.MarkOutput(headsExp)
	got := g.RowDims(map[TensorID]int{x: 0, heads: 1})
	want := map[TensorID]int{x: 0, heads: 1, n: 0, p: 0, s: 0, biased: 0, sums: 0}
	if len(got) != len(want) {
		t.Errorf("RowDims = %v; want %v", got, want)
	}
	for tt, d := range want {
		if got[tt] != d {
			t.Errorf("t%d: dim %d; want %d", tt, got[tt], d)
		}
	}
	for _, tt := range []TensorID{mixed, column, headsExp, w, y, b} {
		if _, ok := got[tt]; ok {
			t.Errorf("t%d has rows; it should not", tt)
		}
	}
	// The bucket's given rows stay as given, and a graph without any
	// gives none.
	if got := g.RowDims(nil); len(got) != 0 {
		t.Errorf("RowDims(nil) = %v", got)
	}
}
