package layers

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/mirage-go/mirage"

// floors places every package of the module (by its path in the module)
// on a floor of DESIGN.md §2; a package may import only packages on lower
// floors. Floor 1, the IR, is split in the order its packages build on one
// another (1.0 < 1.1 < ...), and so is floor 0: the other helpers read
// files through internal/boundedread. A pattern ending in "/..." covers a
// subtree.
var floors = map[string]float64{
	// 0: no project imports (but internal/boundedread's).
	"internal/boundedread": 0, "internal/...": 0.1, "absexpr/z3": 0, "examples": 0, "target": 0,
	"deploy": 0, // the cluster files (deploy/slurm, deploy/k8s); its package holds only their tests
	// 1: the IR.
	"ugraph":              1.0,
	"ugraph/internal/...": 1.1, "ugraph/layout": 1.1,
	"ugraph/block":  1.2,
	"ugraph/kernel": 1.3, "ugraph/thread": 1.3,
	// The front-end's phases and libraries that stand alone, below
	// frontend, which imports them: rewrite works on pylex's tokens.
	"frontend/pylex": 1.8, "frontend/argparse": 1.8, "frontend/pymath": 1.8, "frontend/pyformat": 1.8,
	"frontend/rewrite": 1.9,
	// 2: each reads or builds the IR.
	"interp": 2, "ffverify": 2, "absexpr": 2, "frontend": 2, "templates": 2,
	"launch":          2,   // every kernel's launch, read by cost, search and codegen/cuda
	"seed":            2,   // fused μGraphs built by rule, which search starts from
	"internal/gpurun": 2.5, // the GPU runs' measured graphs, planned as they ran (launch.Options), which the tests of launch, cost and codegen read
	// 3: cost, the code generator and the generator.
	"cost": 3, "codegen/cuda": 3, "search": 3,
	// 4: the driver.
	"driver": 4, "tune": 4, // tune: measuring candidates on a GPU
	"enginerun": 4,   // checking emitted code in examples/engine's decode loop
	"inspect":   4,   // what show prints of a graph
	"check":     4.5, // answer checking (verify, eval): reads the driver's inputs and dynamic documents
	// 5: what wires everything; bench's workloads first.
	"bench":      5.0,
	"cmd/mirage": 5.1,
}

// exceptions are the imports DESIGN §2 allows within a floor: search and
// codegen/cuda may call cost for estimates.
var exceptions = map[[2]string]bool{
	{"search", "cost"}:       true,
	{"codegen/cuda", "cost"}: true,
}

// floorOf returns the floor of package p (a path in the module).
func floorOf(p string) (float64, bool) {
	if f, ok := floors[p]; ok {
		return f, true
	}
	for pat, f := range floors {
		if prefix, ok := strings.CutSuffix(pat, "/..."); ok && (p == prefix || strings.HasPrefix(p, prefix+"/")) {
			return f, true
		}
	}
	return 0, false
}

// imports returns the module's packages (paths in the module) and what each
// imports in its non-test files, every build configuration's files
// together: the module's packages by their path in it, others whole.
func imports(t *testing.T, root string) map[string][]string {
	t.Helper()
	pkgs := map[string][]string{}
	err := filepath.WalkDir(root, func(file string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && file != root && (strings.HasPrefix(name, ".") || name == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(file))
		pkg := filepath.ToSlash(rel)
		pkgs[pkg] = pkgs[pkg] // a package that imports nothing of ours is listed too
		for _, spec := range f.Imports {
			ip, _ := strconv.Unquote(spec.Path.Value)
			dep, ours := strings.CutPrefix(ip, module+"/")
			if !ours {
				dep = "ext:" + ip
			}
			if !slices.Contains(pkgs[pkg], dep) {
				pkgs[pkg] = append(pkgs[pkg], dep)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

func TestImportsGoDown(t *testing.T) {
	root := filepath.Join("..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatal(err)
	}
	pkgs := imports(t, root)
	if len(pkgs) < 15 {
		t.Fatalf("found only %d packages: the walk misses the tree", len(pkgs))
	}
	for pkg, deps := range pkgs {
		if pkg == path.Join("internal", "layers") {
			continue
		}
		f, ok := floorOf(pkg)
		if !ok {
			t.Errorf("%s is on no floor: place it in this test's table and in DESIGN.md §2", pkg)
			continue
		}
		for _, dep := range deps {
			if strings.HasPrefix(dep, "ext:") {
				continue
			}
			g, ok := floorOf(dep)
			if ok && (g < f || exceptions[[2]string{pkg, dep}]) {
				continue
			}
			t.Errorf("%s (floor %v) imports %s (floor %v): imports go down the floors of DESIGN.md §2", pkg, f, dep, g)
		}
	}
}

// The check itself: an import up a floor, or across one, is caught.
func TestFloorsCatchUpwardImports(t *testing.T) {
	for _, tt := range []struct {
		pkg, dep string
		ok       bool
	}{
		{"search", "ugraph/kernel", true},
		{"ugraph/thread", "target", true},
		{"search", "frontend", true},         // a lower floor: allowed by floors, kept out by TestSearchIsFreeOfTheFrontEnd
		{"search", "frontend/rewrite", true}, // likewise
		{"frontend", "frontend/rewrite", true},
		{"frontend/rewrite", "frontend/pylex", true},
		{"frontend/pylex", "frontend/rewrite", false},
		{"frontend/rewrite", "frontend", false},
		{"frontend/argparse", "frontend", false},
		{"frontend/pyformat", "ugraph/kernel", true},
		{"search", "cost", true},
		{"ugraph/block", "ugraph/kernel", false},
		{"frontend", "search", false},
		{"cost", "codegen/cuda", false},
		{"ffverify", "interp", false},
		{"target", "ugraph", false},
	} {
		f, _ := floorOf(tt.pkg)
		g, _ := floorOf(tt.dep)
		if ok := g < f || exceptions[[2]string{tt.pkg, tt.dep}]; ok != tt.ok {
			t.Errorf("%s importing %s: allowed %v, want %v", tt.pkg, tt.dep, ok, tt.ok)
		}
	}
}

// The generator takes a kernel graph and a search.Config: neither the
// front-end (frontend or any package under it) nor Starlark is among its
// dependencies, direct or not.
func TestSearchIsFreeOfTheFrontEnd(t *testing.T) {
	pkgs := imports(t, filepath.Join("..", ".."))
	seen := map[string]bool{}
	todo := []string{"search"}
	for len(todo) > 0 {
		p := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if seen[p] {
			continue
		}
		seen[p] = true
		if strings.HasPrefix(p, "frontend") || strings.HasPrefix(p, "ext:go.starlark.net") {
			t.Fatalf("search depends on %s", strings.TrimPrefix(p, "ext:"))
		}
		todo = append(todo, pkgs[p]...)
	}
}

// cmdImports are the only packages of the module cmd/mirage may import:
// it parses flags, calls one function per command and prints (DESIGN §7).
// What a command decides (options, reports, output sets, checks, the
// suite's run loop) lives below it, in these packages.
var cmdImports = []string{
	"bench",             // mirage bench: bench.Suite
	"check",             // verify, eval
	"driver",            // superopt, merge, emit: inputs, options, output sets, reports
	"frontend",          // the front-end's options (a program's arguments, --strict) and bounds
	"inspect",           // show
	"internal/memlimit", // --max-memory, the Go heap's soft limit
	"target",            // --arch
	"tune",              // mirage tune
}

func TestCommandLineImportsItsList(t *testing.T) {
	pkgs := imports(t, filepath.Join("..", ".."))
	deps, ok := pkgs["cmd/mirage"]
	if !ok {
		t.Fatal("no cmd/mirage in the tree")
	}
	if len(cmdImports) > 8 {
		t.Errorf("cmdImports lists %d packages: cmd/mirage imports at most 8 of the module's", len(cmdImports))
	}
	for _, dep := range deps {
		if !strings.HasPrefix(dep, "ext:") && !slices.Contains(cmdImports, dep) {
			t.Errorf("cmd/mirage imports %s: what it needs of it belongs in one of %v", dep, cmdImports)
		}
	}
	for _, p := range cmdImports {
		if !slices.Contains(deps, p) {
			t.Errorf("cmdImports lists %s, which cmd/mirage no longer imports: take it off", p)
		}
	}
}
