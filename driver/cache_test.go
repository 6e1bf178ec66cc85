package driver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mirage-go/mirage/ffverify"
	"github.com/mirage-go/mirage/search"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// TestCachedOutputsInTheProgramsOrder: a one-part program's answer is its
// part's, checked by the part's check, so a cache hit must pass that check
// too. An entry whose best fused candidate has its two outputs swapped
// (edited by hand) is taken in the program's order (the verifier's
// mapping), as the search takes what it verifies; it passed the fast path,
// which matches outputs in any order, and was the answer as it stood.
func TestCachedOutputsInTheProgramsOrder(t *testing.T) {
	program := loadSource(t, "two_outs", `
X = g.new_input(dims=(64, 64), dtype=mi.float16)
Y = g.new_input(dims=(64, 64), dtype=mi.float16)
g.mark_output(g.add(X, Y))
g.mark_output(g.mul(X, Y))
`)
	dir := t.TempDir()
	cache := &search.Cache{Dir: dir}
	opts := Options{TimeLimit: 20 * time.Second, Workers: 1, Seed: 1, Cache: cache}
	if _, err := Run(context.Background(), program, opts); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.ugraph.json"))
	if len(files) != 1 {
		t.Fatalf("cache entries %v, want one (one part)", files)
	}
	key := strings.TrimSuffix(filepath.Base(files[0]), ".ugraph.json")
	f, err := kernel.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	stored, err := search.ResultFromFile(f)
	if err != nil {
		t.Fatal(err)
	}
	var edited *search.Result
	for _, c := range stored.Candidates {
		if c.Customized > 0 {
			g := c.Graph.Clone()
			g.Outputs[0], g.Outputs[1] = g.Outputs[1], g.Outputs[0]
			c.Graph, c.Hash = g, kernel.Hash(g)
			edited = &search.Result{Candidates: []*search.Candidate{c}}
			break
		}
	}
	if edited == nil {
		t.Fatal("the search found no fused candidate")
	}
	if err := os.Remove(files[0]); err != nil {
		t.Fatal(err)
	}
	if err := cache.Store(key, "part", edited); err != nil {
		t.Fatal(err)
	}
	out, err := Run(context.Background(), program, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Parts[0].Cached || out.Candidates[0].Unfused {
		t.Fatalf("the rerun's answer: cached part %v, unfused %v; want the cached fused one", out.Parts[0].Cached, out.Candidates[0].Unfused)
	}
	v, err := ffverify.New(program, ffverify.Options{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range out.Candidates {
		r, err := v.Verify(c.Graph)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Equivalent || r.Mapping[0] != 0 || r.Mapping[1] != 1 {
			t.Errorf("answer %d (unfused %v) does not compute the program's outputs in order: %v", i, c.Unfused, r)
		}
	}
}

// TestCachedOutputsByParts: the same edit in a part of a program of several
// parts whose whole check does not finish, where answers stand on their
// parts' checks (Candidate.ByParts) and so on the cache's.
func TestCachedOutputsByParts(t *testing.T) {
	program := loadSource(t, "two_parts", `
X = g.new_input(dims=(64, 64), dtype=mi.float16)
Y = g.new_input(dims=(64, 64), dtype=mi.float16)
W = g.new_input(dims=(64, 64), dtype=mi.float16)
A = g.add(X, Y)
B = g.mul(X, Y)
g.mark_output(A)
g.mark_output(B)
C = g.matmul(A, W)
D = g.matmul(C, W)
E = g.matmul(D, W)
F = g.matmul(E, W)
g.mark_output(g.add(F, B))
`)
	dir := t.TempDir()
	cache := &search.Cache{Dir: dir}
	opts := Options{TimeLimit: 20 * time.Second, Workers: 1, Seed: 1, Cache: cache, MaxStates: 20000}
	first, err := Run(context.Background(), program, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Parts) < 2 {
		t.Fatalf("%d parts, want several", len(first.Parts))
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.ugraph.json"))
	edited := false
	for _, file := range files {
		f, err := kernel.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		stored, err := search.ResultFromFile(f)
		if err != nil {
			t.Fatal(err)
		}
		key := strings.TrimSuffix(filepath.Base(file), ".ugraph.json")
		for _, c := range stored.Candidates {
			g := c.Graph
			if c.Customized > 0 && len(g.Outputs) == 2 && g.Tensors[g.Outputs[0]] == g.Tensors[g.Outputs[1]] {
				g = g.Clone()
				g.Outputs[0], g.Outputs[1] = g.Outputs[1], g.Outputs[0]
				c.Graph, c.Hash = g, kernel.Hash(g)
				os.Remove(file)
				if err := cache.Store(key, "part", &search.Result{Candidates: []*search.Candidate{c}}); err != nil {
					t.Fatal(err)
				}
				edited = true
				break
			}
		}
	}
	if !edited {
		t.Fatal("no cached part with two outputs of one shape")
	}
	defer func(c func(*run, *kernel.Graph, []Part, []*outcome) (bool, error)) { wholeCheck = c }(wholeCheck)
	wholeCheck = func(d *run, _ *kernel.Graph, _ []Part, _ []*outcome) (bool, error) {
		<-d.verifyStop // as a check of a program too large for the budget
		return false, ffverify.ErrStopped
	}
	opts.TimeLimit = 4 * time.Second
	out, err := Run(context.Background(), program, opts)
	if err != nil {
		t.Fatal(err)
	}
	byParts := false
	for i, c := range out.Candidates {
		byParts = byParts || c.ByParts
		r, err := ffverify.Equivalent(program, c.Graph, ffverify.Options{Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		inOrder := r.Equivalent
		for j, k := range r.Mapping {
			inOrder = inOrder && j == k
		}
		if !inOrder {
			t.Errorf("answer %d (unfused %v, by parts %v) does not compute the program: %v", i, c.Unfused, c.ByParts, r)
		}
	}
	if !byParts {
		t.Error("no answer stands on its parts' checks: the test needs one")
	}
}
