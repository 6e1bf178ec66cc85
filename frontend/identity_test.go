package frontend

import (
	"io"
	"testing"
)

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
