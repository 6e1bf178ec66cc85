package ffverify

import (
	"fmt"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/layout"
)

// The dense evaluator computes every element of a result. Each function
// writes a result of known shape into dst (fully overwriting it), so the
// block level reuses its tile buffers across blocks and iterations.

// apply computes the stateless op f on x (and y, for binary kinds) into dst,
// whose shape is the op's result shape.
func apply(f *fn, dst, x, y *tensor) {
	switch f.kind.Info().Class {
	case ugraph.ClassUnary:
		for i, v := range x.v {
			dst.v[i] = f.unary(v)
		}
	case ugraph.ClassBinary:
		if f.kind == ugraph.OpDiv {
			// x/y = x·inv(y) (the model of div), with y's inverses taken
			// all at once.
			inv := &tensor{shape: y.shape, v: append([]elem(nil), y.v...)}
			invertAll(inv.v)
			binary(dst, x, inv, elem.mul)
			return
		}
		binary(dst, x, y, f.bin)
	case ugraph.ClassMatmul:
		matmul(dst, x, y)
	case ugraph.ClassReduction:
		// reduction and reduction_to_dimx differ only in the result's extent
		// along the dim (1 or reduction_dimx), which dst already has.
		reduce(dst, x, f.attr.Dim)
	case ugraph.ClassNorm:
		rmsNorm(dst, x, f.attr.Dim)
	case ugraph.ClassConcat:
		concat(dst, x, y, f.attr.Dim)
	default:
		panic(fmt.Sprintf("ffverify: %v is not a stateless op", f.kind))
	}
}

// binary applies f element-wise, broadcasting through size-1 dims.
func binary(dst, x, y *tensor, f func(a, b elem) elem) {
	layout.Binary(dst.v, dst.shape, x.v, x.shape, y.v, y.shape, f)
}

// matmul computes dst[..,i,j] = Σ_l a[..,i,l]·b[..,l,j], batched over the
// leading dims. The i-l-j order streams rows of b and dst; four rows of b
// are folded per pass, and one reduction per residue follows four
// multiply-adds (a reduced residue plus four products of residues fits in a
// uint64, see modP).
func matmul(dst, a, b *tensor) {
	r := a.shape.Rank()
	m, k, n := a.shape.Dim(r-2), a.shape.Dim(r-1), b.shape.Dim(r-1)
	clear(dst.v)
	for batch := range len(a.v) / (m * k) {
		A := a.v[batch*m*k:][:m*k]
		B := b.v[batch*k*n:][:k*n]
		C := dst.v[batch*m*n:][:m*n]
		for j0 := 0; j0 < n; j0 += matmulCols {
			j1 := min(j0+matmulCols, n)
			l := 0
			for ; l+4 <= k; l += 4 {
				b0 := B[l*n+j0 : l*n+j1]
				b1 := B[(l+1)*n+j0:][:len(b0)]
				b2 := B[(l+2)*n+j0:][:len(b0)]
				b3 := B[(l+3)*n+j0:][:len(b0)]
				for i := range m {
					mulAdd4(C[i*n+j0:][:len(b0)], b0, b1, b2, b3, (*[4]elem)(A[i*k+l:]))
				}
			}
			for ; l < k; l++ {
				bl := B[l*n+j0 : l*n+j1]
				for i := range m {
					c := C[i*n+j0:][:len(bl)]
					al := A[i*k+l]
					for j, cj := range c {
						c[j] = cj.add(al.mul(bl[j]))
					}
				}
			}
		}
	}
}

// matmulCols is the width of the column panels matmul works on: a panel
// of dst's rows (16 rows of 256 8-byte elements, 32 KiB) stays in cache
// while every row of b's panel passes once, so b, the large operand of a
// skinny product, is read from memory once instead of once per row of a.
const matmulCols = 256

// reduce sums x along dim into dst, whose extent d there divides x's extent
// n, in strided groups: dst[..,j,..] = Σ_t x[..,t·d+j,..]. d = 1 is
// reduction; d = reduction_dimx is reduction_to_dimx.
func reduce(dst, x *tensor, dim int) {
	outer, n, inner := layout.Split(x.shape, dim)
	d := dst.shape.Dim(dim)
	clear(dst.v)
	for o := range outer {
		acc := dst.v[o*d*inner:][:d*inner]
		for t := 0; t < n; t += d {
			src := x.v[(o*n+t)*inner:][:len(acc)]
			for i, v := range src {
				acc[i] = acc[i].add(v)
			}
		}
	}
}

// rmsNorm computes x / rms(x) with the rms over the dims from dim to the
// last (no epsilon, as in interp).
func rmsNorm(dst, x *tensor, dim int) {
	_, n, inner := layout.Split(x.shape, dim)
	m := n * inner
	for o := 0; o < len(x.v); o += m {
		row := x.v[o:][:m]
		inv := rms(sumSquares(row), m).inv()
		out := dst.v[o:][:m]
		for i, v := range row {
			out[i] = v.mul(inv)
		}
	}
}

func sumSquares(xs []elem) elem {
	var s elem
	for _, v := range xs {
		s = s.add(v.mul(v))
	}
	return s
}

// concat lays x and then y along dim into dst.
func concat(dst, x, y *tensor, dim int) {
	var at layout.Dims
	at[layout.PadDim(dim, x.shape.Rank())] = x.shape.Dim(dim)
	copyBox(dst, layout.Dims{}, x, layout.Dims{}, layout.Pad(x.shape))
	copyBox(dst, at, y, layout.Dims{}, layout.Pad(y.shape))
}

// accumulate adds the tile x of one for-loop iteration into the running sum
// acc, folding x's last dim (n) in strided groups into acc's last dim d
// (which the accumulator kind fixed): acc[..,j] += Σ_t f(x[..,t·d+j]) with
// f(v) = v² for "rms", v otherwise.
func accumulate(acc, x *tensor, square bool) {
	n, d := x.shape.Last(), acc.shape.Last()
	for o := range len(x.v) / n {
		a := acc.v[o*d:][:d]
		for t := 0; t < n; t += d {
			for j, v := range x.v[o*n+t:][:d] {
				if square {
					v = v.mul(v)
				}
				a[j] = a[j].add(v)
			}
		}
	}
}
