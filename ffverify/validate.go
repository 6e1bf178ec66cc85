package ffverify

import (
	"fmt"

	"github.com/mirage-go/mirage/ugraph/kernel"
)

// validate checks g with kernel.Validate (the evaluators then rely on what
// the builders guarantee and never re-check it) and that it has outputs to
// compare.
func validate(g *kernel.Graph) error {
	if err := kernel.Validate(g); err != nil {
		return err
	}
	if len(g.Outputs) == 0 {
		return fmt.Errorf("the graph has no outputs")
	}
	return nil
}
