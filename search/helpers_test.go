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
