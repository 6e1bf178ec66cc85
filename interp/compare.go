package interp

import (
	"fmt"
	"math"
)

// DefaultTolerance is the largest relative error (see Compare) at which two
// outputs count as equal. Equivalent μGraphs differ only by float64
// reassociation: sums of up to ~10⁶ terms in another order, a product
// divided by a factor instead of a factor divided first. That costs about
// n·2⁻⁵³ ≲ 1e-10 relative, and the floor of Compare bounds the error of
// entries that cancel to near zero at ~1e-7. A wrong μGraph (wrong tile,
// map, or accumulator) is off by O(1) in most entries. 1e-6 leaves orders
// of magnitude on both sides.
const DefaultTolerance = 1e-6

// relFloor scales the largest |want| of a tensor into the smallest
// denominator of a relative error: entries much smaller than the tensor's
// largest are compared relative to that floor, not to themselves, since
// rounding in a long sum that cancels to ~0 is relative to its terms, not to
// its result.
const relFloor = 1e-6

// Diff locates the largest relative error between two tensors.
type Diff struct {
	MaxRelErr float64 // 0 when the tensors agree exactly; +Inf on a NaN or Inf mismatch
	Output    int     // CompareAll: which output; 0 for Compare
	// Compared counts the positions where want is finite. The others (a
	// NaN or an infinity) say of got only that it matches: where there is
	// none, the comparison says nothing of the function either computes.
	Compared  int
	Index     []int   // where; nil when MaxRelErr is 0
	Want, Got float64 // the two values there
}

func (d Diff) String() string {
	if d.Index == nil {
		return "equal"
	}
	return fmt.Sprintf("output %d at %v: want %g, got %g (relative error %.3g)", d.Output, d.Index, d.Want, d.Got, d.MaxRelErr)
}

// Compare returns the largest relative error between want and got, which
// must have the same shape. The relative error of an element is
//
//	|w - g| / max(|w|, |g|, floor),  floor = 1e-6 · max |want|
//
// (max over want's finite elements), and 0 when w and g are both 0. NaN in
// the same position on both sides agrees (sqrt or log of a negative input
// on both sides); NaN on one side only, or an infinity the other side does
// not match, is an error of +Inf. When several elements share the largest
// error Diff names the first.
func Compare(want, got *Tensor) (Diff, error) {
	if err := want.check(); err != nil {
		return Diff{}, fmt.Errorf("interp: compare: want: %w", err)
	}
	if err := got.check(); err != nil {
		return Diff{}, fmt.Errorf("interp: compare: got: %w", err)
	}
	if want.Shape != got.Shape {
		return Diff{}, fmt.Errorf("interp: compare: shapes differ: want %v, got %v", want.Shape, got.Shape)
	}
	scale := 0.0
	for _, w := range want.Data {
		if a := math.Abs(w); a > scale && !math.IsInf(a, 0) {
			scale = a
		}
	}
	floor := relFloor * scale
	var d Diff
	worst := -1
	for i, w := range want.Data {
		if !math.IsNaN(w) && !math.IsInf(w, 0) {
			d.Compared++
		}
		if e := relErr(w, got.Data[i], floor); e > d.MaxRelErr {
			d.MaxRelErr, worst = e, i
		}
	}
	if worst >= 0 {
		d.Index, d.Want, d.Got = want.Shape.Coords(worst), want.Data[worst], got.Data[worst]
	}
	return d, nil
}

func relErr(w, g, floor float64) float64 {
	switch wn, gn := math.IsNaN(w), math.IsNaN(g); {
	case wn && gn:
		return 0
	case wn || gn:
		return math.Inf(1)
	}
	if w == g { // both zero, or the same infinity
		return 0
	}
	diff := math.Abs(w - g)
	if math.IsInf(diff, 0) {
		return math.Inf(1)
	}
	return diff / max(math.Abs(w), math.Abs(g), floor)
}

// CompareAll compares each want[k] with got[k] and returns the worst Diff,
// with Diff.Output naming its k.
func CompareAll(want, got []*Tensor) (Diff, error) {
	if len(want) != len(got) {
		return Diff{}, fmt.Errorf("interp: compare: %d outputs, want %d", len(got), len(want))
	}
	var worst Diff
	for k := range want {
		d, err := Compare(want[k], got[k])
		if err != nil {
			return Diff{}, fmt.Errorf("output %d: %w", k, err)
		}
		if d.MaxRelErr > worst.MaxRelErr {
			d.Output = k
			worst = d
		}
	}
	return worst, nil
}
