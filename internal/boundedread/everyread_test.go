package boundedread

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// notReads are the calls of os.Open that open something other than a
// file to read, by the file and the function that makes them.
var notReads = map[[2]string]string{
	{"internal/atomicfile/atomicfile.go", "syncDir"}: "a directory, to sync a rename in it",
	{"internal/atomicfile/lock_unix.go", "lockDir"}:  "a directory, to lock it",
}

// Every file mirage reads goes through this package: a call of os.ReadFile,
// os.Open or os.OpenFile for reading, or io.ReadAll on anything but an
// io.LimitReader, elsewhere in the module's code is an unbounded read.
func TestEveryReadIsBounded(t *testing.T) {
	root := filepath.Join("..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatal(err)
	}
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if strings.HasPrefix(rel, "internal/boundedread/") {
			return nil
		}
		files++
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			ast.Inspect(fn, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				what := unboundedRead(call)
				if what == "" || notReads[[2]string{rel, fn.Name.Name}] != "" {
					return true
				}
				t.Errorf("%s: %s reads with %s: read through boundedread (a size cap, regular files only)", fset.Position(call.Pos()), fn.Name.Name, what)
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("looked at %d files: the walk misses the module", files)
	}
}

// unboundedRead names the call when it reads a file, or all of a reader,
// without a bound; "" otherwise.
func unboundedRead(call *ast.CallExpr) string {
	pkg, fn := selector(call.Fun)
	switch {
	case pkg == "os" && (fn == "ReadFile" || fn == "Open"):
		return "os." + fn
	case pkg == "os" && fn == "OpenFile" && len(call.Args) >= 2 && !writes(call.Args[1]):
		return "os.OpenFile"
	case pkg == "io" && fn == "ReadAll" && len(call.Args) == 1:
		if inner, ok := call.Args[0].(*ast.CallExpr); ok {
			if p, f := selector(inner.Fun); p == "io" && f == "LimitReader" {
				return ""
			}
		}
		return "io.ReadAll"
	}
	return ""
}

// selector splits pkg.Fn.
func selector(e ast.Expr) (pkg, fn string) {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return "", ""
	}
	id, ok := sel.X.(*ast.Ident)
	if !ok {
		return "", ""
	}
	return id.Name, sel.Sel.Name
}

// writes reports whether os.OpenFile's flags open the file for writing.
func writes(flags ast.Expr) bool {
	w := false
	ast.Inspect(flags, func(n ast.Node) bool {
		if _, f := selector(asExpr(n)); f == "O_WRONLY" || f == "O_RDWR" || f == "O_APPEND" || f == "O_CREATE" {
			w = true
		}
		return true
	})
	return w
}

func asExpr(n ast.Node) ast.Expr {
	e, _ := n.(ast.Expr)
	return e
}
