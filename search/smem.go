package search

import (
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/thread"
)

// fitsSmem reports whether a complete threadblock graph fits the target's
// shared memory per block, as the code generator will lay it out.
func (s *searcher) fitsSmem(g *block.Graph) bool {
	_, err := thread.Derive(g, s.cfg.Arch, thread.Options{})
	return err == nil
}
