package argparse_test

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/frontend"
)

// FuzzArgs checks that no command line makes parse_args panic or hang, and
// that every failure is a positioned *frontend.Error: at the parse_args
// call, or at the shape the arguments gave. The fuzzed string is split at
// spaces into arguments. Run it with
//
//	go test -fuzz=FuzzArgs ./frontend/argparse
func FuzzArgs(f *testing.F) {
	for _, seed := range []string{"", "--batch_size 8", "-b8 --file=x", "-vv --tag a --tag=b", "--s", "--help", "1 2 3 -- -x",
		"--hidden -1", "-b", "--franges 1 2 --opt", "--no-check --check", "-", "--", "-b=", "--=", "-v-v"} {
		f.Add(seed)
	}
	prog := []byte(src(
		"import argparse",
		"import mirage as mi",
		"p = argparse.ArgumentParser()",
		"p.add_argument('-b', '--batch_size', type=int, default=1)",
		"p.add_argument('--hidden', type=int, default='64', choices=[64, 128])",
		"p.add_argument('--file')",
		"p.add_argument('names', nargs='*')",
		"p.add_argument('--franges', nargs='+', type=int)",
		"p.add_argument('--opt', nargs='?', const='on')",
		"p.add_argument('-v', action='count')",
		"p.add_argument('--tag', action='append')",
		"p.add_argument('--check', action=argparse.BooleanOptionalAction)",
		"a = p.parse_args()",
		"g = mi.new_kernel_graph()",
		"g.mark_output(g.exp(g.new_input(dims=(a.batch_size, a.hidden))))",
	))
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Fields(line)
		opts := frontend.Options{Args: args, Stdout: io.Discard, MaxSteps: 100_000, MaxAlloc: 1 << 20}
		p, err := frontend.Load("fuzz.py", prog, opts)
		if (p == nil) == (err == nil) {
			t.Fatalf("Load returned %v and %v", p, err)
		}
		if err != nil {
			var e *frontend.Error
			if !errors.As(err, &e) || e.Filename != "fuzz.py" || e.Line != 13 && e.Line != 15 {
				t.Fatalf("%q: error %v (%T) is not at the parse_args call or the new_input", args, err, err)
			}
			return
		}
		if s := p.Graph.Tensors[p.Graph.Inputs()[0]].Shape; s.Dim(1) != 64 && s.Dim(1) != 128 {
			t.Fatalf("%q: input %v: a value outside --hidden's choices", args, s)
		}
	})
}
