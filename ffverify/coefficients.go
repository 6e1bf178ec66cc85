package ffverify

import (
	"math"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// The model keeps integers only modulo P·Q, and its exp only modulo Q: a
// graph that sums one term 1 + P·Q times is, over the fields, the graph
// that takes it once, and one that divides by a multiple of P divides by
// 0 there (doc.go, "The error bound"). Schwartz–Zippel needs, besides, a
// degree far below Q: x^(1+Q(Q-1)) is x at every point of both fields.
// Coefficients bounds a graph's integers and degrees, so that a caller can
// tell when none of that can happen.
//
// Read each value as a quotient N/D of polynomials with integer
// coefficients in the model's variables (the inputs, the images φ(p) of
// the constants' primes, and one variable per distinct value of an opaque
// op, an exp or a root). The L1 norm of a polynomial (the sum of its
// coefficients' absolute values) bounds every coefficient, is at most the
// sum for a sum and the product for a product, and is 1 for a variable or
// a monomial ±∏φ(p)ᵉ. Two values N/D and N'/D', of one graph or of two,
// differ by (N·D' - N'·D)/(D·D'), whose numerator's coefficients are at
// most |N|·|D'| + |N'|·|D|. Exact asks that this be below P·Q for every
// pair, outputs and the arguments of opaque ops and roots alike (a
// difference in the reals is then a nonzero polynomial modulo P or
// modulo Q); that every denominator's norm be below Q (so that none is 0
// modulo either prime), and every divisor's numerator nonzero (a single
// monomial, or positive coefficients only: a softmax's sum of exps; the
// norms bound from above and cannot tell Z - Z from Z + Z); that exp's
// arguments, and the sums of them that products of exps take (exp's
// P-residue is G^(x mod Q), a homomorphism), differ by less than Q; and
// that degrees stay below maxDegree.
//
// The bound is generous (a sum over K terms counts K even where its terms
// are distinct monomials): a deep stack of matmuls, or a sum over heads of
// softmaxes each with its own denominator, fails it where the fields are
// in fact exact; a caller then checks another way (package check
// evaluates once in float64).

// Coefficients bounds what a graph computes: the largest L1 norm, in
// log2, of the numerator (Num) and the denominator (Den) of any value an
// output depends on, and of any argument of an exp (ExpNum, ExpDen); and
// the largest total degree of a numerator or a denominator (Degree).
type Coefficients struct {
	Num, Den       float64
	ExpNum, ExpDen float64
	Degree         float64
}

// maxDegree bounds the total degree of a difference of two values: one
// draw misses a nonzero polynomial of degree D modulo Q with probability
// at most D/Q, below 6.2·10⁻⁵ here and 3.8·10⁻⁹ over DefaultTrials draws.
// Most graphs the search builds stay below degree 64; attention over keys
// normalized one by one has each key's root in its denominator (degree
// 4097 over 4096 keys).
const maxDegree = 1 << 16

var (
	log2P = math.Log2(modP)
	log2Q = math.Log2(modQ)
)

// Exact reports whether the fields see every difference in the reals
// between values of graphs bounded by c and d, each against itself and
// against the other. The margin of one bit covers the rounding of the
// logarithms.
func (c Coefficients) Exact(d Coefficients) bool {
	num, den := max(c.Num, d.Num), max(c.Den, d.Den)
	expNum, expDen := max(c.ExpNum, d.ExpNum), max(c.ExpDen, d.ExpDen)
	// A product of exps is, in their P-residues, G to the sum of their
	// arguments: two monomials of degree at most D in exps compare sums
	// of up to 2D arguments, over the product of their denominators.
	deg := max(c.Degree, d.Degree, 1)
	return num+den+1 < log2P+log2Q-1 &&
		den < log2Q-1 &&
		math.Log2(2*deg)+expNum+(2*deg-1)*expDen < log2Q-1 &&
		2*deg <= maxDegree
}

// CoefficientsOf bounds the values that g's outputs depend on.
func CoefficientsOf(g *kernel.Graph) Coefficients {
	live := make([]bool, len(g.Tensors))
	for _, t := range g.Outputs {
		live[t] = true
	}
	liveOp := make([]bool, len(g.Ops))
	for i := len(g.Ops) - 1; i >= 0; i-- {
		for _, t := range g.Ops[i].Out {
			liveOp[i] = liveOp[i] || live[t]
		}
		if liveOp[i] {
			for _, t := range g.Ops[i].In {
				live[t] = true
			}
		}
	}
	var b bounder
	ts := make([]magnitude, len(g.Tensors))
	for i := range g.Ops {
		op := &g.Ops[i]
		if !liveOp[i] {
			continue
		}
		in := make([]magnitude, len(op.In))
		shapes := make([]ugraph.Shape, len(op.In))
		for k, t := range op.In {
			in[k], shapes[k] = ts[t], g.Tensors[t].Shape
		}
		switch op.Kind {
		case ugraph.OpInput:
			for _, t := range op.Out {
				ts[t] = b.see(variable)
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

// magnitude bounds one tensor's or tile's elements, each a quotient N/D
// with D = C·M: C a polynomial, M a monomial (a root's variable, the
// images of a constant's primes). num and den are log2 of the L1 norms of
// N and C (M's is 1), numDeg and denDeg the total degrees of N and D.
// polyFixed and monoFixed have bit i set where C, and M, are one
// polynomial along dim i (of the tensor, or of the tile: a tile's dim is
// part of its tensor's), so that a sum along i keeps them rather than
// multiplying its terms'. iterFixed says that D is the same in every
// iteration of a block's for-loop.
type magnitude struct {
	num, den             float64
	numDeg, denDeg       float64
	polyFixed, monoFixed uint64
	iterFixed            bool
	// pos says that N and D have positive coefficients only, and mono
	// that N is one monomial: either makes N nonzero, which a divisor's
	// must be. (The norms bound from above, and the zero polynomial is
	// below every bound: X/(Z-Z) is 0 over the fields, inv(0) = 0, and
	// infinite in the reals.)
	pos, mono bool
}

const allDims = ^uint64(0)

// variable is an input's element, or the value of an opaque op, an exp
// or a root (whose argument has been seen).
var variable = magnitude{numDeg: 1, polyFixed: allDims, monoFixed: allDims, iterFixed: true, pos: true, mono: true}

// unbounded is the magnitude of what the rules do not know.
var unbounded = magnitude{num: math.Inf(1), den: math.Inf(1), numDeg: math.Inf(1), denDeg: math.Inf(1)}

// bounder walks a graph's ops, keeping the largest magnitudes seen.
type bounder struct{ max Coefficients }

func (b *bounder) see(m magnitude) magnitude {
	if m.den == 0 { // C is ±1
		m.polyFixed = allDims
	}
	if m.denDeg == 0 { // D is ±1
		m.polyFixed, m.monoFixed, m.iterFixed = allDims, allDims, true
	}
	b.max.Num, b.max.Den = max(b.max.Num, m.num), max(b.max.Den, m.den)
	b.max.Degree = max(b.max.Degree, m.numDeg, m.denDeg)
	return m
}

// seeExp sees the argument of an exp, whose P-residue reads it modulo Q.
func (b *bounder) seeExp(m magnitude) {
	b.see(m)
	b.max.ExpNum, b.max.ExpDen = max(b.max.ExpNum, m.num), max(b.max.ExpDen, m.den)
}

// sum bounds Σ of k terms bounded by m, whose denominators' parts C and M
// are one polynomial along the summed dim or across the summed
// iterations where polySame and monoSame, and otherwise multiply into the
// common denominator.
func sum(m magnitude, k int, polySame, monoSame bool) magnitude {
	if k <= 1 {
		return m
	}
	lk, fk := math.Log2(float64(k)), float64(k)
	r := m
	r.mono = false
	polySame = polySame || m.den == 0
	monoSame = monoSame || m.denDeg == 0
	r.num = m.num + lk
	if !polySame { // Σ N_i·∏_{j≠i} C_j over ∏ C_j
		r.num += (fk - 1) * m.den
		r.den = fk * m.den
	}
	if !(polySame && monoSame) {
		r.numDeg = m.numDeg + (fk-1)*m.denDeg
		r.denDeg = fk * m.denDeg
	}
	return r
}

// sumAlong is sum along dim d of a tensor or tile bounded by m.
func sumAlong(m magnitude, k, d int) magnitude {
	return sum(m, k, m.polyFixed&bit(d) != 0, m.monoFixed&bit(d) != 0)
}

// scale is m times a constant whose numerator and denominator have num
// and den prime factors (a count or a float's rational, each prime an
// image φ(p) of degree 1): a monomial, the same everywhere, which adds to
// the degrees alone.
func scale(m magnitude, num, den float64) magnitude {
	m.numDeg += num
	m.denDeg += den
	return m
}

// countDegree bounds the prime factors of the count n.
func countDegree(n int) float64 { return math.Log2(float64(max(n, 1))) }

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

// square bounds x² (before anything divides it).
func square(x magnitude) magnitude {
	x.num, x.den, x.numDeg, x.denDeg = 2*x.num, 2*x.den, 2*x.numDeg, 2*x.denDeg
	x.pos = x.pos || x.mono && x.den == 0 // (±m)² over (±m')² is positive
	return x
}

// times bounds x·y, elementwise: each part of the denominator is one
// polynomial along a dim where it is in both operands, or where an operand
// is broadcast (bx, by: its constantAlong).
func times(x, y magnitude, bx, by uint64) magnitude {
	return magnitude{num: x.num + y.num, den: x.den + y.den, numDeg: x.numDeg + y.numDeg, denDeg: x.denDeg + y.denDeg,
		polyFixed: (x.polyFixed | bx) & (y.polyFixed | by), monoFixed: (x.monoFixed | bx) & (y.monoFixed | by),
		iterFixed: x.iterFixed && y.iterFixed, pos: x.pos && y.pos, mono: x.mono && y.mono}
}

// op bounds the result of an op of kind k with attributes a on operands
// in of the given shapes, at kernel or block level; dimx is the block
// graph's reduction_dimx (kernel level: 0, which counts a whole dim).
func (b *bounder) op(k ugraph.OpKind, a ugraph.Attr, in []magnitude, shapes []ugraph.Shape, dimx int) magnitude {
	switch {
	case k == ugraph.OpExp:
		b.seeExp(in[0])
		return variable
	case k.Info().Elem.Opaque, k == ugraph.OpSqrt:
		return variable
	}
	switch k {
	case ugraph.OpMulScalar:
		f := scalarFactorsOf(a.Scalars[0]) // ±∏φ(p)ᵉ over ∏φ(p)ᵉ
		r := scale(in[0], exponents(f.num), exponents(f.den))
		r.pos = r.pos && !f.neg && !f.zero
		r.mono = r.mono && !f.zero
		return r
	case ugraph.OpSquare:
		return square(in[0])
	case ugraph.OpAdd, ugraph.OpSub, ugraph.OpMul, ugraph.OpDiv:
		x, y := in[0], in[1]
		bx, by := constantAlong(shapes[0]), constantAlong(shapes[1])
		switch k {
		case ugraph.OpMul:
			return times(x, y, bx, by)
		case ugraph.OpDiv:
			if !(y.pos || y.mono) { // a divisor that may be 0
				return unbounded
			}
			// (Nx/Dx)/(Ny/Dy) = (Nx·Dy)/(Dx·Ny): y's numerator joins x's
			// denominator, as a monomial where it is one (L1 norm 1).
			r := times(x, magnitude{num: y.den, numDeg: y.denDeg, polyFixed: allDims, monoFixed: allDims, iterFixed: y.iterFixed,
				pos: y.pos, mono: y.den == 0}, bx, by)
			r.denDeg += y.numDeg
			r.iterFixed = x.iterFixed && y.iterFixed
			if y.num == 0 {
				r.monoFixed &= by
			} else {
				r.den += y.num
				r.polyFixed &= by
			}
			return r
		}
		// (Nx·Dy ± Ny·Dx)/(Dx·Dy)
		r := times(magnitude{polyFixed: x.polyFixed, monoFixed: x.monoFixed, den: x.den, denDeg: x.denDeg, iterFixed: x.iterFixed},
			magnitude{polyFixed: y.polyFixed, monoFixed: y.monoFixed, den: y.den, denDeg: y.denDeg, iterFixed: y.iterFixed}, bx, by)
		r.num = logAdd(x.num+y.den, y.num+x.den)
		r.numDeg = max(x.numDeg+y.denDeg, y.numDeg+x.denDeg)
		r.pos = k == ugraph.OpAdd && x.pos && y.pos
		r.mono = false
		return r
	case ugraph.OpMatmul:
		x, y := in[0], in[1]
		r := shapes[0].Rank()
		rows, cols, inner := bit(r-2), bit(r-1), bit(r-1)
		// x[.., m, k]·y[.., k, n] summed over k: a part of the term's
		// denominator is one polynomial along k where it is in x along
		// x's last dim and in y along y's rows.
		term := times(x, y, 0, 0)
		s := sum(term, shapes[0].Dim(r-1), x.polyFixed&inner != 0 && y.polyFixed&rows != 0, x.monoFixed&inner != 0 && y.monoFixed&rows != 0)
		// The result's rows come from x's, its columns from y's.
		mapped := func(fx, fy uint64) uint64 {
			f := fx & fy &^ (rows | cols)
			f |= fx & rows
			if fy&cols != 0 {
				f |= cols
			}
			return f
		}
		s.polyFixed, s.monoFixed = mapped(x.polyFixed, y.polyFixed), mapped(x.monoFixed, y.monoFixed)
		return s
	case ugraph.OpReduction:
		return sumAlong(in[0], shapes[0].Dim(a.Dim), a.Dim)
	case ugraph.OpReductionToDimx:
		return sumAlong(in[0], shapes[0].Dim(a.Dim)/max(dimx, 1), a.Dim)
	case ugraph.OpRMSNorm:
		// x·inv(root(Σx²·inv(φ(n)))): the root is a variable, one along
		// the normalized dims and another row by row, whose argument is a
		// value to see.
		x, s := in[0], shapes[0]
		n, rest := 1, uint64(0)
		for d := a.Dim; d < s.Rank(); d++ {
			n *= s.Dim(d)
			rest |= bit(d)
		}
		sq := square(x)
		arg := sum(sq, n, x.polyFixed&rest == rest, x.monoFixed&rest == rest)
		b.see(scale(arg, 0, countDegree(n)))
		r := x
		r.denDeg++
		r.monoFixed &= constantAlong(s) | rest
		return r
	case ugraph.OpConcat:
		x, y := in[0], in[1]
		return magnitude{num: max(x.num, y.num), den: max(x.den, y.den), numDeg: max(x.numDeg, y.numDeg), denDeg: max(x.denDeg, y.denDeg),
			polyFixed: x.polyFixed & y.polyFixed &^ bit(a.Dim), monoFixed: x.monoFixed & y.monoFixed &^ bit(a.Dim),
			iterFixed: x.iterFixed && y.iterFixed, pos: x.pos && y.pos, mono: x.mono && y.mono}
	}
	// An op the rules do not know bounds nothing: the caller checks
	// another way.
	return unbounded
}

// joinsDenominator says which operand of an op of kind k on operands in
// has its value join the result's denominator (op's rule, for the block
// level's bookkeeping across iterations and blocks), and whether into the
// monomial part M: a divisor's numerator, into M where it is one monomial,
// and the root of rms_norm's rows, a variable.
func joinsDenominator(k ugraph.OpKind, in []magnitude) (operand int, mono, ok bool) {
	switch k {
	case ugraph.OpDiv:
		return 1, in[1].num == 0, true
	case ugraph.OpRMSNorm:
		return 0, true, true
	}
	return 0, false, false
}

// exponents is the number of prime factors of a factorization.
func exponents(fs []factor) float64 {
	n := 0
	for _, f := range fs {
		n += f.exp
	}
	return float64(n)
}

// blockGraph bounds the tiles of g, whose k-th input reads a device
// tensor bounded by in[k], and returns its outputs' bounds in order, as
// the device tensors they are stored into.
func (b *bounder) blockGraph(g *block.Graph, in []magnitude) []magnitude {
	ts := make([]magnitude, len(g.Tensors))
	varies := g.Varies()
	// across says, per tile and grid axis, what is the same in every
	// block along the axis: the tile's values, and its denominators'
	// parts. A tensor laid out along that axis keeps its denominators one
	// polynomial along the dim the axis lays it along only where they are.
	type same struct{ value, poly, mono bool }
	across := make([][3]same, len(g.Tensors))
	var outs []magnitude
	next := 0
	for i := range g.Ops {
		op := &g.Ops[i]
		switch op.Kind {
		case ugraph.OpInput:
			// A tile's dims are its tensor's; the loop walks the tensor
			// along fmap, the grid along imap.
			m := unbounded
			if next < len(in) {
				m = in[next]
				f := op.Input.FMap
				m.iterFixed = !varies[op.Out] || (m.polyFixed&bit(f) != 0 && m.monoFixed&bit(f) != 0)
			}
			next++
			m = b.see(m)
			for axis, d := range op.Input.IMap {
				split := d >= 0 && g.Grid[axis] > 1
				across[op.Out][axis] = same{!split, !split || m.polyFixed&bit(d) != 0, !split || m.monoFixed&bit(d) != 0}
			}
			ts[op.Out] = m
			continue
		case ugraph.OpOutput:
			m := ts[op.In[0]]
			for axis, d := range op.Output.OMap {
				if d >= 0 && g.Grid[axis] > 1 {
					if !across[op.In[0]][axis].poly {
						m.polyFixed &^= bit(d)
					}
					if !across[op.In[0]][axis].mono {
						m.monoFixed &^= bit(d)
					}
				}
			}
			outs = append(outs, m)
			continue
		}
		operands := op.Operands()
		ms := make([]magnitude, len(operands))
		shapes := make([]ugraph.Shape, len(operands))
		for k, t := range operands {
			ms[k], shapes[k] = ts[t], g.Tensors[t].Shape
		}
		for axis := range 3 {
			a := same{true, true, true}
			for _, t := range operands {
				o := across[t][axis]
				a = same{a.value && o.value, a.poly && o.poly, a.mono && o.mono}
			}
			// Where the blocks see other values of what joins the
			// denominator, they see other denominators.
			if j, mono, ok := joinsDenominator(op.Kind, ms); ok {
				if v := across[operands[j]][axis].value; mono {
					a.mono = a.mono && v
				} else {
					a.poly = a.poly && v
				}
			}
			across[op.Out][axis] = a
		}
		if op.Kind != ugraph.OpForloopAccum {
			m := b.op(op.Kind, op.Attr, ms, shapes, g.ReductionDimx)
			// Where the loop varies what joins the denominator, it
			// varies the denominator.
			if j, _, ok := joinsDenominator(op.Kind, ms); ok && varies[operands[j]] {
				m.iterFixed = false
			}
			ts[op.Out] = b.see(m)
			continue
		}
		// An accumulator sums its tile over the F iterations where the
		// loop varies it; one that does not vary is summed once and
		// scaled by φ(F) (DESIGN §4).
		x, s := ms[0], shapes[0]
		iterations, scaled := 1, countDegree(g.ForloopRange)
		if varies[operands[0]] {
			iterations, scaled = g.ForloopRange, 0
		}
		overLoop := func(x magnitude) magnitude { return sum(x, iterations, x.iterFixed, x.iterFixed) }
		last := s.Rank() - 1
		n := s.Dim(last)
		var m magnitude
		switch op.Attr.Accum {
		case ugraph.AccumNone:
			m = scale(overLoop(x), scaled, 0)
		case ugraph.AccumSum:
			m = scale(sumAlong(overLoop(x), n, last), scaled, 0)
		case ugraph.AccumMean: // and inv(φ(F·n))
			m = scale(sumAlong(overLoop(x), n, last), scaled, countDegree(g.ForloopRange*n))
		case ugraph.AccumSumToDimx:
			m = scale(sumAlong(overLoop(x), n/max(g.ReductionDimx, 1), last), scaled, 0)
		case ugraph.AccumRMS:
			b.see(scale(sumAlong(overLoop(square(x)), n, last), scaled, countDegree(g.ForloopRange*n)))
			m = variable
		default:
			m = unbounded
		}
		m.iterFixed = true // read after the loop
		ts[op.Out] = b.see(m)
	}
	return outs
}
