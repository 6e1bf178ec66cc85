package layout

import (
	"slices"
	"testing"

	"github.com/mirage-go/mirage/ugraph"
)

func TestPadAndStrides(t *testing.T) {
	s := ugraph.MustShape(2, 3, 4)
	d := Pad(s)
	if d != (Dims{1, 2, 3, 4}) || d.Strides() != (Dims{24, 12, 4, 1}) {
		t.Fatalf("Pad %v, strides %v", d, d.Strides())
	}
	if PadDim(0, 3) != 1 || PadIndex([]int{1, 2}) != (Dims{0, 0, 1, 2}) {
		t.Error("PadDim or PadIndex")
	}
	// Index and Offset are inverse over every position.
	for off := range s.NumElements() {
		x := d.Index(off)
		if d.Offset(x) != off {
			t.Fatalf("Offset(Index(%d)) = %d", off, d.Offset(x))
		}
		if got := UnpadIndex(x, 3); len(got) != 3 || got[0] != off/12 || got[1] != off/4%3 || got[2] != off%4 {
			t.Fatalf("UnpadIndex(Index(%d)) = %v", off, got)
		}
	}
}

func TestBroadcastStrides(t *testing.T) {
	out := Pad(ugraph.MustShape(5, 3, 4))
	if got := BroadcastStrides(ugraph.MustShape(5, 1, 4), out); got != (Dims{20, 4, 0, 1}) {
		t.Errorf("5x1x4 into 5x3x4: %v, want the broadcast dim (padded 2) at stride 0", got)
	}
	if got := BroadcastStrides(ugraph.MustShape(5, 3, 4), out); got != out.Strides() {
		t.Errorf("no broadcast: %v", got)
	}
}

func TestSplit(t *testing.T) {
	for _, tt := range []struct {
		dim             int
		outer, n, inner int
	}{{0, 1, 2, 12}, {1, 2, 3, 4}, {2, 6, 4, 1}} {
		o, n, i := Split(ugraph.MustShape(2, 3, 4), tt.dim)
		if o != tt.outer || n != tt.n || i != tt.inner {
			t.Errorf("Split at %d = %d, %d, %d", tt.dim, o, n, i)
		}
	}
}

func TestCopyBox(t *testing.T) {
	// A 2x2 box from (1, 1) of a 3x4 source to (0, 2) of a 2x4 destination.
	src := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	dst := make([]int, 8)
	CopyBox(dst, ugraph.MustShape(2, 4), PadIndex([]int{0, 2}), src, ugraph.MustShape(3, 4), PadIndex([]int{1, 1}), Pad(ugraph.MustShape(2, 2)))
	if want := []int{0, 0, 5, 6, 0, 0, 9, 10}; !slices.Equal(dst, want) {
		t.Errorf("got %v, want %v", dst, want)
	}
}

func TestBinary(t *testing.T) {
	// A 2x3 matrix plus a 2x1 column and plus a 1x3 row.
	x := []int{1, 2, 3, 4, 5, 6}
	add := func(a, b int) int { return a + b }
	dst := make([]int, 6)
	Binary(dst, ugraph.MustShape(2, 3), x, ugraph.MustShape(2, 3), []int{10, 20}, ugraph.MustShape(2, 1), add)
	if want := []int{11, 12, 13, 24, 25, 26}; !slices.Equal(dst, want) {
		t.Errorf("column: %v, want %v", dst, want)
	}
	Binary(dst, ugraph.MustShape(2, 3), []int{100, 200, 300}, ugraph.MustShape(1, 3), x, ugraph.MustShape(2, 3), add)
	if want := []int{101, 202, 303, 104, 205, 306}; !slices.Equal(dst, want) {
		t.Errorf("row: %v, want %v", dst, want)
	}
	Binary(dst, ugraph.MustShape(2, 3), x, ugraph.MustShape(2, 3), x, ugraph.MustShape(2, 3), add)
	if want := []int{2, 4, 6, 8, 10, 12}; !slices.Equal(dst, want) {
		t.Errorf("same shape: %v, want %v", dst, want)
	}
}
