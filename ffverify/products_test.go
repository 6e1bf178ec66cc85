package ffverify

import (
	"fmt"
	"math/big"
	"testing"
	"time"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/layout"
)

func randomTensor(s ugraph.Shape, seed uint64) *tensor {
	t := newTensor(s)
	for i := range t.v {
		t.v[i] = uniform(hash(seed, uint64(i)))
	}
	return t
}

// tileProduct multiplies the tiles of shapes ta and tb at padded offsets
// offA and offB of a and b, the long way.
func tileProduct(a *tensor, ta ugraph.Shape, offA layout.Dims, b *tensor, tb ugraph.Shape, offB layout.Dims) *tensor {
	x, y := newTensor(ta), newTensor(tb)
	copyBox(x, layout.Dims{}, a, offA, layout.Pad(ta))
	copyBox(y, layout.Dims{}, b, offB, layout.Pad(tb))
	out := newTensor(ta.WithDim(ta.Rank()-1, tb.Last()))
	matmul(out, x, y, nil)
	return out
}

// TestProductsTile checks every tile the memo serves against the tiles
// multiplied directly: tiles of one slab at different rows and columns
// (served from the memo), of misaligned k-ranges (a wrong candidate's),
// batched tiles whose B slab is not contiguous, and operands named by
// their input position or by their fingerprint.
func TestProductsTile(t *testing.T) {
	type tileCase struct {
		ta, tb     ugraph.Shape
		offA, offB layout.Dims
	}
	a2, b2 := ugraph.MustShape(8, 12), ugraph.MustShape(12, 10)
	a3, b3 := ugraph.MustShape(4, 6, 8), ugraph.MustShape(4, 8, 5)
	for _, c := range []struct {
		name   string
		sa, sb ugraph.Shape
		tiles  []tileCase
	}{
		{"2-D", a2, b2, []tileCase{
			{ugraph.MustShape(4, 3), ugraph.MustShape(3, 5), layout.Dims{0, 0, 0, 3}, layout.Dims{0, 0, 3, 0}},
			{ugraph.MustShape(4, 3), ugraph.MustShape(3, 5), layout.Dims{0, 0, 4, 3}, layout.Dims{0, 0, 3, 5}}, // the same slab
			{ugraph.MustShape(8, 3), ugraph.MustShape(3, 2), layout.Dims{0, 0, 0, 3}, layout.Dims{0, 0, 3, 8}}, // again
			{ugraph.MustShape(4, 3), ugraph.MustShape(3, 5), layout.Dims{0, 0, 4, 3}, layout.Dims{0, 0, 6, 5}}, // k misaligned
			{ugraph.MustShape(2, 12), ugraph.MustShape(12, 10), layout.Dims{0, 0, 6, 0}, layout.Dims{}},        // whole k
			{ugraph.MustShape(4, 6), ugraph.MustShape(6, 5), layout.Dims{0, 0, 0, 6}, layout.Dims{0, 0, 6, 5}},
		}},
		{"batched", a3, b3, []tileCase{
			{ugraph.MustShape(1, 3, 4), ugraph.MustShape(1, 4, 5), layout.Dims{0, 2, 3, 4}, layout.Dims{0, 2, 4, 0}},
			{ugraph.MustShape(1, 3, 4), ugraph.MustShape(1, 4, 5), layout.Dims{0, 2, 0, 4}, layout.Dims{0, 2, 4, 0}}, // the same slab
			{ugraph.MustShape(2, 6, 4), ugraph.MustShape(2, 4, 5), layout.Dims{0, 1, 0, 0}, layout.Dims{0, 1, 4, 0}}, // B's slab is not contiguous
			{ugraph.MustShape(1, 6, 8), ugraph.MustShape(1, 8, 5), layout.Dims{0, 3, 0, 0}, layout.Dims{0, 1, 0, 0}}, // other batches
		}},
	} {
		for _, named := range []string{"inputs", "fingerprints"} {
			t.Run(c.name+"/"+named, func(t *testing.T) {
				a, b := randomTensor(c.sa, 1), randomTensor(c.sb, 2)
				ps := newProducts(1<<20, 7)
				ka, kb := uint64(1), uint64(2)
				if named == "fingerprints" {
					ka, kb = 0, 0
				}
				oa, ob := ps.operand(a, ka), ps.operand(b, kb)
				for i, tc := range c.tiles {
					if !ps.serves(oa, tc.ta, ob, tc.tb) {
						t.Fatalf("tile %d: not served", i)
					}
					want := tileProduct(a, tc.ta, tc.offA, b, tc.tb, tc.offB)
					got := newTensor(want.shape)
					ps.tile(got, oa, tc.ta, tc.offA, ob, tc.offB, nil)
					if fmt.Sprint(got.v) != fmt.Sprint(want.v) {
						t.Errorf("tile %d (%v at %v times %v at %v): memo %v, direct %v", i, tc.ta, tc.offA, tc.tb, tc.offB, got.v, want.v)
					}
				}
			})
		}
	}
}

// TestProductsKeys: operands with other values never share a product, and
// the memo stays within its budget, forgetting the oldest entries.
func TestProductsKeys(t *testing.T) {
	s := ugraph.MustShape(4, 4)
	a, b := randomTensor(s, 1), randomTensor(s, 2)
	a2 := randomTensor(s, 1)
	a2.v[15] = a2.v[15].add(one)           // one value differs
	ps := newProducts(8*tensorBytes(s), 9) // room for four products, each with its left operand
	product := func(x *tensor) *tensor {
		out := newTensor(s)
		ps.whole(out, ps.operand(x, 0), ps.operand(b, 2), nil)
		return out
	}
	p1, p2 := product(a), product(a2)
	if fmt.Sprint(p1.v) == fmt.Sprint(p2.v) {
		t.Fatal("operands that differ in one value share a product")
	}
	want := newTensor(s)
	matmul(want, a2, b, nil)
	if fmt.Sprint(p2.v) != fmt.Sprint(want.v) {
		t.Errorf("memo %v, direct %v", p2.v, want.v)
	}
	if ps.operand(a, 0).key == ps.operand(a2, 0).key {
		t.Error("fingerprints of operands that differ in one value are equal")
	}
	for i := range 5 {
		product(randomTensor(s, uint64(10+i)))
		if ps.used > ps.budget || len(ps.memo) != len(ps.order) {
			t.Fatalf("after %d products: %d bytes of %d used, %d entries and %d in order", i+3, ps.used, ps.budget, len(ps.memo), len(ps.order))
		}
	}
	if len(ps.memo) != 4 {
		t.Errorf("%d entries kept, want 4 (the budget's worth)", len(ps.memo))
	}
	if _, ok := ps.memo[wholeKey{ps.operand(a, 0).key, ps.operand(b, 2).key}]; ok {
		t.Error("the oldest product is still kept")
	}
}

func TestFingerprintArithmetic(t *testing.T) {
	for _, c := range [][2]uint64{{0, 0}, {1, m61 - 1}, {m61 - 1, m61 - 1}, {1 << 60, 3}, {0x1234567890abcdef % m61, 0x0fedcba987654321 % m61}} {
		got := mulM61(c[0], c[1])
		want := new(big.Int).Mod(new(big.Int).Mul(new(big.Int).SetUint64(c[0]), new(big.Int).SetUint64(c[1])), big.NewInt(m61)).Uint64()
		if got%m61 != want {
			t.Errorf("mulM61(%d, %d) = %d, want %d", c[0], c[1], got, want)
		}
	}
}

// TestProductsStopped: a product whose check stops it midway (a search's
// deadline) stops within a panel, and leaves the memo as if it had never
// started: a check that waited for it, and one that comes after, compute
// it themselves, right.
func TestProductsStopped(t *testing.T) {
	a, b := randomTensor(ugraph.MustShape(8, 64), 1), randomTensor(ugraph.MustShape(64, 4*matmulCols), 2)
	want := newTensor(ugraph.MustShape(8, 4*matmulCols))
	panels := 0
	matmul(want, a, b, func() { panels++ })
	if panels != 4 {
		t.Errorf("matmul checked %d times, want once a panel (4)", panels)
	}
	ps := newProducts(1<<30, 9)
	oa, ob := ps.operand(a, 1), ps.operand(b, 2)

	started, release := make(chan struct{}), make(chan struct{})
	stopped := make(chan any)
	go func() {
		defer func() { stopped <- recover() }()
		calls := 0
		ps.whole(newTensor(want.shape), oa, ob, func() {
			switch calls++; calls {
			case 1:
				close(started)
			case 2:
				<-release // a waiter comes meanwhile
				panic(errStopped)
			}
		})
	}()
	<-started
	waited := make(chan *tensor)
	go func() {
		got := newTensor(want.shape)
		ps.whole(got, oa, ob, nil)
		waited <- got
	}()
	time.Sleep(10 * time.Millisecond) // the waiter finds the entry, most likely
	close(release)
	if e := <-stopped; e != errStopped {
		t.Fatalf("the stopped product: recovered %v", e)
	}
	select {
	case got := <-waited:
		if fmt.Sprint(got.v) != fmt.Sprint(want.v) {
			t.Error("the waiter's product differs")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter still waits for the stopped product")
	}
	after := newTensor(want.shape)
	ps.whole(after, oa, ob, nil)
	if fmt.Sprint(after.v) != fmt.Sprint(want.v) {
		t.Error("the product after differs")
	}
}

// An entry pinned while another check computes it, which then stops,
// leaves the memo whole: its bytes no longer count against the pins'
// half of the budget.
func TestPinOfAForgottenEntry(t *testing.T) {
	ps := newProducts(1<<20, 1)
	k := wholeKey{operandKey{input: 1, shape: ugraph.MustShape(16, 16)}, operandKey{input: 2, shape: ugraph.MustShape(16, 16)}}
	p, first := ps.entry(k, 1<<18)
	if !first {
		t.Fatal("a new key's entry is not new")
	}
	ps.pin([]any{k})
	if ps.pinned != 1<<18 {
		t.Fatalf("pinned %d bytes, want the entry's %d", ps.pinned, 1<<18)
	}
	ps.unlessDone(k, p) // its computer stopped
	if ps.pinned != 0 || ps.used != 0 || len(ps.memo) != 0 {
		t.Errorf("after the entry is forgotten: pinned %d, used %d bytes, %d entries; want none", ps.pinned, ps.used, len(ps.memo))
	}
}
