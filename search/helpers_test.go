package search

import (
	"path/filepath"
	"testing"

	"github.com/mirage-go/mirage/frontend"
)

// load loads a program or μGraph from the examples directory.
func load(t testing.TB, name string) *frontend.Program {
	t.Helper()
	p, err := frontend.LoadFile(filepath.Join("..", "examples", name), frontend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// writtenConfig is the configuration p names (its superoptimize call),
// restricted by the lists it gives.
func writtenConfig(t testing.TB, p *frontend.Program) Config {
	t.Helper()
	cfg, err := NamedConfig(p.Superopt.Config)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Restrict(Restrictions(p.Superopt.Lists))
	return cfg
}
