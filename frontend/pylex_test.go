package frontend

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestLex(t *testing.T) {
	code := "x = f(a,\n      'μ)' ) # c (\ny = \"\"\"a\nb\"\"\"; z = r'\\'' \\\n  + 1.5e-3\r\nw = 0x1E+2\n"
	var got []string
	for _, tk := range lex(code) {
		s := tk.text
		if tk.kind == tokNewline {
			s = "NL"
		}
		if tk.stmtStart {
			s = "^" + s
		}
		got = append(got, fmt.Sprintf("%d:%d:%s", tk.line, tk.col, s))
	}
	want := []string{
		"1:1:^x", "1:3:=", "1:5:f", "1:6:(", "1:7:a", "1:8:,", "2:7:'μ)'", "2:12:)", "2:19:NL",
		"3:1:^y", "3:3:=", `3:5:"""a` + "\n" + `b"""`, "4:5:;", `4:7:^z`, "4:9:=", `4:11:r'\''`,
		"5:3:+", "5:5:1.5e-3", "5:11:NL",
		"6:1:^w", "6:3:=", "6:5:0x1E", "6:9:+", "6:10:2", "6:11:NL",
	}
	if !slices.Equal(got, want) {
		t.Errorf("lex:\n got %q\nwant %q", got, want)
	}
}

func TestLexUnterminated(t *testing.T) {
	toks := lex("a = 1\nb = 'x\nc = 2\n")
	if n := len(toks); n != 6 || toks[n-1].text != "=" {
		t.Errorf("tokens %v, want those before the unterminated string", toks)
	}
}

func TestRewriteImports(t *testing.T) {
	const mi = importFunc + `("mirage")`
	members := []string{"float16", "new_kernel_graph"}
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
		got, foreign, err := rewritePython("p.py", tt.in, lex(tt.in), true, members)
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
	got, foreign, err := rewritePython("p.py", in, lex(in), false, nil)
	want := "(nn, os) = (" + importFunc + `("torch.nn"), ` + importFunc + `("os"))` + "\nzeros = (" + importFunc + `("numpy").zeros)` +
		"\n(None)\nargparse = (" + importFunc + `("argparse"))` + "\n"
	if err != nil || got != want {
		t.Errorf("got %q, %v\nwant %q", got, err, want)
	}
	wantForeign := []foreignImport{{"torch.nn", 1, false}, {"os.path", 1, false}, {"numpy", 2, false}, {"torch", 3, true}, {"argparse", 4, false}}
	if !slices.Equal(foreign, wantForeign) {
		t.Errorf("foreign imports %v, want %v", foreign, wantForeign)
	}
	// One warning for them all.
	w := stubWarning("p.py", foreign)
	for _, part := range []string{"p.py:1: modules torch.nn, os.path, numpy, torch and argparse are stubs", "argparse reads the program's arguments",
		"`from torch import *` binds nothing", "--strict"} {
		if !strings.Contains(w, part) || strings.Contains(w, "\n") {
			t.Errorf("warning %q lacks %q", w, part)
		}
	}
	if w := stubWarning("p.py", foreign[2:3]); w != "p.py:2: module numpy is a stub, with no file, network or process access: its attributes, calls and results are inert values (--strict refuses such imports)" {
		t.Errorf("one module: %q", w)
	}
}

// Decorators and assert statements become calls on their lines, which
// desugar replaces.
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
		{"x = y @ z\ns = '@d'\n", "x = y * " + matmulFunc + " * z\ns = '@d'\n"},
		{"assert f(x @ y) # @\n@d(a @ b)\ndef f(): pass", a + "f(x * " + matmulFunc + " * y)) # @\n" + d + "d(a * " + matmulFunc + " * b))\ndef f(): pass"},
		{"assert x", a + "x)"},
		{"x @= (a@\n b)\n", "x *= " + matmulFunc + " * (a* " + matmulFunc + " *\n b)\n"},
	}
	for _, tt := range tests {
		got, _, err := rewritePython("p.py", tt.in, lex(tt.in), false, nil)
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
	code := src(
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
	)
	if cs := findConstructs(lex(code)); len(cs) > 0 {
		t.Errorf("findConstructs: %v", cs)
	}
}
