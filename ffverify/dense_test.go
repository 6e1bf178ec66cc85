package ffverify

import (
	"fmt"
	"testing"

	"github.com/mirage-go/mirage/ugraph"
)

// naiveMatmul is matmul by definition, one product at a time.
func naiveMatmul(dst, a, b *tensor) {
	r := a.shape.Rank()
	m, k, n := a.shape.Dim(r-2), a.shape.Dim(r-1), b.shape.Dim(r-1)
	for batch := range len(a.v) / (m * k) {
		for i := range m {
			for j := range n {
				var s elem
				for l := range k {
					s = s.add(a.v[batch*m*k+i*k+l].mul(b.v[batch*k*n+l*n+j]))
				}
				dst.v[batch*m*n+i*n+j] = s
			}
		}
	}
}

// The blocked loops compute every product, whatever the shape's
// remainders against the blocks and the fold of four.
func TestMatmulMatchesTheDefinition(t *testing.T) {
	seed := uint64(1)
	for _, s := range [][4]int{ // batch, m, k, n
		{1, 1, 1, 1}, {1, 3, 5, 7}, {2, 16, 64, 300}, {1, 70, 9, 513}, {3, 5, 130, 33}, {1, 129, 7, 260},
	} {
		b, m, k, n := s[0], s[1], s[2], s[3]
		x, y := randomTensor(ugraph.MustShape(b, m, k), seed), randomTensor(ugraph.MustShape(b, k, n), seed+1)
		seed += 2
		got, want := newTensor(ugraph.MustShape(b, m, n)), newTensor(ugraph.MustShape(b, m, n))
		for i := range got.v {
			got.v[i] = elem{1, 1} // matmul overwrites dst
		}
		matmul(got, x, y, nil)
		naiveMatmul(want, x, y)
		for i := range want.v {
			if got.v[i] != want.v[i] {
				t.Fatalf("%v: element %d is %v, want %v", s, i, got.v[i], want.v[i])
			}
		}
	}
}

// matmulInput, which computes its right operand a panel at a time, gives
// the product of the input materialised, at remainders against the panel's
// rows and columns and the fold of four, batched too.
func TestMatmulInputMatchesTheMaterialisedInput(t *testing.T) {
	seed := uint64(7)
	for _, s := range [][4]int{ // batch, m, k, n
		{1, 1, 1, 1}, {1, 3, 5, 7}, {1, 8, genRows, matmulCols}, {1, 8, genRows + 3, matmulCols + 1},
		{2, 16, 2*genRows + 1, 300}, {3, 5, 130, 33}, {1, 2, 7, 3*matmulCols + 5},
	} {
		b, m, k, n := s[0], s[1], s[2], s[3]
		x := randomTensor(ugraph.MustShape(b, m, k), seed)
		ys, key := ugraph.MustShape(b, k, n), seed+1
		seed += 2
		y := newTensor(ys)
		fillUniformGeneric(y.v, key)
		got, want := newTensor(ugraph.MustShape(b, m, n)), newTensor(ugraph.MustShape(b, m, n))
		for i := range got.v {
			got.v[i] = elem{1, 1} // matmulInput overwrites dst
		}
		matmulInput(got, x, ys, key, nil)
		naiveMatmul(want, x, y)
		for i := range want.v {
			if got.v[i] != want.v[i] {
				t.Fatalf("%v: element %d is %v, want %v", s, i, got.v[i], want.v[i])
			}
		}
	}
}

// BenchmarkMatmul is a verifier's matmuls at LLaMA-7B decode shapes (16
// tokens by hidden 4096 by MLP 11008) and at attention's.
func BenchmarkMatmul(bb *testing.B) {
	for _, s := range [][3]int{{16, 4096, 11008}, {16, 11008, 4096}, {256, 64, 4096}, {256, 4096, 64}} {
		bb.Run(fmt.Sprintf("%dx%dx%d", s[0], s[1], s[2]), func(bb *testing.B) {
			x, y := randomTensor(ugraph.MustShape(s[0], s[1]), 1), randomTensor(ugraph.MustShape(s[1], s[2]), 2)
			dst := newTensor(ugraph.MustShape(s[0], s[2]))
			for bb.Loop() {
				matmul(dst, x, y, nil)
			}
		})
	}
}
