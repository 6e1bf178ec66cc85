package ffverify

import "github.com/mirage-go/mirage/ugraph"

// trial is one random draw: the key of its inputs and random functions,
// and every op compiled with it. A trial is read-only once made.
type trial struct {
	key    uint64
	inputs []uint64 // per input: the key of its elements
	// dense, when not nil, gives each input materialised: the Verifier's,
	// shared by every candidate's dense evaluation (read-only).
	dense []func() *tensor
	// products, when not nil, memoises the products of tiles of the
	// shared inputs (the Verifier's, shared like dense; see products).
	products *products
	ops      []fn   // per kernel op
	block    [][]fn // per kernel op: per block op, for customized ops
	// stop, when closed, stops the evaluation at its next check (the
	// Verifier's, StopWhen).
	stop <-chan struct{}
	// pins, when not nil, collects the memo keys of the products the
	// evaluation takes (used): a program's, which the memo keeps (pin).
	pins *[]any
}

// used records that the evaluation took the memo's product under key.
func (tr *trial) used(key any) {
	if tr.pins != nil {
		*tr.pins = append(*tr.pins, key)
	}
}

// check panics with errStopped once tr.stop is closed; the Verifier's
// checks recover it.
func (tr *trial) check() {
	if tr.stop == nil {
		return
	}
	select {
	case <-tr.stop:
		panic(errStopped)
	default:
	}
}

// trialKey derives the key of draw t from the seed.
func trialKey(seed uint64, t int) uint64 { return hash(hash(seed, 0x66667665726966), uint64(t)) }

// trial compiles p's ops for draw t of opts.Seed, its inputs drawn by
// their names (Options.InputNames; by position where there are none).
func (p *plan) trial(opts Options, t int) *trial {
	tr := &trial{key: trialKey(opts.Seed, t), ops: make([]fn, len(p.g.Ops)), block: make([][]fn, len(p.g.Ops))}
	for k := range p.g.Inputs() {
		tr.inputs = append(tr.inputs, inputKey(tr.key, opts.inputName(k)))
	}
	c := newConstants(hash(tr.key, opts.Constants))
	for i := range p.g.Ops {
		op := &p.g.Ops[i]
		tr.ops[i] = compileFn(op.Kind, op.Attr, tr.key, c)
		if bp := p.blocks[i]; bp != nil {
			tr.block[i] = make([]fn, len(bp.g.Ops))
			for j, bop := range bp.g.Ops {
				tr.block[i][j] = compileFn(bop.Kind, bop.Attr, tr.key, c)
			}
		}
	}
	return tr
}

// inputKey is the key of the elements of the input named name on the draw
// whose key is key.
func inputKey(key uint64, name int) uint64 { return hash(key, uint64(name)+1<<40) }

// input returns element idx of input k of draw tr: a keyed hash of
// (trial, input, position), so both evaluators see the same value without
// storing it.
func (tr *trial) input(k, idx int) elem {
	return uniform(tr.inputs[k] + uint64(idx)*inputStride)
}

// inputStride spaces the hashes of an input's elements (the golden ratio,
// as SplitMix64's increment).
const inputStride = 0x9e3779b97f4a7c15

// inputTensor materialises input k of draw tr: a new tensor, unless the
// inputs are shared (dense).
func (tr *trial) inputTensor(k int, s ugraph.Shape) *tensor {
	if tr.dense != nil {
		return tr.dense[k]()
	}
	return tr.newInputTensor(k, s)
}

// newInputTensor computes input k of draw tr into a new tensor.
func (tr *trial) newInputTensor(k int, s ugraph.Shape) *tensor {
	t := newTensor(s)
	fillUniform(t.v, tr.inputs[k])
	return t
}
