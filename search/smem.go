package search

import (
	"github.com/mirage-go/mirage/launch"
	"github.com/mirage-go/mirage/ugraph/block"
)

// fitsSmem reports whether a complete threadblock graph fits the target's
// shared memory per block: whether the launch plan that the cost model
// costs and the code generator emits exists.
func (s *searcher) fitsSmem(g *block.Graph) bool {
	_, err := launch.Block(g, s.cfg.Arch, launch.Options{})
	return err == nil
}
