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
		matmul(dst, x, y, nil) // a block's tile: small
	case ugraph.ClassReduction:
		// reduction and reduction_to_dimx differ only in the result's extent
		// along the dim (1 or reduction_dimx), which dst already has.
		reduce(dst, x, f.attr.Dim)
	case ugraph.ClassNorm:
		rmsNorm(dst, x, f)
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
// uint64, see modP). check, if not nil, is called before each column
// panel: a stopped check (errStopped) stops a product of minutes (a
// prefill's LM head) within a panel's time.
func matmul(dst, a, b *tensor, check func()) {
	r := a.shape.Rank()
	m, k, n := a.shape.Dim(r-2), a.shape.Dim(r-1), b.shape.Dim(r-1)
	for batch := range len(a.v) / (m * k) {
		A := a.v[batch*m*k:][:m*k]
		B := b.v[batch*k*n:][:k*n]
		C := dst.v[batch*m*n:][:m*n]
		for j0 := 0; j0 < n; j0 += matmulCols {
			if check != nil {
				check()
			}
			w := min(matmulCols, n-j0)
			clearPanel(C, n, j0, w)
			panelAdd(C, n, j0, w, A, k, 0, k, B[j0:], n)
		}
	}
}

// clearPanel zeroes columns [j0, j0+w) of C, of n columns: a product
// zeroes its output a panel at a time, as it computes it, not all at once
// first (a prefill's logits are gigabytes of fresh pages: touching them
// took 20 s on a VM, with no check in between).
func clearPanel(C []elem, n, j0, w int) {
	for i := j0; i < len(C); i += n {
		clear(C[i:][:w])
	}
}

// matmulInput is matmul with b the input of shape bs whose elements are
// uniform(key + position·inputStride) (trial.input): it computes b a panel
// at a time as the product reads it (genRows rows of matmulCols columns,
// in cache), so a weight matrix is never stored whole. Its elements are
// hashed once either way; what this saves is the memory, and the time of
// touching it fresh (page faults: a 70B layer's two weights are 3.8 GB a
// draw). check is called before each panel, as in matmul.
func matmulInput(dst, a *tensor, bs ugraph.Shape, key uint64, check func()) {
	r := a.shape.Rank()
	m, k, n := a.shape.Dim(r-2), a.shape.Dim(r-1), bs.Dim(r-1)
	panel := make([]elem, panelElems(k, n))
	for batch := range len(a.v) / (m * k) {
		A := a.v[batch*m*k:][:m*k]
		C := dst.v[batch*m*n:][:m*n]
		for j0 := 0; j0 < n; j0 += matmulCols {
			w := min(matmulCols, n-j0)
			clearPanel(C, n, j0, w)
			for l0 := 0; l0 < k; l0 += genRows {
				if check != nil {
					check()
				}
				l1 := min(l0+genRows, k)
				for l := l0; l < l1; l++ {
					at := uint64((batch*k+l)*n + j0)
					fillUniform(panel[(l-l0)*w:][:w], key+at*inputStride)
				}
				panelAdd(C, n, j0, w, A, k, l0, l1, panel, w)
			}
		}
	}
}

// genRows is the rows of b's panel that matmulInput computes at a time:
// 64 rows of matmulCols columns, 128 KiB.
const genRows = 64

// panelElems is the size of matmulInput's panel for a b of k rows and n
// columns.
func panelElems(k, n int) int { return min(genRows, k) * min(matmulCols, n) }

// panelAdd adds A[:, l0:l1]·P to C[:, j0:j0+w], for C of n columns and A
// of k, both row-major, where row l of the panel P starts at P[(l-l0)·ld].
func panelAdd(C []elem, n, j0, w int, A []elem, k, l0, l1 int, P []elem, ld int) {
	m := len(A) / k
	l := l0
	for ; l+4 <= l1; l += 4 {
		p := P[(l-l0)*ld:]
		b0 := p[:w]
		b1 := p[ld:][:w]
		b2 := p[2*ld:][:w]
		b3 := p[3*ld:][:w]
		for i := range m {
			mulAdd4(C[i*n+j0:][:w], b0, b1, b2, b3, (*[4]elem)(A[i*k+l:]))
		}
	}
	for ; l < l1; l++ {
		bl := P[(l-l0)*ld:][:w]
		for i := range m {
			c := C[i*n+j0:][:w]
			al := A[i*k+l]
			for j, cj := range c {
				c[j] = cj.add(al.mul(bl[j]))
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
func rmsNorm(dst, x *tensor, f *fn) {
	_, n, inner := layout.Split(x.shape, f.attr.Dim)
	m := n * inner
	for o := 0; o < len(x.v); o += m {
		row := x.v[o:][:m]
		inv := f.rms(sumSquares(row), m).inv()
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
