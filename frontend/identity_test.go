package frontend

import (
	"io"
	"strings"
	"testing"
)

// identityRewrites are identity tests and what rewritePython makes of
// them; FuzzLoad seeds from them too.
var identityRewrites = []struct{ in, want string }{
	{"if x is None:\n", "if x == None:\n"},
	{"ok = x is not None\n", "ok = x !=     None\n"},
	{"a = b is True or c is not False\n", "a = b == True or c !=     False\n"},
	{"f(x is None, y=z is not None)\n", "f(x == None, y=z !=     None)\n"},
	{"v = [y for y in ys if y is not None]\n", "v = [y for y in ys if y !=     None]\n"},
	{"v = 1 if x is None else 2\n", "v = 1 if x == None else 2\n"},
	{"d = {k: v is None for k, v in kv}\n", "d = {k: v == None for k, v in kv}\n"},
	{"ok = (f(x)[0].y\n  is  not\n  None)\n", "ok = (f(x)[0].y\n  !=     \n  None)\n"},
	{"ok = x is \\\n None; y = 1\n", "ok = x == \\\n None; y = 1\n"},
	{"ok = None is None", "ok = None == None"},
	{"assert args.c is None, 'c'\n", assertFunc + "(args.c == None, 'c')\n"},
	// Left as they are: findConstructs names them.
	{"ok = x is y\n", "ok = x is y\n"},
	{"ok = x is None + 1\n", "ok = x is None + 1\n"},
	{"ok = x is None.y\n", "ok = x is None.y\n"},
	{"ok = x is not None is None\n", "ok = x is not None == None\n"},
	{"ok = not is None\n", "ok = not is None\n"},
	{"s = 'x is None'  # y is None\n", "s = 'x is None'  # y is None\n"},
}

func TestRewriteIdentity(t *testing.T) {
	for _, tt := range identityRewrites {
		got, _, err := rewritePython("p.py", tt.in, lex(tt.in), false, nil)
		if err != nil || got != tt.want {
			t.Errorf("rewrite %q:\n got %q, %v\nwant %q", tt.in, got, err, tt.want)
		}
		if len(got) != len(tt.in) && !strings.Contains(tt.in, "assert") {
			t.Errorf("rewrite %q moved columns", tt.in)
		}
	}
}

// TestIdentity: the rewritten tests give Python's answers for None, True
// and False against values of every kind a program has.
func TestIdentity(t *testing.T) {
	prog := src(
		"import mirage as mi",
		"import argparse",
		"import torch",
		"p = argparse.ArgumentParser()",
		"p.add_argument('--checkpoint')",
		"args = p.parse_args()",
		"g = mi.new_kernel_graph()",
		"X = g.new_input(dims=(16, 64), dtype=mi.float16)",
		"def f(x=None):",
		"    return x",
		"vals = [None, True, False, 0, 1, 0.0, '', 'None', [], (), {}, args.checkpoint, f(), X, g, mi.float16, torch.cuda]",
		"got = [(v is None, v is not None, v is True, v is not True, v is False, v is not False) for v in vals]",
		"N, T, F, O = (True, False, False, True, False, True), (False, True, True, False, False, True), (False, True, False, True, True, False), (False, True, False, True, False, True)",
		"want = [N, T, F, O, O, O, O, O, O, O, O, N, N, O, O, O, O]",
		"if got != want:",
		"    fail(str(got))",
		"if args.checkpoint is None:",
		"    g.mark_output(g.exp(X))",
	)
	p, err := Load("prog.py", []byte(prog), Options{Stdout: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(p.Graph.Outputs); n != 1 {
		t.Errorf("%d outputs, want the one marked under `if args.checkpoint is None`", n)
	}
}
