package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// TestDeepGraphFile: a 600k-op chain in a .ugraph.json file (25 MB) is
// verified like any other graph; the verifier's fast path recursed once per
// op and overflowed the stack.
func TestDeepGraphFile(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and verifies a 600k-op graph")
	}
	g := kernel.New()
	x, err := g.AddInput(ugraph.MustShape(4, 4), ugraph.Float16)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 600_000 {
		k := ugraph.OpExp
		if i%2 == 1 {
			k = ugraph.OpSquare
		}
		if x, err = g.Add(k, ugraph.Attr{}, x); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.MarkOutput(x); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "chain.ugraph.json")
	if err := kernel.WriteFile(path, kernel.NewFile("chain", g)); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := mirage(t, "verify", path, path); code != exitOK || !strings.HasPrefix(stdout, "equivalent") {
		t.Errorf("verify: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
