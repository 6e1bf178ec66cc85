package search

import (
	"context"
	"math"
	"slices"

	"github.com/mirage-go/mirage/ugraph/kernel"
)

// Subtree is one root subtree of the enumeration (a task): the first
// customized op of a kernel prefix, on one input set, under one threadblock
// configuration, and everything below it. The list of a program's subtrees
// (Subtrees) is the same in every process, so that processes which never
// talk can share a search out (Options.Subtrees): each explores its own
// and the union of what they find is what one process finds.
type Subtree struct {
	// Memo is the same for subtrees that replay each other's threadblock
	// searches (the same inputs, up to their names, and configuration):
	// one process exploring them all searches those once.
	Memo uint64
	// Size is a cheap estimate of the subtree's size, in no unit: the
	// branching of the kernel ops left after the customized op times the
	// inputs it reads. Only ratios between subtrees of one program mean
	// anything.
	Size float64
}

// Subtrees lists the root subtrees of program's enumeration under cfg, in
// the order Run explores them. It costs the enumeration of kernel prefixes
// of pre-defined ops only (milliseconds), not the subtrees'.
func Subtrees(ctx context.Context, program *kernel.Graph, cfg Config) ([]Subtree, error) {
	cfg.Complete(program)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s, err := newSearcherFor(ctx, program, cfg, Options{}, false)
	if err != nil {
		return nil, err
	}
	defer s.close()
	var list []Subtree
	branching := float64(len(cfg.KernelOps) + len(cfg.BlockOps))
	root := s.newKernelState()
	root.spawn = func(t *task) {
		left := float64(t.prefix.opsLeft() - 1) // after the customized op
		list = append(list, Subtree{Memo: uint64(t.in.sig)<<32 | uint64(t.conf.id), Size: math.Pow(branching, left) * float64(len(t.in.ins))})
	}
	root.explore()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return list, nil
}

// subtreeFilter returns whether the i-th subtree spawned is to be explored
// under opts.Subtrees (sorted indices; nil: all of them).
func subtreeFilter(opts Options) func(i int) bool {
	if opts.Subtrees == nil {
		return func(int) bool { return true }
	}
	return func(i int) bool {
		_, ok := slices.BinarySearch(opts.Subtrees, i)
		return ok
	}
}

// Add adds the counts of t to s (Seconds, FirstFused and Stopped, which do
// not add up, are left as they are).
func (s *Stats) Add(t Stats) {
	s.States += t.States
	s.PrunedOrder += t.PrunedOrder
	s.PrunedAbsexpr += t.PrunedAbsexpr
	s.PrunedShape += t.PrunedShape
	s.PrunedDead += t.PrunedDead
	s.Complete += t.Complete
	s.Rejected += t.Rejected
	s.Verified += t.Verified
	s.Unchecked += t.Unchecked
}
