package frontend

import (
	"io"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/frontend/rewrite"
)

// One warning for all the stubbed modules of a load.
func TestStubWarning(t *testing.T) {
	foreign := []rewrite.Import{
		{Module: "torch.nn", Line: 1}, {Module: "os.path", Line: 1}, {Module: "numpy", Line: 2},
		{Module: "torch", Line: 3, Star: true}, {Module: "argparse", Line: 4},
	}
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
	// argparse alone: its parser is no inert value.
	if w := stubWarning("p.py", foreign[4:5]); w != "p.py:4: module argparse is mirage's emulation: parse_args parses the program's arguments (those after --); what it does not emulate (FileType, formatter classes) is inert, and it has no file, network or process access (--strict refuses such imports)" {
		t.Errorf("argparse alone: %q", w)
	}
}

// Arguments for a program that never reads them.
func TestArgsNeverParsed(t *testing.T) {
	_, err := Load("prog.py", []byte(withHeader("Y = g.exp(X)")), Options{Args: []string{"--bs", "8"}, Stdout: io.Discard})
	if err == nil || err.Error() != "prog.py: the program was given arguments (--bs 8) but never parses them: it calls no argparse parse_args()" {
		t.Errorf("unread arguments: %v", err)
	}
}

// The loader predeclares every built-in that the rewritten program calls.
func TestRewriteBuiltinsPredeclared(t *testing.T) {
	l := newLoader("p.py", Options{})
	for _, name := range rewrite.Builtins() {
		if !l.predeclared.Has(name) {
			t.Errorf("the rewrite calls %q, which the loader does not predeclare", name)
		}
	}
}
