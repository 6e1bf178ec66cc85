package rewrite

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.starlark.net/syntax"

	"github.com/mirage-go/mirage/frontend/pylex"
)

// lex is pylex.Lex's tokens.
func lex(src string) []pylex.Token {
	toks, _ := pylex.Lex(src)
	return toks
}

func TestRewriteImports(t *testing.T) {
	const mi = ImportFunc + `("mirage")`
	strict := Options{
		Members: []string{"float16", "new_kernel_graph"},
		Refuse:  func(m string) error { return fmt.Errorf("refused %s", m) },
	}
	tests := []struct{ in, want string }{
		{"import mirage as mi\n", "mi = (" + mi + ")\n"},
		{"import mirage\n", "mirage = (" + mi + ")\n"},
		{"  import mirage as a, mirage as b # c\n", "  (a, b) = (" + mi + ", " + mi + ") # c\n"},
		{"from mirage import float16 as h\n", "h = (" + mi + ".float16)\n"},
		{"from mirage import (\n float16,\n)\nx", "float16 = (" + mi + ".float16\n\n)\nx"},
		{"from mirage import *", "(float16, new_kernel_graph) = (" + mi + ".float16, " + mi + ".new_kernel_graph)"},
		{"from __future__ import annotations\n", "(None)\n"},
		{"import mirage \\\n as mi; y = 1\n", "mi = (" + mi + "\n); y = 1\n"},
		{"s = 'import x'\n", "s = 'import x'\n"},
		{"raise E from e\n", "raise E from e\n"},
	}
	for _, tt := range tests {
		res, err := Source(tt.in, lex(tt.in), strict)
		got, foreign := res.Code, res.Imports
		if err != nil || got != tt.want || len(foreign) > 0 {
			t.Errorf("rewrite %q:\n got %q, %v, %v\nwant %q", tt.in, got, foreign, err, tt.want)
		}
		if strings.Count(got, "\n") != strings.Count(tt.in, "\n") {
			t.Errorf("rewrite %q moved lines", tt.in)
		}
	}
}

func TestRewriteImportsStubs(t *testing.T) {
	in := "import torch.nn as nn, os.path\nfrom numpy import zeros\nfrom torch import *\nimport argparse\n"
	res, err := Source(in, lex(in), Options{})
	got, foreign := res.Code, res.Imports
	want := "(nn, os) = (" + ImportFunc + `("torch.nn"), ` + ImportFunc + `("os"))` + "\nzeros = (" + ImportFunc + `("numpy").zeros)` +
		"\n(None)\nargparse = (" + ImportFunc + `("argparse"))` + "\n"
	if err != nil || got != want {
		t.Errorf("got %q, %v\nwant %q", got, err, want)
	}
	wantForeign := []Import{{"torch.nn", 1, false}, {"os.path", 1, false}, {"numpy", 2, false}, {"torch", 3, true}, {"argparse", 4, false}}
	if !slices.Equal(foreign, wantForeign) {
		t.Errorf("foreign imports %v, want %v", foreign, wantForeign)
	}
}

// Decorators and assert statements become calls on their lines, which
// Desugar replaces.
func TestRewriteStatements(t *testing.T) {
	const d, a = decoratorFunc + "(", assertFunc + "("
	tests := []struct{ in, want string }{
		{"@torch.no_grad()\ndef f():\n  pass\n", d + "torch.no_grad())\ndef f():\n  pass\n"},
		{"  @dec # c\n", "  " + d + "dec) # c\n"},
		{"@\n", d + ")\n"},
		{"assert x == 1, 'm'\n", a + "x == 1, 'm')\n"},
		{"assert (a,\n   b); y = 1\n", a + "(a,\n   b)); y = 1\n"},
		{"if c: assert c\n", "if c: " + a + "c)\n"},
		{"x.assert\n", "x.assert\n"},
		{"x = y @ z\ns = '@d'\n", "x = y * " + MatmulFunc + " * z\ns = '@d'\n"},
		{"assert f(x @ y) # @\n@d(a @ b)\ndef f(): pass", a + "f(x * " + MatmulFunc + " * y)) # @\n" + d + "d(a * " + MatmulFunc + " * b))\ndef f(): pass"},
		{"assert x", a + "x)"},
		{"x @= (a@\n b)\n", "x *= " + MatmulFunc + " * (a* " + MatmulFunc + " *\n b)\n"},
		// No Python, but an argument list for the parser to refuse, not a
		// second call opened inside the first (found by FuzzSource).
		{"@a:assert ", d + "a:assert) "},
		{"@a: assert x\n", d + "a: assert x)\n"},
	}
	for _, tt := range tests {
		res, err := Source(tt.in, lex(tt.in), Options{})
		got := res.Code
		if err != nil || got != tt.want {
			t.Errorf("rewrite %q:\n got %q, %v\nwant %q", tt.in, got, err, tt.want)
		}
		if strings.Count(got, "\n") != strings.Count(tt.in, "\n") {
			t.Errorf("rewrite %q moved lines", tt.in)
		}
	}
}

// Valid Starlark that looks like Python Starlark lacks is not flagged.
func TestFindConstructsValid(t *testing.T) {
	code := strings.Join([]string{
		"def f(a, *args, b=lambda x: x, **kw):",
		"    return g(*args, **kw)",
		"d = {'a': 1, 'b': [1, 2][0:1]}",
		"x = d['a'] if d else None",
		"s = r'x' + b'y' + rb'z' + '''is'''",
		"for i in range(3):",
		"    if i:",
		"        pass",
		"    else:",
		"        pass",
		"y = not x and x in d",
		"h = lambda x=1, y=2: x * y",
		"z = g(k=1) * (1,) * 2; w = -x * 2",
	}, "\n") + "\n"
	if cs := Constructs(lex(code)); len(cs) > 0 {
		t.Errorf("Constructs: %v", cs)
	}
}

// The mistakes Source finds, at their lines; the loader's tests check the
// same through a whole load.
func TestSourceErrors(t *testing.T) {
	opts := Options{Members: []string{"float16", "new_kernel_graph", "set_gpu_device_id"}, API: []string{"float16", "new_kernel_graph"}}
	strict := opts
	strict.Refuse = func(m string) error { return fmt.Errorf("refused %q", m) }
	for _, tt := range []struct {
		src    string
		strict bool
		line   int
		want   string
	}{
		{"import mirage as mi\nimport torch\n", true, 2, `refused "torch"`},
		{"from torch import nn\n", true, 1, `refused "torch"`},
		{"def f():\n    import numpy as np\n", true, 2, `refused "numpy"`},
		{"import os.path\nimport mirage as\n", true, 1, `refused "os.path"`}, // the first mistake
		{"from mirage import new_kernel\n", false, 1, `cannot import name "new_kernel" from mirage (it has float16, new_kernel_graph)`},
		{"x = 1\nimport mirage as\n", false, 2, "invalid import statement"},
		{"from mirage import (float16\n", false, 1, "invalid import statement"},
		{"from mirage import float16,\n", false, 1, "invalid import statement"},
		{"x = import mirage\n", false, 1, "invalid syntax: `import` must start a statement"},
		{"import class\n", false, 1, "invalid import statement"},
	} {
		o := opts
		if tt.strict {
			o = strict
		}
		_, err := Source(tt.src, lex(tt.src), o)
		var e *Error
		if !errors.As(err, &e) || e.Line != tt.line || e.Col != 0 || e.Msg != tt.want {
			t.Errorf("%q: %v, want %d: %s", tt.src, err, tt.line, tt.want)
		}
	}
}

// Desugar gives decorators and asserts their meaning, or names the
// mistake at its line.
func TestDesugar(t *testing.T) {
	for _, tt := range []struct {
		src  string
		want string // the desugared statements, or the error
	}{
		{"@d1\n@d2(x)\ndef f():\n    pass\n", `def f; f = "@"(f, d1, d2(x))`},
		{"def g():\n    @d\n    def f():\n        pass\n", `def g`},
		{"assert x == 1, 'm'\n", `if "assert failed"("compare op"(==, x, 1)): "assert"("m")`},
		{"if c:\n    assert not a and b\n", `if c`},
		{"@print\nx = 1\n", "1: a decorator must be followed by a def"},
		{"def f():\n    pass\n@print\n", "3: a decorator must be followed by a def"},
		{"@\ndef f():\n    pass\n", "1: invalid decorator: want `@expression` on a line of its own"},
		{"assert\n", "1: invalid assert statement: want `assert condition` or `assert condition, message`"},
		{"x = 1\nassert x, 'a', 'b'\n", "2: invalid assert statement"},
	} {
		res, err := Source(tt.src, lex(tt.src), Options{})
		if err != nil {
			t.Fatalf("%q: %v", tt.src, err)
		}
		code := res.Code
		f, err := (&syntax.FileOptions{TopLevelControl: true}).Parse("p.py", code, 0)
		if err != nil {
			t.Fatalf("%q: %v", tt.src, err)
		}
		stmts, err := Desugar(f.Stmts)
		got := ""
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Errorf("%q: %v (%T), want an *Error", tt.src, err, err)
			}
			got = err.Error()
		} else {
			got = describe(stmts)
		}
		if !strings.HasPrefix(got, tt.want) {
			t.Errorf("%q: %s\nwant %s", tt.src, got, tt.want)
		}
	}
}

// describe prints statements briefly: defs by name, assignments and
// expression statements in full, ifs with their condition; the names of
// the built-ins the rewrite calls are quoted.
func describe(stmts []syntax.Stmt) string {
	var out []string
	var expr func(e syntax.Expr) string
	expr = func(e syntax.Expr) string {
		switch e := e.(type) {
		case *syntax.Ident:
			return e.Name
		case *syntax.Literal:
			if e.Token == syntax.STRING {
				return strconv.Quote(e.Value.(string))
			}
			if e.Raw == fmt.Sprint(int(syntax.EQL)) {
				return "=="
			}
			return e.Raw
		case *syntax.CallExpr:
			var args []string
			for _, a := range e.Args {
				args = append(args, expr(a))
			}
			fn := expr(e.Fn)
			if id, ok := e.Fn.(*syntax.Ident); ok && slices.Contains(Builtins(), id.Name) {
				fn = strconv.Quote(id.Name)
			}
			return fn + "(" + strings.Join(args, ", ") + ")"
		case *syntax.BinaryExpr:
			return expr(e.X) + " " + e.Op.String() + " " + expr(e.Y)
		}
		return fmt.Sprintf("%T", e)
	}
	for _, s := range stmts {
		switch s := s.(type) {
		case *syntax.DefStmt:
			out = append(out, "def "+s.Name.Name)
		case *syntax.AssignStmt:
			out = append(out, expr(s.LHS)+" = "+expr(s.RHS))
		case *syntax.ExprStmt:
			out = append(out, expr(s.X))
		case *syntax.IfStmt:
			body := ""
			if len(s.True) == 1 {
				body = ": " + describe(s.True)
			}
			out = append(out, "if "+expr(s.Cond)+body)
		default:
			out = append(out, fmt.Sprintf("%T", s))
		}
	}
	return strings.Join(out, "; ")
}

// lines counts the newlines of s as Starlark does: "\r\n" and a lone '\r'
// are one.
func lines(s string) int {
	return strings.Count(strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n"), "\n")
}

// FuzzSource checks that no source makes Source panic, that a rewrite
// keeps every line where it was and maps every name back to its column
// (checkColumns), that its errors are positioned *Errors,
// and that a strict rewrite returns no stubbed module. Run it with
//
//	go test -fuzz=FuzzSource ./frontend/rewrite
func FuzzSource(f *testing.F) {
	for _, tt := range identityRewrites {
		f.Add(tt.in)
	}
	for _, s := range []string{
		"import mirage as mi\nfrom mirage import (\n float16,\n)\nimport torch.nn as nn, os.path\nfrom numpy import *\n",
		"from __future__ import annotations\nimport mirage \\\n as mi; y = 1\n", "from . import x\nfrom .. import y\n",
		"@torch.no_grad()\ndef f():\n  assert (a,\n   b); y = x @ w\n", "x @= (a@\n b)\n", "if c: assert c\n@\n",
		"import mirage \\\r\n as mi\rfrom mirage import (float16,\r\n new_kernel_graph)\n", "x = import mirage\n", "class A: pass\nx = y is z\n", "s = 'import x'  # from y import z\n", "raise E from e\n", "\x97\xb2@A\n@d(\n qq)\ndef f(): pass\n",
		"y = X[:, :n][..., 0]\nz = X[a,\n b:c:d, ::2] @ W[1_0, None]\n",
	} {
		f.Add(s)
	}
	members := []string{"float16", "new_kernel_graph"}
	f.Fuzz(func(t *testing.T, src string) {
		toks, _ := pylex.Lex(src)
		for _, strict := range []bool{false, true} {
			opts := Options{Members: members, API: members}
			if strict {
				opts.Refuse = func(m string) error { return fmt.Errorf("refused %q", m) }
			}
			res, err := Source(src, toks, opts)
			code, foreign := res.Code, res.Imports
			if err != nil {
				var e *Error
				if !errors.As(err, &e) || e.Line < 1 || code != "" || foreign != nil {
					t.Fatalf("error %v (%T) is not a positioned *Error alone", err, err)
				}
				continue
			}
			if lines(code) != lines(src) {
				t.Fatalf("%q became %q: lines moved", src, code)
			}
			if strict && len(foreign) > 0 {
				t.Fatalf("a strict rewrite let %v through", foreign)
			}
			checkColumns(t, src, res, "None") // a slice's missing bound
			Constructs(toks)                  // must not panic either
		}
	})
}

// A subscript with several indices or an ellipsis becomes the tuple Python
// indexes with, on its lines; one Starlark parses stays as it is.
func TestRewriteSubscripts(t *testing.T) {
	const s, e = SliceFunc + "(", EllipsisValue
	tests := []struct{ in, want string }{
		{"y = X[:, : (n * d)]\n", "y = X[(" + s + "None, None), " + s + "None,  (n * d)))]\n"},
		{"y = X[:, (n * d) :]\n", "y = X[(" + s + "None, None), " + s + "(n * d) , None))]\n"},
		{"y = X[..., 0]\n", "y = X[(" + e + ", 0)]\n"},
		{"y = X[:, None]\n", "y = X[(" + s + "None, None), None)]\n"},
		{"y = X[1:2:3, ::2]\n", "y = X[(" + s + "1, 2, 3), " + s + "None, None, 2))]\n"},
		{"y = X[a,]\n", "y = X[(a,)]\n"},
		{"y = X[...]\n", "y = X[" + e + "]\n"},
		{"y = f(a)[0][i, j]\n", "y = f(a)[0][(i, j)]\n"},
		{"y = X[Y[1, 2], 3]\n", "y = X[(Y[(1, 2)], 3)]\n"},
		{"y = X[a,\n  b:c]\n", "y = X[(a,\n  " + s + "b, c))]\n"},
		{"X[0, 1] = v @ w\n", "X[(0, 1)] = v * " + MatmulFunc + " * w\n"},
		// Starlark's own: a list, one index, one slice, a call's arguments.
		{"y = [1, 2][0:1]\n", "y = [1, 2][0:1]\n"},
		{"y = d[k]; z = s[1:]\n", "y = d[k]; z = s[1:]\n"},
		{"f(a, b)[x]\n", "f(a, b)[x]\n"},
		{"for x in [a, b]: pass\n", "for x in [a, b]: pass\n"},
		{"y = X[1, 2\n", "y = X[1, 2\n"}, // unbalanced: the parser's to report
		// Digit separators, which Starlark lacks, go.
		{"n = 4_096 * 0x_ff + 1_0.5e1_0\n", "n = 4096 * 0xff + 10.5e10\n"},
	}
	for _, tt := range tests {
		res, err := Source(tt.in, lex(tt.in), Options{})
		if err != nil || res.Code != tt.want {
			t.Errorf("rewrite %q:\n got %q, %v\nwant %q", tt.in, res.Code, err, tt.want)
			continue
		}
		checkColumns(t, tt.in, res, "None")
	}
}

// An assignment to several names passes its value through UnpackFunc; one
// to a single name, keyword arguments and a lambda's defaults do not.
func TestRewriteUnpacking(t *testing.T) {
	const u = UnpackFunc + "("
	tests := []struct{ in, want string }{
		{"Xk, Xv = Xkv.chunk(2, 1)\n", "Xk, Xv = " + u + "2, (Xkv.chunk(2, 1)))\n"},
		{"a, b, c = 1, 2, 3  # c\n", "a, b, c = " + u + "3, (1, 2, 3))  # c\n"},
		{"a, = x; y = 1\n", "a, = " + u + "1, (x)); y = 1\n"},
		{"a, b = f(\n  k=1)\n", "a, b = " + u + "2, (f(\n  k=1)))\n"},
		{"a, b = X[1, 2]\n", "a, b = " + u + "2, (X[(1, 2)]))\n"},
		{"a, b = x @ w\n", "a, b = " + u + "2, (x * " + MatmulFunc + " * w))\n"},
		{"x = 1, 2\n", "x = 1, 2\n"},
		{"f(a, k=1)\n", "f(a, k=1)\n"},
		{"lambda a, b=1: a\n", "lambda a, b=1: a\n"},
		{"for a, b in x: pass\n", "for a, b in x: pass\n"},
		{"a, b += 1\n", "a, b += 1\n"},
		{"a, b =\n", "a, b =\n"}, // no value: the parser's to report
	}
	for _, tt := range tests {
		res, err := Source(tt.in, lex(tt.in), Options{})
		if err != nil || res.Code != tt.want {
			t.Errorf("rewrite %q:\n got %q, %v\nwant %q", tt.in, res.Code, err, tt.want)
			continue
		}
		checkColumns(t, tt.in, res)
	}
}
