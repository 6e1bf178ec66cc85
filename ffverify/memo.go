package ffverify

import (
	"fmt"
	"slices"
)

// Memo is a products' memo that Verifiers share (Options.Memo): one run's
// verifiers of a program's parts and of the whole program, which check
// products of the same operands again and again. At a prefill's shapes a
// LLaMA MLP's whole-program check repeats N·W1 and N·W3, which its first
// part's verifier computed, and X·W1 and X·W3, which that part's seeds
// did: with the inputs named alike (Options.InputNames) and one memo, each
// is computed once per draw.
//
// Operands are named by their values (see products), so sharing changes
// the time of a check, never its verdict. A Memo is safe for concurrent
// use.
type Memo struct {
	seed   uint64
	draws  []*products
	budget int64 // over all draws
}

// NewMemo returns an empty memo for Verifiers with opts' Seed and Trials:
// at most DefaultProductBytes, and a quarter of opts.MaxBytes.
func NewMemo(opts Options) (*Memo, error) {
	opts, err := opts.normalized()
	if err != nil {
		return nil, err
	}
	m := &Memo{seed: opts.Seed, budget: min(DefaultProductBytes, opts.MaxBytes/4)}
	for t := range opts.Trials {
		m.draws = append(m.draws, newProducts(m.budget/int64(opts.Trials), trialKey(opts.Seed, t)))
	}
	return m, nil
}

// MemoStats count what a Memo's draws did: the products (and kernels'
// results) they computed, and the lookups that found one computed.
type MemoStats struct{ Computed, Taken int64 }

// Stats returns what m's draws did so far.
func (m *Memo) Stats() MemoStats {
	var s MemoStats
	for _, ps := range m.draws {
		ps.mu.Lock()
		s.Computed += ps.made
		s.Taken += ps.taken
		ps.mu.Unlock()
	}
	return s
}

// fits reports whether m serves a Verifier with opts: the same draws.
func (m *Memo) fits(opts Options) error {
	if m.seed != opts.Seed || len(m.draws) != opts.Trials {
		return fmt.Errorf("ffverify: the memo is for seed %d and %d draws, the verifier draws %d with seed %d", m.seed, len(m.draws), opts.Trials, opts.Seed)
	}
	return nil
}

// inputName is the name of input k (Options.InputNames).
func (o Options) inputName(k int) int {
	if o.InputNames == nil {
		return k
	}
	return o.InputNames[k]
}

// checkNames checks that InputNames, if set, names n inputs, each once,
// by a name that is not negative.
func (o Options) checkNames(n int) error {
	if o.InputNames == nil {
		return nil
	}
	if len(o.InputNames) != n {
		return fmt.Errorf("ffverify: %d input names for %d inputs", len(o.InputNames), n)
	}
	sorted := slices.Sorted(slices.Values(o.InputNames))
	for i, name := range sorted {
		if name < 0 {
			return fmt.Errorf("ffverify: input name %d is negative", name)
		}
		if i > 0 && sorted[i-1] == name {
			return fmt.Errorf("ffverify: input name %d is given twice", name)
		}
	}
	return nil
}
