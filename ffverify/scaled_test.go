package ffverify

import "testing"

// rowScales finds each row's multiple, a zero row's included, and refuses
// rows that are not multiples.
func TestRowScales(t *testing.T) {
	const k = 5
	b := make([]elem, 3*k)
	for i := range b {
		b[i] = uniform(uint64(i + 1))
	}
	b[k] = elem{} // row 1 starts with a zero: its scale comes from the next
	for j := 2 * k; j < 3*k; j++ {
		b[j] = elem{} // row 2 is zero
	}
	c := []elem{uniform(100), uniform(200), uniform(300)}
	a := make([]elem, len(b))
	for i := range a {
		a[i] = b[i].mul(c[i/k])
	}
	got, ok := rowScales(a, b, k)
	if !ok {
		t.Fatal("multiples refused")
	}
	for r := range 2 { // row 2's scale is any: it is zero either way
		if got[r] != c[r] {
			t.Errorf("row %d: scale %v, want %v", r, got[r], c[r])
		}
	}
	a[k+3] = a[k+3].add(uniform(7)) // one value off
	if _, ok := rowScales(a, b, k); ok {
		t.Error("a row that is no multiple accepted")
	}
	a[k+3] = b[k+3].mul(c[1])
	a[2*k+1] = uniform(9) // nonzero where b's row is zero
	if _, ok := rowScales(a, b, k); ok {
		t.Error("a nonzero row accepted as a multiple of a zero one")
	}
}
