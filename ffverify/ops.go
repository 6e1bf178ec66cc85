package ffverify

import (
	"fmt"
	"math"

	"github.com/mirage-go/mirage/ugraph"
)

// This file is the model of every operator on field elements, written once
// for both levels and both evaluators (dense and demand-driven): they only
// differ in which elements they visit.

// fn is an operator compiled for one trial: its element function, if it is
// element-wise. Opaque operators are keyed by the trial, so that each trial
// draws a fresh random function and the same function serves the program
// and the candidate.
type fn struct {
	kind  ugraph.OpKind
	attr  ugraph.Attr
	unary func(elem) elem
	bin   func(a, b elem) elem
	root  func(elem) elem // the trial's square root (rootFn), for every kind
	// consts is the trial's model of counts and scalars, for every kind.
	consts *constants
}

// compileFn returns the model of op kind k with attributes a on the trial
// whose random-function key is key and whose constants are c. Only the
// element-wise kinds need one; the others (matmul, reductions, rms_norm,
// concat, accumulators) are sums, products and the shared helpers below.
//
// An op the table marks opaque (ugraph.Elementwise.Opaque) has no algebraic
// structure over a field: it is an independent random function of its
// operands and its scalars. The others are modelled exactly, below.
func compileFn(k ugraph.OpKind, a ugraph.Attr, key uint64, c *constants) fn {
	f := fn{kind: k, attr: a, root: rootFn(key), consts: c}
	info := k.Info()
	if info.Elem.Opaque {
		// +0 makes -0 the bound 0 is: clamp(x, -0.0, 1) is clamp(x, 0, 1).
		key = hash(hash(key, uint64(k)), math.Float64bits(a.Scalars[0]+0))
		key = hash(key, math.Float64bits(a.Scalars[1]+0))
		if info.Class == ugraph.ClassBinary {
			f.bin = func(a, b elem) elem { return uniform(hash(hash(key, a.pack()), b.pack())) }
		} else {
			f.unary = func(x elem) elem { return uniform(hash(key, x.pack())) }
		}
		return f
	}
	switch k {
	case ugraph.OpExp:
		key := hash(key, uint64(k)) // no opaque op's: they hash their scalars too
		f.unary = func(x elem) elem { return x.exp(key) }
	case ugraph.OpSquare:
		f.unary = func(x elem) elem { return x.mul(x) }
	case ugraph.OpSqrt:
		f.unary = f.root
	case ugraph.OpMulScalar:
		s := c.scalar(a.Scalars[0]) // validate rejects non-finite scalars
		f.unary = func(x elem) elem { return x.mul(s) }
	case ugraph.OpAdd:
		f.bin = elem.add
	case ugraph.OpSub:
		f.bin = elem.sub
	case ugraph.OpMul:
		f.bin = elem.mul
	case ugraph.OpDiv:
		f.bin = func(a, b elem) elem { return a.mul(b.inv()) }
	default:
		if k.IsElementwise() {
			panic(fmt.Sprintf("ffverify: %v is neither opaque nor modelled", k)) // TestEveryElementwiseOpIsModelled
		}
	}
	return f
}

// rootFn is the square root of the trial whose random-function key is key:
// an independent random function of its argument, as an opaque op is, and
// the same one for every op that takes a root (sqrt, rms_norm, the "rms"
// accumulator), so that the root of a value is the same wherever it is
// taken.
//
// It is not a power map. The power map x^((m+1)/4) is multiplicative, so
// it gives sqrt(c²·s) = c·χ(c)·sqrt(s), χ(c) the Legendre symbol of c,
// where the reals give |c|·sqrt(s): for c = 10, 1/10, 13, 22, ... χ is -1
// modulo both primes, and the model then had rms_norm(10·x) = -rms_norm(x),
// a candidate computing the one passing for the other. No rewriting the
// search makes needs a root to be multiplicative (doc.go).
func rootFn(key uint64) func(elem) elem {
	key = hash(key, 0x726f6f74) // "root": apart from the opaque kinds' keys
	return func(x elem) elem { return uniform(hash(key, x.pack())) }
}

// rms is root(sumsq / n): the root mean square of n values whose squares
// sum to sumsq. rms_norm and the "rms" accumulator share it, so that
// rms_norm(X)·W = (X·W)/rms holds exactly when the rms is accumulated.
func (f *fn) rms(sumsq elem, n int) elem { return f.root(sumsq.mul(f.consts.invCount(n))) }

// finishAccum turns an accumulator's running sum into its value: the "mean"
// divides by the number of terms n, the "rms" (whose sum is of squares)
// takes rms; the other kinds are plain sums.
func (f *fn) finishAccum(k ugraph.Accum, sum elem, n int) elem {
	switch k {
	case ugraph.AccumMean:
		return sum.mul(f.consts.invCount(n))
	case ugraph.AccumRMS:
		return f.rms(sum, n)
	}
	return sum
}
