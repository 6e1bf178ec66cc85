package driver

import (
	"github.com/mirage-go/mirage/search"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// File returns the candidates as a μGraph document named name, best first,
// each with its figures in its "meta" object (as search results are
// written), and meta (if not nil) as the document's "meta".
func (r *Result) File(name string, meta any) (*kernel.File, error) {
	sr := &search.Result{Stats: r.Stats}
	for _, c := range r.Candidates {
		sr.Candidates = append(sr.Candidates, &search.Candidate{
			Graph: c.Graph, Hash: c.Hash, Kernels: c.Kernels, Customized: c.Customized,
			Grids: c.Grids, ForloopRanges: c.ForloopRanges,
			Estimate: search.Estimate{Micros: c.Estimate.Micros, Bytes: c.Estimate.Bytes, Flops: c.Estimate.Flops},
			Seed:     c.Seed,
		})
	}
	return sr.File(name, meta)
}
