package ffverify

import (
	"errors"
	"fmt"
	"sync"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// Prefix returns a Verifier for program, which must compute on the first
// rows of the inputs v's program takes the first rows of its outputs: a
// program whose rows are independent (DESIGN §9), written for fewer rows
// (kernel.Graph.Bind). The draws' inputs are keyed by their flat position,
// so program's draws are the first rows of v's, and v's fingerprints of
// the outputs, cut to their first rows, are program's: no evaluation.
//
// Each input and output of program must be its counterpart of v's, or
// have fewer rows along a dim outside which every dim is 1 (so that its
// rows are a prefix of the other's memory). Prefix does not check that
// program computes what v's program computes on those rows; Verify's
// candidates are checked against program as that promise makes it.
func (v *Verifier) Prefix(program *kernel.Graph) (*Verifier, error) {
	nv, _, err := v.firstRows(program, false)
	if err != nil {
		return nil, err
	}
	nv.prints = make([][]*tensor, len(v.prints))
	for t, outs := range v.prints {
		for j, o := range outs {
			s := nv.outputs[j]
			nv.prints[t] = append(nv.prints[t], &tensor{shape: s, v: o.v[:s.NumElements():s.NumElements()]})
		}
	}
	return nv, nil
}

// Rows returns a Verifier for program, which must take the first rows of
// the inputs of v's program and give the first rows of its outputs, as
// for Prefix. Unlike Prefix it evaluates program on every draw, as New
// does, so that its verdicts do not rest on the rows being independent;
// but on v's materialised inputs, cut to their first rows, and with v's
// products memo, so that the inputs are not drawn again.
func (v *Verifier) Rows(program *kernel.Graph) (*Verifier, error) {
	nv, p, err := v.firstRows(program, true)
	if err != nil {
		return nil, err
	}
	if _, err := nv.evaluate(p); err != nil {
		return nil, err
	}
	return nv, nil
}

// firstRows returns a Verifier, with no draws yet, for program, whose
// inputs and outputs are the first rows of v's program's (rowsOf): it
// shares v's materialised inputs and memo where v has them, else shares
// its own. ownPrints says the caller will keep outputs of its own beside
// v's (Rows), rather than slices of v's (Prefix), for its memory.
func (v *Verifier) firstRows(program *kernel.Graph, ownPrints bool) (*Verifier, *plan, error) {
	p, err := newPlan(program)
	if err != nil {
		return nil, nil, fmt.Errorf("ffverify: program: %w", err)
	}
	nv := newVerifier(p, v.opts)
	if err := nv.rowsOf(v); err != nil {
		return nil, nil, err
	}
	prints := ugraph.MulSize(int64(nv.opts.Trials), p.outputBytes())
	switch {
	case v.dense == nil:
		nv.held = prints
		if err := nv.shareInputs(p); err != nil {
			return nil, nil, err
		}
	case ownPrints:
		nv.shareInputsOf(v)
		nv.held = ugraph.AddSize(nv.held, prints)
	default:
		nv.shareInputsOf(v)
	}
	return nv, p, nil
}

// ErrNotFirstRows is the error of Prefix and Rows for a program whose
// inputs or outputs are not the first rows of the other's: a program with
// m inside an outer dim (kernel.Graph.Padded), whose fewer rows are not a
// prefix of its memory. The caller makes its own verifier.
var ErrNotFirstRows = errors.New("not the first rows")

// rowsOf checks that each input and output of v's program is the first
// rows of its counterpart in w's (rowPrefix).
func (v *Verifier) rowsOf(w *Verifier) error {
	if len(v.inputs) != len(w.inputs) || len(v.outputs) != len(w.outputs) {
		return fmt.Errorf("ffverify: a prefix program has %d inputs and %d outputs, not %d and %d", len(v.inputs), len(v.outputs), len(w.inputs), len(w.outputs))
	}
	for k, s := range v.inputs {
		if !rowPrefix(s, w.inputs[k]) {
			return fmt.Errorf("ffverify: input %d %v is %w of %v", k, s, ErrNotFirstRows, w.inputs[k])
		}
	}
	for j, s := range v.outputs {
		if !rowPrefix(s, w.outputs[j]) {
			return fmt.Errorf("ffverify: output %d %v is %w of %v", j, s, ErrNotFirstRows, w.outputs[j])
		}
	}
	return nil
}

// shareInputsOf makes v's shared inputs the first rows of w's, and w's
// products memo v's: the draws' inputs are keyed by their flat position,
// so v's are w's first rows, and the memo names an input by its position
// and shape, a computed tensor by its values, so w's products are v's.
// Nothing more is held than w holds: v's inputs and fingerprints are
// slices of w's.
func (v *Verifier) shareInputsOf(w *Verifier) {
	v.held, v.memoBytes, v.products = w.held, w.memoBytes, w.products
	v.dense = make([][]func() *tensor, len(w.dense))
	for t := range w.dense {
		for k, s := range v.inputs {
			full := w.dense[t][k]
			v.dense[t] = append(v.dense[t], sync.OnceValue(func() *tensor {
				return &tensor{shape: s, v: full().v[:s.NumElements():s.NumElements()]}
			}))
		}
	}
}

// rowPrefix reports whether a tensor of shape s holds the first elements
// of one of shape of, in row-major order: equal shapes, or equal but for
// one dim, smaller in s, with every dim before it 1.
func rowPrefix(s, of ugraph.Shape) bool {
	if s.Rank() != of.Rank() {
		return false
	}
	for d := range s.Rank() {
		if s.Dim(d) == of.Dim(d) {
			continue
		}
		if s.Dim(d) > of.Dim(d) {
			return false
		}
		for i := range s.Rank() {
			if i < d && of.Dim(i) != 1 || i > d && s.Dim(i) != of.Dim(i) {
				return false
			}
		}
		return true
	}
	return true
}
