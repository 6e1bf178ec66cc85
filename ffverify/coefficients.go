package ffverify

import (
	"math"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// The model keeps integers only modulo P·Q: a graph that sums one term
// 1 + P·Q times is, over the fields, the graph that takes it once (doc.go,
// "The error bound"). Coefficients bounds how large a graph's integers
// can get, so that a caller can tell when that cannot happen.
//
// Read each value as a quotient N/D of polynomials with integer
// coefficients in the model's variables (the inputs, the images φ(p) of
// the constants' primes, and one variable per distinct value of an opaque
// op, an exp or a root). The L1 norm of a polynomial (the sum of its
// coefficients' absolute values) bounds every coefficient, is at most the
// sum for a sum and the product for a product, and is 1 for a variable or
// a monomial ±∏φ(p)ᵉ. Two graphs' values N/D and N'/D' then differ by
// (N·D' - N'·D)/(D·D'), whose numerator's coefficients are at most
// |N|·|D'| + |N'|·|D|: below P·Q, a difference in the reals is a nonzero
// polynomial modulo P or modulo Q, and Schwartz–Zippel applies to it.
// Exact checks that for every pair of values, outputs and the arguments
// of opaque ops alike.
//
// The bound is generous (a sum over K terms counts K even where its terms
// are distinct monomials), so a deep stack of matmuls passes it where the
// fields are in fact exact; a caller then checks magnitudes another way
// (package check evaluates once in float64).

// Coefficients is the largest L1 norm, in log2, of the numerator (Num)
// and of the denominator (Den) of any value a graph computes.
type Coefficients struct{ Num, Den float64 }

// log2PQ is log2(P·Q), a little under 61.
var log2PQ = math.Log2(float64(modP) * float64(modQ))

// Exact reports whether every coefficient of the difference of a value of
// a graph bounded by c and one bounded by d is below P·Q in magnitude, so
// that the fields see every difference in the reals (the margin of one
// bit covers the rounding of the logarithms).
func (c Coefficients) Exact(d Coefficients) bool {
	return logAdd(c.Num+d.Den, d.Num+c.Den) < log2PQ-1
}

// CoefficientsOf bounds the coefficients of every value g computes.
func CoefficientsOf(g *kernel.Graph) Coefficients {
	var b bounder
	ts := make([]magnitude, len(g.Tensors))
	for i := range g.Ops {
		op := &g.Ops[i]
		in := make([]magnitude, len(op.In))
		shapes := make([]ugraph.Shape, len(op.In))
		for k, t := range op.In {
			in[k], shapes[k] = ts[t], g.Tensors[t].Shape
		}
		switch op.Kind {
		case ugraph.OpInput:
			for _, t := range op.Out {
				ts[t] = b.see(magnitude{fixed: allDims})
			}
		case ugraph.OpCustomized:
			outs := b.blockGraph(op.Block, in)
			for k, t := range op.Out {
				ts[t] = b.see(outs[k])
			}
		default:
			ts[op.Out[0]] = b.see(b.op(op.Kind, op.Attr, in, shapes, 0))
		}
	}
	return b.max
}

// magnitude bounds one tensor's or tile's elements: log2 of the L1 norms
// of a numerator and a denominator. fixed has bit i set where the
// denominator is one polynomial along dim i (kernel level; 0 at block
// level, where a tile is part of a dim), so that a sum along i keeps it
// rather than multiplying the terms' denominators.
type magnitude struct {
	num, den float64
	fixed    uint64
}

const allDims = ^uint64(0)

// bounder walks a graph's ops, keeping the largest magnitudes seen.
type bounder struct{ max Coefficients }

func (b *bounder) see(m magnitude) magnitude {
	if m.den == 0 { // a monomial is one polynomial along every dim that matters
		m.fixed = allDims
	}
	b.max.Num, b.max.Den = max(b.max.Num, m.num), max(b.max.Den, m.den)
	return m
}

// fresh is a variable: a value of an opaque op, an exp or a root. Its
// argument has been seen.
var fresh = magnitude{fixed: allDims}

// sum bounds Σ of k terms bounded by m, along a dim where the denominator
// is one polynomial (same) or may differ term by term, when the product
// of the k denominators is the common one.
func sum(m magnitude, k int, same bool) magnitude {
	if k <= 1 {
		return m
	}
	lk := math.Log2(float64(max(k, 1)))
	if same || m.den == 0 {
		return magnitude{num: m.num + lk, den: m.den, fixed: m.fixed}
	}
	return magnitude{num: m.num + lk + float64(k-1)*m.den, den: float64(k) * m.den}
}

// logAdd is log2(2^a + 2^b).
func logAdd(a, b float64) float64 {
	hi, lo := max(a, b), min(a, b)
	if math.IsInf(hi, 1) {
		return hi
	}
	return hi + math.Log2(1+math.Exp2(lo-hi))
}

func bit(d int) uint64 { return 1 << uint(d) }

// constantAlong is the dims along which a value of shape s is the same
// everywhere: its size-1 dims, which a binary op broadcasts.
func constantAlong(s ugraph.Shape) uint64 {
	var m uint64
	for i := range s.Rank() {
		if s.Dim(i) == 1 {
			m |= bit(i)
		}
	}
	return m
}

// op bounds the result of an op of kind k with attributes a on operands
// in of the given shapes, at kernel or block level; dimx is the block
// graph's reduction_dimx (kernel level: 0, which counts a whole dim).
func (b *bounder) op(k ugraph.OpKind, a ugraph.Attr, in []magnitude, shapes []ugraph.Shape, dimx int) magnitude {
	info := k.Info()
	switch {
	case info.Elem.Opaque, k == ugraph.OpExp, k == ugraph.OpSqrt:
		return fresh
	}
	switch k {
	case ugraph.OpMulScalar:
		return in[0] // a monomial ±∏φ(p)ᵉ over another
	case ugraph.OpSquare:
		x := in[0]
		return magnitude{num: 2 * x.num, den: 2 * x.den, fixed: x.fixed}
	case ugraph.OpAdd, ugraph.OpSub, ugraph.OpMul, ugraph.OpDiv:
		x, y := in[0], in[1]
		// A dim along which an operand is broadcast, or its denominator
		// one polynomial, keeps the result's denominator one polynomial.
		fx, fy := x.fixed|constantAlong(shapes[0]), y.fixed|constantAlong(shapes[1])
		switch k {
		case ugraph.OpMul:
			return magnitude{num: x.num + y.num, den: x.den + y.den, fixed: fx & fy}
		case ugraph.OpDiv: // (Nx·Dy)/(Dx·Ny): y's numerator joins the denominator
			return magnitude{num: x.num + y.den, den: x.den + y.num, fixed: fx & constantAlong(shapes[1])}
		}
		if x.den == 0 && y.den == 0 {
			return magnitude{num: logAdd(x.num, y.num), fixed: allDims}
		}
		return magnitude{num: logAdd(x.num+y.den, y.num+x.den), den: x.den + y.den, fixed: fx & fy}
	case ugraph.OpMatmul:
		x, y := in[0], in[1]
		r := shapes[0].Rank()
		kd := shapes[0].Dim(r - 1)
		term := magnitude{num: x.num + y.num, den: x.den + y.den}
		s := sum(term, kd, x.fixed&bit(r-1) != 0 && y.fixed&bit(r-2) != 0)
		// The result's rows come from x's, its columns from y's.
		s.fixed = x.fixed & y.fixed &^ (bit(r-1) | bit(r-2))
		s.fixed |= x.fixed & bit(r-2)
		if y.fixed&bit(r-1) != 0 {
			s.fixed |= bit(r - 1)
		}
		return s
	case ugraph.OpReduction:
		x := in[0]
		return keepFixed(sum(x, shapes[0].Dim(a.Dim), x.fixed&bit(a.Dim) != 0), x.fixed)
	case ugraph.OpReductionToDimx:
		x := in[0]
		return keepFixed(sum(x, shapes[0].Dim(a.Dim)/max(dimx, 1), x.fixed&bit(a.Dim) != 0), x.fixed)
	case ugraph.OpRMSNorm:
		// x·inv(root(Σx²·inv(φ(n)))): the root is a variable, whose
		// argument is a value to see.
		x, s := in[0], shapes[0]
		n, same := 1, true
		for d := a.Dim; d < s.Rank(); d++ {
			n *= s.Dim(d)
			same = same && x.fixed&bit(d) != 0
		}
		b.see(sum(magnitude{num: 2 * x.num, den: 2 * x.den}, n, same))
		// The root is one variable along the normalized dims, another
		// row by row.
		r := x
		r.fixed &= constantAlong(s) | (allDims << uint(a.Dim))
		return r
	case ugraph.OpConcat:
		x, y := in[0], in[1]
		return magnitude{num: max(x.num, y.num), den: max(x.den, y.den), fixed: x.fixed & y.fixed &^ bit(a.Dim)}
	}
	// An op this does not know bounds nothing: the caller checks
	// magnitudes another way.
	return magnitude{num: math.Inf(1), den: math.Inf(1)}
}

// keepFixed is m with the fixed dims of its operand.
func keepFixed(m magnitude, fixed uint64) magnitude {
	if m.den == 0 {
		m.fixed = allDims
	} else {
		m.fixed = fixed
	}
	return m
}

// blockGraph bounds the tiles of g, whose k-th input reads a device
// tensor bounded by in[k], and returns its outputs' bounds in order. A
// tile is part of a dim, so no denominator counts as one polynomial along
// a dim, but one that is a monomial.
func (b *bounder) blockGraph(g *block.Graph, in []magnitude) []magnitude {
	ts := make([]magnitude, len(g.Tensors))
	varies := g.Varies()
	var outs []magnitude
	next := 0
	tile := func(m magnitude) magnitude {
		if m.den == 0 {
			m.fixed = allDims
		} else {
			m.fixed = 0
		}
		return b.see(m)
	}
	for i := range g.Ops {
		op := &g.Ops[i]
		switch op.Kind {
		case ugraph.OpInput:
			m := magnitude{num: math.Inf(1), den: math.Inf(1)}
			if next < len(in) {
				m = in[next]
			}
			next++
			ts[op.Out] = tile(m)
			continue
		case ugraph.OpOutput:
			outs = append(outs, ts[op.In[0]])
			continue
		}
		operands := op.Operands()
		ms := make([]magnitude, len(operands))
		shapes := make([]ugraph.Shape, len(operands))
		for k, t := range operands {
			ms[k], shapes[k] = ts[t], g.Tensors[t].Shape
		}
		if op.Kind != ugraph.OpForloopAccum {
			ts[op.Out] = tile(b.op(op.Kind, op.Attr, ms, shapes, g.ReductionDimx))
			continue
		}
		// An accumulator sums its tile over the F iterations, where the
		// loop varies it; one that does not vary is summed once and
		// scaled by φ(F), a monomial (DESIGN §4).
		x, s := ms[0], shapes[0]
		iterations := 1
		if varies[operands[0]] {
			iterations = g.ForloopRange
		}
		last := s.Dim(s.Rank() - 1)
		switch op.Attr.Accum {
		case ugraph.AccumNone:
			ts[op.Out] = tile(sum(x, iterations, false))
		case ugraph.AccumSum, ugraph.AccumMean:
			ts[op.Out] = tile(sum(x, iterations*last, false))
		case ugraph.AccumSumToDimx:
			ts[op.Out] = tile(sum(x, iterations*last/max(g.ReductionDimx, 1), false))
		case ugraph.AccumRMS:
			b.see(sum(magnitude{num: 2 * x.num, den: 2 * x.den}, iterations*last, false))
			ts[op.Out] = tile(fresh)
		default:
			ts[op.Out] = tile(magnitude{num: math.Inf(1), den: math.Inf(1)})
		}
	}
	return outs
}
