package kernel

import (
	"fmt"

	"github.com/mitchellh/hashstructure/v2"
)

// Hash returns a hash of g's structure: its ops in order with their kinds,
// attributes, operands and block graphs, the tensors' shapes and dtypes, and
// the outputs. Graphs built by the same sequence of builder calls hash alike;
// tensor ids are positional, so two graphs that differ only in how a caller
// named its tensors hash alike too.
//
// The search drops states with a hash it has seen, the result cache is keyed
// by it, and GPU profiles name the candidates they measured with it.
func Hash(g *Graph) uint64 {
	h, err := hashstructure.Hash(g, hashstructure.FormatV2, nil)
	if err != nil {
		// Graph holds only hashable types (ints, floats, strings, slices,
		// arrays, structs, pointers to structs); an error is a bug.
		panic(fmt.Sprintf("kernel.Hash: %v", err))
	}
	return h
}
