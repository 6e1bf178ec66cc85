package interp

import (
	"fmt"
	"math"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/layout"
)

// This file holds the math of every operator, written once for both levels:
// a kernel op on device tensors and a block op on tiles call the same
// function. Each writes a result of a known shape into dst (which it fully
// overwrites), so the block level can reuse its tile buffers across blocks and
// iterations without allocating.

// eval computes the stateless op k with attributes a on x (and y, for the
// binary kinds) into dst, whose shape is the op's result shape. The caller
// has checked the shapes against the op's shape rule.
func eval(k ugraph.OpKind, a ugraph.Attr, dst, x, y *Tensor) {
	switch k.Info().Class {
	case ugraph.ClassUnary:
		unary(dst, x, unaryFunc(k, a))
	case ugraph.ClassBinary:
		binary(dst, x, y, binaryFunc(k))
	case ugraph.ClassMatmul:
		matmul(dst, x, y)
	case ugraph.ClassReduction:
		// reduction and reduction_to_dimx differ only in the result's
		// extent along the dim, which dst already has.
		reduce(dst, x, a.Dim)
	case ugraph.ClassNorm:
		rmsNorm(dst, x, a.Dim)
	case ugraph.ClassConcat:
		concat(dst, x, y, a.Dim)
	default:
		panic(fmt.Sprintf("interp: %v is not a stateless op", k))
	}
}

// unaryFunc returns the scalar function of the element-wise unary op k
// with attributes a: its meaning on reals, from the op table.
func unaryFunc(k ugraph.OpKind, a ugraph.Attr) func(float64) float64 {
	f := realFunc(k)
	return func(x float64) float64 { return f(x, 0, a.Scalars) }
}

// binaryFunc returns the scalar function of the element-wise binary op k.
func binaryFunc(k ugraph.OpKind) func(x, y float64) float64 {
	f := realFunc(k)
	return func(x, y float64) float64 { return f(x, y, [2]float64{}) }
}

func realFunc(k ugraph.OpKind) ugraph.RealFunc {
	f := k.Info().Elem.Real
	if f == nil {
		panic(fmt.Sprintf("interp: %v is not element-wise", k))
	}
	return f
}

func unary(dst, x *Tensor, f func(float64) float64) {
	out := dst.Data[:len(x.Data)]
	for i, v := range x.Data {
		out[i] = f(v)
	}
}

// binary applies f element-wise, broadcasting through size-1 dims
// (layout.Binary).
func binary(dst, x, y *Tensor, f func(x, y float64) float64) {
	layout.Binary(dst.Data, dst.Shape, x.Data, x.Shape, y.Data, y.Shape, f)
}

// matmul computes dst[..,i,j] = Σ_l a[..,i,l]·b[..,l,j], batched over the
// equal leading dims. The i-l-j loop order streams rows of b and dst
// contiguously; four rows of b are folded per pass so that each element of
// dst is loaded and stored once per four multiply-adds.
func matmul(dst, a, b *Tensor) {
	r := a.Shape.Rank()
	m, k, n := a.Shape.Dim(r-2), a.Shape.Dim(r-1), b.Shape.Dim(r-1)
	clear(dst.Data)
	for p := range len(a.Data) / (m * k) {
		A := a.Data[p*m*k:][:m*k]
		B := b.Data[p*k*n:][:k*n]
		C := dst.Data[p*m*n:][:m*n]
		for i := range m {
			c := C[i*n:][:n]
			ai := A[i*k:][:k]
			l := 0
			for ; l+4 <= k; l += 4 {
				v0, v1, v2, v3 := ai[l], ai[l+1], ai[l+2], ai[l+3]
				b0 := B[l*n:][:len(c)]
				b1 := B[(l+1)*n:][:len(c)]
				b2 := B[(l+2)*n:][:len(c)]
				b3 := B[(l+3)*n:][:len(c)]
				for j := range c {
					c[j] += v0*b0[j] + v1*b1[j] + v2*b2[j] + v3*b3[j]
				}
			}
			for ; l < k; l++ {
				v, bl := ai[l], B[l*n:][:len(c)]
				for j := range c {
					c[j] += v * bl[j]
				}
			}
		}
	}
}

// reduce sums x along dim into dst, whose extent d along dim divides x's
// extent n there, in strided groups: dst[..,j,..] = Σ_t x[..,t·d+j,..].
// d = 1 is reduction; d = reduction_dimx is reduction_to_dimx, whose strided
// grouping sums, element-wise, partial results that blocks laid side by side.
func reduce(dst, x *Tensor, dim int) {
	outer, n, inner := layout.Split(x.Shape, dim)
	d := dst.Shape.Dim(dim)
	clear(dst.Data)
	for o := range outer {
		acc := dst.Data[o*d*inner:][:d*inner]
		for t := 0; t < n; t += d {
			src := x.Data[(o*n+t)*inner:][:len(acc)]
			for i, v := range src {
				acc[i] += v
			}
		}
	}
}

// rmsNorm computes x / sqrt(mean(x²)) with the mean over the dims from dim to
// the last. There is no epsilon in the denominator: the programs' rms_norm
// and the μGraphs that factor it (such as (X·W) / rms(X)) are equal only
// without one, and the interpreter is the ground truth for exact
// equivalence. An all-zero group therefore yields NaN (0/0).
func rmsNorm(dst, x *Tensor, dim int) {
	_, n, inner := layout.Split(x.Shape, dim)
	m := n * inner
	for o := 0; o < len(x.Data); o += m {
		row := x.Data[o:][:m]
		ss := 0.0
		for _, v := range row {
			ss += v * v
		}
		rms := math.Sqrt(ss / float64(m))
		out := dst.Data[o:][:m]
		for i, v := range row {
			out[i] = v / rms
		}
	}
}

// concat lays x and then y along dim into dst.
func concat(dst, x, y *Tensor, dim int) {
	var at [ugraph.MaxRank]int
	at[dim] = x.Shape.Dim(dim)
	copyBox(dst, layout.Dims{}, x, layout.Dims{}, layout.Pad(x.Shape))
	copyBox(dst, layout.PadIndex(at[:x.Shape.Rank()]), y, layout.Dims{}, layout.Pad(y.Shape))
}

// accumulate adds the tile x of one for-loop iteration into the accumulator
// acc. x's last dim (n) is folded in strided groups into acc's last dim d,
// which the accumulator kind fixed: acc[..,j] += Σ_t f(x[..,t·d+j]), with
// d = n for None, 1 for "sum", "mean" and "rms", reduction_dimx for
// "sum_todimx", and f(v) = v² for "rms", v otherwise.
func accumulate(acc, x *Tensor, square bool) {
	n, d := x.Shape.Last(), acc.Shape.Last()
	for o := range len(x.Data) / n {
		a := acc.Data[o*d:][:d]
		for t := 0; t < n; t += d {
			src := x.Data[o*n+t:][:len(a)]
			if square {
				for j, v := range src {
					a[j] += v * v
				}
			} else {
				for j, v := range src {
					a[j] += v
				}
			}
		}
	}
}

// finishAccum turns the sums of accumulate into the accumulator's value once
// the loop is over; count is the number of terms per element, F·n.
func finishAccum(k ugraph.Accum, acc *Tensor, count int) {
	c := float64(count)
	switch k {
	case ugraph.AccumMean:
		for i, v := range acc.Data {
			acc.Data[i] = v / c
		}
	case ugraph.AccumRMS:
		for i, v := range acc.Data {
			acc.Data[i] = math.Sqrt(v / c)
		}
	}
}
