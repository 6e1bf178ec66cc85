// Package ffverify decides whether a candidate μGraph computes the same
// function as a program, by evaluating both exactly over finite fields on
// random inputs (DESIGN §4). The search calls it on every complete
// candidate: Verifier.Reject is a fast path that evaluates a few sampled
// output positions demand-driven and can only reject; Verifier.Verify
// compares every output position on every draw and decides.
//
// # The model
//
// Every value is a pair of residues (x mod P, x mod Q) with
//
//	P = 2147481143 = 2Q+1,  Q = 1073740571,  both prime, both ≡ 3 (mod 4),
//	G = 4, of order Q in Z_P* (any square other than 1 is).
//
// Products of two residues fit in a uint64 (P < 2³¹), and four of them plus
// a residue still do, so matmul reduces once per four multiply-adds. That is
// about 3 times as fast as 63-bit primes with Montgomery multiplication and 6
// times as fast as with math/bits' 128-bit remainder (BenchmarkAxpy*, the
// inner loop of matmul), for a bound that is already far below what we need.
//
// An input element is a pair of independent residues that are uniform up to
// a factor 1+2⁻³² on each value's probability: a keyed hash of (seed, draw,
// input position, element), so both graphs of a comparison see the same
// inputs (matched by position) and no input needs to be stored. Each op maps
// pairs to pairs, written once for both levels and both evaluators (ops.go):
//
//	add, sub, mul, sums    per residue; matmul and every reduction are sums of products
//	div a/b                a·inv(b), inv(x) = x^(m-2): inverse per residue, inv(0) = 0
//	mul_scalar(x, c)       x·φ(c), c the simplest rational that rounds to the float
//	                       (0.5 = 1/2, 0.1 = 1/10, float64(1)/3 = 1/3), φ the draw's
//	                       model of constants: ±∏φ(p)ᵉ for c = ±∏pᵉ, φ(p) random (constants)
//	exp(x)                 (G^(x mod Q) mod P, h(x) mod Q), h a random function per
//	                       draw of the whole pair, as an opaque op (see elem.exp)
//	sqrt(x)                root(x): a random function per draw, as an opaque op,
//	                       the one every root of the draw takes (rootFn)
//	square(x)              x·x
//	rms over n values      root(Σx² · inv(φ(n))); rms_norm(x) = x·inv(rms), over the
//	                       dims from Attr.Dim (kernel) or the last (block)
//	accumulators           none, sum, sum_todimx: sums over iterations (and strided
//	                       groups), of a loop-invariant tile once times φ(F);
//	                       mean = sum·inv(φ(F·n)); rms = root(Σx²·inv(φ(F·n)))
//	silu, gelu, relu,      opaque: a fresh random function per kind (clamp: per
//	clamp, log, pow        bounds) and per draw, a keyed hash of the argument pair(s)
//
// Tiling (grids, imaps, fmaps, the for-loop, omaps, concat) moves elements
// without computing, exactly as in DESIGN §3; interp does the same in
// float64, and the tests check that the two agree on every catalogue entry.
//
// # What the model preserves
//
// A correct rewriting is accepted when the identity it rests on holds in the
// model. These do, exactly and at every point:
//
//   - commutativity, associativity and distributivity of add and mul; sums
//     split, nested, reordered or factored (matmul, reduction,
//     reduction_to_dimx, accumulators, partial sums laid side by side and
//     folded by sum_todimx);
//   - division rules: (a+b)/c = a/c + b/c, (a/c)·b = (a·b)/c, a/(b·c) =
//     (a/b)/c, even where c = 0, because inv(0) = 0 and inv is
//     multiplicative. Only cancelling a division (a/c·c = a) can fail, where
//     c happens to be 0: probability at most deg(c)/Q per draw;
//   - exp(x) = exp(x): an exp of equal values is equal, and its P-residue
//     G^(x mod Q) is exact, a homomorphism from (Z_Q, +), which is why every
//     value carries its Q-residue;
//   - a root of a value is the same however the value was computed: rms_norm,
//     sqrt and the rms accumulator take the one root, so rms_norm(X)·W =
//     (X·W)/rms(X) with the rms accumulated over the loop, or written out as
//     sqrt(Σx²·(1/n)), holds exactly;
//   - rms and mean over F·n terms split into F iterations of n (the sum is
//     exact and φ(F·n) = φ(F)·φ(n)), mean = Σ·mul_scalar(1/n) for every n,
//     products of scalars that are one rational (0.1·0.3 = 0.03,
//     1e-6·1e6 = 1), and F iterations summing a tile the loop loads whole
//     scaled by 1/F;
//   - f(x) = f(x) for opaque f: the same op on the same value gives the same
//     value, wherever and however often it is computed.
//
// These do not hold, so rewritings that need them are rejected: exp(a+b) =
// exp(a)·exp(b), exp(-a) = 1/exp(a) (exp's Q-residue is a random function:
// no homomorphism from (Z_Q, +) to (Z_Q*, ·) but the trivial one exists,
// and a constant Q-residue, as the model once had, left every value
// computed from an exp blind modulo Q, so that softmax(softmax(x)) was 1/n
// whatever x and wrong candidates passed); sqrt(x)² = x,
// sqrt(x²) = |x|, sqrt(a·b) = sqrt(a)·sqrt(b), rms(c·x) = |c|·rms(x) (a
// root is a random function of its argument); anything about
// an opaque op beyond f(x) = f(x) (relu∘relu = relu, clamp(x, 0, ∞) = relu,
// silu(x) = x·sigmoid(x), log(ab) = log a + log b, log∘exp = id, pow(x, 2) =
// x², exponent laws of pow); sums of constants (x·2 = x+x, x·0.25 + x·0.75
// = x: φ is not additive); a float's value beyond its rational (s·s = 1/128
// for s = 1/sqrt(128), whose rational's square is not 1/128). None is
// among the axioms the search uses (DESIGN §5: commutativity,
// associativity, distributivity, division rules, nested and factored sums). A multiplicative root (the power map
// x^((m+1)/4), as the model had it) would make sqrt(c²) = c·χ(c), χ the
// Legendre symbol, where the reals have |c|: χ(10) = -1 modulo both primes,
// and rms_norm(10·x) = -rms_norm(x) passed (TestRootsOfScaledValues).
//
// # The error bound
//
// Suppose output element e of the candidate and of the program differ as
// functions of the inputs. One draw fails to show it with probability:
//
// Rational part. If e is built from inputs by add, sub, mul, div, sums,
// scalars and counts, read every constant ±∏pᵉ as ±∏y_pᵉ, one variable y_p
// per prime (constants): the difference is N/D with N ≠ 0 a polynomial of
// total degree d in the inputs and the y_p, and its P-residue is
// N(x_P, φ_P)/D(x_P, φ_P) mod P. (If the graphs differ in the reals, N is
// not 0: y_p = p gives the reals.) By Schwartz–Zippel, N ≡ 0 with
// probability at most d/P, when P divides no coefficient of N; those are
// sums of the graphs' multiplicities (a term's count in a sum, the length
// of a sum over a broadcast dim), which stay the field's own residues: a
// graph built to make one ≡ 1 modulo P·Q (a chain of ~90 adds, or seven
// sums over broadcast dims, found by review) still fools the model. The
// search does not build such graphs; a candidate given to mirage verify
// can, and so can one that divides by a multiple of P (0 there, and
// inv(0) = 0), puts a multiple of Q into an exp's argument (its P-residue
// reads it modulo Q, and a product of exps the sum of theirs), raises to
// a degree past Q (x^(1+Q(Q-1)) = x at every point), or divides by the
// zero polynomial (below). CoefficientsOf bounds a graph's integers and degrees
// (coefficients.go): where the bound leaves room, as for a layer or two at
// a model's shapes, none of that can happen, and where it does not,
// package check evaluates what the fields find equal once more in float64.
// The constants' images are
// keyed by a hash of the program (ConstantsKey), so a program cannot pick
// its constants to meet a relation of φ: the old model, which took each
// rational's own residues, let products of chosen factors be 1 modulo P·Q
// (9199·13834·6927·10359·8143·149). A candidate built for one program's φ
// on one seed is not excluded; the search's candidates move the program's
// constants, and Equivalent keys its draws by the program alone, as New
// does. A zero divisor anywhere, where inv(0) = 0 could hide the
// difference, adds at most d'/P (d' the total degree of the divisors). The
// Q-residues are drawn independently, so both agree with probability at most
// ((d+d')/P)·((d+d')/Q).
//
// Degrees: an input has degree 1, add and sub take the larger, mul and
// matmul add, sums keep it, square doubles it, a division adds its
// divisor's degree to numerator and denominator; a constant ±∏pᵉ adds
// Σ|e| (1/4096 is y₂⁻¹², 12 once the denominators are cleared; 1e-6 is
// 12, a float's rational rarely past 100). A root is a random
// function (below): where its arguments agree it is the same value, a
// fresh variable of degree 1 for the bound; where they differ, its values
// are independent. The graphs we search stay far below degree 64.
//
// exp. The P-residues of exp(a) and exp(b) agree exactly when a ≡ b
// (mod Q): probability at most deg(a-b)/Q if a ≠ b; their Q-residues, a
// random function of the pair, are independent where a and b differ in
// either residue. Beyond that, outputs are polynomials in x_P and in
// values G^(e(x_Q)); we treat those as independent uniform elements of the
// order-Q subgroup when their exponents e differ, which is a heuristic,
// not a theorem (exponential sums of polynomial exponents escape
// Schwartz–Zippel). A divisor that is zero as a function (x/(y-y), NaN
// or infinite in the reals) is 0 at every draw: the model takes such a
// program for a finite one; it is no program anyone superoptimizes, and
// CoefficientsOf counts a divisor it cannot show nonzero as unbounded, so
// that mirage verify checks such a pair in float64.
//
// Opaque ops and roots. Modelled as random functions (a keyed hash, a random
// oracle heuristically): differing arguments, which happens except with the
// probability above, give independent uniform values, equal with probability
// 1/(P·Q).
//
// Hence, with D = d + d' and the smaller prime, one
// draw is fooled with probability at most about D/Q: below 6·10⁻⁸ for D ≤ 64,
// well under 10⁻⁶, and (D/P)·(D/Q) < 4·10⁻¹⁵ where the Q-residue also
// decides. DefaultTrials = 2 independent draws square it,
// to about 4·10⁻¹⁵ at worst, which leaves a wide margin for the heuristic
// parts (exp of polynomial arguments, random functions).
//
// # Cost
//
// Verify evaluates the candidate densely once per draw (all blocks, all
// iterations) and stops at the first draw that shows a difference; inputs
// read only through tile loads are hashed where they are loaded, never
// stored. Reject evaluates single elements on demand, memoised per
// (tensor or tile, block, iteration, index), position by position, and
// stops at the first position that rules out every matching of outputs:
// most wrong candidates cost one position's cone. New evaluates the
// program densely on every draw, in parallel.
//
// At model shapes New is most of the time to a part's first fused answer:
// a LLaMA-7B MLP block's up projection draws 90M input elements and takes
// two 16x4096x11008 products per draw. Both loops have AVX2 forms
// (vector_amd64.s; the purego build tag leaves them out), four elements
// per instruction, which the tests hold to the plain Go definitions
// (vector.go): 3.5x faster products, 2x faster draws, New of that
// projection 5.3 -> 2.4 CPU seconds (BenchmarkNewLLaMAUp).
//
// The candidates of one search compute mostly the same products (X·W cut
// into tiles by as many grids and for-loops as there are candidates), so a
// Verifier keeps, per draw, a bounded memo of them (products.go): a tile
// product of a graph-defined kernel is copied out of the product of whole
// slabs of its operands, computed once for every grid that cuts k alike;
// a pre-defined matmul's product is kept whole, and so are a graph-defined
// kernel's results (two-kernel candidates share their first kernel by the
// dozen) and the products of computed tiles (attention's P·V, where
// kernels of one launch compute the same P). Operands are named by input
// position or by a fingerprint of their values, and the values are exact,
// so the memo changes the time of a full check, never its verdict. Where
// a candidate's full check has the memo, its fast path gives up sooner
// (fastShare): most candidates are correct, and for those it is wasted
// work. Verifying every candidate of
// a search (mirage superopt --max-candidates 0, 2 cores) took 156 s before
// the memo and 29 s with it on examples/rmsnorm_matmul.py (296
// candidates), 195 s and 20 s on examples/gated_mlp.py (178), and 178 s on
// examples/gqa.py (1840), which did not finish in 300 s before.
package ffverify
