package main

import (
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// TestDeepGraphFile: a deep chain in a .ugraph.json file is verified like
// any other graph; the verifier's fast path recursed once per op and
// overflowed the stack, the default 1 GB, at a 600k-op chain. At a tenth of
// the stack a tenth of the chain overflows as surely (a frame of 1.1 KB an
// op does; the one that did took 1.7 KB or more), and its 2.5 MB file
// decodes in a tenth of the time (25 MB took 10 s, twice).
func TestDeepGraphFile(t *testing.T) {
	defer debug.SetMaxStack(debug.SetMaxStack(64 << 20))
	g := kernel.New()
	x, err := g.AddInput(ugraph.MustShape(4, 4), ugraph.Float16)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 60_000 {
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
